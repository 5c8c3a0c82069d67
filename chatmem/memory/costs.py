"""What each conversation started with, and what memory costs. No Flask here.

A session given the block records the revision it was composed at, its
length, and one `chatmem_block_use` row per entry in it, so the screen can
show a session's starting memory and how many conversations an entry
reached. Token figures are estimates from characters (4 a token) unless a
provider reported them: the first prompt's input tokens (which carry the
block), each summary job's usage and each AI pre-review call's.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session as OrmSession

from . import held
from .models import (
    BlockUse,
    Guidance,
    GuidanceEvent,
    HeldCall,
    PreReviewJob,
    Session,
    SummaryJob,
    utcnow,
)

CHARS_PER_TOKEN = 4
BLOCK_USE_DAYS = 7
COST_DAYS = 30
REVIEW_DAYS = 30
# Decisions read for the median: enough for any real queue, bounded for a huge one.
REVIEWS_READ = 5000
# How an entry enters Pending: the events whose time starts its wait.
_ENTERS_PENDING = ("propose", "import", "stale_review", "review_due")
_DECIDES = ("approve", "reject")


def tokens_of(chars: int) -> int:
    """The usual estimate: about four characters a token, rounded up."""
    return -(-chars // CHARS_PER_TOKEN)


def record_block(
    db: OrmSession, session: Session, *, revision: int, included: Iterable[int], chars: int
) -> None:
    """Note the block a session starts with (in the caller's transaction)."""
    session.block_revision = revision
    session.block_chars = chars
    db.flush()  # the session row first: the uses refer to it
    db.add_all(
        BlockUse(session_id=session.id, guidance_id=i, at=session.started_at)
        for i in dict.fromkeys(included)
    )


def note_prompt_tokens(db: OrmSession, session_id: str, tokens: int) -> None:
    """The provider's count of a conversation's first prompt; later prompts keep the first."""
    if tokens <= 0:
        return
    db.execute(
        update(Session)
        .where(Session.id == session_id, Session.prompt_tokens.is_(None))
        .values(prompt_tokens=tokens)
    )


def block_entries(db: OrmSession, session_id: str) -> list[tuple[int, Guidance | None]]:
    """The entries a session's block held, by id; None for one deleted since."""
    ids = db.scalars(select(BlockUse.guidance_id).where(BlockUse.session_id == session_id)).all()
    found = {g.id: g for g in db.scalars(select(Guidance).where(Guidance.id.in_(ids)))}
    return [(i, found.get(i)) for i in sorted(ids)]


def conversations_with(
    db: OrmSession,
    entry_ids: Iterable[int],
    *,
    days: int = BLOCK_USE_DAYS,
    now: datetime | None = None,
) -> dict[int, int]:
    """How many sessions started with each entry in their block in the last `days` days."""
    ids = list(entry_ids)
    if not ids:
        return {}
    since = (now or utcnow()) - timedelta(days=days)
    rows = db.execute(
        select(BlockUse.guidance_id, func.count())
        .where(BlockUse.guidance_id.in_(ids), BlockUse.at >= since)
        .group_by(BlockUse.guidance_id)
    )
    return {entry_id: int(count) for entry_id, count in rows}


@dataclass(frozen=True)
class Cost:
    """The Cost card's figures over the last `days` days."""

    days: int
    conversations: int
    block_chars: float | None  # over every conversation that recorded its block
    # Over those whose block was not empty: what a conversation with memory carries.
    with_memory: int
    memory_block_chars: float | None
    prompt_tokens: float | None
    prompt_conversations: int
    summary_jobs: int
    summary_input_tokens: int
    summary_output_tokens: int
    digest_only: int
    # AI pre-review calls that got an answer (a note kept, or an answer dropped).
    pre_review_calls: int = 0
    pre_review_input_tokens: int = 0
    pre_review_output_tokens: int = 0

    @property
    def block_tokens(self) -> int | None:
        return tokens_of(round(self.block_chars)) if self.block_chars is not None else None

    @property
    def memory_block_tokens(self) -> int | None:
        chars = self.memory_block_chars
        return tokens_of(round(chars)) if chars is not None else None

    @property
    def summary_tokens(self) -> int:
        return self.summary_input_tokens + self.summary_output_tokens

    @property
    def pre_review_tokens(self) -> int:
        return self.pre_review_input_tokens + self.pre_review_output_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "days": self.days,
            "conversations": self.conversations,
            "block_tokens_estimate": self.block_tokens,
            "conversations_with_memory": self.with_memory,
            "block_tokens_with_memory_estimate": self.memory_block_tokens,
            "first_prompt_tokens": round(self.prompt_tokens) if self.prompt_tokens else None,
            "first_prompt_conversations": self.prompt_conversations,
            "summary_jobs": self.summary_jobs,
            "summary_tokens": self.summary_tokens,
            "summary_input_tokens": self.summary_input_tokens,
            "summary_output_tokens": self.summary_output_tokens,
            "provider_calls_saved": self.digest_only,
            "pre_review_calls": self.pre_review_calls,
            "pre_review_tokens": self.pre_review_tokens,
            "pre_review_input_tokens": self.pre_review_input_tokens,
            "pre_review_output_tokens": self.pre_review_output_tokens,
        }


