"""The poisoning screen: what screening adds to one `remember` at 10,000 active entries.

    python bench/screening.py [--database-url postgresql+psycopg://...]

10,000 approved, enabled entries written from a shop's vocabulary (common
words often, rare ones seldom, as real text has them). The measured call is
`remember` through `memory.call_tool` with the screen (wording checks, the
comparison with active guidance through the per-revision index, the
rejected-before query); the baseline is the same call with the screen
replaced by one that finds nothing, in the same run, call by call. Each call
proposes a new text, so both write a new pending entry. Also the index
builds, as multiples of one baseline `remember`: the first (once per worker)
and a rebuild after a guidance change (which reuses the unchanged entries).
Goal: screening at most doubles a `remember`.
"""

from __future__ import annotations

import itertools
import random
import re
import statistics
import time
from datetime import datetime

from common import arguments, compare, engine_name, line, migrated_app, ms, us
from sqlalchemy import insert

from chatmem.memory import screening, switches
from chatmem.memory.fields import text_key
from chatmem.memory.models import Guidance
from tests.hostapp import USERS

ACTIVE = 10_000
WORDS = re.findall(
    r"\w+",
    "page post header footer menu theme template checkout cart order invoice customer "
    "shipping return refund price discount coupon product category tag image gallery slider "
    "widget sidebar search login account newsletter banner stock size colour paper notebook "
    "journal pen wrap gift sale season launch blog guide review rating comment author editor "
    "draft publish schedule cache deploy staging backup migration worker cron log error "
    "redirect slug link button form field label title heading caption summary date price "
    "tax vat euro delivery courier warehouse supplier label barcode sku bundle set pack",
)
TEMPLATES = [
    "The {a} {b} is on page {n}.",
    "Never change the {a} {b} without asking the {c} team.",
    "Use the {a} {b} for every {c}.",
    "Do not {verb} the {a} {b} on the {c} page.",
    "Always {verb} the {a} cache after editing the {b} {c}.",
    "The {a} for {b} {c} {n} lives in the {d} folder.",
]
VERBS = ["edit", "rename", "delete", "move", "clear", "check"]


def _word(rng: random.Random) -> str:
    """A Zipf-ish draw: a few words are everywhere, most are rare."""
    rank = min(int(rng.paretovariate(1.1)), 5000)
    return WORDS[rank - 1] if rank <= len(WORDS) else f"item{rank}"


def sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(
        a=_word(rng),
        b=_word(rng),
        c=_word(rng),
        d=_word(rng),
        n=rng.randint(1, 9999),
        verb=rng.choice(VERBS),
    )


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    name = engine_name(app)
    rng = random.Random(7)
    with app.app_context():
        host = app.extensions["test_host"]
        db, memory = host["db"], host["memory"]
        when = datetime(2026, 1, 1)
        rows = []
        for i in range(ACTIVE):
            text = f"{sentence(rng)} (#{i})"
            rows.append(
                {
                    "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
                    "title": text[:60],
                    "text": text,
                    "text_key": text_key(text),
                    "status": "publish",
                    "enabled": True,
                    "origin": "admin",
                    "created_at": when,
                    "updated_at": when,
                    "approved_at": when,
                    "version": 1,
                }
            )
        db.session.execute(insert(Guidance), rows)
        switches.bump_revision(db.session())
        db.session.commit()

        editor = USERS["editor"]
        texts = (f"{sentence(rng)} (proposal {i})" for i in itertools.count())

        def screened() -> None:
            memory.call_tool("remember", {"type": "fact", "text": next(texts)}, user=editor)

        real_screen = memory.screen

        def unscreened() -> None:
            memory.screen = lambda fields, **_kw: []
            try:
                screened()
            finally:
                memory.screen = real_screen

        screened()  # the one cold build of the index, outside the timing
        ratio, m, b = compare(screened, unscreened, rounds=args.rounds, per_round=50)
        line(
            f"screening at {ACTIVE:,} active [{name}]",
            f"{ratio:.2f}x",
            f"remember with the screen {us(m)} vs without {us(b)}; "
            f"median of {args.rounds} rounds x 50 calls",
            "<= 2x",
        )

        first, rebuild = [], []
        for _ in range(args.rounds):
            start = time.perf_counter()
            index = screening.ActiveIndex.load(db.session(), memory.server_name)
            first.append(time.perf_counter() - start)
            start = time.perf_counter()
            screening.ActiveIndex.load(db.session(), memory.server_name, index)
            rebuild.append(time.perf_counter() - start)
        for figure, times, when in (
            ("first build", first, "once per worker"),
            ("rebuild", rebuild, "after a guidance change, reusing the unchanged entries"),
        ):
            took = statistics.median(times)
            line(
                f"screening index {figure} at {ACTIVE:,} active [{name}]",
                f"{took / b:.1f}x one remember",
                f"{ms(took)} vs remember without the screen {us(b)}; {len(index):,} entries, "
                f"{len(index.by_word):,} words; {when}",
            )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
