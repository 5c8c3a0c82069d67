"""How a setting is read from text: each parser returns the typed value or says what it expects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

#: Turns an environment value into the setting's value; a ValueError's
#: message says what the setting expects ("a whole number of at least 1").
Parser = Callable[[str], Any]


# -- parsers: text in, typed value out ------------------------------------------


def text(value: str) -> str:
    return value


def optional_text(value: str) -> str | None:
    """Empty means unset (the setting's documented fallback)."""
    return value.strip() or None


def boolean(value: str) -> bool:
    folded = value.strip().lower()
    if folded in ("1", "true", "yes", "on"):
        return True
    if folded in ("0", "false", "no", "off"):
        return False
    raise ValueError("true or false (also 1/0, yes/no, on/off)")


def integer(minimum: int = 0) -> Parser:
    def parse(value: str) -> int:
        try:
            number = int(value.strip())
        except ValueError:
            number = minimum - 1
        if number < minimum:
            raise ValueError(f"a whole number of at least {minimum}")
        return number

    return parse


def positive_number(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        number = 0.0
    if not number > 0 or number == float("inf"):
        raise ValueError("a number of seconds above 0")
    return number


def seconds_or_off(value: str) -> float:
    try:
        number = float(value.strip())
    except ValueError:
        number = -1.0
    if not 0 <= number < float("inf"):
        raise ValueError("a number of seconds, 0 or more")
    return number


def share(value: str) -> float:
    """A fraction from 0 to 1."""
    try:
        number = float(value.strip())
    except ValueError:
        number = -1.0
    if not 0 <= number <= 1:
        raise ValueError("a number from 0 to 1")
    return number


def choice(*options: str) -> Parser:
    def parse(value: str) -> str:
        folded = value.strip().lower()
        if folded not in options:
            raise ValueError("one of " + ", ".join(options))
        return folded

    return parse


def word_list(value: str) -> tuple[str, ...]:
    """Comma-separated, blanks dropped: `a.example, b.example`."""
    return tuple(word.strip() for word in value.split(",") if word.strip())


def optional_word_list(value: str) -> tuple[str, ...] | None:
    """Like `word_list`, but empty means unset (None: the documented fallback)."""
    return word_list(value) or None


def url_path(value: str) -> str:
    if not value.startswith("/") or value.startswith("//"):
        raise ValueError("a path that starts with a single / (such as /chatmem)")
    return value


def storage_uri(value: str) -> str:
    """A synchronous `limits` storage URI; the store itself is built (and reached) by init_app."""
    from limits.storage import SCHEMES  # type: ignore[attr-defined]  # re-exported, not in its __all__

    uri = value.strip()
    scheme, separator, _ = uri.partition("://")
    if not separator or scheme not in SCHEMES or scheme.startswith("async+"):
        raise ValueError("a storage URI such as memory:// or redis://host:6379")
    return uri


def key_prefix(value: str) -> str:
    if not value.strip() or "/" in value:
        raise ValueError("a non-empty name without /")
    return value.strip()


def optional_web_url(value: str) -> str | None:
    """An http(s) address, or empty for none."""
    value = value.strip()
    if not value:
        return None
    if not value.startswith(("http://", "https://")) or len(value) < 9 or " " in value:
        raise ValueError("an http:// or https:// address, or empty")
    return value


def template_name(value: str) -> str:
    name = value.strip()
    if not name or name.startswith("/") or ".." in name.split("/"):
        raise ValueError("a template name such as layouts/chatmem.html")
    return name
