"""the audit trail proves itself: each event sealed to the one before it

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-06 18:40:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from chatmem.memory import audit

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_EVENTS = sa.table(
    "chatmem_guidance_event",
    sa.column("id", sa.Integer),
    sa.column("guidance_id", sa.Integer),
    sa.column("action", sa.String),
    sa.column("actor_id", sa.String),
    sa.column("at", sa.DateTime),
    sa.column("detail", sa.JSON),
    sa.column("seal", sa.String),
)


def upgrade() -> None:
    with op.batch_alter_table("chatmem_guidance_event") as batch:
        batch.add_column(sa.Column("text_sha256", sa.String(64), nullable=True))
        batch.add_column(sa.Column("seal", sa.String(64), nullable=True))
    # The events written before: sealed as they stand now, without a text binding
    # (the text an old event saw was not kept); the binding starts with the next event.
    bind = op.get_bind()
    rows = bind.execute(sa.select(_EVENTS).order_by(_EVENTS.c.guidance_id, _EVENTS.c.id)).mappings()
    previous: dict[int | None, str] = {}
    for row in rows.all():
        seal = audit.seal_of(
            action=row["action"],
            actor_id=row["actor_id"],
            at=row["at"],
            detail=row["detail"],
            text_sha256=None,
            previous=previous.get(row["guidance_id"], audit.GENESIS),
        )
        previous[row["guidance_id"]] = seal
        bind.execute(sa.update(_EVENTS).where(_EVENTS.c.id == row["id"]).values(seal=seal))


def downgrade() -> None:
    with op.batch_alter_table("chatmem_guidance_event") as batch:
        batch.drop_column("seal")
        batch.drop_column("text_sha256")
