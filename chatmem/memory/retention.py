"""Retention: person-linked records older than the site keeps them are deleted.

`CHATMEM_RETENTION_DAYS` (off by default) bounds how long chatmem keeps what
sessions leave behind: ended sessions with their summaries, digests and summary
jobs (transcripts included), ledger rows, decided held calls, the Cost card's
injection rows and finished webhook notices. Guidance and its audit trail are
the site's decisions and are kept; an entry proposed in a deleted session
keeps its text and loses the link.

The sweep applies it in batches of `BATCH` rows, each its own short
transaction, so no table is locked for long and a sweep that stops halfway
leaves only whole batches done. Rows still in use are never taken: an open
session, a held call waiting for its decision, a job or notice not yet finished.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, delete, select, update
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.orm import Session as OrmSession

from . import switches
from .models import (
    BlockUse,
    Guidance,
    HeldCall,
    LedgerEntry,
    NotifyJob,
    Session,
    Subscription,
    SummaryJob,
    utcnow,
)
from .recall import search

BATCH = 500


def apply(db: OrmSession, days: int, *, now: datetime | None = None) -> dict[str, int]:
    """Delete what is older than `days` days; the rows deleted, by table. `days` 0 is off."""
    if days <= 0:
        return {}
    cutoff = (now or utcnow()) - timedelta(days=days)
    ended = Session.ended_at.is_not(None) & (Session.last_seen_at < cutoff)
    report = {
        "chatmem_ledger": _in_batches(db, LedgerEntry.id, LedgerEntry.at < cutoff),
        "chatmem_held_call": _in_batches(db, HeldCall.id, _decided_before(cutoff)),
        "chatmem_block_use": _in_batches(db, BlockUse.session_id, BlockUse.at < cutoff),
        "chatmem_notify_job": _in_batches(
            db, NotifyJob.id, (NotifyJob.status == "done") & (NotifyJob.created_at < cutoff)
        ),
        "chatmem_session": _in_batches(db, Session.id, ended, before=lambda ids: _unlink(db, ids)),
    }
    if report["chatmem_session"]:
        switches.bump_revision(db)  # recall's caches of session records start over
        db.commit()
        search.forget_deleted(db)
    return report


def _decided_before(cutoff: datetime) -> ColumnElement[bool]:
    """A held call decided and held before `cutoff`, its grant (if any) lapsed by then too."""
    return (
        (HeldCall.state != "waiting")
        & (HeldCall.created_at < cutoff)
        & (HeldCall.expires_at.is_(None) | (HeldCall.expires_at < cutoff))
    )


def _in_batches(
    db: OrmSession,
    key: InstrumentedAttribute[Any],
    condition: ColumnElement[bool],
    before: Callable[[list[Any]], None] | None = None,
) -> int:
    """Delete the rows meeting `condition`, `BATCH` keys a transaction; how many went."""
    model, deleted = key.class_, 0
    while ids := list(db.scalars(select(key).where(condition).distinct().limit(BATCH))):
        if before is not None:
            before(ids)
        result = db.execute(
            delete(model)
            .where(key.in_(ids), condition)
            .execution_options(synchronize_session=False)
        )
        db.commit()
        gone = int(getattr(result, "rowcount", 0) or 0)
        if gone <= 0:
            break  # nothing matched after all (another sweep took them): never spin
        deleted += gone
    return deleted


def _unlink(db: OrmSession, session_ids: list[str]) -> None:
    """Before sessions go: their summary jobs, Cost card rows and MCP subscriptions go
    with them (SQLite enforces no cascade); guidance proposed in them keeps its text,
    not the link."""
    for model, column in (
        (BlockUse, BlockUse.session_id),
        (SummaryJob, SummaryJob.session_id),
        (Subscription, Subscription.session_id),
    ):
        db.execute(delete(model).where(column.in_(session_ids)))
    db.execute(
        update(Guidance)
        .where(Guidance.session_id.in_(session_ids))
        .values(session_id=None)
        .execution_options(synchronize_session=False)
    )
