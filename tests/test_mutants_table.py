"""tests/MUTANTS.md lists only code that exists: a row whose code moved or changed goes.

`bin/mutate` matches a survivor to a row by the function and the exact
changed code, so a stale row no longer excuses anything; it only misleads
a reader into thinking a mutant was judged equivalent. This keeps every row
pointing at the module, the function and the code it names.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bin"))

from mutation.regexes import regex_literals  # noqa: E402
from mutation.report import listed_equivalents  # noqa: E402

ROWS = sorted(listed_equivalents())


def _patterns(path: Path) -> list[str]:
    """Each module-level regex literal, as the regex operators of `bin/mutate` see it."""
    return [str(node.value) for node in regex_literals(path.read_text())]


def _folded(path: Path) -> str:
    return " ".join(line.strip() for line in path.read_text().splitlines())


def test_the_table_has_rows() -> None:
    assert len(ROWS) > 100


@pytest.mark.parametrize(("module", "function", "original", "mutated"), ROWS)
def test_each_row_names_code_that_exists(
    module: str, function: str, original: str, mutated: str
) -> None:
    path = ROOT / module
    assert path.is_file(), f"{module}: no such module"
    if function == "module regex":
        assert any(original in pattern for pattern in _patterns(path)), (
            f"{module}: no module-level regex holds {original!r}"
        )
        return
    source = path.read_text()
    assert original in source or original in _folded(path), (
        f"{module}: {function} no longer holds {original!r}"
    )
    name = function.rsplit(".", 1)[-1]
    assert re.search(rf"^\s*(?:async\s+)?def {re.escape(name)}\(", source, re.M), (
        f"{module}: no function {function}"
    )
