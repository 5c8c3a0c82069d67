"""The queries behind the Memory screen's tabs: counts and pages.

Lists that grow without bound (proposals, sessions, the trash) are read one
page at a time, so the screen costs the same on a site with ten entries or
ten thousand. No Flask request in here: the blueprint turns these into pages.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session as OrmSession

from .models import Guidance, Session

TABS = ("pending", "active", "rejected", "history", "trash")
PER_PAGE = 50
# Which guidance status each guidance tab lists, and in what order.
_TAB_STATUS = {
    "pending": "pending",
    "active": "publish",
    "rejected": "rejected",
    "trash": "trash",
}
_TAB_ORDER: dict[str, Any] = {
    "pending": (Guidance.created_at.desc(), Guidance.id.desc()),
    "active": (Guidance.approved_at.desc(), Guidance.id.desc()),
    "rejected": (Guidance.updated_at.desc(), Guidance.id.desc()),
    "trash": (Guidance.updated_at.desc(), Guidance.id.desc()),
}


@dataclass(frozen=True)
class Page:
    items: list[Any]
    number: int
    total: int
    per_page: int = PER_PAGE

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number < self.pages


def counts(db: OrmSession) -> dict[str, int]:
    """Every tab's count in two grouped queries (the tab bar shows them all)."""
    rows = db.execute(select(Guidance.status, func.count()).group_by(Guidance.status))
    by_status = {status: number for status, number in rows}
    history = db.scalar(
        select(func.count()).select_from(Session).where(Session.recorded_at.is_not(None))
    )
    return {
        "pending": int(by_status.get("pending", 0)),
        "active": int(by_status.get("publish", 0)),
        "rejected": int(by_status.get("rejected", 0)),
        "history": int(history or 0),
        "trash": int(by_status.get("trash", 0)),
    }


def clamp_page(number: Any, total: int, per_page: int = PER_PAGE) -> int:
    """A page number from the URL, kept inside 1..pages whatever was typed."""
    try:
        wanted = int(number)
    except (TypeError, ValueError):
        wanted = 1
    last = max(1, -(-total // per_page))
    return min(max(wanted, 1), last)


def guidance_page(db: OrmSession, tab: str, number: Any, total: int) -> Page:
    """One page of the guidance a tab lists (pending, active, rejected or trash)."""
    page = clamp_page(number, total)
    query = (
        select(Guidance)
        .where(Guidance.status == _TAB_STATUS[tab])
        .order_by(*_TAB_ORDER[tab])
        .limit(PER_PAGE)
        .offset((page - 1) * PER_PAGE)
    )
    return Page(list(db.scalars(query)), page, total)


def by_status(db: OrmSession, status: str, *, limit: int) -> tuple[list[Guidance], int]:
    """The newest `limit` entries with this status, and how many there are in all."""
    total = db.scalar(select(func.count()).select_from(Guidance).where(Guidance.status == status))
    query = (
        select(Guidance)
        .where(Guidance.status == status)
        .order_by(Guidance.created_at.desc(), Guidance.id.desc())
        .limit(limit)
    )
    return list(db.scalars(query)), int(total or 0)


# Since when a proposal waits (see lanes.waiting_since), as SQL.
_WAITING_SINCE = func.coalesce(Guidance.pending_since, Guidance.created_at)


def pending_proposals(db: OrmSession) -> list[Guidance]:
    """Every pending proposal, longest waiting first: the triage lanes sort them all."""
    query = select(Guidance).where(Guidance.status == "pending")
    return list(db.scalars(query.order_by(_WAITING_SINCE, Guidance.id)))


def oldest_proposal(db: OrmSession) -> Guidance | None:
    """The pending proposal that has waited longest (the badge names its lane)."""
    query = select(Guidance).where(Guidance.status == "pending")
    return db.scalars(query.order_by(_WAITING_SINCE, Guidance.id).limit(1)).first()


def sessions_page(db: OrmSession, number: Any, total: int) -> Page:
    """One page of "Recent sessions": recorded ones, newest first."""
    page = clamp_page(number, total)
    query = (
        select(Session)
        .where(Session.recorded_at.is_not(None))
        .order_by(Session.recorded_at.desc(), Session.id)
        .limit(PER_PAGE)
        .offset((page - 1) * PER_PAGE)
    )
    return Page(list(db.scalars(query)), page, total)


def sessions_by_id(db: OrmSession, ids: Iterable[str | None]) -> dict[str, Session]:
    """The sessions proposals came from, in one query, for "from session" links."""
    wanted = {i for i in ids if i}
    if not wanted:
        return {}
    return {s.id: s for s in db.scalars(select(Session).where(Session.id.in_(wanted)))}


def proposed_in(db: OrmSession, session_id: str) -> list[Guidance]:
    """Guidance a session proposed, whatever became of it."""
    return list(
        db.scalars(select(Guidance).where(Guidance.session_id == session_id).order_by(Guidance.id))
    )
