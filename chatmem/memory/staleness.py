"""Upkeep of active guidance: targets gone, review dates, entries nobody uses. No Flask here.

Each check is a sweep step (`memory.upkeep()`, run by `flask chatmem sweep`
and the background sweeper). A step changes a row only with a conditional
UPDATE naming the state it expects (`target_gone_at IS NULL`,
`status = 'publish'`), and writes the audit event only when its own UPDATE
changed the row. So a step is idempotent, and two sweeps running at once
(several workers, cron beside the background thread) make each change once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from . import switches
from .guardrails.targets import parse_target
from .models import Guidance, GuidanceEvent, utcnow

log = logging.getLogger("chatmem.staleness")

STALE_MODES = ("flag", "review")
# `recall` notes an entry's use at most this often: a plain UPDATE, like hits.
RECALL_NOTE_EVERY = timedelta(days=1)


@dataclass(frozen=True)
class Resolvers:
    """What the host can tell about targets; None: that kind is not checked."""

    tool_names: frozenset[str]
    # post id (canonical text) -> its post type, or None when the post is gone.
    post_type_of: Callable[[Any], str | None] | None = None
    # Every post type that exists now.
    post_types: frozenset[str] | None = None
    # canonical label -> whether what it names still exists (the host's `label_exists`).
    label_exists: Callable[[str], bool] | None = None


@dataclass
class Upkeep:
    """What one sweep's upkeep steps changed."""

    flagged: int = 0
    cleared: int = 0
    to_review: int = 0
    review_due: int = 0

    def __str__(self) -> str:
        return (
            f"{self.flagged} target{'s' if self.flagged != 1 else ''} gone, "
            f"{self.cleared} back, {self.to_review + self.review_due} back to Pending"
        )


def gone_reason(target: str | None, server_name: str, resolvers: Resolvers) -> str | None:
    """Why this target no longer names anything, or None (it resolves, or cannot be checked).

    A target that never matches at all (a typo'd key) is the screen's own
    warning, not staleness: it never named anything.
    """
    parsed = parse_target(target, server_name)
    if parsed.key == "tool":
        if parsed.value in resolvers.tool_names:
            return None
        return f"no tool is named {parsed.value}"
    if parsed.key == "post_id" and resolvers.post_type_of is not None:
        ident = int(parsed.value) if parsed.value.isdigit() else parsed.value
        return None if resolvers.post_type_of(ident) is not None else f"post {ident} is gone"
    if parsed.key == "post_type" and resolvers.post_types is not None:
        if parsed.value in resolvers.post_types:
            return None
        return f"no post has the type {parsed.value}"
    if parsed.key == "label" and resolvers.label_exists is not None:
        return None if resolvers.label_exists(parsed.value) else f"{parsed.value} is gone"
    return None


def check_targets(
    db: OrmSession,
    resolvers: Resolvers,
    server_name: str,
    *,
    review: bool,
    actor_id: str | None = None,
    now: datetime | None = None,
) -> Upkeep:
    """Flag active entries whose target is gone (and clear those that resolve again).

    With `review`, an entry newly found gone also goes back to Pending with
    a note; one a curator approved again while flagged stays active.
    """
    now = now or utcnow()
    done = Upkeep()
    db.commit()  # our own transactions, never inside a caller's
    rows = db.execute(
        select(Guidance.id, Guidance.target, Guidance.target_gone_at)
        .where(Guidance.status == "publish", Guidance.target.is_not(None))
        .order_by(Guidance.id)
    ).all()
    for entry_id, target, gone_at in rows:
        try:
            reason = gone_reason(target, server_name, resolvers)
        except Exception:
            # A host resolver's bug must not flag everything: leave this one as it was.
            log.exception("checking the target of guidance #%s failed", entry_id)
            continue
        if reason is not None and gone_at is None:
            if _set_gone(db, entry_id, now, reason, actor_id):
                done.flagged += 1
                if review and _to_pending(
                    db, entry_id, "stale_review", actor_id, now, note=f"target gone: {reason}"
                ):
                    done.to_review += 1
        elif reason is None and gone_at is not None and _clear_gone(db, entry_id, actor_id):
            done.cleared += 1
        db.commit()
    return done


