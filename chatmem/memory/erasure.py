"""Erasure of one person: everything chatmem holds about a user, removed or made anonymous.

What goes (their own data): sessions with their summaries and digests, the
ledger rows of their calls, held calls and grants, summary jobs and their
transcripts, the Cost card's rows, API tokens, notification jobs that name
them, and proposals of theirs the site never approved (with their trails and
their AI pre-review jobs).
The search indexes follow the rows they index (SQLite's FTS5 triggers, then a
merge that drops the deleted terms; PostgreSQL's indexes on the rows).

What stays, without the name (the site's decisions): guidance the site
approved keeps its text, and its creator or approver becomes `ERASED_ACTOR`;
audit events keep their action and lose the actor; a decision on someone
else's held call keeps "allowed once by erased user".

One transaction: the whole erasure or none of it. Running it again finds
nothing left and reports zeros. The erasure itself is audited, by who ran it,
with the counts and without the name.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session as OrmSession

from ..errors import InvalidParams
from . import audit, switches
from .models import (
    ApiToken,
    BlockUse,
    Guidance,
    GuidanceEvent,
    HeldCall,
    LedgerEntry,
    NotifyJob,
    PreReviewJob,
    Session,
    Subscription,
    SummaryJob,
    Task,
)
from .recall import search

#: What an audit row, an entry's creator or approver reads once its person is erased.
ERASED_ACTOR = "erased"
ERASED_NAME = "erased user"


def erase_user(
    db: OrmSession, user_id: str, user_name: str, *, actor_id: str | None
) -> dict[str, int]:
    """Erase one person in one transaction; the rows changed, by table (zeros are kept)."""
    if not str(user_id) or not user_name:
        raise InvalidParams("Name the user to erase.", details={"field": "user"})
    user_id, named = str(user_id), _word(user_name)
    sessions = select(Session.id).where(Session.user_id == user_id)
    unapproved = select(Guidance.id).where(
        Guidance.created_by == user_id, Guidance.approved_at.is_(None)
    )
    report = dict.fromkeys(TABLES, 0)
    # What stays loses the name: the site's guidance, the audit trail, others' held calls.
    report["chatmem_guidance"] += _changed(
        db,
        update(Guidance)
        .where(Guidance.session_id.in_(sessions), Guidance.approved_at.is_not(None))
        .values(session_id=None),
        update(Guidance)
        .where(Guidance.created_by == user_id, Guidance.approved_at.is_not(None))
        .values(created_by=ERASED_ACTOR),
        update(Guidance).where(Guidance.approved_by == user_id).values(approved_by=ERASED_ACTOR),
    )
    acted = select(GuidanceEvent.guidance_id).where(GuidanceEvent.actor_id == user_id)
    rewritten = set(db.scalars(acted.distinct()))
    report["chatmem_guidance_event"] += _changed(
        db,
        delete(GuidanceEvent).where(GuidanceEvent.guidance_id.in_(unapproved)),
        update(GuidanceEvent)
        .where(GuidanceEvent.actor_id == user_id)
        .values(actor_id=ERASED_ACTOR),
    )
    scrubbed = _scrub(db, GuidanceEvent, GuidanceEvent.detail, named)
    report["chatmem_guidance_event"] += len(scrubbed)
    # chatmem rewrote these trails' old events: they are sealed again as they now read.
    audit.reseal(db, rewritten | {event.guidance_id for event in scrubbed})
    report["chatmem_held_call"] += _changed(
        db,
        delete(HeldCall).where(HeldCall.user_id == user_id),
        update(HeldCall).where(HeldCall.decided_by == user_id).values(decided_by=ERASED_ACTOR),
    )
    # Their own data goes.
    report["chatmem_task"] += _changed(db, delete(Task).where(Task.user_id == user_id))
    # Their proposals' pre-review jobs go first: SQLite enforces no cascade, and a
    # job left behind would hold the id a later entry may be given.
    db.execute(delete(PreReviewJob).where(PreReviewJob.guidance_id.in_(unapproved)))
    report["chatmem_guidance"] += _changed(db, delete(Guidance).where(Guidance.id.in_(unapproved)))
    report["chatmem_summary_job"] += _changed(
        db, delete(SummaryJob).where(SummaryJob.session_id.in_(sessions))
    )
    report["chatmem_block_use"] += _changed(
        db, delete(BlockUse).where(BlockUse.session_id.in_(sessions))
    )
    report["chatmem_subscription"] += _changed(
        db, delete(Subscription).where(Subscription.session_id.in_(sessions))
    )
    report["chatmem_ledger"] += _changed(
        db,
        delete(LedgerEntry).where(
            or_(LedgerEntry.user_id == user_id, LedgerEntry.session_id.in_(sessions))
        ),
    ) + len(
        _scrub(  # a decision on someone else's call: "allowed once by <name>"
            db,
            LedgerEntry,
            LedgerEntry.detail,
            named,
            LedgerEntry.detail.contains(user_name, autoescape=True),
        )
    )
    report["chatmem_token"] += _changed(db, delete(ApiToken).where(ApiToken.user_id == user_id))
    report["chatmem_notify_job"] += _notices(db, named)
    report["chatmem_session"] += _changed(db, delete(Session).where(Session.user_id == user_id))
    if any(report.values()):
        switches.bump_revision(db)  # caches keyed by the revision (tokens, recall) start over
        db.add(GuidanceEvent(action="user_erased", actor_id=actor_id, detail={"rows": report}))
    db.commit()
    search.forget_deleted(db)
    return report


#: Every chatmem table that can name a person, in the order the report lists them.
TABLES = (
    "chatmem_session",
    "chatmem_summary_job",
    "chatmem_ledger",
    "chatmem_held_call",
    "chatmem_task",
    "chatmem_block_use",
    "chatmem_subscription",
    "chatmem_token",
    "chatmem_notify_job",
    "chatmem_guidance",
    "chatmem_guidance_event",
)


def _changed(db: OrmSession, *statements: Any) -> int:
    total = 0
    for statement in statements:
        result = db.execute(statement.execution_options(synchronize_session=False))
        total += int(getattr(result, "rowcount", 0) or 0)
    return total


def _word(user_name: str) -> re.Pattern[str]:
    """The name as a whole word: erasing `ann` leaves `annual` alone."""
    return re.compile(rf"(?<!\w){re.escape(user_name)}(?!\w)")


def _scrub(
    db: OrmSession, model: Any, column: Any, named: re.Pattern[str], *where: Any
) -> list[Any]:
    """Rows that name the person in `column` (text or JSON) get `ERASED_NAME` instead;
    the rows changed."""
    changed = []
    for row in db.scalars(select(model).where(column.is_not(None), *where)):
        value = getattr(row, column.key)
        if _names(value, named):
            setattr(row, column.key, _scrubbed(value, named))
            changed.append(row)
    db.flush()
    return changed


def _notices(db: OrmSession, named: re.Pattern[str]) -> int:
    """Webhook deliveries whose payload names the person (a proposal's, a held call's)."""
    naming = [job.id for job in db.scalars(select(NotifyJob)) if _names(job.payload, named)]
    return _changed(db, delete(NotifyJob).where(NotifyJob.id.in_(naming))) if naming else 0


def _names(value: Any, named: re.Pattern[str]) -> bool:
    if isinstance(value, str):
        return named.search(value) is not None
    if isinstance(value, dict):
        return any(_names(item, named) for item in value.values())
    if isinstance(value, list):
        return any(_names(item, named) for item in value)
    return False


def _scrubbed(value: Any, word: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return word.sub(ERASED_NAME, value)
    if isinstance(value, dict):
        return {key: _scrubbed(item, word) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrubbed(item, word) for item in value]
    return value


def recorded_ids(db: OrmSession, user_name: str) -> list[str]:
    """The user ids chatmem's records give this name: a person the host already deleted."""
    found = (
        select(Session.user_id)
        .where(Session.user_name == user_name)
        .union(select(HeldCall.user_id).where(HeldCall.user_name == user_name))
    )
    return sorted(str(user_id) for user_id in db.scalars(found))
