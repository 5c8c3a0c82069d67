"""The review desk's evidence: what it adds to the Pending tab at 10,000 active entries.

    python bench/desk.py [--database-url postgresql+psycopg://...]

10,000 approved entries and 50 pending proposals written from the shop
vocabulary of bench/screening.py (common words often, rare ones seldom).
The measured request is `GET /chatmem/memory?tab=pending` (a full page of 50
proposals, each with its evidence panel: similar entries through the
trigram index, its session's ledger lines); the baseline is the same
request with the evidence stubbed out, in the same run, request by request.
Goal: the evidence at most doubles the Pending page.
"""

from __future__ import annotations

import random
from datetime import datetime

from common import arguments, compare, engine_name, line, migrated_app, ms
from screening import sentence
from sqlalchemy import insert

from chatmem.http.screen import desk_view
from chatmem.memory import switches
from chatmem.memory.fields import text_key
from chatmem.memory.models import Guidance
from tests.screen_helpers import login

ACTIVE = 10_000
PENDING = 50


def _rows(rng: random.Random, count: int, status: str, label: str) -> list[dict[str, object]]:
    when = datetime(2026, 1, 1)
    rows = []
    for i in range(count):
        text = f"{sentence(rng)} ({label} {i})"
        rows.append(
            {
                "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
                "title": text[:60],
                "text": text,
                "text_key": text_key(text),
                "status": status,
                "enabled": True,
                "origin": "admin" if status == "publish" else "agent",
                "created_at": when,
                "updated_at": when,
                "approved_at": when if status == "publish" else None,
                "version": 1,
            }
        )
    return rows


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    rng = random.Random(7)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        db.session.execute(insert(Guidance), _rows(rng, ACTIVE, "publish", "#"))
        db.session.execute(insert(Guidance), _rows(rng, PENDING, "pending", "proposal"))
        switches.bump_revision(db.session())
        db.session.commit()
        db.session.remove()

    real = desk_view.evidence.for_entries
    with app.test_client() as client:
        login(client, "admin")

        def pending_page() -> None:
            with client.get("/chatmem/memory?tab=pending") as response:
                assert response.status_code == 200

        def without_evidence() -> None:
            desk_view.evidence.for_entries = lambda db, entries: {}  # type: ignore[assignment]
            try:
                pending_page()
            finally:
                desk_view.evidence.for_entries = real  # type: ignore[assignment]

        pending_page()  # warm the block, the screening index and the templates
        ratio, m, b = compare(pending_page, without_evidence, rounds=args.rounds, per_round=3)
    line(
        f"pending tab evidence at {ACTIVE:,} active [{name}]",
        f"{ratio:.2f}x",
        f"{PENDING} proposals with evidence {ms(m)} vs without {ms(b)}; "
        f"median of {args.rounds} rounds x 3 requests",
        "<= 2x",
    )
    with app.app_context():
        app.extensions["test_host"]["db"].engine.dispose()


if __name__ == "__main__":
    main()