def review_due(db: OrmSession, *, actor_id: str | None = None, now: datetime | None = None) -> int:
    """Move active entries whose review date has come back to Pending; returns how many."""
    now = now or utcnow()
    today = now.date()
    db.commit()
    due = and_(Guidance.status == "publish", Guidance.review_after <= today)
    ids = db.scalars(select(Guidance.id).where(due).order_by(Guidance.id)).all()
    moved = 0
    for entry_id in ids:
        reached = db.scalar(select(Guidance.review_after).where(Guidance.id == entry_id))
        note = f"review date {reached.isoformat()} reached" if reached else "review date reached"
        # The date is cleared as it fires: a re-approval does not bounce straight back.
        if _to_pending(
            db, entry_id, "review_due", actor_id, now, note=note, also=due, review_after=None
        ):
            moved += 1
        db.commit()
    return moved


def unused(
    db: OrmSession, days: int, *, now: datetime | None = None, limit: int = 100
) -> tuple[int, list[Guidance]]:
    """Active entries nobody used in `days` days: (how many, the oldest-used first `limit`).

    Used means returned by a `recall` topic search or hit by a call (a block
    or ask guardrail). An entry approved within the window is not counted:
    it has not had the time to be used.
    """
    cutoff = (now or utcnow()) - timedelta(days=days)
    idle = and_(
        Guidance.status == "publish",
        func.coalesce(Guidance.approved_at, Guidance.created_at) < cutoff,
        or_(Guidance.last_recalled_at.is_(None), Guidance.last_recalled_at < cutoff),
        or_(Guidance.last_hit_at.is_(None), Guidance.last_hit_at < cutoff),
    )
    count = int(db.scalar(select(func.count()).select_from(Guidance).where(idle)) or 0)
    last_used = func.coalesce(
        Guidance.last_recalled_at, Guidance.last_hit_at, Guidance.approved_at, Guidance.created_at
    )
    rows = db.scalars(
        select(Guidance).where(idle).order_by(last_used, Guidance.id).limit(limit)
    ).all()
    return count, list(rows)


def too_new(db: OrmSession, days: int, *, now: datetime | None = None) -> tuple[int, int]:
    """Active entries approved within the window, which `unused` leaves out:
    (how many, how many of them nobody used yet). The card says so rather than
    calling them used."""
    cutoff = (now or utcnow()) - timedelta(days=days)
    young = and_(
        Guidance.status == "publish",
        func.coalesce(Guidance.approved_at, Guidance.created_at) >= cutoff,
    )
    never = and_(young, Guidance.last_recalled_at.is_(None), Guidance.last_hit_at.is_(None))
    count = select(func.count()).select_from(Guidance)
    return (
        int(db.scalar(count.where(young)) or 0),
        int(db.scalar(count.where(never)) or 0),
    )


def gone(db: OrmSession, *, limit: int = 100) -> list[Guidance]:
    """Entries flagged "target gone", active or sent back to Pending, newest flag first."""
    return list(
        db.scalars(
            select(Guidance)
            .where(
                Guidance.target_gone_at.is_not(None),
                Guidance.status.in_(("publish", "pending")),
            )
            .order_by(Guidance.target_gone_at.desc(), Guidance.id.desc())
            .limit(limit)
        ).all()
    )


def scheduled(db: OrmSession, *, limit: int = 100) -> list[Guidance]:
    """Active entries with a review date, soonest first."""
    return list(
        db.scalars(
            select(Guidance)
            .where(Guidance.status == "publish", Guidance.review_after.is_not(None))
            .order_by(Guidance.review_after, Guidance.id)
            .limit(limit)
        ).all()
    )


