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
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from queue import Queue

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutate"
PASS_MARK = 0.90
QUICK_MUTMUT = 8  # mutmut mutants per target in --quick
QUICK_HAND = 2  # hand-made mutants per target in --quick
RUN_TIMEOUT = 300  # seconds; a mutant that hangs its tests this long counts as killed


@dataclass(frozen=True)
class Target:
    path: str
    #: The focused tests: the files that state this module's contract.
    tests: tuple[str, ...]
    #: mutmut function names to score (mangled: `x_name`, `xǁClassǁname`); None: all.
    functions: tuple[str, ...] | None = None


#: What the dispatcher and the tools' rules are pinned by: the one path's tests,
#: plus the input rules and the ask step's grants where they are used.
DISPATCH_TESTS = (
    "tests/test_tools.py",
    "tests/test_dispatch.py",
    "tests/test_ask_severity.py",
    "tests/test_ask_channels.py",
    "tests/test_ledger.py",
    "tests/test_guardrails.py",
    "tests/test_module_switch.py",
)
TOKEN_TESTS = (
    "tests/test_tokens.py",
    "tests/test_token_cap.py",
    "tests/test_token_binding.py",
    "tests/test_token_auth.py",
    "tests/test_token_lists.py",
    # Making, listing and revoking in the browser: the Connect page, the tokens tab.
    "tests/test_connect_tokens.py",
    "tests/test_memory_screen_tokens.py",
    # The per-user mint lock and the list's order on PostgreSQL; the check's cache at its bound.
    "tests/test_token_rules.py",
    "tests/test_token_check_rules.py",
)
#: The ask severity: holding, deciding, granting, on every channel and under races.
ASK_TESTS = (
    "tests/test_ask_severity.py",
    "tests/test_ask_channels.py",
    "tests/test_ask_race.py",
    "tests/test_held.py",
)

GUARDRAIL_TESTS = ("tests/test_guardrails.py", "tests/test_target_labels.py")
#: An entry's life and what its fields may hold: one contract, the same tests.
GUIDANCE_TESTS = (
    "tests/test_guidance.py",
    "tests/test_separation_of_duties.py",
    "tests/test_entry_history.py",
    "tests/test_rejection_memory.py",
    "tests/test_guidance_lifecycle.py",
    "tests/test_guidance_fields.py",
)
REDACTION_TESTS = (
    "tests/test_text.py",
    "tests/test_redaction.py",
    "tests/test_secret_corpus_pins.py",
    "tests/test_secret_keys.py",
    "tests/test_secret_shapes.py",
    "tests/test_redaction_rules.py",
)

#: The one mapping of target -> module and focused tests. Modules move: the paths
#: are here only (the hand-made mutants and tests/MUTANTS.md name the target or
#: the module's path, and `resolve` accepts either).
RANKED_TESTS = ("tests/test_recall_ranked.py", "tests/test_recall_page.py")

