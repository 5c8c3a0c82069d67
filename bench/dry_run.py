"""Dry run: what a guardrail target would have refused, at 100,000 ledger rows.

    python bench/dry_run.py [--database-url postgresql+psycopg://...]

100,000 ledger rows in the window (20 tools; post ids 1-5,000, each post of
one of 10 post types, each by one of 50 authors), then `memory.dry_run(target)`
for a rare post id, a common tool, a post type, an absent post id and an
author's label (`target_labels`: a dict lookup, asked once per distinct
call, and here every call is distinct; then with `reads=("post_id",)`, once
per post), against the naive dry run:
every row of the window read and put through the same matcher. Goal: well
under a second at this size (SPEC §6), so the ratio and the absolute time
are both printed.
"""

from __future__ import annotations

import random
from datetime import timedelta

from common import arguments, compare, engine_name, line, migrated_app, ms
from sqlalchemy import insert, select

from chatmem.memory.guardrails.dry_run import _refuses
from chatmem.memory.guardrails.index import GuardrailIndex, Rule
from chatmem.memory.models import LedgerEntry, utcnow

ROWS = 100_000
TOOLS = [f"tool-{i}" for i in range(20)]
TYPES = [f"type{i}" for i in range(10)]


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    rng = random.Random(1)
    with app.app_context():
        host = app.extensions["test_host"]
        db, memory = host["db"], host["memory"]
        memory.post_type_resolver(lambda post_id: TYPES[int(post_id) % len(TYPES)])
        authors = {post_id: f"author:a{post_id % 50}" for post_id in range(1, 5001)}
        memory.target_labels(lambda tool, a: [authors[a["post_id"]]] if "post_id" in a else [])
        now = utcnow()
        for start in range(0, ROWS, 10_000):
            db.session.execute(
                insert(LedgerEntry),
                [
                    {
                        "session_id": f"s{i // 50}",
                        "user_id": "2",
                        "channel": "mcp",
                        "tool": rng.choice(TOOLS),
                        "arguments": {"post_id": rng.randint(1, 5000), "title": f"Title {i}"},
                        "outcome": "ok",
                        "at": now - timedelta(seconds=i * 20),
                    }
                    for i in range(start, start + 10_000)
                ],
            )
        db.session.commit()
        rare = str(db.session.scalars(select(LedgerEntry.arguments)).first()["post_id"])  # type: ignore[index]

        def naive(target: str) -> int:
            index = GuardrailIndex()
            index.add(Rule(0, "", target), memory.server_name)
            since = utcnow() - timedelta(days=30)
            rows = db.session.execute(
                select(LedgerEntry.id, LedgerEntry.tool, LedgerEntry.arguments).where(
                    LedgerEntry.at >= since
                )
            )
            resolve = memory._post_type_resolver
            labels = memory._target_labels
            return sum(1 for r in rows if _refuses(index, r.tool, r.arguments, resolve, labels))

        for label, target in (
            ("rare post id", f"post_id:{rare}"),
            ("common tool", "tool:tool-3"),
            ("post type", "post_type:type4"),
            ("absent post id", "post_id:999999"),
            ("author label", "label:author:a7"),
            ("author label, reads post_id", "label:author:a7"),
        ):
            if label.endswith("reads post_id"):
                memory.target_labels(reads=("post_id",))(memory._target_labels)
            found = memory.dry_run(target).count
            assert found == naive(target), target
            ratio, m, b = compare(
                lambda t=target: memory.dry_run(t),  # type: ignore[misc]
                lambda t=target: naive(t),  # type: ignore[misc]
                rounds=args.rounds,
                per_round=1,
            )
            line(
                f"dry run {label} [{name}]",
                f"{ratio:.3f}x",
                f"memory.dry_run {ms(m)} vs every window row through the matcher {ms(b)}; "
                f"{found:,} of {ROWS:,} rows match; median of {args.rounds} rounds",
                "well under 1 s",
            )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
