"""The rules every value from outside passes, on every channel (SPEC §11: no 500s).

One module, used by the REST routes, the MCP endpoint, the dispatcher (so
the Python channel and the chat's tool calls too), the Memory screen and the
demo's chat API. It turns input that Python or a database would choke on
into `InvalidParams` before anything is written:

- JSON nested deeper than `MAX_DEPTH` (the parser would raise RecursionError
  past about 1,000 levels; far less is already no sane tool argument), or a
  caller's own `max_depth`, and a body longer than its `max_bytes` (413);
- number literals longer than `MAX_NUMBER_DIGITS` (Python refuses to turn
  over 4,300 digits into an int, and no column stores them anyway);
- integers outside a signed 64-bit column (`BIGINT`), so an id of 2^63 is
  refused here instead of overflowing the database;
- NaN and Infinity, which JSON does not have (PostgreSQL refuses them in a
  JSON column, and a stored one breaks every later reader of that row);
- a lone UTF-16 surrogate such as "\\ud800" (no UTF-8 encoding exists) and
  NUL "\\u0000" (PostgreSQL text cannot hold it), in keys and values alike.

`NotJson` marks input that is not (bounded) JSON at all: MCP answers it with
-32700 Parse error, the other rules with -32602 Invalid params.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .errors import InvalidParams, PayloadTooLarge

MAX_DEPTH = 32
MAX_NUMBER_DIGITS = 40
INT_MIN, INT_MAX = -(2**63), 2**63 - 1
# Characters no text may hold: NUL, and surrogates (a valid pair is joined
# into one character by the JSON parser, so any left are lone halves).
_FORBIDDEN = re.compile("[\x00\ud800-\udfff]")
# ASCII digits only ("²".isdigit() is true, and int() refuses it), at most 19.
_DIGITS = re.compile("[0-9]{1,19}")


class NotJson(InvalidParams):
    """The body is not JSON within our bounds (MCP: -32700 Parse error)."""


def parse_json(
    body: bytes | str,
    *,
    field: str = "",
    values: bool = True,
    max_depth: int = MAX_DEPTH,
    max_bytes: int | None = None,
) -> Any:
    """Strict, bounded JSON, every value checked (NotJson, InvalidParams or PayloadTooLarge).

    `values=False` keeps the parse bounds (syntax, depth, number length, no
    NaN) and leaves the value rules to whoever reads the values: MCP hands a
    tool call's arguments to the dispatcher, which answers them as a tool
    result the model can read, as it does a schema refusal.
    `max_depth`: deeper nesting is refused (a whole document, such as a
    memory export, nests deeper than a tool's arguments). `max_bytes`: a
    longer body is refused before it is decoded (413).
    """
    size = len(body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body)
    if max_bytes is not None and size > max_bytes:
        raise PayloadTooLarge(
            f"{_label(field)} is larger than {_size(max_bytes)}.",
            details=_why(field, "too_large"),
        )
    try:
        text = body.decode("utf-8") if isinstance(body, bytes) else body
        value = json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int)
    except NotJson:
        raise
    except RecursionError:
        raise _too_deep(field, max_depth) from None
    except (ValueError, UnicodeDecodeError):
        raise NotJson(
            f"{_label(field)} is not valid JSON.", details=_why(field, "not_json")
        ) from None
    check_value(value, field=field, values=values, max_depth=max_depth)
    return value


def _size(limit: int) -> str:
    mb, rest = divmod(limit, 1024 * 1024)
    return f"{mb} MB" if mb and not rest else f"{limit:,} bytes"


def check_value(
    value: Any, *, field: str = "", values: bool = True, max_depth: int = MAX_DEPTH
) -> None:
    """Walk a decoded value (without recursion): depth, numbers and text (InvalidParams)."""
    stack: list[tuple[Any, str, int]] = [(value, field, 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                raise _too_deep(path, max_depth)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, inner in pairs:
                if values and isinstance(key, str):
                    check_text(key, field=path)
                stack.append((inner, _join(path, str(key)), depth + 1))
        elif values:
            _check_scalar(item, path)


def _check_scalar(item: Any, path: str) -> None:
    if isinstance(item, str):
        check_text(item, field=path)
    elif isinstance(item, int) and not isinstance(item, bool):
        if not INT_MIN <= item <= INT_MAX:
            raise InvalidParams(
                f"{_label(path)} is out of range: whole numbers must fit in 64 bits "
                f"({INT_MIN} to {INT_MAX}).",
                details=_why(path, "out_of_range"),
            )
    elif isinstance(item, float) and not math.isfinite(item):
        raise InvalidParams(
            f"{_label(path)} must be a finite number: JSON has no NaN or Infinity.",
            details=_why(path, "not_finite"),
        )


def check_text(value: str, *, field: str) -> str:
    """Refuse NUL and lone surrogates in one piece of text; return it unchanged."""
    found = _FORBIDDEN.search(value)
    if found is not None:
        char = found.group()
        reason, what = (
            ("nul_character", "a NUL character (U+0000)")
            if char == "\x00"
            else ("lone_surrogate", f"a lone surrogate (U+{ord(char):04X}), which is not text")
        )
        details = {**_why(field, reason), "code_points": [f"U+{ord(char):04X}"]}
        raise InvalidParams(f"{_label(field)} holds {what}.", details=details)
    return value


def whole_number(raw: Any, *, field: str, minimum: int = 0) -> int:
    """A form or query field that must be a whole number within a database integer."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        number = raw
    elif isinstance(raw, str) and _DIGITS.fullmatch(raw.strip()):
        number = int(raw.strip())
    else:
        raise InvalidParams(f"{field} must be a whole number.", details=_why(field, "not_integer"))
    if not minimum <= number <= INT_MAX:
        raise InvalidParams(
            f"{field} must be between {minimum} and {INT_MAX}.", details=_why(field, "out_of_range")
        )
    return number


def _bounded_int(literal: str) -> int:
    if len(literal.lstrip("-")) > MAX_NUMBER_DIGITS:
        raise NotJson(
            f"A number in the body has more than {MAX_NUMBER_DIGITS} digits.",
            details={"field": "body", "reason": "number_too_long"},
        )
    return int(literal)


def _no_constant(name: str) -> Any:
    raise NotJson(
        f"{name} is not JSON: send a finite number.",
        details={"field": "body", "reason": "not_finite"},
    )


def _too_deep(field: str, max_depth: int = MAX_DEPTH) -> NotJson:
    return NotJson(
        f"{_label(field)} is nested more than {max_depth} levels deep.",
        details=_why(field, "too_deep"),
    )


def _join(path: str, key: str) -> str:
    return f"{path}/{key}" if path else key


def _label(field: str) -> str:
    return field or "The body"


def _why(field: str, reason: str) -> dict[str, Any]:
    return {"field": field or "body", "reason": reason}


def json_safe(value: Any) -> Any:
    """A copy any JSON column and any strict JSON reader (a browser) takes.

    NaN and Infinity become null; NUL and lone surrogates in text (and keys)
    become U+FFFD. For records of what someone else sent, such as a model's
    tool call (refused by the dispatcher, but kept in the transcript), and
    for rows stored before these rules: one NaN would otherwise make a whole
    conversation unreadable, and PostgreSQL refuses the row outright.
    """
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return _FORBIDDEN.sub("\ufffd", value)
    if isinstance(value, dict):
        return {json_safe(key): json_safe(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(inner) for inner in value]
    return value


# -- boolean form fields --------------------------------------------------------

#: The only values a boolean form field takes (docs/configuration.md, "Form fields").
#: Lower case exactly: "TRUE", "yes" or "y" is a 400, never a guess. Missing and
#: empty (an unticked checkbox) are false; JSON true/false pass as themselves.
BOOLEAN_TRUE = ("1", "true", "on")
BOOLEAN_FALSE = ("0", "false", "")


def boolean_field(raw: Any, *, field: str) -> bool:
    """A checkbox-like form or JSON field; any other value is InvalidParams (fail closed).

    A field that turns a safety off (`read_only`, `anyway`, `keep_status`)
    must not be switched by a value the form never sends: "TRUE" making a
    full-scope token was the bug this replaces.
    """
    if raw is None or isinstance(raw, bool):
        return bool(raw)
    if isinstance(raw, str) and raw in BOOLEAN_TRUE + BOOLEAN_FALSE:
        return raw in BOOLEAN_TRUE
    allowed = ", ".join(f'"{value}"' for value in BOOLEAN_TRUE + BOOLEAN_FALSE[:2])
    raise InvalidParams(
        f"{field} must be one of {allowed} (or left out for false).",
        details=_why(field, "not_boolean"),
    )


def form_boolean(form: Any, field: str) -> bool:
    """`boolean_field` of a form's field, which must come once (a MultiDict's `getlist`).

    `read_only=0&read_only=1` is no browser's form: whichever value a reader
    takes, the request is ambiguous, so it is refused rather than guessed.
    """
    values = form.getlist(field)
    if len(values) > 1:
        raise InvalidParams(
            f"{field} was sent more than once.", details=_why(field, "repeated_field")
        )
    return boolean_field(values[0] if values else None, field=field)
