"""The redaction step as it was before issue 24, the baseline of bench/redaction_outside.py.

`OLD_REDACTION` is chatmem/redaction.py's text at commit 3359fbe; `old_redactor`
makes a module of it, imported from today's package where it imported its own.
"""

from __future__ import annotations

import types


def old_redactor() -> types.ModuleType:
    """The redaction module as it was before issue 24, from its text below."""
    module = types.ModuleType("old_redaction")
    source = OLD_REDACTION.replace(
        "from . import text as text_rules", "from chatmem import text as text_rules"
    )
    exec(compile(source, "old_redaction", "exec"), module.__dict__)  # noqa: S102
    return module


# chatmem/redaction.py at commit 3359fbe (before issue 24), the baseline of the bench.
OLD_REDACTION = r'''"""The one redaction step: recognisable secrets become `[redacted:<kind>]`.

Run before anything is written to chatmem's tables or sent to a provider
(SPEC §9b). Two ways to recognise a secret, both needed:

- by **shape**: provider and cloud keys, tokens with a known prefix, JWTs,
  PEM private keys, chatmem tokens, bearer credentials, passwords in URLs;
- by the **key it sits under**: `password=…`, `secret: …`, `"api_key": "…"`
  in free text (JSON held in a string included), and values of key-named
  fields in structured arguments.

Hand-written rather than detect-secrets: bench/redaction.py measured
detect-secrets at ~100 to ~1,500 times the cost of serialising the same
arguments, against ~10 times for this, and its plugins alone miss many of
the shapes agents paste (the README's design notes give the figures). The
kinds are listed in the README's "Text rules" table, which a test checks.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, NamedTuple

# chatmem.text imports this module too; each uses the other only inside functions.
from . import text as text_rules

_START = r"(?<![A-Za-z0-9])"  # a prefix such as ghp_ may follow "_" or "=", not a letter


class _Shape(NamedTuple):
    kind: str
    # Literal text every match holds: a pattern runs only on text that has one
    # (a `str` search is far cheaper than a regex scan; most text has none).
    anchors: tuple[str, ...]
    pattern: re.Pattern[str]


def _shape(kind: str, anchors: tuple[str, ...], pattern: str) -> _Shape:
    return _Shape(kind, anchors, re.compile(pattern))


# In the order they are tried: a span one has redacted is not seen by the next.
_SHAPES: tuple[_Shape, ...] = (
    _shape(
        "private_key",
        ("PRIVATE KEY",),
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    _shape("anthropic_key", ("sk-ant-",), _START + r"sk-ant-[A-Za-z0-9_-]{20,}"),
    _shape(
        "openai_key",
        ("sk-",),
        _START + r"sk-(?:proj-|svcacct-|admin-)?(?=[\w-]*\d)[A-Za-z0-9_-]{20,}",
    ),
    _shape(
        "stripe_key",
        ("k_live_", "k_test_", "whsec_"),
        _START + r"(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{20,})",
    ),
    _shape("google_api_key", ("AIza",), _START + r"AIza[0-9A-Za-z_-]{35}"),
    _shape("aws_access_key", ("AKIA", "ASIA"), _START + r"A[KS]IA[A-Z0-9]{16}(?![A-Z0-9])"),
    _shape(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    _shape(
        "gitlab_token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-"),
        _START + r"gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt)-[A-Za-z0-9_-]{20,}",
    ),
    _shape(
        "slack_webhook",
        ("hooks.slack.com",),
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[\w/-]{10,}",
    ),
    _shape("slack_token", ("xox",), _START + r"xox[abposre]-[A-Za-z0-9-]{10,}"),
    _shape("jwt", ("eyJ",), _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[\w-]*"),
    _shape("chatmem_token", ("cm_",), _START + r"cm_[A-Za-z0-9_-]{20,}"),
    _shape(
        "bearer_token",
        ("Bearer", "bearer", "BEARER"),
        # 16+ characters, or 12+ with a digit or symbol: not "Bearer authentication"
        r"(?i:\bbearer)\s+(?:[\w.~+/-]{16,}|(?=[\w.~+/-]*[\d.~+/_-])[\w.~+/-]{12,})=*",
    ),
    # only the user:password part, so the link still says where it pointed
    _shape("url_credentials", ("://",), r"(?<=://)[^\s/?#@:\"']+:[^\s/?#@\"']+(?=@)"),
)
_SHORTEST = len("pwd=x")  # no secret this finds is shorter
# Text with none of these holds none of the shapes: checked first, as nine
# substring searches cost less than one look at every shape's anchors.
_GATES = ("_", "-", "IA", "AIza", "eyJ", "earer", "EARER", "://", "PRIVATE KEY")
# An AWS secret key is 40 characters of base64 with nothing to recognise it
# by; in the same text as an access key id it is taken for one.
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# Key names whose value is a secret: a component of the name ends with one of
# these (PGPASSWORD, clientSecret, X-Auth-Token, api_key, AWS_SECRET_ACCESS_KEY).
_KEY_WORDS = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "pwd": "password",
    "secret": "secret",
    "secretkey": "secret",
    "privatekey": "secret",
    "credential": "secret",
    "credentials": "secret",
    "token": "token",
    "authorization": "token",
    "cookie": "token",
    "sessionkey": "token",
    "apikey": "api_key",
    "accesskey": "api_key",
}
# What may follow the secret word in a key and still name the secret itself;
# anything else names something about it (password_policy, token_count).
_KEY_TAILS = {"key", "value", "val", "str", "string", "b64", "base64", "raw", "hash", "enc"}
_KEY_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# Lower-case text every such key holds: where the `key: value` pass looks.
_KEY_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "authori", "cookie")
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_KEYED = re.compile(
    r"(?P<key>(?<![\w.-])[\w][\w.-]{0,63}+)"
    r"(?P<key_quote>\\*[\"'])?"
    r"(?P<sep>[ \t]*(?::=|=>|[:=])[ \t]*)"
    # a quoted value ends at the same quote, as escaped as the opening one:
    # "…", \"…\" (JSON in a JSON string), \\\"…\\\" (one level deeper) …
    r"(?:(?P<quote>\\*[\"'])(?P<quoted>.*?)(?<!\\)(?P=quote)"
    r"|(?P<bare>(?:(?i:bearer|basic|token)[ \t]+)?[^\s,;&<{}\[\])'\"\\][^\s,;&}\])'\"\\]*))"
)
_PLACEHOLDERS = {"", "null", "none", "nil", "true", "false", "undefined", "...", "…"}
_PLACEHOLDER = re.compile(
    r"\[redacted[^\]]*\]|\$\{?[A-Z_][A-Z0-9_]*\}?|\{\{.*\}\}|%\(?\w*\)?s|[*x•?]+"
)
_PROSE_AFTER = re.compile(r"[ \t]+[^\W\d_]|'[a-z]")
_PROSE_WORD_MAX = 20


def redacted(kind: str) -> str:
    return f"[redacted:{kind}]"


def key_kind(name: str) -> str | None:
    """The secret kind a key name stands for (`api_key` -> "api_key"), or None."""
    lowered = name.lower()
    if not any(hint in lowered for hint in _KEY_HINTS):
        return None
    parts = [p.lower() for p in _KEY_PARTS.findall(name)]
    for index in range(len(parts) - 1, -1, -1):
        pair = parts[index - 1] + parts[index] if index else ""
        word = next((w for w in (pair, parts[index]) if w in _KEY_WORDS), None)
        word = word or next((w for w in _KEY_WORDS if parts[index].endswith(w)), None)
        if word is not None:
            tail = parts[index + 1 :]
            return _KEY_WORDS[word] if set(tail) <= _KEY_TAILS else None
    return None


def redact(text: str) -> str:
    """`text` with every recognisable secret replaced by `[redacted:<kind>]`."""
    return scan(text)[0]


def secret_kinds(text: str) -> list[str]:
    """The kinds of secret `text` holds, each once, in order."""
    return scan(text)[1]


def scan(text: str) -> tuple[str, list[str]]:
    """`text` redacted, and the kinds of secret it held (each once, in order).

    A secret split by characters no one sees (`ghp_R8tY<U+200B>2uI6…`) is found
    too: the text is then redacted without its invisible characters. Otherwise
    dropping them later (`text.for_agents`) would put the secret back together.
    """
    kinds: dict[str, None] = {}
    cleaned = _scan(text, kinds)
    visible = text_rules.strip_invisible(cleaned)
    if visible != cleaned:
        again = _scan(visible, kinds)
        if again != visible:
            cleaned = again
    return cleaned, list(kinds)


def _scan(text: str, kinds: dict[str, None]) -> str:
    if len(text) < _SHORTEST:
        return text
    if any(gate in text for gate in _GATES):
        for shape in _SHAPES:
            if any(anchor in text for anchor in shape.anchors):
                text = shape.pattern.sub(functools.partial(_found, shape.kind, kinds), text)
    if "aws_access_key" in kinds:
        text = _AWS_SECRET.sub(lambda m: _aws_secret(m, kinds), text)
    return _keyed_pairs(text, kinds)


def _found(kind: str, kinds: dict[str, None], _match: object = None) -> str:
    kinds[kind] = None
    return redacted(kind)


def _aws_secret(match: re.Match[str], kinds: dict[str, None]) -> str:
    value = match.group()
    if value.isalpha() or value.isdigit() or value.islower() or value.isupper():
        return value
    return _found("aws_secret_key", kinds)


def _keyed_pairs(text: str, kinds: dict[str, None]) -> str:
    """Mask values under secret-named keys: `password=…`, `"api_key": "…"`, `secret: …`.

    The pattern is tried only where a key could start, found by looking for
    the hints with `str.find` (a regex scan of every position costs ~20 times
    more, and a transcript is long).
    """
    lowered = text.lower()
    if len(lowered) != len(text):  # lower() changed a length ("İ"): scan it all
        return _KEYED.sub(lambda m: _keyed(m, kinds), text)
    starts = set()
    for hint in _KEY_HINTS:
        at = lowered.find(hint)
        while at != -1:
            start = at
            while start and text[start - 1] in _KEY_CHARS:
                start -= 1
            starts.add(start)
            at = lowered.find(hint, at + len(hint))
    out, done = [], 0
    for start in sorted(starts):
        match = _KEYED.match(text, start) if start >= done else None
        if match is not None:
            out += [text[done:start], _keyed(match, kinds)]
            done = match.end()
    return "".join(out) + text[done:] if out else text


def _keyed(match: re.Match[str], kinds: dict[str, None]) -> str:
    kind = key_kind(match.group("key"))
    quote = match.group("quote") or ""
    value = match.group("quoted") if quote else match.group("bare")
    start = match.string[match.start() : match.start("sep")] + match.group("sep")
    if kind is None:
        # Not a secret's key (password_policy), but its value may hold one.
        return f"{start}{quote}{_keyed_pairs(value, kinds)}{quote}"
    if value.lower() in _PLACEHOLDERS or _PLACEHOLDER.fullmatch(value):
        return match.group()
    # `key: word more words` is prose; `key=value` and quoted values never are.
    sep = match.group("sep")
    if not quote and sep != sep.strip(" \t") and _reads_as_prose(match, value):
        return match.group()
    kinds[kind] = None
    return f"{start}{quote}{redacted(kind)}{quote}"


def _reads_as_prose(match: re.Match[str], value: str) -> bool:
    """`password: must be 12 characters`: a plain word or number with more words after it."""
    plain = len(value) <= _PROSE_WORD_MAX and (value.isalpha() or value.isdigit())
    return plain and bool(_PROSE_AFTER.match(match.string, match.end()))


def redact_value(value: Any, finish: Callable[[str], str] | None = None) -> Any:
    """A copy of `value` with its secrets masked: by shape, under key-named
    fields, and in JSON held in a string. Nesting and lists are bounded;
    `finish` is then applied to every string (the ledger makes text visible
    and cuts it).
    """
    kinds: set[str] = set()  # an AWS key id among them asks for a second pass
    redact_one = _redacting(kinds)

    def leaf(text: str) -> str:
        text = redact_one(_json_in_string(text, kinds))
        return finish(text) if finish else text

    out = _walk(value, leaf)
    if "aws_access_key" in kinds:
        # The id and its secret key may sit in two different fields.
        out = _walk(out, lambda text: _AWS_SECRET.sub(lambda m: _aws_secret(m, {}), text))
    return out


_MAX_DEPTH = 6
_MAX_ITEMS = 50


def _redacting(kinds: set[str]) -> Callable[[str], str]:
    def redact_one(text: str) -> str:
        text, found = scan(text)
        kinds.update(found)
        return text

    return redact_one


def _walk(value: Any, on_string: Callable[[str], str], depth: int = 0) -> Any:
    """A copy of `value`: strings through `on_string`, values under secret-named keys masked."""
    if depth > _MAX_DEPTH:
        return "[…]"
    if isinstance(value, dict):
        out = {}
        for key, item in list(value.items())[:_MAX_ITEMS]:
            kind = key_kind(str(key)) if item not in (None, "") else None
            out[str(key)] = redacted(kind) if kind else _walk(item, on_string, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_walk(v, on_string, depth + 1) for v in list(value)[:_MAX_ITEMS]]
    return on_string(value) if isinstance(value, str) else value


def _json_in_string(text: str, kinds: set[str]) -> str:
    """JSON held in a string is redacted as structure: `{"credentials": {...}}` too."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "[") or len(stripped) > 100_000:
        return text
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        return text
    if not isinstance(parsed, dict | list):
        return text
    return json.dumps(_walk(parsed, _redacting(kinds)), ensure_ascii=False)
'''