TARGETS = {
    # The one path: lookup, switch, authorize, session, guard, run, ledger.
    "dispatch": Target("chatmem/dispatch.py", DISPATCH_TESTS),
    # Tools as data, the registry, canonical arguments, validation, the text rules, messages.
    "tools": Target("chatmem/tools.py", DISPATCH_TESTS),
    # The guardrails package: parsing a target, the one matcher, the compiled index.
    # Label targets are matched there too: their tests are the labels hook's.
    "guardrail_targets": Target("chatmem/memory/guardrails/targets.py", GUARDRAIL_TESTS),
    # `tool:` targets and `chatmem/<name>` calls name a tool the same way.
    "tool_names": Target("chatmem/tool_names.py", (*GUARDRAIL_TESTS, "tests/test_tools.py")),
    "guardrail_matching": Target("chatmem/memory/guardrails/matching.py", GUARDRAIL_TESTS),
    "guardrails": Target("chatmem/memory/guardrails/index.py", GUARDRAIL_TESTS),
    "block": Target("chatmem/memory/block.py", ("tests/test_block.py",)),
    # Recording and the digest; the secret rules (redact, redact_text) are scored elsewhere.
    "ledger": Target(
        "chatmem/memory/ledger.py",
        # Hit counting and the ask outcomes' digest lines are pinned where they are used.
        (
            "tests/test_ledger.py",
            "tests/test_dispatch.py",
            "tests/test_guardrail_hits.py",
            "tests/test_ask_severity.py",
        ),
        ("x_record", "x_entries", "x_digest", "x_describe"),
    ),
    # The text rules of the trust issue: invisible text and lookalike letters; the field check.
    "text": Target("chatmem/text/invisible.py", ("tests/test_text.py",)),
    "text_rules": Target("chatmem/text/rules.py", ("tests/test_text.py",)),
    # The one redaction step (structured arguments, prose), its secret shapes and key names.
    "redaction": Target("chatmem/text/redaction.py", REDACTION_TESTS),
    "secret_shapes": Target("chatmem/text/secret_shapes.py", REDACTION_TESTS),
    "secret_keys": Target("chatmem/text/secret_keys.py", REDACTION_TESTS),
    # API tokens: making (the per-user cap), listing, expiry, revocation.
    "tokens": Target("chatmem/auth/tokens.py", TOKEN_TESTS),
    # The token check: hashing, expiry, binding to the user, the cache.
    "token_check": Target("chatmem/auth/token_check.py", TOKEN_TESTS),
    # What the MCP endpoint and the REST routes share: the bearer check, body and session key.
    "bearer": Target(
        "chatmem/http/bearer.py", ("tests/test_rest_api.py", "tests/test_token_auth.py")
    ),
    # Proposals wait for approval; an edit names the version it read (stale edits refused).
    "guidance": Target("chatmem/memory/guidance.py", GUIDANCE_TESTS),
    # What an entry's fields may hold (the schema, limits, text rules), its title and key.
    "fields": Target("chatmem/memory/fields.py", GUIDANCE_TESTS),
    # What recall returns: published guidance, and a private session's notes only to its owner.
    "recall": Target(
        "chatmem/memory/recall/__init__.py",
        (
            "tests/test_recall_privacy.py",
            "tests/test_recall_index.py",
            "tests/test_recall_topic_index.py",
            "tests/test_recall_page.py",
        ),
    ),
    # Ranked recall: words and stems, BM25, the answer's tiers, order and cursor.
    "ranking": Target("chatmem/memory/recall/ranking.py", RANKED_TESTS),
    "ranked": Target("chatmem/memory/recall/ranked.py", RANKED_TESTS),
    "records": Target(
        "chatmem/memory/recall/records.py",
        (*RANKED_TESTS, "tests/test_recall_index.py", "tests/test_recall_privacy.py"),
    ),
    # The revision cache and the guardrail check that fails closed when a host hook raises.
    "revision": Target(
        "chatmem/revision.py",
        (
            "tests/test_guardrails.py",
            "tests/test_target_labels.py",
            "tests/test_block.py",
            # The screening index each revision rebuilds from the last one.
            "tests/test_screening.py",
            # The block's revision each conversation records (the Cost card).
            "tests/test_costs.py",
            # The approved entries in recall's order, and the ranked index built from them.
            *RANKED_TESTS,
            # Each revision's ranked index reuses the last one's analysis of untouched entries.
            "tests/test_revision_rules.py",
        ),
    ),
    # Held calls of `ask` guardrails: holding, deciding, the grant that lets one run.
    "held": Target("chatmem/memory/held.py", ASK_TESTS),
    # Untrusted input: JSON bodies, sizes, depth, numbers, repeated and yes/no fields.
    "inputs": Target(
        "chatmem/inputs.py",
        (
            "tests/test_inputs.py",
            "tests/test_input_rules.py",
            "tests/test_malformed_input.py",
            "tests/test_boolean_fields.py",
            "tests/test_json_errors.py",
            "tests/test_rest_api.py",
        ),
    ),
    # What a JSON Schema error says: the field, and the rule in a few words.
    "json_schema": Target(
        "chatmem/json_schema.py",
        ("tests/test_malformed_input.py", "tests/test_json_errors.py", "tests/test_tools.py"),
    ),
    # The one door: the token, then the token's and the user's budgets.
    "admission": Target(
        "chatmem/auth/admission.py", ("tests/test_rate_limits.py", "tests/test_token_auth.py")
    ),
    # The audit trail's seals: written under a lock per trail, verified, reseal after erasure.
    "audit": Target(
        "chatmem/memory/audit.py",
        ("tests/test_audit.py", "tests/test_erasure.py", "tests/test_transfer.py"),
    ),
}


