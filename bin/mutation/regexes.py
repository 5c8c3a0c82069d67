"""Mutants of module-level regexes and of the redaction shapes, made from a module's text.

mutmut mutates functions only. These are made from the module's text: every string
literal that module-level code compiles as a regex (`re.compile(...)`, redaction's
`_shape(...)`) is changed by a few regex operators, one change per mutant; and each
of redaction's shapes is dropped whole and anchor by anchor (one rule family or one
prefix at a time; the operators drop its alternatives and class letters).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from .hand_made import HandMutant
from .targets import ROOT


def regex_literals(source: str) -> list[ast.Constant]:
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
    for node in regex_literals(source):
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
