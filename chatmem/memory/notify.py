"""Notices of new work for curators: host hooks after commit, and a webhook outbox. No Flask.

A proposal or a held call *stages* a notice in the database session that
made it. When that transaction commits, the notice becomes *ready* (a
rollback drops it), and the facade hands ready notices to the host's
`on_proposal` / `on_waiting_call` hooks once the agent's call is over, so a
hook never sees work that was not stored and a failing hook never fails the
call. When a webhook is set, the same commit stores a `chatmem_notify_job`
row (an outbox): the sweep sends it (`workers/webhook.py`) and retries
failures with back-off, so a notice outlives a restart or an unreachable
receiver.

A notice names the item (id, type, tool, who, when) and carries no text an
agent wrote: its `title` is a neutral label made from the id and the type
("Proposal #12 (fact)"), never the entry's own title or text, a call's
arguments, or a token. Agent text can hold a secret no redaction rule knows,
and the receiver (a chat channel, a mail gateway) is outside the trust model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session as OrmSession

from .models import Guidance, HeldCall, NotifyJob, iso, utcnow

PROPOSAL = "proposal"
WAITING_CALL = "waiting_call"
EVENTS = (PROPOSAL, WAITING_CALL)
STAGED = "chatmem_notices_staged"
READY = "chatmem_notices_ready"


@dataclass(frozen=True)
class Notice:
    event: str
    data: dict[str, Any]


def proposal_notice(entry: Guidance, user_name: str | None) -> Notice:
    return Notice(
        PROPOSAL,
        {
            "event": PROPOSAL,
            "id": entry.id,
            "type": entry.type,
            "title": label(entry),
            "severity": entry.severity,
            "status": entry.status,
            "user": user_name,
            "at": iso(entry.created_at),
        },
    )


def waiting_call_notice(call: HeldCall) -> Notice:
    return Notice(
        WAITING_CALL,
        {
            "event": WAITING_CALL,
            "id": call.id,
            "tool": call.tool,
            "guidance_id": call.guidance_id,
            "user": call.user_name,
            "at": iso(call.created_at),
        },
    )


def stage(db: OrmSession, notice: Notice) -> None:
    """Queue a notice on the current transaction: ready if it commits, gone if not."""
    db.info.setdefault(STAGED, []).append(notice)


def take_ready(db: OrmSession) -> list[Notice]:
    """The notices whose transactions committed, once each."""
    ready: list[Notice] = db.info.pop(READY, [])
    return ready


def staged_on(session: OrmSession) -> list[Notice]:
    notices: list[Notice] = session.info.get(STAGED, [])
    return notices


def promote(session: OrmSession) -> None:
    """After a commit: what it staged is ready."""
    staged = session.info.pop(STAGED, None)
    if staged:
        session.info.setdefault(READY, []).extend(staged)


def drop_staged(session: OrmSession) -> None:
    """After a rollback: what it staged never happened."""
    session.info.pop(STAGED, None)


def outbox_rows(notices: list[Notice], now: datetime | None = None) -> list[NotifyJob]:
    now = now or utcnow()
    return [
        NotifyJob(event=n.event, payload=n.data, status="queued", attempts=0, next_run_at=now)
        for n in notices
    ]


def label(entry: Guidance) -> str:
    """A proposal's neutral name: its id and type, never a word of what the agent wrote."""
    return f"Proposal #{entry.id} ({entry.type})"
