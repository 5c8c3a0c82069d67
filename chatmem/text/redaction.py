"""The one redaction step: recognisable secrets become `[redacted:<kind>]`.

Run before anything is written to chatmem's tables or sent to a provider
(SPEC §9b). Three ways to recognise a secret:

- by **shape**: provider and cloud keys, tokens with a known prefix, JWTs,
  PEM private keys, chatmem tokens, bearer credentials, passwords in URLs,
  on command lines and in config files; the families issue 24 added are
  ported from Kingfisher's rules (mongodb/kingfisher, Apache-2.0), each with
  a comment naming the family;
- by the **key it sits under**: `password=…`, `secret: …`, `"api_key": "…"`
  in free text (JSON held in a string included), and values of key-named
  fields in structured arguments; a key that only often names a secret
  (`asana_key`, `ASANA_PAT`) takes only a value that looks random;
- by **randomness**: a long token of mixed letters and digits with high
  entropy, wherever it sits (`random_token`), or after a short prefix
  (`api_token`).

Hand-written rather than detect-secrets: bench/redaction.py measured
detect-secrets at ~100 to ~1,500 times the cost of serialising the same
arguments, and its plugins alone miss many of the shapes agents paste.
tests/corpora/secrets measures these rules on text nobody here wrote
(`python -m tests.corpora.secrets`), bench/redaction_outside.py their cost
against the rules before issue 24. The kinds are listed in
docs/trust-model.md's "Text rules" table, which a test checks.

The shapes are in `secret_shapes`, the key names in `secret_keys`; this
module applies them, to a text (`scan`, `redact`) or to structured
arguments (`redact_value`).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable
from typing import Any

from .invisible import strip_invisible
from .secret_keys import _KEY_CHARS, _KEY_HINTS, _KEYED, secret_key
from .secret_shapes import (
    _AWS_ID,
    _AWS_SECRET,
    _GATES,
    _LONG_TOKEN,
    _PLACEHOLDER,
    _PLACEHOLDERS,
    _SHAPES,
    _SHORTEST,
    _SHORTEST_TOKEN,
    _Shape,
    looks_random,
)

_SCHEME = re.compile(r"^(?i:bearer|basic|token)[ \t]+")
_PROSE_AFTER = re.compile(r"[ \t]+[^\W\d_]|'[a-z]")
_PROSE_WORD_MAX = 20
_REDACTED = re.compile(r"\[redacted:\w+\]")
_CALL = re.compile(
    r"[%$]?[\w.]*[(\[]"
)  # where a call or an index opens: `make_key(`, `os.environ[`
_KEY_REACH = 40  # how far before a hint a key's words are looked for in a run too long for one key


def redacted(kind: str) -> str:
    return f"[redacted:{kind}]"


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
    dropping them later (`for_agents`) would put the secret back together.
    """
    kinds: dict[str, None] = {}
    cleaned = _scan(text, kinds)
    visible = strip_invisible(text)
    if visible != text:
        seen: dict[str, None] = {}
        again = _scan(visible, seen)
        if again != strip_invisible(cleaned):  # joined, it holds more
            cleaned, kinds = again, seen
    return cleaned, list(kinds)


def _scan(text: str, kinds: dict[str, None]) -> str:
    if len(text) < _SHORTEST:
        return text
    if any(gate in text for gate in _GATES):
        for shape in _SHAPES:
            if shape.anchors and any(_holds(text, anchor) for anchor in shape.anchors):
                text = shape.pattern.sub(functools.partial(_checked, shape, kinds), text)
    if "aws_access_key" in kinds:
        text = _AWS_SECRET.sub(lambda m: _aws_secret(m, kinds), text)
    text = _keyed_pairs(text, kinds)
    # Last, the shapes without an anchor, so that a known kind is named first.
    if len(text) >= _SHORTEST_TOKEN:
        for shape in _SHAPES:
            if not shape.anchors:
                text = _in_long_tokens(shape, text, kinds)
    return text


