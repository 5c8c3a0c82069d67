"""Mutants of a module's text (hand-made, regex, shape), each run by pytest in a scratch copy."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

from .hand_made import HandMutant
from .report import Outcome, fold
from .scratch import RUN_TIMEOUT, copies, pytest_env
from .targets import ROOT, Target


@dataclass(frozen=True)
class Job:
    """One mutant for `run_in_copies`: the module's text, and the mutant to switch on."""

    name: str
    function: str
    source: str
    mutant_under_test: str = ""  # a mutmut key: its trampolines pick that mutant


def run_in_copies(name: str, target: Target, jobs: list[Job]) -> dict[str, str]:
    """Each job's module text written into one of two scratch copies, the focused tests
    run there by `pytest -x`; the status of each job by name."""
    if not jobs:
        return {}
    slots: Queue[Path] = Queue()
    for copy in copies(name):
        slots.put(copy)
    original = (ROOT / target.path).read_text()

    def run(job: Job) -> str:
        copy = slots.get()
        slot = int(copy.name.rpartition("-")[2])
        module = copy / target.path
        module.write_text(job.source)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
                + list(target.tests),
                cwd=copy,
                env={**pytest_env(slot), "MUTANT_UNDER_TEST": job.mutant_under_test},
                capture_output=True,
                timeout=RUN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return "timeout"
        finally:
            module.write_text(original)
            slots.put(copy)
        if done.returncode in (4, 5):
            sys.exit(f"pytest could not run {target.tests}: exit {done.returncode}")
        return "survived" if done.returncode == 0 else "killed"

    with ThreadPoolExecutor(2) as pool:
        return dict(zip((j.name for j in jobs), pool.map(run, jobs), strict=True))


def run_hand_made(name: str, target: Target, mutants: list[HandMutant]) -> list[Outcome]:
    source = (ROOT / target.path).read_text()
    jobs = []
    for number, mutant in enumerate(mutants, 1):
        count = source.count(mutant.original)
        if count != 1:
            sys.exit(f"hand-made mutant: {mutant.original!r} occurs {count}x in {target.path}")
        mutated = source.replace(mutant.original, mutant.mutated)
        jobs.append(Job(f"hand-made {number}", mutant.function, mutated))
    status = run_in_copies(name, target, jobs)
    outcomes = []
    for job, mutant in zip(jobs, mutants, strict=True):
        removed, added = mutant.shown or (mutant.original, mutant.mutated)
        outcome = Outcome(job.name, job.function, status[job.name])
        outcome.removed, outcome.added = fold(removed.splitlines()), fold(added.splitlines())
        outcomes.append(outcome)
    return outcomes