@dataclass(frozen=True)
class HandMutant:
    target: str
    original: str
    mutated: str
    function: str = "module constant"
    #: What the report and tests/MUTANTS.md show (removed, added): default the two texts.
    shown: tuple[str, str] | None = None


#: Module-level constants and regexes, which mutmut does not mutate.
HAND_MADE = [
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_-]{1,65}$"'),
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_./-]{1,64}$"'),
    HandMutant("tools", r'r"^[a-zA-Z0-9_-]{1,64}$"', r'r"^[a-zA-Z0-9_-]{2,64}$"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"[+]?\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+]?\d{1,19}"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+-]?\d{1,19}\s*"'),
    HandMutant("tools", r'r"\s*[+]?\d{1,19}\s*"', r'r"\s*[+]?\d{1,20}\s*"'),
    HandMutant(
        "tools",
        "    func: Callable[..., Any]\n    read_only: bool = False\n",
        "    func: Callable[..., Any]\n    read_only: bool = True\n",
    ),
    HandMutant("tools", 'capability: str = "edit_posts"', 'capability: str = "manage_options"'),
    HandMutant("tools", "    memory: bool = False\n", "    memory: bool = True\n"),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("post_id",)'),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("id",)'),
    HandMutant("guardrail_targets", 'ID_KEYS = ("post_id", "id")', 'ID_KEYS = ("id", "post_id")'),
    HandMutant("guardrail_targets", r'r"[+]?\d+"', r'r"\d+"'),
    HandMutant("guardrail_targets", r'r"[+]?\d+"', r'r"[+]?\d*"'),
    HandMutant("block", "LIMIT = 1500", "LIMIT = 1501"),
    HandMutant("block", "LIMIT = 1500", "LIMIT = 1499"),
    HandMutant("block", 'HEADER = "## Project memory"', 'HEADER = "## Project Memory"'),
    HandMutant("block", 'FOOTER = "(Call recall', 'FOOTER = "(call recall'),
    HandMutant("block", '"guardrail": "Guardrails"', '"guardrail": "Guardrail"'),
    HandMutant("block", '"fact": "Site facts"', '"fact": "Facts"'),
    HandMutant("block", '"convention": "Conventions"', '"convention": "Convention"'),
    HandMutant("block", '"instruction": "Instructions"', '"instruction": "Instruction"'),
    HandMutant("block", '"warn": 2, "info": 3', '"warn": 3, "info": 2'),
    HandMutant("block", '"block": 0, "ask": 1', '"block": 1, "ask": 0'),
    HandMutant("block", '"ask": 1, "warn": 2', '"ask": 2, "warn": 1'),
    HandMutant("block", "None: 4}", "None: 0}"),
    HandMutant("block", 'SEPARATOR = "; "', 'SEPARATOR = ", "'),
    HandMutant("block", 'SEPARATOR = "; "', 'SEPARATOR = ";  "'),
    HandMutant("ledger", 'SKIPPED_IN_DIGEST = ("save-session-summary",)', "SKIPPED_IN_DIGEST = ()"),
    HandMutant("text", "_LISTED_MAX = 10", "_LISTED_MAX = 9"),
    HandMutant("text", "(0x200B, 0x200B),", "(0x200C, 0x200C),"),
    HandMutant("text", "(0x200E, 0x200F),", "(0x200F, 0x200F),"),
    HandMutant("text", "(0xE0000, 0xE0FFF),", "(0xE0000, 0xE007F),"),
    HandMutant("text", "for p in range(1, 15))", "for p in range(1, 14))"),
    HandMutant("text", r'r"[\x00-\x08\x0b-\x1f\x7f]"', r'r"[\x00-\x08\x0b-\x1e\x7f]"'),
    HandMutant("text", r'"|[\ufe0e\ufe0f](?<![^\\s', r'"|[\ufe0e\ufe0f](?<![^'),
    HandMutant("text", r'_WORD = re.compile(r"[^\W_]+")', r'_WORD = re.compile(r"\w+")'),
    HandMutant(
        "text", r'_ASCII_LETTER = re.compile(r"[A-Za-z]")', r'_ASCII_LETTER = re.compile(r"[a-z]")'
    ),
    HandMutant("secret_shapes", '_SHORTEST = len("pwd=x")', '_SHORTEST = len("pwd=xy")'),
    HandMutant("secret_shapes", r'_START = r"(?<![A-Za-z0-9])"', r'_START = r"(?<![A-Za-z0-9_=])"'),
    HandMutant("secret_shapes", r'r"sk-ant-[A-Za-z0-9_-]{20,}"', r'r"sk-ant-[A-Za-z0-9_-]{21,}"'),
    HandMutant("secret_shapes", r'r"A[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"', r'r"A[KS]IA[A-Z0-9]{16}"'),
    HandMutant("secret_shapes", r'r"cm_[A-Za-z0-9_-]{20,}"', r'r"cm_[A-Za-z0-9]{20,}"'),
    HandMutant("secret_shapes", '"IA", "AIza"', '"AIza"'),
    # A link's password only after https:// (not http://, redis://, postgres://, ...).
    HandMutant("secret_shapes", r'r"://(?P<secret>[^\s/?#@:', r'r"https://(?P<secret>[^\s/?#@:'),
    HandMutant(
        "secret_shapes", r'("url_credentials", ("://",)', r'("url_credentials", ("https://",)'
    ),
    HandMutant("secret_shapes", '"earer", "EARER"', '"EARER"'),
    HandMutant("secret_keys", '    "cookie": "token",\n', ""),
    HandMutant("secret_keys", '    "passphrase": "password",\n', ""),
    HandMutant("secret_keys", '"b64", "base64", "raw", "hash"', '"b64", "base64", "raw"'),
    HandMutant(
        "secret_shapes", '_PLACEHOLDERS: set[str] = {"", "null",', '_PLACEHOLDERS: set[str] = {"",'
    ),
    HandMutant("redaction", "_PROSE_WORD_MAX = 20", "_PROSE_WORD_MAX = 21"),
    HandMutant("redaction", "_MAX_DEPTH = 6", "_MAX_DEPTH = 5"),
    HandMutant("redaction", "_MAX_ITEMS = 50", "_MAX_ITEMS = 51"),
    HandMutant("token_check", 'TOKEN_PREFIX = "cm_"', 'TOKEN_PREFIX = "cm"'),
    HandMutant("tokens", "NAME_MAX = 100", "NAME_MAX = 101"),
    HandMutant("token_check", "_TOUCH_EVERY = timedelta(minutes=1)", "_TOUCH_EVERY = timedelta(0)"),
    HandMutant("token_check", "KNOWN_MAX = 10_000", "KNOWN_MAX = 0"),
    HandMutant("bearer", "SESSION_KEY_MAX = 200", "SESSION_KEY_MAX = 201"),
]