def _in_long_tokens(shape: _Shape, text: str, kinds: dict[str, None]) -> str:
    """`shape` applied only inside runs of token characters long enough to hold
    it: one fast scan finds them, and prose has few (trying the pattern at
    every position of a long transcript costs ~10 times more)."""
    out, done = [], 0
    for token in _LONG_TOKEN.finditer(text):
        for match in shape.pattern.finditer(text, token.start(), token.end()):
            out += [text[done : match.start()], _checked(shape, kinds, match)]
            done = match.end()
    return "".join(out) + text[done:] if out else text


def _holds(text: str, anchor: str | re.Pattern[str]) -> bool:
    return anchor in text if isinstance(anchor, str) else anchor.search(text) is not None


def _checked(shape: _Shape, kinds: dict[str, None], match: re.Match[str]) -> str:
    """The match redacted, unless its check says it is no secret; a `secret`
    group is all that is replaced (`mysql -p…` keeps its command)."""
    if shape.check is not None and not shape.check(match):
        return match.group()
    if "secret" not in match.re.groupindex:
        return _found(shape.kind, kinds)
    start, end = match.span("secret")
    whole = match.start()
    return match.group()[: start - whole] + _found(shape.kind, kinds) + match.group()[end - whole :]


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
    if len(lowered) != len(text):  # lower() changed a length ("İ"): keep such letters as they are
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)
    starts: set[int] = set()
    for hint in _KEY_HINTS:
        seen, run = 0, 0  # the hint's last place, and where its run of key characters starts
        at = lowered.find(hint)
        while at != -1:
            start = at
            while start > seen and text[start - 1] in _KEY_CHARS:
                start -= 1
            if start == seen:
                start = run  # the same run as the last place: don't walk it again
            seen, run = at, start
            while start < at and text[start] in "-.":
                start += 1  # -Dsonar.login=…: the key starts after the dash
            starts.update((start, _last_words(text, start, at)))
            at = lowered.find(hint, at + len(hint))
    out, done = [], 0
    for start in sorted(starts):
        match = _KEYED.match(text, start) if start >= done else None
        masked = _keyed(match, kinds) if match is not None else None
        if match is not None and masked is not None:
            out += [text[done:start], masked]
            done = match.end()
    return "".join(out) + text[done:] if out else text


def _last_words(text: str, start: int, at: int) -> int:
    """Where the words just before a hint start, when its run from `start` is too
    long for one key (`<40 letters>_db_password=…`); else `start`."""
    if at - start <= _KEY_REACH:
        return start
    cuts = [cut for cut in (text.find(c, at - _KEY_REACH, at) for c in "_.-") if cut != -1]
    return min(cuts) + 1 if cuts else at


def _keyed(match: re.Match[str], kinds: dict[str, None]) -> str | None:
    """The match with its value masked; None when it is no secret's (the
    pass then goes on inside it: `password_policy="pwd=…"`, `sight api_key=…`)."""
    found = secret_key(match.group("key"))
    quote = match.group("quote") or ""
    opened = match.group("opened") or ""  # a quote never closed: `password='hunter2`
    value = match.group("quoted") if quote else match.group("unclosed") or match.group("bare")
    start = match.string[match.start() : match.start("sep")] + match.group("sep") + opened
    sep = match.group("sep")
    mark = sep.strip()  # a line break is no mark: `Password\nReset your account`
    mark = "" if mark in ("is", "was") else mark
    if mark == "," and not (quote and match.group("key_quote")):
        found = None  # a comma joins a key to its value only in `'KEY', 'value'`
    if not quote and not opened and _code_value(match, value):
        found = None  # code: `key == other`, `key = make_key(32)`, `os.environ[…]`, `f'…'`
    if found is None:
        return None
    kind, sure = found
    unschemed = _SCHEME.sub("", value)  # `Bearer $TOKEN`, `Bearer <token>`
    if unschemed.lower() in _PLACEHOLDERS or _PLACEHOLDER.fullmatch(unschemed):
        return None
    # Without `=` or `:` (`password is …`, `TOKEN …`), or under a key that is
    # not sure, only a value that looks random is a secret.
    if not sure and "=" in value.rstrip("="):
        return None  # `key: a=b` names no secret
    if not sure and not mark and not looks_random(value, shortest=20):
        return None  # `cache key is product:42`: without `=` or `:`, only a long random value
    # `password 'hunter2'` (Gradle): quoted, one word, under a sure key
    quoted_word = sure and bool(quote) and bool(value) and not any(c.isspace() for c in value)
    quoted_word = quoted_word and mark != ","  # ("password", "password") is a list of words
    random = looks_random(value, shortest=6 if sure else 8)
    if (not mark or mark == "," or not sure) and not random and not quoted_word:
        return None
    # `key: word more words` is prose; `key=value` and quoted values never are.
    if not quote and not opened and sep != sep.strip() and _reads_as_prose(match, value):
        return match.group()
    kinds[kind] = None
    return f"{start}{quote}{redacted(kind)}{quote}"


