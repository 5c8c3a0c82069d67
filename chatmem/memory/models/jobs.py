"""Work done outside a request: auto-summaries, AI pre-reviews, webhook notices.

Every job table is a `LeasedJob`: a row a worker claims by lease
(workers/claims.py holds the rules). The two that call a provider are
`ProviderJob`s, which also keep how the job ended and what the call cost.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class LeasedJob:
    """The columns a claim reads and writes: `attempts` is its fencing token."""

    # What a claim hands the worker beside the job's id (the session, the entry).
    subject: ClassVar[str | None] = None

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    status: Mapped[str] = mapped_column(String(16), default="queued", nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    next_run_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)

    @classmethod
    def ended(cls, outcome: str, at: datetime) -> dict[str, Any]:
        """What else a job writes as it ends for good (done, failed or given up)."""
        return {}


class ProviderJob(LeasedJob):
    """A job that calls the provider: how it ended, and the call's tokens for the Cost card."""

    outcome: Mapped[str | None] = mapped_column(String(16))
    # The provider's count for the call that answered, when it reported one.
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)

    @classmethod
    def ended(cls, outcome: str, at: datetime) -> dict[str, Any]:
        return {"outcome": outcome, "finished_at": at}


class SummaryJob(ProviderJob, Base):
    """A queued auto-summary: claimed by a worker, retried with back-off.

    Outcomes are JOB_OUTCOMES; `digest_only` ended without any provider call
    (the Cost card counts them as calls saved).
    """

    __tablename__ = "chatmem_summary_job"
    __table_args__ = (Index("ix_chatmem_summary_job_due", "status", "next_run_at"),)
    subject = "session_id"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("chatmem_session.id", ondelete="CASCADE"), nullable=False, unique=True
    )
    # A second copy of the conversation (redacted), kept only while a retry may need it.
    transcript: Mapped[str | None] = mapped_column(Text)

    @classmethod
    def ended(cls, outcome: str, at: datetime) -> dict[str, Any]:
        return {**super().ended(outcome, at), "transcript": None}


# `skipped`: the session had a summary already (no provider call either, but
# not a digest-only session).
JOB_OUTCOMES = ("summary", "digest_only", "skipped", "failed")


class PreReviewJob(ProviderJob, Base):
    """A queued AI pre-review of one pending proposal (see workers/pre_review.py).

    Claimed, leased and retried like a summary job; it only ever writes the
    entry's pre_review_* columns, never its status or text. A refused answer
    was paid for too: the Cost card counts its tokens.
    """

    __tablename__ = "chatmem_pre_review_job"
    __table_args__ = (Index("ix_chatmem_pre_review_job_due", "status", "next_run_at"),)
    subject = "guidance_id"

    guidance_id: Mapped[int] = mapped_column(
        ForeignKey("chatmem_guidance.id", ondelete="CASCADE"), nullable=False, unique=True
    )


# `note`: stored; `refused`: the provider answered, but not with a note we keep
# (malformed or too long); `skipped`: no call (the entry left Pending, or
# pre-review or the provider was switched off); `failed`: no answer.
PRE_REVIEW_OUTCOMES = ("note", "refused", "skipped", "failed")


class NotifyJob(LeasedJob, Base):
    """A webhook delivery waiting to be sent, retried with back-off (see workers/webhook.py)."""

    __tablename__ = "chatmem_notify_job"
    __table_args__ = (Index("ix_chatmem_notify_job_due", "status", "next_run_at"),)

    event: Mapped[str] = mapped_column(String(32), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
