"""The export document: its format, its schema, and every check an import
makes before anything is written.

The file is bounded before it is read (size, nesting, numbers, text: see
`inputs.parse_json`), checked against the schema
(`chatmem/schemas/memory-export.v1.json`), and every entry's written fields
and audit details through the text rules (no hidden text, no secrets: the
same rules as the tools and the Memory screen); every date must exist. Any
malformed file is a 400 naming the place (the entry, by its number in the
file, its id and title there), and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator, validators

from ... import inputs
from ...errors import ChatmemError, InvalidParams
from ...text import check_field
from .. import staleness
from ..fields import EDITABLE, checked_fields, checked_reason

FORMAT = "chatmem-memory-export"
VERSION = 1
SCHEMA_FILE = "memory-export.v1.json"
# The largest file the Memory screen's Import takes (the shell reads any size).
UPLOAD_MAX_BYTES = 5 * 1024 * 1024
_WHEN = "%Y-%m-%dT%H:%M:%S.%fZ"
# Nesting a file may have: document, entries, entry, events, event, detail,
# and room inside a detail (an edit's [before, after], a list of flags).
MAX_DEPTH = 16
_BODY = "The body"  # how `inputs` names the top of a value: here, "the document"


@cache
def schema() -> dict[str, Any]:
    text = resources.files("chatmem").joinpath("schemas", SCHEMA_FILE).read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def parse(raw: bytes | str, *, max_bytes: int | None = None) -> Any:
    """The file, bounded: size (413), nesting, number length, NaN (400).

    The value rules (64-bit numbers, NUL, lone surrogates) are applied by
    `import_document`, which can name the entry they are in.
    """
    # A UTF-8 byte-order mark (Windows Notepad saves one) is no part of the JSON
    # text; RFC 8259 lets a parser ignore it, and an export file should import.
    raw = (
        raw.removeprefix(b"\xef\xbb\xbf") if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
    )
    try:
        return inputs.parse_json(
            raw, field="file", values=False, max_depth=MAX_DEPTH, max_bytes=max_bytes
        )
    except ChatmemError as error:
        if error.details.get("reason") == "not_json":
            error.message = "The file is not JSON (UTF-8)."
        elif error.message.startswith("file "):  # the whole file, not a place in it
            error.message = "The " + error.message
        error.message += " Nothing was imported."
        raise


def validate(document: Any) -> None:
    """The whole document, or a 400 naming the first place (nearest the top) it breaks a rule."""
    # The value rules first: a caller may hand a decoded document over, and the
    # schema check recurses into whatever it is given.
    try:
        inputs.check_value(document, max_depth=MAX_DEPTH)
    except InvalidParams as refused:
        path = str(refused.details.get("field", ""))
        what = refused.message.removeprefix(path).removeprefix(_BODY).strip()
        raise InvalidParams(
            f"Not a chatmem memory export (version {VERSION}): {_where(document, path)}: "
            f"{what} Nothing was imported.",
            details={**refused.details, "path": path},
        ) from None
    errors = sorted(_validator().iter_errors(document), key=_place)
    if not errors:
        return
    error = errors[0]
    path = "/".join(str(p) for p in error.absolute_path)
    raise InvalidParams(
        f"Not a chatmem memory export (version {VERSION}): {_where(document, path)}: "
        f"{_message(error)}. Nothing was imported.",
        details={"path": path, "field": path, "reason": f"schema_{error.validator}"},
    )


def _where(document: Any, path: str) -> str:
    """ "entry 3 (#17 “Checkout is page 42”), at events/0/at" for entries/2/events/0/at."""
    parts = path.split("/") if path and path != "body" else []
    if len(parts) >= 2 and parts[0] == "entries" and parts[1].isdigit():
        return f"{_name(document, int(parts[1]))}, at {'/'.join(parts[2:]) or 'it'}"
    return path if parts else "the document"


@cache
def _validator() -> Any:
    """The schema's validator, where an integer is a JSON whole number (not 1.0 or 1e300)."""
    strict = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return validators.extend(Draft202012Validator, type_checker=strict)(schema())


# A pattern's regex says nothing to a person: say the form in words.
_FORMS = {
    "date-time": "a UTC date and time such as 2026-01-31T09:30:00Z",
    "review_after": "a day such as 2026-01-31",
}


def _message(error: Any) -> str:
    """jsonschema's message, with the offending value cut short (it may be 100 kB)."""
    if error.validator == "pattern":
        field = str(error.absolute_path[-1]) if error.absolute_path else ""
        form = _FORMS.get(field) or _FORMS.get(str(error.schema.get("format")))
        shown = repr(error.instance)
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        return f"{shown} is not {form or 'in the form this field takes'}"
    text = str(error.message)
    return text if len(text) <= 300 else text[:300] + "…"


def _place(error: Any) -> tuple[tuple[int, int, str], ...]:
    """Sort key: the error nearest the top of the file first (list indexes as numbers)."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path)


def checked_entry(index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's written fields through the text rules, as the Memory screen's add form."""
    fields = {name: row.get(name) for name in EDITABLE}
    try:
        checked = checked_fields(fields)
        checked["review_after"] = staleness.parse_review_after(row.get("review_after"))
        for name in ("created_at", "approved_at", "updated_at"):
            _checked_when(name, row[name])
        for number, event in enumerate(row["events"], 1):
            _checked_when(f"events/{number}/at", event["at"])
            _check_detail(event["detail"])
    except ChatmemError as error:
        raise InvalidParams(
            f"{_name_of(index, row)}: {error.message} Nothing was imported.",
            details={"entry": index + 1, "id": row.get("id"), **error.details},
        ) from None
    return checked


def _checked_when(name: str, value: str | None) -> None:
    """The schema checks a date's shape; this, that the day and time exist."""
    try:
        parse_when(value)
    except ValueError:
        raise InvalidParams(
            f"{name} '{value}' is not a date and time that exists.",
            details={"field": name, "reason": "not_a_date"},
        ) from None


def _check_detail(detail: Any) -> None:
    """Audit details are shown on the history page: their text obeys the same rules."""
    if not isinstance(detail, dict):
        return
    checked_reason(detail.get("reason"))
    for name in EDITABLE:
        change = detail.get(name)
        for value in change if isinstance(change, list) else ():
            if isinstance(value, str) and value:
                check_field(name, value)


def _name(document: Any, index: int) -> str:
    entries = document.get("entries") if isinstance(document, dict) else None
    row = entries[index] if isinstance(entries, list) and index < len(entries) else {}
    return _name_of(index, row if isinstance(row, dict) else {})


def _name_of(index: int, row: Mapping[str, Any]) -> str:
    """ "entry 3 (#17 “Checkout is page 42”)": its place in the file and its id there."""
    label = f"entry {index + 1}"
    if isinstance(row.get("id"), int):
        label += f" (#{row['id']}"
        title = row.get("title")
        if isinstance(title, str) and title:
            label += f" “{title[:60]}”"
        label += ")"
    return label


def actors_of(row: Mapping[str, Any]) -> list[str | None]:
    """The actor ids an entry of the document names: its author, approver and trail's."""
    return [row["created_by"], row["approved_by"], *(e["actor_id"] for e in row["events"])]


def format_when(value: datetime | None) -> str | None:
    """A stored time as the document writes it (UTC, microseconds, a Z)."""
    return value.strftime(_WHEN) if value else None


def parse_when(value: str | None) -> datetime | None:
    """A time of the document as stored; ValueError for a day or time that does not exist."""
    if value is None:
        return None
    return datetime.fromisoformat(value.removesuffix("Z"))