# -- mutants of module-level regexes and of the redaction shapes ----------------------
#
# mutmut mutates functions only. These are made from the module's text: every string
# literal that module-level code compiles as a regex (`re.compile(...)`, redaction's
# `_shape(...)`) is changed by a few regex operators, one change per mutant; and each
# of redaction's shapes is dropped whole and anchor by anchor (one rule family or one
# prefix at a time; the operators drop its alternatives and class letters).


def _regex_literals(source: str) -> list[ast.Constant]:
    """String literals that module-level code passes to `re.compile` or `_shape` as a pattern."""
    found: list[ast.Constant] = []
    for statement in ast.parse(source).body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "compile" and node.args:
                pattern = node.args[0]
            elif isinstance(func, ast.Name) and func.id == "_shape" and len(node.args) > 2:
                pattern = node.args[2]
            else:
                continue
            found += [
                n
                for n in ast.walk(pattern)
                if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value
            ]
    return found


def _class_end(pattern: str, start: int) -> int:
    """The index just past the character class that opens at `start`."""
    j = start + 1
    if j < len(pattern) and pattern[j] == "^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _regex_parts(pattern: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, kind) of what an operator changes: groups, classes, counts, `?`."""
    stack: list[int] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            end = _class_end(pattern, i)
            yield i, end, "class"
            i = end
            continue
        if c == "(":
            stack.append(i)
        elif c == ")" and stack:
            yield stack.pop(), i + 1, "group"
        elif c == "{":
            count = re.match(r"\{(\d+)(,?)(\d*)\}", pattern[i:])
            if count:
                yield i, i + count.end(), "count"
        elif c == "?" and i and pattern[i - 1] not in "(*+?}":
            yield i, i + 1, "optional"
        i += 1


