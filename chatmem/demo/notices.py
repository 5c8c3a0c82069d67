"""In-app notices for curators: the demo's `@memory.on_proposal` and `@memory.on_waiting_call`.

A pending queue nobody looks at rots, so every page an admin sees names the
newest work waiting for them. chatmem calls these hooks after the agent's
call committed; the notice is the demo's own row (chatmem owns none of the
host's tables), and it names the item as the Memory screen does, never its text.
A notice goes once its item was decided (it would send the curator to an empty
queue) or once the curator dismisses it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import DateTime, Integer, String, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from chatmem.memory.models import Guidance, HeldCall

from .extensions import db, memory
from .models import utcnow

SHOWN = 3
KEPT_FOR = timedelta(days=1)


class CuratorNotice(db.Model):  # type: ignore[name-defined,misc]  # Flask-SQLAlchemy makes db.Model at run time
    __tablename__ = "demo_curator_notice"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    # "proposal" or "waiting_call", and the id of the entry or held call.
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    item_id: Mapped[int] = mapped_column(Integer, nullable=False)
    text: Mapped[str] = mapped_column(String(400), nullable=False)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False, index=True)


@memory.on_proposal
def proposal_notice(notice: dict[str, Any]) -> None:
    if notice.get("status") != "pending":
        return  # went live at once (Require approval off): nothing to review
    who = notice.get("user") or "an agent"
    # The notice's title is a neutral label (no agent-written text): the tab shows the rest.
    _add("proposal", notice["id"], f"New proposal from {who}: {notice.get('title')}")


@memory.on_waiting_call
def waiting_call_notice(notice: dict[str, Any]) -> None:
    who = notice.get("user") or "someone"
    _add("waiting_call", notice["id"], f"{who}’s call to {notice.get('tool')} waits for approval")


def _add(kind: str, item_id: int, text: str) -> None:
    db.session.add(CuratorNotice(kind=kind, item_id=item_id, text=text[:400]))
    db.session.commit()


def recent() -> list[CuratorNotice]:
    """The newest notices of the last day whose item still waits, for the admin's pages."""
    since = utcnow() - KEPT_FOR
    proposal = (CuratorNotice.kind == "proposal") & CuratorNotice.item_id.in_(
        select(Guidance.id).where(Guidance.status == "pending")
    )
    waiting_call = (CuratorNotice.kind == "waiting_call") & CuratorNotice.item_id.in_(
        select(HeldCall.id).where(HeldCall.state == "waiting")
    )
    return list(
        db.session.scalars(
            select(CuratorNotice)
            .where(CuratorNotice.at >= since, proposal | waiting_call)
            .order_by(CuratorNotice.id.desc())
            .limit(SHOWN)
        )
    )


def dismiss(notice_id: int) -> bool:
    """Remove one notice (the item itself still waits in its queue); False if there was none."""
    removed = db.session.execute(delete(CuratorNotice).where(CuratorNotice.id == notice_id))
    db.session.commit()
    return bool(removed.rowcount)  # type: ignore[attr-defined]  # a DELETE's result has rowcount; execute() is typed as a plain Result
