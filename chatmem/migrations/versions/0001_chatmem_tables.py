"""chatmem tables, the state row, and the recall search indexes

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from chatmem.memory.recall import search

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    state = op.create_table(
        "chatmem_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("memory_enabled", sa.Boolean(), nullable=False),
        sa.Column("require_approval", sa.Boolean(), nullable=False),
        sa.Column("auto_summarize", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_state")),
    )
    # The one row every process reads before it injects or enforces.
    op.bulk_insert(
        state,
        [
            {
                "id": 1,
                "revision": 0,
                "memory_enabled": True,
                "require_approval": True,
                "auto_summarize": False,
            }
        ],
    )

    op.create_table(
        "chatmem_guidance",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("text_key", sa.String(length=64), nullable=False),
        sa.Column("scope", sa.String(length=64), nullable=True),
        sa.Column("target", sa.String(length=200), nullable=True),
        sa.Column("severity", sa.String(length=8), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_before_trash", sa.String(length=16), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("origin", sa.String(length=8), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("created_by", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("approved_by", sa.String(length=64), nullable=True),
        sa.Column("approved_at", sa.DateTime(), nullable=True),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_guidance")),
    )
    op.create_index("ix_chatmem_guidance_session_id", "chatmem_guidance", ["session_id"])
    op.create_index("ix_chatmem_guidance_status_type", "chatmem_guidance", ["status", "type"])
    op.create_index("ix_chatmem_guidance_text_key", "chatmem_guidance", ["text_key"])

    op.create_table(
        "chatmem_guidance_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("guidance_id", sa.Integer(), nullable=True),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("actor_id", sa.String(length=64), nullable=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=True),
        sa.ForeignKeyConstraint(
            ["guidance_id"],
            ["chatmem_guidance.id"],
            name=op.f("fk_chatmem_guidance_event_guidance_id_chatmem_guidance"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_guidance_event")),
    )
    op.create_index(
        "ix_chatmem_guidance_event_guidance_id", "chatmem_guidance_event", ["guidance_id"]
    )

    op.create_table(
        "chatmem_session",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("user_name", sa.String(length=200), nullable=False),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("external_key", sa.String(length=200), nullable=True),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(), nullable=False),
        sa.Column("ended_at", sa.DateTime(), nullable=True),
        sa.Column("recorded_at", sa.DateTime(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("summary_auto", sa.Boolean(), nullable=False),
        sa.Column("digest", sa.Text(), nullable=True),
        sa.Column("change_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_session")),
    )
    op.create_index(
        "ix_chatmem_session_key", "chatmem_session", ["user_id", "channel", "external_key"]
    )
    op.create_index("ix_chatmem_session_open", "chatmem_session", ["ended_at", "last_seen_at"])
    op.create_index("ix_chatmem_session_recorded", "chatmem_session", ["recorded_at"])

    op.create_table(
        "chatmem_ledger",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("user_id", sa.String(length=64), nullable=True),
        sa.Column("channel", sa.String(length=16), nullable=False),
        sa.Column("tool", sa.String(length=64), nullable=False),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("outcome", sa.String(length=8), nullable=False),
        sa.Column("error_code", sa.String(length=32), nullable=True),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_ledger")),
    )
    op.create_index("ix_chatmem_ledger_session", "chatmem_ledger", ["session_id", "id"])

    op.create_table(
        "chatmem_summary_job",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_run_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("transcript", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["chatmem_session.id"],
            name=op.f("fk_chatmem_summary_job_session_id_chatmem_session"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_summary_job")),
        sa.UniqueConstraint("session_id", name=op.f("uq_chatmem_summary_job_session_id")),
    )
    op.create_index("ix_chatmem_summary_job_due", "chatmem_summary_job", ["status", "next_run_at"])

    op.create_table(
        "chatmem_token",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("last_used_at", sa.DateTime(), nullable=True),
        sa.Column("revoked_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chatmem_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_chatmem_token_token_hash")),
    )
    op.create_index("ix_chatmem_token_user_id", "chatmem_token", ["user_id"])

    # FTS5 trigram tables + triggers on SQLite, pg_trgm indexes on PostgreSQL.
    # (If the search DDL ever changes, a later revision uninstalls and
    # reinstalls it; this one stays as it is.)
    search.install(op.get_bind())


def downgrade() -> None:
    search.uninstall(op.get_bind())
    for table in (
        "chatmem_token",
        "chatmem_summary_job",
        "chatmem_ledger",
        "chatmem_session",
        "chatmem_guidance_event",
        "chatmem_guidance",
        "chatmem_state",
    ):
        op.drop_table(table)