def _class_items(body: str) -> list[tuple[int, int]]:
    """The items of a character class's body: `a`, `a-z`, `\\d`."""
    items, i = [], 0
    while i < len(body):
        start = i
        i += 2 if body[i] == "\\" else 1
        if i + 1 < len(body) and body[i] == "-":
            i += 3 if body[i + 1] == "\\" else 2
        items.append((start, i))
    return items


def _branches(pattern: str, start: int, end: int) -> list[tuple[int, int]]:
    """The top-level `|` branches of the group pattern[start:end], as spans of its body."""
    opening = re.match(r"\((?:\?(?:[:=!]|<[=!]|P<\w+>|[aiLmsux-]+:))?", pattern[start:])
    assert opening is not None
    spans, depth, i = [], 0, start + opening.end()
    begin = i
    while i < end - 1:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            spans.append((begin, i))
            begin = i + 1
        i += 1
    spans.append((begin, end - 1))
    return spans if len(spans) > 1 else []


def regex_variants(pattern: str) -> Iterator[str]:
    """Each regex operator's mutant of `pattern` (a whole pattern or a piece of one)."""
    for start, end, kind in _regex_parts(pattern):
        part = pattern[start:end]
        if kind == "count":
            count = re.fullmatch(r"\{(\d+)(,?)(\d*)\}", part)
            assert count is not None
            low, comma, high = count.groups()
            yield pattern[:start] + f"{{{int(low) + 1}{comma}{high}}}" + pattern[end:]
            if high and int(high) > int(low):
                yield pattern[:start] + f"{{{low}{comma}{int(high) - 1}}}" + pattern[end:]
        elif kind == "optional":
            yield pattern[:start] + pattern[end:]
        elif kind == "class":
            opening = 2 if part.startswith("[^") else 1
            items = _class_items(part[opening:-1])
            if len(items) > 1:
                for a, b in items:
                    yield pattern[: start + opening + a] + pattern[start + opening + b :]
        elif kind == "group":
            if re.match(r"\(\?<?[=!]", part):  # a lookaround: dropped
                yield pattern[:start] + pattern[end:]
            for a, b in _branches(pattern, start, end):  # one alternative dropped
                cut_a, cut_b = (a, b + 1) if pattern[b] == "|" else (a - 1, b)
                yield pattern[:cut_a] + pattern[cut_b:]
    if pattern.startswith("^"):
        yield pattern[1:]
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        yield pattern[:-1]
    for anchor in (r"\A", r"\Z", r"\b"):
        at = pattern.find(anchor)
        if at >= 0:
            yield pattern[:at] + pattern[at + 2 :]


