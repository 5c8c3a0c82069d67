"""the text rules on records stored before them

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 23:55:00

Data only, no schema change. What chatmem now writes through its text rules
(`chatmem.text`, `chatmem.redaction`) was written raw before:

- a finished summary job kept its transcript (a second copy of the chat):
  dropped; a job still to run keeps it, redacted and without hidden text;
- session summaries and digests, which `recall` returns to agents as stored:
  secrets redacted, hidden characters dropped, lookalike letters marked;
- ledger arguments and details: secrets redacted, hidden characters shown.

Guidance is left as it was: the Memory screen shows what it hides with a
warning, and the block and `recall` never pass that on. A downgrade cannot
bring back what was removed, and need not.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_jobs = sa.table(
    "chatmem_summary_job", sa.column("id"), sa.column("status"), sa.column("transcript")
)
_sessions = sa.table("chatmem_session", sa.column("id"), sa.column("summary"), sa.column("digest"))
_ledger = sa.table(
    "chatmem_ledger", sa.column("id"), sa.column("arguments", sa.JSON), sa.column("detail")
)


def upgrade() -> None:
    from chatmem.memory.ledger import DETAIL_MAX, safe_arguments, safe_text
    from chatmem.text import for_agents

    bind = op.get_bind()
    bind.execute(
        _jobs.update()
        .where(_jobs.c.status.in_(("done", "failed")), _jobs.c.transcript.is_not(None))
        .values(transcript=None)
    )
    for job_id, transcript in bind.execute(
        sa.select(_jobs.c.id, _jobs.c.transcript).where(_jobs.c.transcript.is_not(None))
    ).all():
        _update(bind, _jobs, job_id, transcript=(transcript, for_agents(transcript)))
    for session_id, summary, digest in bind.execute(
        sa.select(_sessions.c.id, _sessions.c.summary, _sessions.c.digest)
    ).all():
        summary_now = for_agents(summary) if summary else summary
        digest_now = for_agents(digest) if digest else digest
        _update(
            bind, _sessions, session_id, summary=(summary, summary_now), digest=(digest, digest_now)
        )
    for row_id, arguments, detail in bind.execute(
        sa.select(_ledger.c.id, _ledger.c.arguments, _ledger.c.detail)
    ).all():
        # Cut to length when they were ledgered: nothing more is cut here.
        arguments_now = safe_arguments(arguments, max_len=1_000_000)
        detail_now = safe_text(detail, DETAIL_MAX) if detail else detail
        _update(
            bind, _ledger, row_id, arguments=(arguments, arguments_now), detail=(detail, detail_now)
        )


def _update(
    bind: sa.Connection, table: sa.TableClause, row_id: object, **changes: tuple[object, object]
) -> None:
    """Write the (old, new) pairs of one row, if any changed."""
    if any(old != new for old, new in changes.values()):
        values = {name: new for name, (_old, new) in changes.items()}
        bind.execute(table.update().where(table.c.id == row_id).values(**values))


def downgrade() -> None:
    pass
