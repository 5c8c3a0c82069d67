"""forget the transcripts of finished summary jobs

Revision ID: 0005
Revises: 0002
Create Date: 2026-11-30 23:55:00

A summary job's transcript is a second copy of the conversation; chatmem now
deletes it when the job ends. Jobs that ended before that rule kept theirs:
this drops them. Data only, no schema change; a downgrade cannot bring the
transcripts back, and need not.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute(
        "UPDATE chatmem_summary_job SET transcript = NULL "
        "WHERE status IN ('done', 'failed') AND transcript IS NOT NULL"
    )


def downgrade() -> None:
    pass
