"""The names secrets sit under: `password=…`, `secret: …`, `"api_key": "…"`.

A key that surely names a secret (`password`, `api_key`) takes any value; a
key that only often names one (`asana_key`, `ASANA_PAT`) takes only a value
that looks random. `chatmem.text.redaction` masks the values.
This module imports nothing else of chatmem's.
"""

from __future__ import annotations

import re

# Key names whose value is a secret: a component of the name ends with one of
# these (PGPASSWORD, clientSecret, X-Auth-Token, api_key, AWS_SECRET_ACCESS_KEY).
_KEY_WORDS = {
    "password": "password",
    "passwd": "password",
    "passphrase": "password",
    "pwd": "password",
    # `pass` glued to what it opens (DBPASS, SMTPPASS); a bare `…PASS` (XPASS) is no key
    **dict.fromkeys(("dbpass", "sqlpass", "pgpass", "rootpass", "adminpass"), "password"),
    **dict.fromkeys(("userpass", "smtppass", "mailpass", "ftppass", "ldappass"), "password"),
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
# Words a secret often sits under, but other values too: only a random value is one.
_WEAK_KEY_WORDS = {
    "key": "api_key",
    "pat": "token",
    "auth": "token",
    "login": "token",
    "certificate": "secret",
    "sig": "token",
    "signature": "token",
    "pass": "password",
    "pw": "password",
    "dsn": "secret",
}
# What may follow the secret word in a key and still name the secret itself;
# anything else names something about it (password_policy, token_count).
_KEY_TAILS = {"key", "value", "val", "str", "string", "b64", "base64", "raw", "hash", "enc", "base"}
_KEY_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
# Lower-case text every such key holds: where the `key: value` pass looks.
_KEY_HINTS = (
    *("pass", "pwd", "secret", "token", "key", "credential", "authori", "cookie"),
    *("pat", "auth", "login", "certificate", "sig", "pw", "dsn"),
)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
# A key starts where chatmem.text.redaction's walk back from a hint puts it
# (after a space, a non-ASCII letter, a leading dot or dash), and is at most
# 64 characters: a longer run is tried again from its last words.
_KEYED = re.compile(
    r"(?P<key>[\w][\w.-]{0,63}+)"
    r"(?P<key_quote>\\*[\"']\]?)?"
    # `key: v`, `key = v`, `'KEY', 'v'` (define()), or `KEY v` / `password is v`
    r"(?P<sep>[ \t]*(?::=|=>|[:=,])[ \t]*|(?:[ \t]+|[ \t]*\n[ \t]*)(?:(?:is|was)[ \t]+)?)"
    # a quoted value ends at the same quote, as escaped as the opening one:
    # "…", \"…\" (JSON in a JSON string), \\\"…\\\" (one level deeper) …
    r"(?:(?P<quote>\\*[\"'])(?P<quoted>.*?)(?<!\\)(?P=quote)"
    r"|(?P<bare>(?:(?i:bearer|basic|token)[ \t]+)?\)?[^\s,;&<{}\])'\"\\][^\s,;&}\])'\"\\]*)"
    # (a bare value may start with `)` or `[`, as a password may; `[…]` closed on its
    # line is code to chatmem.text.redaction, `[redacted:…]` included)
    # a quote never closed on its line: `password='hunter2` (the value is its first word)
    r"|(?P<opened>\\*[\"'])(?P<unclosed>\S+))"
)


def key_kind(name: str) -> str | None:
    """The secret kind a key name stands for (`api_key` -> "api_key"), or None."""
    found = secret_key(name)
    return found[0] if found and found[1] else None


def secret_key(name: str) -> tuple[str, bool] | None:
    """(kind, sure) for a key name a secret sits under, or None.

    Sure: its value is a secret whatever it looks like (`password`, `api_key`).
    Not sure (`asana_key`, `ASANA_PAT`, `sonar.login`): only a value that
    looks random is one (`primary_key: id`, `sort_key=created_at` are not).
    """
    lowered = name.lower()
    if not any(hint in lowered for hint in _KEY_HINTS):
        return None
    squeezed = lowered.replace("_", "").replace("-", "")
    if squeezed.endswith(("privatekeyid", "secretid")):
        return "secret", True  # a service account's key id, Vault AppRole's secret_id
    parts = [p.lower() for p in _KEY_PARTS.findall(name)]
    for words, sure in ((_KEY_WORDS, True), (_WEAK_KEY_WORDS, False)):
        for index in range(len(parts) - 1, -1, -1):
            pair = parts[index - 1] + parts[index] if index else ""
            word = next((w for w in (pair, parts[index]) if w in words), None)
            if word is None and sure:
                word = next((w for w in words if parts[index].endswith(w)), None)
            elif word is None and parts[index].endswith("key"):
                word = "key"  # adobeKey, accountkey, MERAKI_KEY
            if word is not None:
                tail = parts[index + 1 :]
                if set(tail) <= _KEY_TAILS:
                    # DB_PASS, SMTP_PW: as a whole last word, sure
                    return words[word], sure or (word in ("pass", "pw") and not tail)
                break
    return None
