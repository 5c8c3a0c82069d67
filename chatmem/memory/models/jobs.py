"""Work done outside a request: auto-summaries, AI pre-reviews, webhook notices."""

from __future__ import annotations

from datetime import datetime
from typing import Any

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


class SummaryJob(Base):
    """A queued auto-summary: claimed by a worker, retried with back-off."""

    __tablename__ = "chatmem_summary_job"
    __table_args__ = (Index("ix_chatmem_summary_job_due", "status", "next_run_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("chatmem_session.id", ondelete="CASCADE"), nullable=False, unique=True
    )
    status: Mapped[str] = mapped_column(String(16), default="queued", nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    next_run_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    transcript: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    # How the job ended: JOB_OUTCOMES. `digest_only` ended without any
    # provider call (the Cost card counts them as calls saved).
    outcome: Mapped[str | None] = mapped_column(String(16))
    # The provider's usage for the summary call, when it reported it.
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


# `skipped`: the session had a summary already (no provider call either, but
# not a digest-only session).
JOB_OUTCOMES = ("summary", "digest_only", "skipped", "failed")


class PreReviewJob(Base):
    """A queued AI pre-review of one pending proposal (see workers/pre_review.py).

    Claimed, leased and retried like a summary job; it only ever writes the
    entry's pre_review_* columns, never its status or text.
    """

    __tablename__ = "chatmem_pre_review_job"
    __table_args__ = (Index("ix_chatmem_pre_review_job_due", "status", "next_run_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guidance_id: Mapped[int] = mapped_column(
        ForeignKey("chatmem_guidance.id", ondelete="CASCADE"), nullable=False, unique=True
    )
    status: Mapped[str] = mapped_column(String(16), default="queued", nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    next_run_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    # How it ended: PRE_REVIEW_OUTCOMES. Tokens are the provider's count of the
    # call that answered (a refused answer was paid for too: the Cost card counts it).
    outcome: Mapped[str | None] = mapped_column(String(16))
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)


# `note`: stored; `refused`: the provider answered, but not with a note we keep
# (malformed or too long); `skipped`: no call (the entry left Pending, or
# pre-review or the provider was switched off); `failed`: no answer.
PRE_REVIEW_OUTCOMES = ("note", "refused", "skipped", "failed")


class NotifyJob(Base):
    """A webhook delivery waiting to be sent, retried with back-off (see workers/webhook.py)."""

    __tablename__ = "chatmem_notify_job"
    __table_args__ = (Index("ix_chatmem_notify_job_due", "status", "next_run_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event: Mapped[str] = mapped_column(String(32), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    status: Mapped[str] = mapped_column(String(16), default="queued", nullable=False)
    attempts: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    next_run_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    claimed_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
