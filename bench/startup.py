"""What a `flask chatmem …` command costs to start, against what any Flask +
Flask-SQLAlchemy app pays to import its framework, both measured in the same run.

Each figure is the CPU time (user + system) of a fresh interpreter, the median
over interleaved rounds: on a shared machine the wall clock mostly measures the
neighbours. `--root` measures another checkout (an older commit, for a before
and after) with the same baseline.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ["-c", "import flask, flask_sqlalchemy, sqlalchemy.orm"]
COMMANDS = {
    "import chatmem.demo": ["-c", "import chatmem.demo"],
    "flask chatmem --help": [
        "-m",
        "flask",
        "--app",
        "chatmem.demo:create_app()",
        "chatmem",
        "--help",
    ],
}


def cpu(args: list[str], root: Path, instance: str) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "DEMO_INSTANCE_PATH": instance,  # a migrated SQLite file: a command's usual case
        "CHATMEM_PROVIDER": "none",
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *args], env=env, cwd=instance, capture_output=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument(
        "--root",
        type=lambda path: Path(path).resolve(),
        action="append",
        help="a checkout to measure (repeat it to compare, interleaved); default: this one",
    )
    args = parser.parse_args()
    roots: list[Path] = args.root or [ROOT]
    with tempfile.TemporaryDirectory() as scratch:
        instances = {root: tempfile.mkdtemp(dir=scratch) for root in roots}
        for root in roots:  # creates and migrates each checkout's SQLite file
            cpu(COMMANDS["flask chatmem --help"], root, instances[root])
        base_runs: list[float] = []
        runs: dict[tuple[Path, str], list[float]] = {(r, n): [] for r in roots for n in COMMANDS}
        for _ in range(args.rounds):
            base_runs.append(cpu(BASELINE, roots[0], instances[roots[0]]))
            for name, command in COMMANDS.items():
                for root in roots:
                    runs[root, name].append(cpu(command, root, instances[root]))
    base = statistics.median(base_runs)
    for (root, name), values in runs.items():
        value = statistics.median(values)
        print(
            f"startup {name}: {value / base:.2f}x  ({value * 1e3:.0f} ms CPU vs "
            f"{base * 1e3:.0f} ms to import flask + flask_sqlalchemy; median of "
            f"{args.rounds}; {root})",
            flush=True,
        )


if __name__ == "__main__":
    main()
