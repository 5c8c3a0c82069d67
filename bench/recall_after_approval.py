"""The first question after an approval: what a worker pays to answer a
topic when the revision has just moved, against the same question once warm.

    python bench/recall_after_approval.py [--database-url postgresql+psycopg://...]

10,000 approved entries. Each round approves one more entry through the
Python API (the revision moves, as on every approval), then calls the recall
tool with a topic twice, as the editor: the first call rebuilds what the
revision made stale in this worker (the approved list, the ranked index),
the second is the steady call, the baseline. Reported: both p50s over the
rounds and their ratio.
"""

from __future__ import annotations

import statistics
import time
from datetime import datetime, timedelta
from typing import Any

from common import USERS, arguments, engine_name, line, migrated_app, ms
from sqlalchemy import insert

from chatmem.memory import guidance, switches
from chatmem.memory.models import Guidance

ENTRIES = 10_000
TOPIC = {"topic": "kubernetes deploys"}


def seed(db: Any) -> None:
    start = datetime(2026, 1, 1)
    rows = [
        {
            "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
            "title": f"Entry {i}",
            "text": f"Guidance {i}: keep the checkout page fast"
            + (" on kubernetes" if i % 500 == 0 else ""),
            "text_key": f"{i:064d}",
            "status": "publish",
            "enabled": True,
            "origin": "admin",
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


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    editor, admin = USERS["editor"], USERS["admin"]
    first, steady = [], []
    with app.app_context():
        host = app.extensions["test_host"]
        db, memory = host["db"], host["memory"]
        seed(db)
        memory.call_tool("recall", TOPIC, user=editor)  # the worker's first build, not timed
        for round_ in range(args.rounds):
            text = f"Approved in round {round_}: kubernetes deploys go through staging."
            guidance.admin_add(db.session(), {"type": "fact", "text": text}, actor_id=str(admin.id))
            db.session.commit()
            for times in (first, steady):
                started = time.perf_counter()
                answer = memory.call_tool("recall", TOPIC, user=editor)
                times.append(time.perf_counter() - started)
                assert answer["guidance"], answer
            db.session.remove()
    cold, warm = statistics.median(first), statistics.median(steady)
    line(
        f"recall after an approval [{name}]",
        f"{cold / warm:.0f}x the steady call",
        f"first topic call after the revision moved, p50 {ms(cold)}; the next call {ms(warm)}; "
        f"{ENTRIES:,} approved entries, {args.rounds} rounds",
    )


if __name__ == "__main__":
    main()
