"""Mutation testing of chatmem's security core; run it as `bin/mutate [--quick] [target ...]`.

For each target module, mutmut (configured under `[tool.mutmut]` in pyproject.toml)
mutates the module's functions in a scratch copy of the project and runs the
target's focused tests against every mutant. mutmut leaves module-level
constants and regexes alone, so three more kinds of mutant run against the same
focused tests, each a change of the module's text: a small table of hand-made
mutants (one snippet replaced by another); every module-level regex changed by a
few regex operators (a count bound moved, an optional part made required, a
class item, an alternative or a lookaround dropped, an anchor dropped); and for
redaction, each secret shape dropped, and each of its anchors dropped.

A mutant the tests do not kill must be listed in tests/MUTANTS.md with the
reason it is equivalent. The command fails when a survivor is not listed, or
when a target scores under 90%.

`--quick` runs a sample for CI: a few of mutmut's mutants and of the others per
target, drawn from a seed it prints (a new one each run; `--seed N` replays a
run), mutmut's switched on one at a time in its trampolined module by
MUTANT_UNDER_TEST, without mutmut's coverage pass and clean run (which alone
cost two runs of the focused tests). The sample is held to the same 90%.

`--postgres URL` (or CHATMEM_MUTATE_DATABASE_URL) runs the focused tests on
PostgreSQL: each runner gets its own database on that server, named after the
URL's with `_mutate0`/`_mutate1` added, and mutmut runs one mutant at a time.

This is the entry point; the work is done by the package bin/mutation/, one
module per part (its docstring lists them).
"""

from __future__ import annotations

import sys
from pathlib import Path

# The package sits beside this script; a test loads this file by its path.
HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from mutation.cli import main  # noqa: E402
from mutation.hand_made import HAND_MADE  # noqa: E402
from mutation.targets import TARGETS  # noqa: E402

__all__ = ["HAND_MADE", "TARGETS", "main"]

if __name__ == "__main__":
    sys.exit(main(__doc__ or ""))
