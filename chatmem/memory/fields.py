"""What a guidance entry's fields may hold, checked in one place.

The `remember` tool, the Memory screen's add and edit forms and an import
all take the same fields (type, title, text, scope, target, severity): this
module is their schema, their limits and the text rules they pass, so the
entry's lifecycle (`guidance`) never has to say what a valid field is. It
also derives what is computed from the text: the default title and the
folded key that finds duplicates.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from ..errors import InvalidParams
from ..json_schema import NOT_BLANK, describe_error
from ..text import check_field
from .models import GUIDANCE_TYPES, SEVERITIES

EDITABLE = ("type", "title", "text", "scope", "target", "severity")
TITLE_WORDS = 8
TITLE_MAX = 200
WRITTEN = ("title", "text", "scope", "target")  # free text: the text rules apply
# Any single entry up to this length fits in the 1,500-character block.
TEXT_MAX = 1000
SCOPE_MAX = 64
TARGET_MAX = 200
# Why a curator rejected a proposal: shown on the Rejected tab and to whoever re-proposes it.
REASON_MAX = 500


TYPE_FIELD: dict[str, Any] = {
    "type": "string",
    "enum": list(GUIDANCE_TYPES),
    "description": "Kind of guidance.",
}
TEXT_FIELD: dict[str, Any] = {
    "type": "string",
    "minLength": 1,
    "maxLength": TEXT_MAX,
    "pattern": NOT_BLANK,
}

#: The guidance fields, as the `remember` tool takes them and the screen and imports check them.
FIELDS_SCHEMA: dict[str, Any] = {
    "type": TYPE_FIELD,
    "text": {**TEXT_FIELD, "description": "The guidance itself, e.g. 'checkout is page 42'."},
    "title": {
        "type": "string",
        "maxLength": TITLE_MAX,
        "description": "Short label; defaults to the first 8 words of text.",
    },
    "scope": {
        "type": "string",
        "maxLength": SCOPE_MAX,
        "description": "Free label such as global or checkout.",
    },
    "target": {
        "type": "string",
        "maxLength": TARGET_MAX,
        "description": (
            "What a block guardrail refuses (an ask one holds for a curator): tool:<slug>, "
            "post_id:<id>, post_type:<type> or label:<label> (a label the site gives its "
            "tool calls, such as label:author:john)."
        ),
    },
    "severity": {
        "type": "string",
        "enum": list(SEVERITIES),
        "description": (
            "info, warn, ask or block; with a target, once approved, block refuses a matching "
            "call and ask holds it until a curator allows it once."
        ),
    },
}

_FIELDS = Draft202012Validator(
    {"type": "object", "properties": FIELDS_SCHEMA, "additionalProperties": False}
)


def fold(text: str) -> str:
    """Text with case and runs of white space folded, for duplicate checks."""
    return " ".join(text.split()).casefold()


def text_key(text: str) -> str:
    return hashlib.sha256(fold(text).encode()).hexdigest()


def default_title(text: str) -> str:
    return " ".join(text.split()[:TITLE_WORDS])[:TITLE_MAX]


def checked_reason(reason: Any) -> str | None:
    """A rejection reason as stored: blank is none; hidden text and secrets are refused."""
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise InvalidParams("reason must be text.", details={"field": "reason"})
    value = check_field("reason", reason.strip()) if reason.strip() else ""
    if len(value) > REASON_MAX:
        raise InvalidParams(
            f"reason is longer than {REASON_MAX} characters.", details={"field": "reason"}
        )
    return value or None


def checked_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A whole entry's fields (an import's, say) through the rules of the add form."""
    return _checked(fields, partial=False)


def checked_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """An edit's changed fields through the same rules: only those given are checked."""
    return _checked(changes, partial=True)


def _checked(fields: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    """Validate admin-written fields (agents' fields pass the tool schema)."""
    out = _cleaned(fields)
    if not partial:
        for required in ("type", "text"):
            if not out.get(required):
                raise InvalidParams(f"{required} is required.", details={"field": required})
    for name in ("text", "type"):
        if name in out and not out[name]:
            raise InvalidParams(f"{name} must not be empty.", details={"field": name})
    given = {name: value for name, value in out.items() if value is not None}
    errors = sorted(_FIELDS.iter_errors(given), key=lambda e: list(e.absolute_path))
    if errors:
        name, message = describe_error(errors[0])
        raise InvalidParams(message, details={"field": name})
    return out


def _cleaned(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The editable fields given, each text, through the text rules, blanks as None."""
    unknown = set(fields) - set(EDITABLE)
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidParams(f"Unknown field {name!r}.", details={"field": name})
    out: dict[str, Any] = {}
    for name in EDITABLE:
        if name not in fields:
            continue
        value = fields[name]
        if value is not None and not isinstance(value, str):
            raise InvalidParams(f"{name} must be text.", details={"field": name})
        if name in WRITTEN and value:
            # The same rules as the tools' fields: no hidden text, no secrets.
            value = check_field(name, value)
        out[name] = blank_to_none(value)
    return out


def blank_to_none(value: Any) -> Any:
    """A stored optional field: stripped, and None when nothing is left."""
    if isinstance(value, str):
        value = value.strip()
    return value or None