def cost(db: OrmSession, *, days: int = COST_DAYS, now: datetime | None = None) -> Cost:
    since = (now or utcnow()) - timedelta(days=days)
    given = Session.block_revision.is_not(None) & (Session.started_at >= since)
    conversations, chars = db.execute(
        select(func.count(), func.avg(Session.block_chars)).where(given)
    ).one()
    with_memory, memory_chars = db.execute(
        select(func.count(), func.avg(Session.block_chars)).where(given, Session.block_chars > 0)
    ).one()
    prompted, prompt_avg = db.execute(
        select(func.count(), func.avg(Session.prompt_tokens)).where(
            given, Session.prompt_tokens.is_not(None)
        )
    ).one()
    finished = SummaryJob.finished_at >= since
    jobs, tokens_in, tokens_out = db.execute(
        select(
            func.count(),
            func.coalesce(func.sum(SummaryJob.input_tokens), 0),
            func.coalesce(func.sum(SummaryJob.output_tokens), 0),
        ).where(finished, SummaryJob.outcome == "summary")
    ).one()
    saved = db.scalar(select(func.count()).where(finished, SummaryJob.outcome == "digest_only"))
    reviews, review_in, review_out = db.execute(
        select(
            func.count(),
            func.coalesce(func.sum(PreReviewJob.input_tokens), 0),
            func.coalesce(func.sum(PreReviewJob.output_tokens), 0),
        ).where(PreReviewJob.finished_at >= since, PreReviewJob.outcome.in_(("note", "refused")))
    ).one()
    return Cost(
        days=days,
        conversations=int(conversations or 0),
        block_chars=float(chars) if chars is not None else None,
        with_memory=int(with_memory or 0),
        memory_block_chars=float(memory_chars) if memory_chars is not None else None,
        prompt_tokens=float(prompt_avg) if prompt_avg is not None else None,
        prompt_conversations=int(prompted or 0),
        summary_jobs=int(jobs or 0),
        summary_input_tokens=int(tokens_in or 0),
        summary_output_tokens=int(tokens_out or 0),
        digest_only=int(saved or 0),
        pre_review_calls=int(reviews or 0),
        pre_review_input_tokens=int(review_in or 0),
        pre_review_output_tokens=int(review_out or 0),
    )


# -- how fast the queue moves ---------------------------------------------------------


def pending_count(db: OrmSession) -> int:
    """Proposals waiting for review plus calls waiting for approval: the badge number."""
    pending = select(func.count()).select_from(Guidance).where(Guidance.status == "pending")
    return int(db.scalar(pending) or 0) + held.waiting_count(db)


def oldest_pending(db: OrmSession) -> datetime | None:
    """Since when the oldest item waits: a pending proposal or a waiting call."""
    proposal = db.scalar(
        select(func.min(func.coalesce(Guidance.pending_since, Guidance.created_at))).where(
            Guidance.status == "pending"
        )
    )
    call = db.scalar(select(func.min(HeldCall.created_at)).where(HeldCall.state == "waiting"))
    found = [t for t in (proposal, call) if t is not None]
    return min(found) if found else None


@dataclass(frozen=True)
class Pace:
    reviews: int
    median: timedelta | None
    days: int


def review_pace(db: OrmSession, *, days: int = REVIEW_DAYS, now: datetime | None = None) -> Pace:
    """The median time from entering Pending to a curator's approve or reject, last `days` days.

    Each decision is measured from the latest event before it that put the
    entry in Pending (a proposal, an import, the sweep sending it back).
    """
    since = (now or utcnow()) - timedelta(days=days)
    decisions = db.execute(
        select(GuidanceEvent.guidance_id, GuidanceEvent.at)
        .where(GuidanceEvent.action.in_(_DECIDES), GuidanceEvent.at >= since)
        .order_by(GuidanceEvent.at.desc())
        .limit(REVIEWS_READ)
    ).all()
    if not decisions:
        return Pace(0, None, days)
    ids = {d.guidance_id for d in decisions}
    starts: dict[int | None, list[datetime]] = {}
    for entry_id, at, detail in db.execute(
        select(GuidanceEvent.guidance_id, GuidanceEvent.at, GuidanceEvent.detail)
        .where(GuidanceEvent.guidance_id.in_(ids), GuidanceEvent.action.in_(_ENTERS_PENDING))
        .order_by(GuidanceEvent.at)
    ):
        status = detail.get("status") if isinstance(detail, dict) else None
        if status in (None, "pending"):
            starts.setdefault(entry_id, []).append(at)
    waits = []
    for entry_id, decided in decisions:
        before = [t for t in starts.get(entry_id, ()) if t <= decided]
        if before:
            waits.append((decided - before[-1]).total_seconds())
    if not waits:
        return Pace(0, None, days)
    return Pace(len(waits), timedelta(seconds=statistics.median(waits)), days)