def _code_value(match: re.Match[str], value: str) -> bool:
    """A bare value that is code, not a secret: a comparison, a call, an index, an f-string.

    A call or an index is a name and a bracket closed later on its line
    (`make_key(32)`, `os.environ["X"]`, `$(flask chatmem token create)`);
    `Xk29(fj!q`, whose bracket is never closed, is a password.
    """
    if value.startswith("="):
        return True
    call = _CALL.match(value)
    if call is not None:
        text, opened = match.string, match.start("bare") + call.end()
        line_end = text.find("\n", opened)
        rest = text[opened : len(text) if line_end == -1 else line_end]
        if call.group().endswith("("):
            return ")" in rest
        return "]" in _REDACTED.sub("", rest)  # a secret masked before is no index's end
    after = match.string[match.end() : match.end() + 1]
    return value in ("f", "b", "r", "u", "rb", "br", "fr", "rf") and after in ("'", '"')


def _reads_as_prose(match: re.Match[str], value: str) -> bool:
    """`password: must be 12 characters`: a plain word or number with more words after it."""
    plain = len(value) <= _PROSE_WORD_MAX and (value.isalpha() or value.isdigit())
    return plain and bool(_PROSE_AFTER.match(match.string, match.end()))


def redact_value(
    value: Any,
    finish: Callable[[str], str] | None = None,
    finish_key: Callable[[str], str] | None = None,
) -> Any:
    """A copy of `value` with its secrets masked: by shape, under key-named
    fields, and in JSON held in a string. Nesting and lists are bounded;
    `finish` is then applied to every string value and `finish_key` to every
    dict key (the ledger makes both visible and cuts only values, so a cut
    never hides which field a value belongs to).
    """
    kinds: set[str] = set()  # an AWS key id among them asks for a second pass
    redact_one = _redacting(kinds)
    # The id and its secret key may sit in two different fields: with an id
    # anywhere, a 40-character secret is named as AWS's before any other shape.
    aws: list[str] = []

    def look(text: str) -> str:
        if _AWS_ID.search(text):
            aws.append(text)
        return text

    _walk(value, look)

    def masked(text: str) -> str:
        if aws:
            text = _AWS_SECRET.sub(lambda m: _aws_secret(m, {}), text)
        return redact_one(_json_in_string(text, kinds))

    def leaf(text: str) -> str:
        return finish(masked(text)) if finish else masked(text)

    def key(text: str) -> str:
        return finish_key(masked(text)) if finish_key else masked(text)

    out = _walk(value, leaf, key)
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


def _walk(
    value: Any,
    on_string: Callable[[str], str],
    on_key: Callable[[str], str] | None = None,
    depth: int = 0,
) -> Any:
    """A copy of `value`: strings through `on_string` (dict keys through
    `on_key`, by default the same), values under secret-named keys masked."""
    if depth > _MAX_DEPTH:
        return "[…]"
    if isinstance(value, dict):
        out = {}
        for key, item in list(value.items())[:_MAX_ITEMS]:
            found = secret_key(str(key)) if item not in (None, "") else None
            sure = found is not None and (found[1] or isinstance(item, str) and looks_random(item))
            kind = found[0] if found and sure else None
            # A key is text an agent wrote too: `{"ghp_…": 1}` holds a secret.
            shown_key = (on_key or on_string)(str(key))
            out[shown_key] = redacted(kind) if kind else _walk(item, on_string, on_key, depth + 1)
        return out
    if isinstance(value, list | tuple):
        return [_walk(v, on_string, on_key, depth + 1) for v in list(value)[:_MAX_ITEMS]]
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
