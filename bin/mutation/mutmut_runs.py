"""mutmut's mutants: a full `mutmut run` of a target, or a sample without its own passes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from . import scratch
from .report import Outcome, diff_sides
from .scratch import RUN_TIMEOUT, WORK, chdir, copies, pytest_env, scratch_copy, toml_list
from .targets import ROOT, Target


def mutant_names(path: str) -> list[str]:
    """Every mutant mutmut makes of `path`, by its key (`chatmem.tools.x_validate__mutmut_3`)."""
    from mutmut.mutation.file_mutation import mutate_file_contents
    from mutmut.utils.format_utils import get_mutant_name

    with chdir(ROOT):
        mutated = mutate_file_contents(path, (ROOT / path).read_text())
    return [get_mutant_name(Path(path), name) for name in mutated.mutant_names]


def function_of(key: str) -> str:
    """`chatmem.tools.xǁToolRegistryǁ_call__mutmut_3` -> `ToolRegistry._call`."""
    mangled = key.rpartition(".")[2].partition("__mutmut_")[0]
    if mangled.startswith("x_"):
        return mangled[2:]
    return ".".join(part for part in mangled.split("ǁ")[1:] if part)


def selected(target: Target, keys: list[str]) -> list[str]:
    if target.functions is None:
        return keys
    prefixes = tuple(f".{f}__mutmut_" for f in target.functions)
    return [k for k in keys if any(p in k for p in prefixes)]


def run_mutmut(name: str, target: Target) -> list[Outcome]:
    """Run mutmut on `target`: every mutant of its selected functions."""
    work = WORK / name
    settings = (
        f"only_mutate = {toml_list([target.path])}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(target.tests)}\n"
    )
    scratch_copy(work, settings)
    module = target.path[:-3].replace("/", ".")
    patterns = [f"{module}.{f}__mutmut_*" for f in target.functions or ()]
    log = work / "mutmut.log"
    mutmut = Path(sys.executable).with_name("mutmut")
    with log.open("wb") as out:
        done = subprocess.run(
            # One child at a time on PostgreSQL: mutmut's children would share the database.
            [
                str(mutmut),
                "run",
                *(["--max-children", "1"] if scratch.POSTGRES_URL else []),
                *patterns,
            ],
            cwd=work,
            env=pytest_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        sys.exit(f"mutmut failed on {target.path} (exit {done.returncode}); see {log}")
    meta = json.loads((work / "mutants" / f"{target.path}.meta").read_text())
    wanted = set(selected(target, list(meta["exit_code_by_key"])))
    from mutmut.stats import status_by_exit_code

    outcomes = []
    for key, code in meta["exit_code_by_key"].items():
        if key not in wanted:
            continue
        outcome = Outcome(key, function_of(key), status_by_exit_code[code])
        if not outcome.killed:
            outcome.removed, outcome.added = mutmut_diff(work, key, target.path)
        outcomes.append(outcome)
    return outcomes


def mutmut_diff(work: Path, key: str, path: str) -> tuple[str, str]:
    """The changed lines of a mutant, each side folded onto one line."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    with chdir(work):
        return diff_sides(get_diff_for_mutant(key, path=path))


# Imports pytest, the conftest and the test modules once, then forks a child per
# mutant (as mutmut's own runner does): a child costs its tests, not a start-up.
WARM_RUNNER = """
import os, signal, sys
import pytest
tests = ["-p", "no:cacheprovider", *sys.argv[2:]]
pytest.main(["--collect-only", "-qq", *tests])
for key in sys.stdin.read().split():
    pid = os.fork()
    if pid == 0:
        os.environ["MUTANT_UNDER_TEST"] = key
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 1)
        os.dup2(quiet, 2)
        signal.alarm(int(sys.argv[1]))
        os._exit(int(pytest.main(["-x", "-q", *tests])))
    print("exit", key, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]), flush=True)
"""


def run_sample(name: str, target: Target, keys: list[str]) -> list[Outcome]:
    """mutmut's mutants of `keys`, without mutmut's coverage pass and clean run (two runs
    of the focused tests): its trampolined module in a scratch copy, each mutant switched
    on by MUTANT_UNDER_TEST in a child of a warm pytest process."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant
    from mutmut.mutation.file_mutation import mutate_file_contents

    with chdir(ROOT):
        trampolined = mutate_file_contents(target.path, (ROOT / target.path).read_text()).code
    shares = [["fail", *keys[0::2]], keys[1::2]]  # "fail": every mutated function raises
    runners = []
    for slot, (copy, share) in enumerate(zip(copies(name), shares, strict=True)):
        (copy / target.path).write_text(trampolined)
        command = [sys.executable, "-c", WARM_RUNNER, str(RUN_TIMEOUT), *target.tests]
        runner = subprocess.Popen(
            command, cwd=copy, env=pytest_env(slot), stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        runners.append((runner, share))
    for runner, share in runners:  # both runners get their share before either is read
        assert runner.stdin is not None
        runner.stdin.write("\n".join(share).encode())
        runner.stdin.close()
    codes: dict[str, int] = {}
    for runner, _share in runners:
        assert runner.stdout is not None
        out = runner.stdout.read()
        runner.wait()
        results = (line.split() for line in out.decode().splitlines())
        codes.update((words[1], int(words[2])) for words in results if words[:1] == ["exit"])
    missing = set(keys) - set(codes)
    if missing or codes.pop("fail", 0) == 0:
        sys.exit(f"the sample of {target.path} did not run: {sorted(missing) or 'fail passed'}")
    outcomes = []
    for key in keys:
        code = codes[key]
        status = "survived" if code == 0 else "timeout" if code == -signal.SIGALRM else "killed"
        if code in (4, 5):
            sys.exit(f"pytest could not run {target.tests}: exit {code}")
        outcome = Outcome(key, function_of(key), status)
        if not outcome.killed:
            diff = get_diff_for_mutant(key, source=trampolined, path=target.path)
            outcome.removed, outcome.added = diff_sides(diff)
        outcomes.append(outcome)
    return outcomes
