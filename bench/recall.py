"""Recall at scale: `recall(topic=...)` over 100,000 session records and
10,000 guidance entries.

    python bench/recall.py [--database-url postgresql+psycopg://...]

The measured call is the recall tool's query function with a topic (as a
curator sees it: every user's records, and as a user sees its own); the
baseline is the same call without the topic filter (newest 10 sessions and
the approved guidance), on the same data in the same run. p50 and p95 of the
topic call, for a rare, a common and an absent topic; goal p95 <= 20 ms on
SQLite. The same topics through the plain scan (`scan=True`) show what the
index saves. On PostgreSQL the pg_trgm indexes serve the scan's own predicate,
so the plain scan runs with index and bitmap scans turned off (`SET LOCAL`,
in its own transaction): otherwise it is not a scan, and its figure swings
with whatever plan the planner picks.

`--sessions N` seeds fewer session records (default 100,000) when the full
size is too slow on a busy machine.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from common import arguments, engine_name, line, migrated_app, ms, percentile, timed
from sqlalchemy import insert, text

from chatmem.memory.models import Guidance, Session
from chatmem.memory.recall import recall

SESSIONS = 100_000
GUIDANCE = 10_000
PUBLISHED = 200  # a site approves tens to hundreds; the rest are pending, rejected, trashed
VOCABULARY = [
    "checkout",
    "header",
    "footer",
    "page",
    "post",
    "menu",
    "theme",
    "plugin",
    "cache",
    "deploy",
    "staging",
    "price",
    "product",
    "cart",
    "order",
    "invoice",
    "customer",
    "email",
    "template",
    "image",
    "gallery",
    "slider",
    "widget",
    "sidebar",
    "search",
    "login",
    "account",
    "password",
    "shipping",
    "tax",
    "coupon",
    "review",
    "rating",
]


def _text(rng: random.Random, words: int, extra: str = "") -> str:
    return " ".join(rng.choice(VOCABULARY) for _ in range(words)) + extra


@contextmanager
def plain_scan(db: Any) -> Iterator[None]:
    """Within the block, PostgreSQL reads tables whole: no index or bitmap scans.

    `SET LOCAL` lasts until the transaction ends, and the block ends it, so
    the measured (indexed) calls around it keep the planner's own choice.
    """
    db.session.rollback()
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text("SET LOCAL enable_indexscan = off"))
        db.session.execute(text("SET LOCAL enable_bitmapscan = off"))
        db.session.execute(text("SET LOCAL enable_indexonlyscan = off"))
    try:
        yield
    finally:
        db.session.rollback()


def scanned(db: Any, **filters: Any) -> dict[str, Any]:
    """recall()'s reference answer, through a real plain scan."""
    with plain_scan(db):
        return recall(db, scan=True, **filters)


def seed(db: object, rng: random.Random, sessions: int = SESSIONS) -> None:
    start = datetime(2025, 1, 1)
    batch = []
    for i in range(sessions):
        # "kubernetes" is rare (0.1% of sessions); "invoice" is in about half of them
        extra = " moved kubernetes config" if i % 1000 == 7 else ""
        batch.append(
            {
                "id": f"s{i:07d}",
                # ten users; the editor ("2") wrote every tenth record
                "user_id": str(2 + i % 10),
                "user_name": "editor" if i % 10 == 0 else f"user{2 + i % 10}",
                "channel": "chat",
                "started_at": start + timedelta(minutes=i),
                "last_seen_at": start + timedelta(minutes=i),
                "ended_at": start + timedelta(minutes=i),
                "recorded_at": start + timedelta(minutes=i),
                "summary": _text(rng, 25, extra),
                "summary_auto": False,
                "digest": f"3 calls: 3 ok, 0 blocked, 0 failed.\n- update-post {_text(rng, 30)}",
                "change_count": 3,
            }
        )
        if len(batch) == 5000:
            db.session.execute(insert(Session), batch)  # type: ignore[attr-defined]
            batch = []
    if batch:
        db.session.execute(insert(Session), batch)  # type: ignore[attr-defined]
    rows = []
    for i in range(GUIDANCE):
        status = "publish" if i < PUBLISHED else rng.choice(["pending", "rejected", "trash"])
        rows.append(
            {
                "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
                "title": _text(rng, 6),
                "text": _text(rng, 20, " kubernetes" if i % 500 == 3 else ""),
                "text_key": f"{i:064d}",
                "status": status,
                "enabled": True,
                "origin": "agent",
                "created_at": start,
                "updated_at": start,
                "approved_at": start if status == "publish" else None,
                "version": 1,
            }
        )
    db.session.execute(insert(Guidance), rows)  # type: ignore[attr-defined]
    db.session.commit()  # type: ignore[attr-defined]


def main() -> None:
    args = arguments(
        __doc__ or "",
        lambda parser: parser.add_argument(
            "--sessions", type=int, default=SESSIONS, help="session records to seed"
        ),
    )
    sessions = args.sessions
    app = migrated_app(args.database_url)
    name = engine_name(app)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        seed(db, random.Random(1), sessions)
        if name == "postgresql":
            db.session.execute(text("ANALYZE chatmem_session"))
            db.session.execute(text("ANALYZE chatmem_guidance"))
            db.session.commit()
        calls = 40 * args.rounds
        baseline = timed(lambda: recall(db, limit=10), calls)
        base = statistics.median(baseline)
        line(
            f"recall baseline [{name}]",
            ms(base),
            f"recall() without topic, p50 of {calls}: newest 10 of {sessions:,} sessions "
            f"+ {PUBLISHED} approved of {GUIDANCE:,} guidance entries",
        )
        for topic in ("kubernetes", "invoice", "zebra crossing"):
            found = recall(db, topic=topic, limit=10)
            assert found == scanned(db, topic=topic, limit=10)
            samples: list[float] = []
            for _ in range(args.rounds):  # interleave with the baseline, round by round
                samples += timed(lambda t=topic: recall(db, topic=t, limit=10), 40)
                baseline += timed(lambda: recall(db, limit=10), 40)
            base = statistics.median(baseline)
            p50, p95 = statistics.median(samples), percentile(samples, 95)
            with plain_scan(db):
                scan = timed(lambda t=topic: recall(db, topic=t, limit=10, scan=True), 10)
            line(
                f"recall topic={topic!r} [{name}]",
                f"p50 {ms(p50)}, p95 {ms(p95)}; {p50 / base:.2f}x the baseline",
                f"{len(found['sessions'])} sessions + {found['guidance_total']} guidance found; "
                f"baseline p50 {ms(base)}; plain scan p50 {ms(statistics.median(scan))}",
                "p95 <= 20 ms (SQLite)",
            )
        # The default for a non-curator: its own records only (one user in ten here).
        for topic in (None, "kubernetes", "invoice", "zebra crossing"):
            found = recall(db, topic=topic, limit=10, user_id="2")
            assert found == scanned(db, topic=topic, limit=10, user_id="2")
            samples, baseline = [], []
            for _ in range(args.rounds):
                samples += timed(lambda t=topic: recall(db, topic=t, limit=10, user_id="2"), 40)
                baseline += timed(lambda: recall(db, limit=10), 40)
            base = statistics.median(baseline)
            p50, p95 = statistics.median(samples), percentile(samples, 95)
            line(
                f"recall own records topic={topic!r} [{name}]",
                f"p50 {ms(p50)}, p95 {ms(p95)}; {p50 / base:.2f}x the baseline",
                f"{len(found['sessions'])} of the editor's sessions found (a tenth of "
                f"{sessions:,}); baseline p50 {ms(base)}",
                "p95 <= 20 ms (SQLite)",
            )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
