"""chatmem's own tables, all prefixed `chatmem_`, on their own metadata.

They live on a private declarative base rather than the host's `db.Model` so
that chatmem's migrations and `create_all` never touch the host's tables; the
host's Flask-SQLAlchemy session and engine still serve them. Users are the
host's: chatmem stores their id as a string and never owns a user table.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Date,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    false,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

GUIDANCE_TYPES = ("guardrail", "fact", "convention", "instruction")
SEVERITIES = ("info", "warn", "ask", "block")
# The severities the guardrail index enforces: `block` refuses, `ask` holds.
ENFORCED_SEVERITIES = ("ask", "block")
STATUSES = ("pending", "publish", "rejected", "trash")
CHANNELS = ("chat", "mcp", "rest", "python")
OUTCOMES = (
    "ok",
    "error",
    "blocked",
    "held",
    "allowed",
    "denied",
    "expired",
    "cancelled",
    "granted-run",
)
# The outcomes that count a hit on the guardrail named by the row.
HIT_OUTCOMES = ("blocked", "held")
# The rows that are a call someone made; the rest (allowed, denied, expired)
# record a curator's decision or a grant running out.
CALL_OUTCOMES = ("ok", "error", "blocked", "held", "granted-run")
HELD_STATES = ("waiting", "allowed", "denied", "expired", "used", "cancelled")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


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


class ApiToken(Base):
    """A per-user API token; only its SHA-256 hash is stored.

    `user_fingerprint` is a hash of who the user was when the token was made
    (the host's `user_fingerprint` hook): a user id given to someone new does
    not inherit the token. NULL on rows made before it existed: such a token
    is bound to its user at its next use (see token_check.py).
    """

    __tablename__ = "chatmem_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    user_fingerprint: Mapped[str | None] = mapped_column(String(64))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Read-only scope: only read-only tools are listed or callable.
    read_only: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false(), nullable=False
    )


def iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None


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