def _balance(pattern: str) -> int:
    """Unescaped `(` minus `)` outside character classes."""
    depth, i = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i = _class_end(pattern, i)
            continue
        depth += (c == "(") - (c == ")")
        i += 1
    return depth


def _valid(variant: str, original: str) -> bool:
    """A mutant that is still a regex: it compiles when the original piece does."""
    try:
        re.compile(original)
    except re.error:  # a piece of a pattern joined with others
        return _balance(variant) == _balance(original)
    try:
        re.compile(variant)
    except re.error:
        return False
    return True


def regex_literal(value: str) -> str:
    """The Python literal of a regex: raw when it can be."""
    if value.isprintable() and '"' not in value and not value.endswith("\\"):
        return f'r"{value}"'
    return repr(value)


def regex_mutants(name: str, path: str) -> list[HandMutant]:
    """The regex operators' mutants of `path`'s module-level patterns."""
    source = (ROOT / path).read_text()
    made: list[HandMutant] = []
    for node in _regex_literals(source):
        segment = ast.get_source_segment(source, node)
        if segment is None or source.count(segment) != 1:
            continue
        seen = {node.value}
        for variant in regex_variants(node.value):
            if variant not in seen and _valid(variant, node.value):
                seen.add(variant)
                compile(source.replace(segment, regex_literal(variant)), path, "exec")
                shown = changed(node.value, variant)
                made.append(
                    HandMutant(name, segment, regex_literal(variant), "module regex", shown)
                )
    return made


def shape_mutants(name: str, path: str) -> list[HandMutant]:
    """Each `_shape(...)` of the module dropped, and each of its anchors dropped."""
    source = (ROOT / path).read_text()
    made: list[HandMutant] = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id != "_shape" or len(node.args) < 3:
            continue
        segment = ast.get_source_segment(source, node)
        if segment is None or source.count(segment) != 1:
            continue
        kind = node.args[0].value if isinstance(node.args[0], ast.Constant) else "?"
        line = f"{kind} shape at line {node.lineno}"
        if source.count(segment + ",") == 1:
            made.append(HandMutant(name, segment + ",", "", "shape dropped", (line, "")))
        anchors = node.args[1]
        if isinstance(anchors, ast.Tuple) and len(anchors.elts) > 1:
            for anchor in anchors.elts:
                if not (isinstance(anchor, ast.Constant) and isinstance(anchor.value, str)):
                    continue
                kept = [ast.get_source_segment(source, a) for a in anchors.elts if a is not anchor]
                mutated = segment.replace(
                    ast.get_source_segment(source, anchors) or "", f"({', '.join(kept)},)", 1
                )
                shown = (f"{line}: {anchor.value!r}", "")
                made.append(HandMutant(name, segment, mutated, "shape anchor dropped", shown))
    return made


def changed(before: str, after: str, context: int = 12) -> tuple[str, str]:
    """The part of `before` that differs from `after`, each side with a little context."""
    head = 0
    while head < min(len(before), len(after)) and before[head] == after[head]:
        head += 1
    tail = 0
    while tail < min(len(before), len(after)) - head and before[-1 - tail] == after[-1 - tail]:
        tail += 1
    start = max(0, head - context)
    return (
        before[start : len(before) - tail + context],
        after[start : len(after) - tail + context],
    )


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


# -- the scratch copy ---------------------------------------------------------------


def scratch_copy(dest: Path, mutmut_settings: str = "") -> None:
    """A copy of the package and tests; `mutmut_settings` join `[tool.mutmut]`."""
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    # docs/: tests read the reference (the text rules' table of secret kinds).
    for name in ("chatmem", "tests", "docs"):
        shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    shutil.copy2(ROOT / "README.md", dest / "README.md")
    pyproject = (ROOT / "pyproject.toml").read_text()
    header = "[tool.mutmut]\n"
    assert header in pyproject, "pyproject.toml has no [tool.mutmut] table"
    (dest / "pyproject.toml").write_text(pyproject.replace(header, header + mutmut_settings, 1))


