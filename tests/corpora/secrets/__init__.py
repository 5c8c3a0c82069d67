"""Secrets corpus: true shapes and benign look-alikes, each with its source.

- **Kingfisher** (kingfisher-bin, Apache-2.0, pinned in wheels.txt): every
  visible built-in rule's own examples, as its maintainers wrote them. The
  secret in each is what the rule's pattern captures (its first group, or the
  whole match), found by running that pattern here; the few patterns Python's
  `re` cannot read are left out and counted (`skipped`).
- **ours** (ours.py, written for this project and labelled so): the shapes
  agents paste that a rule set does not hold (connection strings, exports,
  CLI flags, pgpass lines, service-account JSON, the 17 shapes issue 24 found
  leaking), and every benign look-alike.

`python -m tests.corpora.secrets` prints the two rates through chatmem's
redactor (see __main__.py).
"""

from __future__ import annotations

import functools
import json
import os
import re
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from tests.corpora.fetch import root

from . import ours

KINGFISHER = "kingfisher-bin"
# Patterns Python's `re` backtracks on for seconds (Rust's engine does not).
_SLOW = {"kingfisher.phpmailer.1"}
_MIN_SECRET = 6  # a rule that captures less (a port, a 4-digit pin) names no secret shape


@dataclass(frozen=True)
class Sample:
    source: str  # "kingfisher:<rule id>" or "ours"
    shape: str
    text: str
    secret: str  # the part that must not survive redaction ("" for benign)


@functools.cache
def kingfisher_rules() -> list[dict]:
    """The pinned Kingfisher's rule list, as its own CLI prints it (cached beside the wheel)."""
    folder = root(KINGFISHER)
    cached = folder / "rules.json"
    if not cached.exists():
        binary = folder / "kingfisher" / "bin" / "kingfisher"
        binary.chmod(binary.stat().st_mode | stat.S_IXUSR)  # zip extraction drops the bit
        listed = subprocess.run(
            [str(binary), "rules", "list", "--format", "json"],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=60,
        ).stdout
        cached.write_text(listed, encoding="utf-8")
    return json.loads(cached.read_text(encoding="utf-8"))


_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "xdigit": "0-9A-Fa-f",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r"\s",
    "punct": r"!-/:-@\[-`{-~",
    "word": r"\w",
}
_FLAGS = {"x": re.X, "i": re.I, "s": re.S, "m": re.M, "u": 0}


def python_pattern(pattern: str) -> re.Pattern[str]:
    """A Kingfisher (Rust regex) pattern in Python's: POSIX classes, `\\z`, leading flags."""
    pattern = re.sub(r"\[:(\w+):\]", lambda m: _POSIX[m.group(1)], pattern)
    pattern = pattern.replace(r"\z", r"\Z").replace("(?-u)", "")
    flags = 0
    leading = re.match(r"\(\?([a-z]+)\)", pattern)
    if leading:
        for letter in leading.group(1):
            flags |= _FLAGS[letter]
        pattern = pattern[leading.end() :]
    return re.compile(pattern, flags)


@functools.cache
def outside() -> tuple[list[Sample], list[str]]:
    """Kingfisher's examples as true shapes, and the ids of the rules left out (with why)."""
    samples, skipped = [], []
    for rule in kingfisher_rules():
        if not rule.get("visible", True):
            continue  # a helper rule (an id, a host name) that other rules depend on
        if rule["id"] in _SLOW:
            skipped.append(f"{rule['id']}: pattern too slow in Python's re")
            continue
        try:
            pattern = python_pattern(rule["pattern"])
        except (re.error, KeyError) as error:
            skipped.append(f"{rule['id']}: pattern not readable here ({error})")
            continue
        for example in rule.get("examples") or ():
            match = pattern.search(example)
            if match is None:
                skipped.append(f"{rule['id']}: pattern does not match its example")
                continue
            secret = _secret_of(match)
            if len(secret.strip()) < _MIN_SECRET:
                skipped.append(f"{rule['id']}: captures {len(secret)} characters")
                continue
            shape = rule["id"].removeprefix("kingfisher.")
            samples.append(Sample(f"kingfisher:{rule['id']}", shape, example, secret.strip()))
    return samples, skipped


def _secret_of(match: re.Match[str]) -> str:
    """What a rule's match names as the secret: a group named as one (password, secret,
    private key, base64), else the first group when it holds the others (a token and
    its checksum), else the last group (`-u user -p password`); in a URL, its password.
    """
    names = {index: name for name, index in match.re.groupindex.items()}
    groups = [(i, match.group(i)) for i in range(1, match.re.groups + 1) if match.group(i)]
    named = [g for i, g in groups if re.search("pass|secret|private|b64", names.get(i, ""), re.I)]
    if named:
        secret = named[0]
    elif not groups:
        secret = match.group()
    elif all(g in groups[0][1] for _, g in groups):
        secret = groups[0][1]
    else:
        secret = groups[-1][1]
    if secret.lstrip().startswith("{"):  # a credentials file: its secret field
        field = re.search(r'"(?:private_key|client_secret|refresh_token)"\s*:\s*"([^"]+)"', secret)
        secret = field.group(1) if field else secret
    signature = re.search(r"(?:^|[?&])sig=([^&\s]+)", secret)  # an Azure SAS token
    if signature:
        return signature.group(1)
    userinfo = re.search(r"://[^/@\s:]*:([^/@\s]+)@", secret)
    if userinfo:
        return userinfo.group(1)
    if re.match(r"[\w:+.-]+://", secret):  # a URL: its query's longest value, or path part
        named = re.search(r"[?&;](?i:password|pwd|secret|token|key|sig)=([^&#;\s]+)", secret)
        if named:
            return named.group(1)
        query = re.findall(r"[?&;][^=&#;]+=([^&#;\s]+)", secret)
        path = secret.split("://", 1)[1].partition("/")[2]
        parts = query or re.split(r"[/@?#]", path)
        return max(parts, key=len) or secret
    return secret


def true_shapes() -> list[Sample]:
    return outside()[0] + [Sample("ours", s.shape, s.text, s.secret) for s in ours.TRUE]


def benign() -> list[Sample]:
    return [Sample("ours", shape, text, "") for shape, text in ours.BENIGN]


def leaked(redact: object, sample: Sample) -> bool:
    """The sample's secret (or a 12-character piece of it) is still in the redacted text."""
    out = re.sub(r"\[redacted:\w+\]", "", redact(sample.text))  # type: ignore[operator]
    secret = sample.secret
    pieces = {secret} | {secret[i : i + 12] for i in range(0, max(len(secret) - 11, 1), 6)}
    # a piece kept as often as the text held it (`password 'password'` holds it twice)
    return any(
        out.count(piece) >= sample.text.count(piece)
        for piece in pieces
        if len(piece) >= min(12, len(secret))
    )


def iter_all() -> Iterator[Sample]:
    yield from true_shapes()
    yield from benign()