def note_recalled(
    db: OrmSession,
    ids: Iterable[int],
    *,
    noted: dict[int, datetime],
    now: datetime | None = None,
) -> None:
    """Mark entries a `recall` topic search returned as used; in the caller's transaction.

    `noted` is this process's memory of the marks it made (the app's, kept
    by the facade): at most one UPDATE per entry per RECALL_NOTE_EVERY here,
    and the row is written only when its stored mark is older. Losing it
    (another worker, a restart) costs one UPDATE, nothing else. Never bumps
    `version`: an open edit form stays valid.
    """
    now = now or utcnow()
    since = now - RECALL_NOTE_EVERY
    fresh = [i for i in ids if noted.get(i, datetime.min) < since]
    if not fresh:
        return
    db.execute(
        update(Guidance)
        .where(
            Guidance.id.in_(fresh),
            or_(Guidance.last_recalled_at.is_(None), Guidance.last_recalled_at < since),
        )
        .values(last_recalled_at=now)
        .execution_options(synchronize_session=False)
    )
    for entry_id in fresh:
        noted[entry_id] = now


def parse_review_after(raw: Any) -> date | None:
    """A review date from a form or JSON (`YYYY-MM-DD`, empty for none)."""
    from ..errors import InvalidParams

    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, str):
        try:
            return date.fromisoformat(raw.strip())
        except ValueError:
            pass
    raise InvalidParams(
        "review_after must be a date (YYYY-MM-DD) or empty.", details={"field": "review_after"}
    )


def set_review_after(
    db: OrmSession, entry: Guidance, value: date | None, *, actor_id: str | None
) -> bool:
    """Set or clear an entry's review date in the caller's transaction; True if it changed."""
    if entry.review_after == value:
        return False
    before = entry.review_after
    entry.review_after = value
    db.add(
        GuidanceEvent(
            guidance_id=entry.id,
            action="review_date",
            actor_id=actor_id,
            detail={
                "review_after": [before.isoformat() if before else None, _iso(value)],
                "note": f"review date {'set to ' + value.isoformat() if value else 'cleared'}",
            },
        )
    )
    return True


def _iso(value: date | None) -> str | None:
    return value.isoformat() if value else None


def _set_gone(
    db: OrmSession, entry_id: int, now: datetime, reason: str, actor_id: str | None
) -> bool:
    won = db.execute(
        update(Guidance)
        .where(
            Guidance.id == entry_id,
            Guidance.status == "publish",
            Guidance.target_gone_at.is_(None),
        )
        .values(target_gone_at=now)
        .execution_options(synchronize_session=False)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        return False
    _event(db, entry_id, "target_gone", actor_id, {"note": reason})
    return True


def _clear_gone(db: OrmSession, entry_id: int, actor_id: str | None) -> bool:
    won = db.execute(
        update(Guidance)
        .where(Guidance.id == entry_id, Guidance.target_gone_at.is_not(None))
        .values(target_gone_at=None)
        .execution_options(synchronize_session=False)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        return False
    _event(db, entry_id, "target_back", actor_id, None)
    return True


def _to_pending(
    db: OrmSession,
    entry_id: int,
    action: str,
    actor_id: str | None,
    now: datetime,
    *,
    note: str,
    also: ColumnElement[bool] | None = None,
    **values: Any,
) -> bool:
    """Active -> Pending with a note; bumps `version` (an open form is stale) and the revision."""
    condition = and_(Guidance.id == entry_id, Guidance.status == "publish")
    if also is not None:
        condition = and_(condition, also)
    won = db.execute(
        update(Guidance)
        .where(condition)
        .values(
            status="pending",
            version=Guidance.version + 1,
            updated_at=now,
            pending_since=now,
            **values,
        )
        .execution_options(synchronize_session=False)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        return False
    _event(db, entry_id, action, actor_id, {"status": "pending", "was": "publish", "note": note})
    switches.bump_revision(db)
    return True


def _event(
    db: OrmSession, entry_id: int, action: str, actor_id: str | None, detail: dict[str, Any] | None
) -> None:
    db.add(GuidanceEvent(guidance_id=entry_id, action=action, actor_id=actor_id, detail=detail))
