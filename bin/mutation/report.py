"""What became of each mutant, and the equivalent mutants listed in tests/MUTANTS.md."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .targets import ROOT, Target


@dataclass
class Outcome:
    name: str  # mutmut's key, or "hand-made" + a number
    function: str  # "compose", "ToolRegistry._call", or "module constant"
    status: str  # killed, survived, no tests, timeout, ...
    removed: str = ""  # the original code, one line
    added: str = ""  # the mutated code, one line

    @property
    def killed(self) -> bool:
        return self.status in ("killed", "timeout", "caught by type check")


def diff_sides(diff: str) -> tuple[str, str]:
    lines = diff.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    return fold(removed), fold(added)


def fold(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines)


Listed = set[tuple[str, str, str, str]]


def listed_equivalents() -> Listed:
    """(module, function, original, mutated) of each table row in tests/MUTANTS.md.

    A table belongs to the module its `## chatmem/...` heading names.
    """
    text = (ROOT / "tests" / "MUTANTS.md").read_text()
    rows = set()
    module = ""
    for line in text.splitlines():
        if line.startswith("## "):
            module = line[3:].split()[0]
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        if len(cells) < 3 or not cells[1].startswith("`"):
            continue
        original, arrow, mutated = cells[1].partition("` → `")
        if arrow:
            rows.add((module, cells[0].strip("`"), original[1:], mutated[:-1]))
    return rows


def is_listed(target: Target, outcome: Outcome, listed: Listed) -> bool:
    return (target.path, outcome.function, outcome.removed, outcome.added) in listed
