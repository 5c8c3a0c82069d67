"""The command: the targets chosen, each one's mutants run and scored, the summary."""

from __future__ import annotations

import argparse
import os
import random
import time

from . import scratch
from .hand_made import HAND_MADE
from .mutmut_runs import mutant_names, run_mutmut, run_sample, selected
from .regexes import regex_mutants, shape_mutants
from .report import is_listed, listed_equivalents
from .targets import ROOT, TARGETS, resolve
from .text_runs import run_hand_made

PASS_MARK = 0.90
QUICK_MUTMUT = 8  # mutmut mutants per target in --quick
QUICK_HAND = 2  # hand-made mutants per target in --quick


def main(about: str) -> int:
    """Run the command; `about` is its description (bin/mutate.py's docstring)."""
    # The scratch copies hold no corpora: their tests read the checkout's.
    os.environ.setdefault("CHATMEM_CORPORA", str((ROOT / ".corpora").resolve()))
    parser = argparse.ArgumentParser(description=about.splitlines()[0])
    parser.add_argument("targets", nargs="*", help=f"any of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--quick", action="store_true", help="a sample, for CI")
    parser.add_argument(
        "--seed", type=int, help="the sample's seed (--quick), to replay a run: it prints its seed"
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        default=os.environ.get("CHATMEM_MUTATE_DATABASE_URL", ""),
        help="run the focused tests on this PostgreSQL server (one database per runner, "
        "named after the URL's); default $CHATMEM_MUTATE_DATABASE_URL, else SQLite",
    )
    options = parser.parse_args()
    scratch.POSTGRES_URL = options.postgres
    names = [resolve(t) for t in options.targets] or list(TARGETS)
    listed = listed_equivalents()
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
    if options.quick:
        print(f"quick sample, seed {seed} (replay: --quick --seed {seed})", flush=True)
    print(f"database: {'PostgreSQL' if scratch.POSTGRES_URL else 'SQLite'}", flush=True)
    started = time.monotonic()
    failed = False
    summary = []
    for name in names:
        target = TARGETS[name]
        began = time.monotonic()
        hand = [m for m in HAND_MADE if m.target == name]
        hand += regex_mutants(name, target.path) + shape_mutants(name, target.path)
        keys = None
        if options.quick:
            rng = random.Random(f"{seed}-{name}")
            every = selected(target, mutant_names(target.path))
            keys = sorted(rng.sample(every, min(QUICK_MUTMUT, len(every))))
            hand = rng.sample(hand, min(QUICK_HAND, len(hand)))
        print(f"== {name}: {target.path}, tests {' '.join(target.tests)}", flush=True)
        outcomes = run_mutmut(name, target) if keys is None else run_sample(name, target, keys)
        outcomes += run_hand_made(name, target, hand)
        killed = sum(o.killed for o in outcomes)
        score = killed / len(outcomes) if outcomes else 1.0
        survivors = [o for o in outcomes if not o.killed]
        unlisted = [o for o in survivors if not is_listed(target, o, listed)]
        for o in survivors:
            mark = "equivalent (MUTANTS.md)" if is_listed(target, o, listed) else "NOT LISTED"
            print(f"  {o.status}: {o.name} [{o.function}] {mark}")
            print(f"      - {o.removed}\n      + {o.added}")
        line = (
            f"{name:<11} {score:7.1%}  {killed}/{len(outcomes)} killed, "
            f"{len(survivors) - len(unlisted)} listed equivalent, {len(unlisted)} unlisted "
            f"({time.monotonic() - began:.0f} s)"
        )
        print(line, flush=True)
        summary.append(line)
        # The sample is held to the same mark: a few mutants, so one survivor can fail it.
        if unlisted or score < PASS_MARK:
            failed = True
    print("\n== mutation scores" + (f" (quick sample, seed {seed})" if options.quick else ""))
    print("\n".join(summary))
    print(f"total time {time.monotonic() - started:.0f} s")
    return 1 if failed else 0
