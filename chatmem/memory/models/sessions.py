"""Sessions of agent work, their change ledger, the entries their block held, and
their MCP resource subscriptions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class Session(Base):
    """One unit of agent work, and once recorded, its summary and digest."""

    __tablename__ = "chatmem_session"
    __table_args__ = (
        Index("ix_chatmem_session_key", "user_id", "channel", "external_key"),
        Index("ix_chatmem_session_recorded", "recorded_at"),
        # recall's own-records query: one user's newest records, in index order.
        Index("ix_chatmem_session_user_recorded", "user_id", "recorded_at"),
        Index("ix_chatmem_session_open", "ended_at", "last_seen_at"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), nullable=False)
    user_name: Mapped[str] = mapped_column(String(200), nullable=False)
    channel: Mapped[str] = mapped_column(String(16), nullable=False)
    external_key: Mapped[str | None] = mapped_column(String(200))
    started_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    last_seen_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime)
    recorded_at: Mapped[datetime | None] = mapped_column(DateTime)
    summary: Mapped[str | None] = mapped_column(Text)
    summary_auto: Mapped[bool] = mapped_column(Boolean, default=False, nullable=False)
    digest: Mapped[str | None] = mapped_column(Text)
    change_count: Mapped[int] = mapped_column(Integer, default=0, nullable=False)
    # What the conversation started with (see costs.py): the revision of the
    # block it was given and its length; the entries are in chatmem_block_use.
    # `prompt_tokens`: the provider's count of the first prompt, when reported.
    block_revision: Mapped[int | None] = mapped_column(Integer)
    block_chars: Mapped[int | None] = mapped_column(Integer)
    prompt_tokens: Mapped[int | None] = mapped_column(Integer)


class RecordsRevision(Base):
    """One row: how many times the session records recall can see have changed.

    Bumped by the database itself (`recall.records_revision`'s triggers), never
    by Python, so every writer is counted; read with the state row.
    """

    __tablename__ = "chatmem_records_revision"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    revision: Mapped[int] = mapped_column(Integer, default=0, nullable=False)


class LedgerEntry(Base):
    """One non-read-only tool call, arguments redacted, with its outcome."""

    __tablename__ = "chatmem_ledger"
    __table_args__ = (
        Index("ix_chatmem_ledger_session", "session_id", "id"),
        Index("ix_chatmem_ledger_guidance", "guidance_id", "id"),
        Index("ix_chatmem_ledger_at", "at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    session_id: Mapped[str | None] = mapped_column(String(64))
    user_id: Mapped[str | None] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(16), nullable=False)
    tool: Mapped[str] = mapped_column(String(64), nullable=False)
    # JSONB on PostgreSQL: the dry run reads single inputs of many rows, and
    # plain `json` is re-parsed for every `->`.
    arguments: Mapped[dict[str, Any]] = mapped_column(
        JSON().with_variant(JSONB(), "postgresql"), nullable=False
    )
    outcome: Mapped[str] = mapped_column(String(16), nullable=False)
    error_code: Mapped[str | None] = mapped_column(String(32))
    detail: Mapped[str | None] = mapped_column(Text)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    # The guardrail that refused or held the call (outcome `blocked`,
    # `held`), or whose held request this row decides or runs.
    guidance_id: Mapped[int | None] = mapped_column(Integer)


class BlockUse(Base):
    """One entry that was in the block a session was given (see costs.py)."""

    __tablename__ = "chatmem_block_use"
    __table_args__ = (Index("ix_chatmem_block_use_entry", "guidance_id", "at"),)

    session_id: Mapped[str] = mapped_column(
        ForeignKey("chatmem_session.id", ondelete="CASCADE"), primary_key=True
    )
    guidance_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)


class Subscription(Base):
    """A handshake-era MCP session's `resources/subscribe` (memory/subscriptions.py).

    `seen` is the digest of what the session was last told the resource
    holds; its next notification poll, on any worker, tells it of a change.
    """

    __tablename__ = "chatmem_subscription"

    session_id: Mapped[str] = mapped_column(
        ForeignKey("chatmem_session.id", ondelete="CASCADE"), primary_key=True
    )
    uri: Mapped[str] = mapped_column(String(300), primary_key=True)
    seen: Mapped[str] = mapped_column(String(64), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
