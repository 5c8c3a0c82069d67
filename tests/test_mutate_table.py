"""bin/mutate's table still names the code it mutates (issue 27: modules move).

A target whose module moved, or a hand-made mutant whose text is no longer in
its target's module, would stop `bin/mutate` at run time; a row of
tests/MUTANTS.md under a heading naming no module would never match a
survivor again. This checks all three without running mutmut.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.db_free


def _mutate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chatmem_bin_mutate", ROOT / "bin" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_target_names_a_module_and_tests_that_exist() -> None:
    mutate = _mutate()
    missing = [
        path
        for target in mutate.TARGETS.values()
        for path in (target.path, *target.tests)
        if not (ROOT / path).is_file()
    ]
    assert missing == []


def test_every_hand_made_mutant_finds_its_text_once_in_its_target() -> None:
    mutate = _mutate()
    found = {
        (mutant.target, mutant.original): (
            (ROOT / mutate.TARGETS[mutant.target].path).read_text().count(mutant.original)
            if mutant.target in mutate.TARGETS
            else None
        )
        for mutant in mutate.HAND_MADE
    }
    assert {key: count for key, count in found.items() if count != 1} == {}


def test_every_heading_of_the_equivalents_names_a_module() -> None:
    headings = re.findall(
        r"^## (chatmem/\S+\.py)", (ROOT / "tests" / "MUTANTS.md").read_text(), re.M
    )
    assert headings, "tests/MUTANTS.md lists its modules under '## chatmem/...' headings"
    assert [h for h in headings if not (ROOT / h).is_file()] == []