#: `--postgres URL`: the focused tests run on PostgreSQL, one database per runner.
POSTGRES_URL = ""


def pytest_env(slot: int = 0) -> dict[str, str]:
    """SQLite (each test its own file, so mutants run side by side), or with `--postgres`
    runner `slot`'s own database (the tests reset its tables); no stale bytecode."""
    database = slot_database(slot) if POSTGRES_URL else ""
    return {**os.environ, "CHATMEM_TEST_DATABASE_URL": database, "PYTHONDONTWRITEBYTECODE": "1"}


def slot_database(slot: int) -> str:
    """`<database>_mutate<slot>` on the `--postgres` server, made on first use."""
    from sqlalchemy import create_engine, make_url, text

    url = make_url(POSTGRES_URL)
    name = f"{url.database}_mutate{slot}"
    engine = create_engine(url.set(database="postgres"), isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        known = connection.execute(
            text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
        ).first()
        if known is None:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return url.set(database=name).render_as_string(hide_password=False)


def toml_list(values: tuple[str, ...] | list[str]) -> str:
    return json.dumps(list(values))


# -- mutmut -------------------------------------------------------------------------


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
            [str(mutmut), "run", *(["--max-children", "1"] if POSTGRES_URL else []), *patterns],
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


def diff_sides(diff: str) -> tuple[str, str]:
    lines = diff.splitlines()
    removed = [line[1:] for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line[1:] for line in lines if line.startswith("+") and not line.startswith("+++")]
    return fold(removed), fold(added)


def fold(lines: list[str]) -> str:
    return " ".join(line.strip() for line in lines)


@contextmanager
def chdir(path: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


# -- mutants run by plain pytest in scratch copies -------------------------------------


@dataclass(frozen=True)
class Job:
    """One mutant for `run_in_copies`: the module's text, and the mutant to switch on."""

    name: str
    function: str
    source: str
    mutant_under_test: str = ""  # a mutmut key: its trampolines pick that mutant


def copies(name: str) -> list[Path]:
    """Two scratch copies, checked to be what their tests import."""
    made = []
    for slot in range(2):
        copy = WORK / f"{name}-copy-{slot}"
        scratch_copy(copy)
        imported = subprocess.run(
            [sys.executable, "-c", "import chatmem; print(chatmem.__file__)"],
            cwd=copy,
            env=pytest_env(slot),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert imported.startswith(str(copy)), f"the tests would import {imported}, not the copy"
        made.append(copy)
    return made


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


# -- the equivalent mutants of tests/MUTANTS.md --------------------------------------


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


# -- the command --------------------------------------------------------------------


def main() -> int:
    global POSTGRES_URL
    # The scratch copies hold no corpora: their tests read the checkout's.
    os.environ.setdefault("CHATMEM_CORPORA", str((ROOT / ".corpora").resolve()))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    POSTGRES_URL = options.postgres
    names = [resolve(t) for t in options.targets] or list(TARGETS)
    listed = listed_equivalents()
    seed = options.seed if options.seed is not None else random.SystemRandom().randrange(10**6)
    if options.quick:
        print(f"quick sample, seed {seed} (replay: --quick --seed {seed})", flush=True)
    print(f"database: {'PostgreSQL' if POSTGRES_URL else 'SQLite'}", flush=True)
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


def resolve(name: str) -> str:
    if name in TARGETS:
        return name
    for key, target in TARGETS.items():
        if name in (target.path, target.path.removeprefix("chatmem/")):
            return key
    sys.exit(f"unknown target {name!r}: choose from {', '.join(TARGETS)}")


if __name__ == "__main__":
    sys.exit(main())
