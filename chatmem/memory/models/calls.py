"""Calls an `ask` guardrail held, and the MCP tasks clients wait on for them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class HeldCall(Base):
    """A call an `ask` guardrail held, waiting for a curator (SPEC §6).

    `call_hash` is a SHA-256 of the tool and its full canonical arguments, so
    a grant allows exactly that call even where the shown `arguments`
    (redacted as the ledger keeps them) would read alike. States:
    waiting -> allowed | denied; allowed -> used | expired; waiting or allowed
    -> cancelled (its MCP task was cancelled). Every change of state is a
    conditional UPDATE on the state it expects (see held.py).
    """

    __tablename__ = "chatmem_held_call"
    __table_args__ = (
        Index("ix_chatmem_held_call_lookup", "user_id", "tool", "call_hash"),
        Index("ix_chatmem_held_call_state", "state", "id"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    tool: Mapped[str] = mapped_column(String(64), nullable=False)
    arguments: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    call_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    user_id: Mapped[str] = mapped_column(String(64), nullable=False)
    user_name: Mapped[str] = mapped_column(String(200), nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(64))
    channel: Mapped[str] = mapped_column(String(16), nullable=False)
    guidance_id: Mapped[int | None] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(16), default="waiting", nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime)
    decided_by: Mapped[str | None] = mapped_column(String(64))
    note: Mapped[str | None] = mapped_column(Text)
    # Set when allowed: the grant is usable until then.
    expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    used_at: Mapped[datetime | None] = mapped_column(DateTime)


class Task(Base):
    """An MCP task: a `tools/call` a client asked to wait on (memory/tasks.py).

    A held call's task is `working` until the curator decides; allowed, it is
    run once and its answer kept (redacted) in `result` until `ttl_ms` after
    `created_at`. A call that was not held gets a task already finished.
    """

    __tablename__ = "chatmem_task"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    tool: Mapped[str] = mapped_column(String(64), nullable=False)
    # One task per held call: a second wait on the same call gets the same task.
    held_call_id: Mapped[int | None] = mapped_column(Integer, unique=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    status_message: Mapped[str | None] = mapped_column(Text)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    ttl_ms: Mapped[int] = mapped_column(Integer, nullable=False)
    # Set by the one request that runs the allowed call.
    run_at: Mapped[datetime | None] = mapped_column(DateTime)
