"""What a JSON Schema error says to the caller: the field, and the rule in a few words.

Shared by the tools' arguments and the guidance fields a curator or an
import writes, so one rule reads the same wherever it is broken.
"""

from __future__ import annotations

from typing import Any

from jsonschema.exceptions import ValidationError

__all__ = ["NOT_BLANK", "describe_error"]

# The pattern chatmem's own schemas use for "some text, not only spaces".
NOT_BLANK = r"\S"


def describe_error(error: ValidationError) -> tuple[str, str]:
    """A short message naming the field, without echoing huge values back."""
    path = "/".join(str(p) for p in error.absolute_path)
    instance = error.instance
    kind = error.validator
    if kind == "required" and isinstance(instance, dict):
        missing = next((p for p in error.validator_value if p not in instance), "")
        name = f"{path}/{missing}" if path else str(missing)
        return name, f"{name} is required."
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = set((error.schema.get("properties") or {}).keys())
        extra = sorted(k for k in instance if k not in known)
        name = f"{path}/{extra[0]}" if path and extra else (extra[0] if extra else path)
        return name, f"{name} is not an accepted field."
    label = path or "arguments"
    messages = {
        "type": lambda: f"{label} must be of type {error.validator_value}.",
        "enum": lambda: f"{label} must be one of: {', '.join(map(str, error.validator_value))}.",
        "maxLength": lambda: f"{label} is longer than {error.validator_value} characters.",
        "minLength": lambda: _min_length(label, error.validator_value),
        "pattern": lambda: _pattern(label, error.validator_value, error.schema),
        "maxItems": lambda: f"{label} has more than {error.validator_value} items.",
        "minimum": lambda: f"{label} must be at least {error.validator_value}.",
        "maximum": lambda: f"{label} must be at most {error.validator_value}.",
    }
    build = messages.get(str(kind))
    return label, build() if build else f"{label}: {error.message[:200]}"


def _min_length(label: str, minimum: Any) -> str:
    if minimum == 1:
        return f"{label} must not be empty."
    return f"{label} must be at least {minimum} characters."


def _pattern(label: str, pattern: Any, schema: Any) -> str:
    """The rule itself; the field's `description`, when it has one, says it in words."""
    if pattern == NOT_BLANK:
        return f"{label} must not be blank."
    described = schema.get("description") if isinstance(schema, dict) else None
    words = f" ({described})" if isinstance(described, str) and described.strip() else ""
    return f"{label} must match the pattern {pattern}{words}."
