"""What a guardrail target would have refused in the recent ledger (SPEC §6).

The verdict on each call is the enforcement matcher's own (`matching.match`
on a one-rule `GuardrailIndex`), run on the ledger row's tool and canonical
arguments (the ledger keeps them, redacted; ids are never redacted), with
`post_type:` resolved against today's posts through the host's resolver,
and a resolver failure counted as a refusal, since enforcement fails closed.

SQL only narrows the rows the matcher reads: the window (`at`, indexed),
then the tool name for a `tool:` target, or the id's text inside the stored
arguments for a `post_id:` target (every spelling of an id that
`canonical_id` folds to "42" contains "42"), or arguments that have an id
at all for a `post_type:` target. The matcher decides.

A `label:` target has nothing SQL can narrow by: calls are grouped by tool
and stored arguments (or, when the hook says which arguments it `reads`, by
those), and the host's `target_labels` hook judges each group once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import String, and_, cast, func, or_, select, true, tuple_
from sqlalchemy.orm import Session as OrmSession

from ..models import CALL_OUTCOMES, LedgerEntry, utcnow
from .index import GuardrailIndex, Rule
from .matching import LabelResolver, match
from .targets import ID_KEYS, parse_target


@dataclass(frozen=True)
class DryRun:
    """`count` calls in the last `days` days matched; `calls` are the newest of them."""

    target: str
    days: int
    count: int
    calls: list[LedgerEntry]
    never_matches: bool = False
    # An `ask` guardrail holds what a `block` one refuses: the same matches.
    severity: str = "block"

    def summary(self) -> str:
        """The line the Memory screen shows beside the target."""
        if self.never_matches:
            return "this target never matches"
        if not self.count:
            return f"matches nothing in the last {self.days} days"
        calls = "call" if self.count == 1 else "calls"
        verb = "held" if self.severity == "ask" else "refused"
        return f"would have {verb} {self.count} {calls} in the last {self.days} days"


def dry_run(
    db: OrmSession,
    target: str,
    *,
    server_name: str,
    resolve_post_type: Callable[[Any], str | None] | None,
    resolve_labels: LabelResolver | None = None,
    label_reads: tuple[str, ...] | None = None,
    days: int,
    limit: int = 20,
    now: datetime | None = None,
    severity: str = "block",
) -> DryRun:
    index = GuardrailIndex()
    if not index.add(Rule(0, "", target, severity), server_name):
        return DryRun(target, days, 0, [], never_matches=True, severity=severity)
    parsed = parse_target(target, server_name)
    since = (now or utcnow()) - timedelta(days=days)
    if parsed.key == "label":
        if resolve_labels is None:
            return DryRun(target, days, 0, [], never_matches=True, severity=severity)
        run = _LabelRun(db, index, since, resolve_labels, label_reads)
        count, calls = run.matches(limit)
        return DryRun(target, days, count, calls, severity=severity)
    window = and_(
        LedgerEntry.at >= since,
        LedgerEntry.outcome.in_(CALL_OUTCOMES),  # calls, not a curator's decisions
        _narrowing(parsed.key, parsed.value),
    )
    # Calls are grouped by what the matcher reads, and the matcher judges each
    # group once: a tool target reads the tool only, the others the two id
    # inputs, as JSON scalars the database extracts (decoding whole argument
    # objects in Python took most of the time).
    if parsed.key == "tool":
        reads: list[Any] = [LedgerEntry.tool]
    else:
        dialect = db.get_bind().dialect.name
        reads = [column for key in ID_KEYS for column in _scalar(dialect, key)]
    groups = select(*reads, func.count().label("calls"), func.max(LedgerEntry.id).label("newest"))
    resolve = _remembered(resolve_post_type) if resolve_post_type else None
    matched = [
        group
        for group in db.execute(groups.where(window).group_by(*reads))
        if _refuses(index, group.tool if parsed.key == "tool" else "", _id_inputs(group), resolve)
    ]
    # The newest `limit` calls all belong to the `limit` groups with the newest calls.
    newest = sorted(matched, key=lambda group: group.newest, reverse=True)[:limit]
    calls = []
    if newest:
        chosen = tuple_(*reads).in_([tuple(group[: len(reads)]) for group in newest])
        if parsed.key != "tool":
            # a second pass over few rows only
            chosen = and_(_mentioning(newest), chosen)  # type: ignore[assignment]  # and_ returns a ColumnElement, stored where a BinaryExpression was
        query = select(LedgerEntry).where(window, chosen).order_by(LedgerEntry.id.desc())
        calls = list(db.scalars(query.limit(limit)))
    count = sum(group.calls for group in matched)
    return DryRun(target, days, count, calls, severity=severity)


@dataclass
class _LabelRun:
    """A `label:` target's dry run: calls grouped by what the hook reads, each group judged once.

    The groups are (tool, stored arguments), or with the hook's `reads`
    (the arguments its labels depend on) (tool, those arguments' values),
    so a thousand edits of one topic with a thousand titles are one group.
    """

    db: OrmSession
    index: GuardrailIndex
    since: datetime
    resolve_labels: LabelResolver
    label_reads: tuple[str, ...] | None

    def matches(self, limit: int) -> tuple[int, list[LedgerEntry]]:
        window = and_(LedgerEntry.at >= self.since, LedgerEntry.outcome.in_(CALL_OUTCOMES))
        reads = self._reads()
        groups = select(
            *reads, func.count().label("calls"), func.max(LedgerEntry.id).label("newest")
        )
        matched = [
            group
            for group in self.db.execute(groups.where(window).group_by(*reads))
            if _refuses(self.index, group.tool, self._arguments(group), None, self.resolve_labels)
        ]
        newest = sorted(matched, key=lambda group: group.newest, reverse=True)[:limit]
        calls = []
        if newest:
            chosen = tuple_(*reads).in_([tuple(group[: len(reads)]) for group in newest])
            query = select(LedgerEntry).where(window, chosen).order_by(LedgerEntry.id.desc())
            calls = list(self.db.scalars(query.limit(limit)))
        return sum(group.calls for group in matched), calls

    def _reads(self) -> list[Any]:
        if self.label_reads is None:
            return [LedgerEntry.tool, cast(LedgerEntry.arguments, String).label("stored")]
        dialect = self.db.get_bind().dialect.name
        return [LedgerEntry.tool, *(c for key in self.label_reads for c in _scalar(dialect, key))]

    def _arguments(self, group: Any) -> dict[str, Any]:
        if self.label_reads is None:
            return _decoded(group.stored)
        return _inputs(group, self.label_reads)


def _decoded(stored: str | None) -> dict[str, Any]:
    try:
        arguments = json.loads(stored or "null")
    except ValueError:
        return {}
    return arguments if isinstance(arguments, dict) else {}


def _narrowing(key: str | None, value: str) -> Any:
    if key == "tool":
        return func.lower(LedgerEntry.tool) == value
    stored = cast(LedgerEntry.arguments, String)
    if key == "post_id" and value.isascii():
        # JSON text escapes non-ASCII on some engines: those ids are not narrowed.
        return stored.contains(value, autoescape=True)
    return or_(stored.contains('"post_id"'), stored.contains('"id"'))


def _mentioning(groups: list[Any]) -> Any:
    """Rows whose stored arguments hold one of these groups' id values (a superset).

    Only for values JSON writes as they are: ASCII with no quote or backslash.
    """
    values = {v for group in groups for v in (group.post_id_value, group.id_value) if v}
    if not all(v.isascii() and '"' not in v and "\\" not in v for v in values):
        return true()
    stored = cast(LedgerEntry.arguments, String)
    return or_(*(stored.contains(value, autoescape=True) for value in values))


def _scalar(dialect: str, key: str) -> tuple[Any, Any]:
    """One argument's JSON type and its value as text, extracted by the database."""
    arguments = LedgerEntry.arguments
    kind: Any
    value: Any
    if dialect == "postgresql":
        kind = func.jsonb_typeof(arguments.op("->")(key))
        value = arguments.op("->>")(key)
    else:
        kind = func.json_type(arguments, f"$.{key}")
        value = func.json_extract(arguments, f"$.{key}")
    # NULL (a missing input) would never equal itself in the IN list below.
    return (
        func.coalesce(kind, "null").label(f"{key}_type"),
        func.coalesce(cast(value, String), "").label(f"{key}_value"),
    )


# JSON types by either engine's name, back to the Python value the matcher
# was given. An object or array is never an id: any such value stands in.
_FROM_JSON: dict[str, Callable[[str], Any]] = {
    "integer": int,
    "real": float,
    "number": lambda text: int(text) if text.lstrip("-").isdigit() else float(text),
    "text": str,
    "string": str,
    "true": lambda _text: True,
    "false": lambda _text: False,
    "boolean": lambda text: text == "true",
    "object": lambda _text: {},
    "array": lambda _text: [],
}


def _id_inputs(row: Any) -> dict[str, Any]:
    if not hasattr(row, "post_id_type"):
        return {}  # a tool target's group: the tool is all the matcher reads
    return _inputs(row, ID_KEYS)


def _inputs(row: Any, keys: tuple[str, ...]) -> dict[str, Any]:
    # A missing input and a JSON null both leave the key out: the matcher
    # reads neither as an id.
    inputs: dict[str, Any] = {}
    values = row._mapping
    for key in keys:
        parse = _FROM_JSON.get(values[f"{key}_type"])
        if parse is not None:
            inputs[key] = parse(values[f"{key}_value"])
    return inputs


def _refuses(
    index: GuardrailIndex,
    tool: str,
    arguments: dict[str, Any],
    resolve: Callable[[Any], str | None] | None,
    resolve_labels: LabelResolver | None = None,
) -> bool:
    try:
        return match(index, tool, arguments, resolve, resolve_labels) is not None
    except Exception:
        return True  # enforcement refuses a call whose post type or labels cannot be checked


def _remembered(resolve: Callable[[Any], str | None]) -> Callable[[Any], str | None]:
    """The host's resolver, asked once per post however many calls name it."""
    answers: dict[Any, str | None | Exception] = {}

    def remembered(post_id: Any) -> str | None:
        if post_id not in answers:
            try:
                answers[post_id] = resolve(post_id)
            except Exception as error:
                answers[post_id] = error
        answer = answers[post_id]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return remembered
