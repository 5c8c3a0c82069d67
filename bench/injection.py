"""Injection: what `system_context()` costs a new conversation.

    python bench/injection.py [--database-url postgresql+psycopg://...]

Figures: system_context() with 10,000 approved entries vs one primary-key
read on the same database (goal <= 1.5x), and the cold rebuild of the block
and guardrail index at 10,000 entries vs the same primary-key read.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta

from common import arguments, compare, engine_name, line, migrated_app, ms, timed, us
from sqlalchemy import insert, select

from chatmem.memory import switches
from chatmem.memory.models import Guidance

ENTRIES = 10_000


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    with app.app_context():
        host = app.extensions["test_host"]
        db, memory = host["db"], host["memory"]
        start = datetime(2026, 1, 1)
        types = ("guardrail", "fact", "convention", "instruction")
        rows = [
            {
                "type": types[i % 4],
                "title": f"Entry {i}",
                "text": f"Approved guidance number {i}: keep the checkout page fast.",
                "text_key": f"{i:064d}",
                "status": "publish",
                "enabled": True,
                "origin": "admin",
                "severity": "block" if i % 4 == 0 else None,
                "target": f"post_id:{100_000 + i}" if i % 4 == 0 else None,
                "created_at": start,
                "updated_at": start,
                "approved_at": start + timedelta(seconds=i),
                "version": 1,
            }
            for i in range(ENTRIES)
        ]
        db.session.execute(insert(Guidance), rows)
        switches.bump_revision(db.session())
        db.session.commit()

        def pk_read() -> object:
            return db.session.execute(
                select(Guidance.id, Guidance.title).where(Guidance.id == 5000)
            ).first()

        assert memory.system_context().startswith("## Project memory")
        ratio, m, b = compare(memory.system_context, pk_read, rounds=args.rounds, per_round=500)
        line(
            f"injection [{name}]",
            f"{ratio:.2f}x",
            f"system_context() with {ENTRIES:,} approved entries {us(m)} vs one primary-key "
            f"read {us(b)}; median of {args.rounds} rounds x 500 calls",
            "<= 1.5x",
        )

        state = app.extensions["chatmem"]

        def cold() -> object:
            state.cache.revision = -1  # what a revision bump does to every worker
            return memory.system_context()

        rebuild = statistics.median(timed(cold, args.rounds))
        base = statistics.median(timed(pk_read, 500))
        line(
            f"injection cold rebuild [{name}]",
            ms(rebuild),
            f"block + guardrail index rebuilt from {ENTRIES:,} entries, median of "
            f"{args.rounds}; = {rebuild / base:,.0f}x one primary-key read ({us(base)})",
        )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
