"""Guidance, its audit events, and the state row whose revision every process reads."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, iso, utcnow


class State(Base):
    """The one row every process reads before it injects or enforces.

    `revision` is bumped in the same transaction as any change that can alter
    the block or the guardrail index (guidance or settings), so comparing it
    with a cached copy is all a process needs to stay fresh.
    """

    __tablename__ = "chatmem_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    memory_enabled: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    require_approval: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    auto_summarize: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)


class Guidance(Base):
    __tablename__ = "chatmem_guidance"
    __table_args__ = (
        Index("ix_chatmem_guidance_status_type", "status", "type"),
        Index("ix_chatmem_guidance_text_key", "text_key"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    type: Mapped[str] = mapped_column(String(16), nullable=False)
    title: Mapped[str] = mapped_column(String(200), nullable=False)
    text: Mapped[str] = mapped_column(Text, nullable=False)
    text_key: Mapped[str] = mapped_column(String(64), nullable=False)
    scope: Mapped[str | None] = mapped_column(String(64))
    target: Mapped[str | None] = mapped_column(String(200))
    severity: Mapped[str | None] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    status_before_trash: Mapped[str | None] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True, nullable=False)
    origin: Mapped[str] = mapped_column(String(8), nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(64), index=True)
    created_by: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    approved_by: Mapped[str | None] = mapped_column(String(64))
    approved_at: Mapped[datetime | None] = mapped_column(DateTime)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    # How often this guardrail refused a call, and when it last did. Written
    # by the dispatcher with a plain UPDATE, so a hit never bumps `version`
    # (a curator's open edit form stays valid).
    hits: Mapped[int] = mapped_column(Integer, default=0, server_default="0", nullable=False)
    last_hit_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Upkeep (see staleness.py): a date after which the entry goes back to
    # Pending; when the sweep found its target gone; when `recall` by topic
    # last returned it (a plain UPDATE, like hits, at most once a day); and
    # since when it waits in Pending, if it came back there (else created_at).
    review_after: Mapped[date | None] = mapped_column(Date)
    target_gone_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_recalled_at: Mapped[datetime | None] = mapped_column(DateTime)
    pending_since: Mapped[datetime | None] = mapped_column(DateTime)
    # Revalidation (see revalidation.py): when a call (or the host) changed what
    # this active entry targets or names, the ledger row of that call (None:
    # changed outside chatmem, or the row is gone) and the canonical target
    # that changed (`post_id:4`). Plain conditional UPDATEs, like hits: a mark
    # never bumps `version`; an edit or approval clears it.
    target_changed_at: Mapped[datetime | None] = mapped_column(DateTime)
    target_changed_call_id: Mapped[int | None] = mapped_column(Integer)
    target_changed_label: Mapped[str | None] = mapped_column(String(200))
    # AI pre-review (see workers/pre_review.py): the provider's advisory note on a
    # pending proposal, which provider/model wrote it, and when. Written with a
    # plain UPDATE, like hits: a note never bumps `version`, and decides nothing.
    pre_review_note: Mapped[str | None] = mapped_column(Text)
    pre_review_model: Mapped[str | None] = mapped_column(String(200))
    pre_review_at: Mapped[datetime | None] = mapped_column(DateTime)

    __mapper_args__ = {"version_id_col": version}

    def to_dict(self) -> dict[str, Any]:
        """The shape `recall` returns for one entry."""
        return guidance_record(self)


class GuidanceEvent(Base):
    """The audit trail: one row per state change of an entry or a setting."""

    __tablename__ = "chatmem_guidance_event"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    guidance_id: Mapped[int | None] = mapped_column(
        ForeignKey("chatmem_guidance.id", ondelete="CASCADE"), index=True
    )
    action: Mapped[str] = mapped_column(String(32), nullable=False)
    actor_id: Mapped[str | None] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    detail: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    text_sha256: Mapped[str | None] = mapped_column(String(64))  # the text then (audit.py)
    seal: Mapped[str | None] = mapped_column(String(64))  # to the event before (audit.py)


# What `recall` reads of guidance (of sessions: recall/records.py). Its hot path
# selects these columns rather than whole ORM rows (no objects to build, nothing
# left in the identity map); a Row has the same attribute names, so one function
# shapes both.
GUIDANCE_RECORD_COLUMNS = (
    Guidance.id,
    Guidance.type,
    Guidance.title,
    Guidance.text,
    Guidance.scope,
    Guidance.target,
    Guidance.severity,
    Guidance.origin,
    Guidance.approved_at,
    Guidance.created_at,  # for block.priority, not returned
)


def guidance_record(entry: Any) -> dict[str, Any]:
    """One guidance entry (a Guidance or a row of GUIDANCE_RECORD_COLUMNS) as recall shows it."""
    return {
        "id": entry.id,
        "type": entry.type,
        "title": entry.title,
        "text": entry.text,
        "scope": entry.scope,
        "target": entry.target,
        "severity": entry.severity,
        "origin": entry.origin,
        "approved_at": iso(entry.approved_at),
    }
