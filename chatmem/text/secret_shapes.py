"""The shapes of secrets: what a secret looks like, wherever it sits.

Provider and cloud keys, tokens with a known prefix, JWTs, PEM private keys,
chatmem tokens, bearer credentials, passwords in URLs, on command lines and
in config files; the families issue 24 added are ported from Kingfisher's
rules (mongodb/kingfisher, Apache-2.0), each with a comment naming the
family; and, last, a long token of mixed letters and digits with high
entropy (`random_token`), or after a short prefix (`api_token`).

Data and the checks the shapes use; `chatmem.text.redaction` applies them.
This module imports nothing else of chatmem's.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import NamedTuple

_START = r"(?<![A-Za-z0-9])"  # a prefix such as ghp_ may follow "_" or "=", not a letter


# `:5432:` in a ~/.pgpass line: literal-led, so searched for fast (a `:` alone is everywhere)
_PGPASS_PORT = re.compile(r":(?:\d{2,5}|\*):")


class _Shape(NamedTuple):
    kind: str
    # Literal text every match holds: a pattern runs only on text that has one
    # (a `str` search is far cheaper than a regex scan; most text has none).
    # Empty: the shape runs on every text long enough to hold it.
    anchors: tuple[str | re.Pattern[str], ...]
    pattern: re.Pattern[str]
    # A match it returns False for is left alone (a slug, a hash, a word).
    check: Callable[[re.Match[str]], bool] | None = None


def _shape(
    kind: str,
    anchors: tuple[str | re.Pattern[str], ...],
    pattern: str,
    check: Callable[[re.Match[str]], bool] | None = None,
) -> _Shape:
    return _Shape(kind, anchors, re.compile(pattern), check)


def entropy(value: str) -> float:
    """Shannon entropy in bits per character: ~4.5+ for random base62, ~3 for words."""
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def looks_random(value: str, *, shortest: int = 8) -> bool:
    """A value a person did not choose as a word: long enough, letters and digits mixed."""
    if not shortest <= len(value) <= 2_000 or any(c.isspace() for c in value):
        return False
    if "://" in value:
        return False  # a link (its user info has a shape of its own)
    if value.lower() in _PLACEHOLDERS or _PLACEHOLDER.fullmatch(value):
        return False
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    if _UUID.fullmatch(value):
        return True  # under a secret's key a UUID is the secret (snyk_key = <uuid>)
    if not letters:
        return digits >= 12 and entropy(value) >= 2.5  # asana_key = 8195513847023883
    if not digits:
        # all letters: random only when long, mixed-case and varied (AbCd…Yz)
        mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
        wordy = _CASE_RUN.search(value) is not None  # GUIDANCE_TYPES.index
        return len(value) >= 20 and mixed and not wordy and entropy(value) >= 3.5
    return entropy(value) >= 2.5


def _random_token(match: re.Match[str]) -> bool:
    """A long token of upper, lower and digits with high entropy, not a hash or image."""
    value = match.group()
    if _DIGITS.search(value) is None:
        return False  # every branch below wants digits; most words and paths have none
    # as far back as a name is read: `postmark=` then a run of spaces still assigns
    before = match.string[max(0, match.start() - _LOOK_BACK) : match.start()]
    if _NOT_A_SECRET_BEFORE.search(before) or _HASH_PREFIX.match(value):
        return False
    assigned = bool(_ASSIGNED_BEFORE.search(before))
    if len(value) < (_RANDOM_ASSIGNED if assigned else _RANDOM_ALONE):
        return False
    upper = sum(c.isupper() for c in value)
    lower = sum(c.islower() for c in value)
    digits = sum(c.isdigit() for c in value)
    if min(upper, lower, digits) >= 2 and not _UUID.fullmatch(value):
        # Draft202012Validator.check_schema: a name, its words long runs of one case
        return not (not assigned and _wordy(value)) and entropy(value) >= (3.6 if assigned else 4.0)
    # One case only (hex, a UUID, base36) is a key when a name is set to it
    # (`assemblyai = fa0e…`, `postmark: "f59d…"`), unless the name says what
    # else it is: a hash, a commit, an id.
    if not assigned or min(upper, lower) and not _UUID.fullmatch(value):
        return False
    name = _NAME_BEFORE.search(before)
    if name is None or _NOT_A_KEY_NAME.search(name.group("name")):
        return False
    letters = upper + lower
    long_enough = len(value) >= 32 or _UUID.fullmatch(value) is not None
    return long_enough and letters >= 4 and digits >= 4 and entropy(value) >= 3.3


def _wordy(value: str) -> bool:
    """Its longest part holds a word-like run of 8+ lower-case letters (not `abcdefgh…`)."""
    part = max(re.split(r"[-_.~/+]", value), key=len)
    return any(run not in "abcdefghijklmnopqrstuvwxyz" for run in _LOWER_RUN.findall(part))


def _prefixed_token(match: re.Match[str]) -> bool:
    """`<prefix>_<random body>`: the body's longest run of letters and digits is random."""
    body = match.group("body")
    if _DIGITS.search(body) is None and _UPPER_LOWER.search(body) is None:
        return False  # neither digits nor mixed case: words (spring-sale-on-the-garden)
    if _HASH_PREFIX.match(match.group()):
        return False
    run = max(_ALNUM_RUN.findall(body), key=len, default="")
    hexadecimal = all(c in "0123456789abcdefABCDEF" for c in run)
    if len(run) < (24 if hexadecimal else 12):
        return False
    has_letters = any(c.isalpha() for c in run)
    has_digits = any(c.isdigit() for c in run)
    mixed = any(c.isupper() for c in run) and any(c.islower() for c in run)
    return has_letters and (has_digits or (mixed and len(run) >= 20)) and entropy(run) >= 3.0


def _flag_value(match: re.Match[str]) -> bool:
    value = match.group("secret").strip("'\"")
    return (
        len(value) >= 3 and value.lower() not in _PLACEHOLDERS and not _PLACEHOLDER.fullmatch(value)
    )


_DIGITS = re.compile(r"\d.*\d")
_UPPER_LOWER = re.compile(r"[A-Z][a-z]|[a-z][A-Z]")
_CASE_RUN = re.compile(r"[a-z]{5}|[A-Z]{5}")
_LOWER_RUN = re.compile(r"[a-z]{8,}")
_UUID = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
_ALNUM_RUN = re.compile(r"[A-Za-z0-9]+")
_HASH_PREFIX = re.compile(r"(?i)(?:sha|md|blake|crc|sri|x86|amd|arm|utf|iso|rfc|cve)\d*[_-]")
# `image_sha256: ` labels a digest, `Marsha: ` does not
_NOT_A_SECRET_BEFORE = re.compile(r"(?i)(?:base64,|sha\d{3}-|data:|(?<![a-z])sha\d*[:=]\s*)$")
_LOOK_BACK = 80  # characters before a token where its name and `=` are read
_NAME_BEFORE = re.compile(r"(?P<name>[\w.-]+)[\"'`\]]*[ \t]*(?::=|=>|[:=])[ \t]*[\"'`]?$")
# Names whose random-looking value is no secret: hashes, commits, ids, versions.
_NOT_A_KEY_NAME = re.compile(
    r"(?i)(?:sha\d*|md5|hash|checksum|digest|commit|etag|rev(?:ision)?|id|uuid|guid|ref"
    r"|integrity|fingerprint|version|build|object|request|trace|span|nonce|salt|iv|color)s?$"
)
_ASSIGNED_BEFORE = re.compile(r"(?:[:=]|=>)\s*[\"'`]?$|[\"'`]$")
_RANDOM_ALONE = 24
_RANDOM_ASSIGNED = 16
# A value a secret flag carries: bare, or in quotes.
_FLAG_VALUE = r"(?P<secret>'[^'\n]+'|\"[^\"\n]+\"|[^\s'\"|;&]+)"


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
    _shape("slack_token", ("xox",), _START + r"xox[abcdposre]-[A-Za-z0-9-]{10,}"),
    _shape("jwt", ("eyJ",), _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[\w-]*"),
    _shape("chatmem_token", ("cm_",), _START + r"cm_[A-Za-z0-9_-]{20,}"),
    _shape(
        "bearer_token",
        ("Bearer", "bearer", "BEARER", "OAuth", "oauth", "OAUTH"),
        # 16+ characters, or 12+ with a digit or symbol: not "Bearer authentication"
        r"(?i:\b(?:bearer|oauth))\s+(?:[\w.~+/-]{16,}|(?=[\w.~+/-]*[\d.~+/_-])[\w.~+/-]{12,})=*",
    ),
    # only the user:password part, so the link still says where it pointed
    # (literal text first is searched for fast; a lookbehind is tried at every position)
    _shape("url_credentials", ("://",), r"://(?P<secret>[^\s/?#:\"']*+:[^\s/?#@\"']++)(?=@)"),
    _shape(  # a key as the whole user info: https://<key>@sentry.io/1
        "url_credentials",
        ("://",),
        r"://(?P<secret>[\w-]{16,}:?)(?=@)",
        lambda m: looks_random(m.group("secret")),
    ),
    _shape(  # kingfisher.ansible: a vault's encrypted body
        "secret",
        ("$ANSIBLE_VAULT",),
        r"\$ANSIBLE_VAULT;[^\n]*\n(?P<secret>[0-9a-f\n]{32,})",
    ),
    # --- ported from Kingfisher's rules (mongodb/kingfisher, Apache-2.0; the rule
    # ids are the families named): shapes no key word or prefix shows ---
    _shape(  # kingfisher.telegram
        "telegram_bot_token", (":AA",), r"(?<![\d:])\d{8,10}:AA[A-Za-z0-9_-]{30,}"
    ),
    _shape(  # kingfisher.discord
        "discord_webhook",
        ("/api/webhooks/",),
        r"(?<=/api/webhooks/)\d{5,30}/[\w-]{20,}",
    ),
    _shape(  # kingfisher.pwhash: crypt(3), bcrypt, apr1, yescrypt and argon2 hashes
        "password_hash",
        ("$",),
        r"(?<![\w$])\$(?:[15-9]|2[abxy]?|apr1|y|argon2(?:id|i|d)|krb5(?:asrep|tgs)\$\d+)\$"
        r"[./A-Za-z0-9$=,+:@*~_-]{8,}",  # krb5tgs: $*user$REALM$spn~port*$…
    ),
    _shape(  # kingfisher.atlassian, .bitbucket, .artifactory, .facebook, .nuget, .airtable, .google
        "api_token",
        ("ATATT", "ATCTT", "ATBB", "AKCp", "EAA", "oy2", "pat", "ya29."),
        _START + r"(?:AT(?:ATT|CTT)3[\w=-]{20,}|ATBB[A-Za-z0-9]{24,}|AKCp[A-Za-z0-9]{40,}"
        r"|EAA[A-Za-z0-9]{30,}|oy2[a-z0-9]{43}|pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"
        r"|ya29\.[\w-]{20,})",
    ),
    _shape(  # kingfisher.1password, .pubnub, .hubspot, .riot, .iterative, .checkout,
        # .databricks, .zohocrm, .salesforce: fixed shapes the generic one below misses
        "api_token",
        ("A3-", "1PRK-", "-c-", "pat-", "RGAPI-", "isat_", "sk_", "dapi", "1000.", "00D"),
        _START
        + r"(?:A\d-[A-Z0-9]{6}-[A-Z0-9]{5,6}(?:-[A-Z0-9]{5,6}){3,4}|1PRK(?:-[A-Z0-9]{4}){10,}"
        r"|(?:(?:pub|sub|sec)-c-|pat-(?:na|eu)\d-|RGAPI-|isat_|sk_)"
        r"[0-9a-zA-Z]{8}-(?:[0-9a-zA-Z]{4}-){3}[0-9a-zA-Z]{12}"
        r"|dapi[a-f0-9]{32}(?:-\d)?|1000\.[a-f0-9]{32}\.[a-f0-9]{32}"
        r"|00D[A-Za-z0-9]{12,15}![A-Za-z0-9._]{80,})",
    ),
    _shape(  # kingfisher.infura, .alchemy, .mattermost, .thingsboard: a key as a URL's path
        "api_token",
        ("/v2/", "/v3/", "/hooks/", "/api/v1/", "/webhook"),
        r"(?<=/v2/)[A-Za-z0-9_-]{20,}(?![\w-])|(?<=/v3/)[A-Za-z0-9_-]{20,}(?![\w-])"
        r"|(?<=/hooks/)[a-z0-9]{20,}(?![\w-])|(?<=/api/v1/)[A-Za-z0-9]{20}(?=/)"
        r"|(?<=/webhook/)[\w@/-]{60,}|(?<=/webhookb2/)[\w@/-]{60,}|(?<=/hooks/catch/)\d+/\w+",
        lambda m: looks_random(m.group()),
    ),
    # Most providers now put a short prefix before a random body (hf_, npm_,
    # dop_v1_, shpat_, SG., key-, HRKU-, xkeysib-, dckr_pat_, glc_, r8_, …):
    # Kingfisher has a rule for each; one shape takes them all, and a body that
    # reads as words or version numbers is left alone.
    _shape(
        "api_token",
        (),
        # (the lookahead skips, cheaply, every word too short to be one)
        r"(?<![\w.+/@-])(?=[\w.=+/-]{20})"
        r"(?:[A-Za-z][A-Za-z0-9]{1,11}(?:[_-][A-Za-z0-9]{1,12}){0,3}[_-]|SG\.|AQ\.)"
        r"(?P<body>[A-Za-z0-9][A-Za-z0-9_.=+/-]{15,})",
        _prefixed_token,
    ),
    # --- passwords on command lines and in config files (ours, after Kingfisher's
    # mysql, psexec, wincmd, powershell, unattend, postgres (pgpass) families) ---
    _shape(
        "password",
        (
            *("-p", "-a", "/p", "/rp", "-u", "--", "ecureString", "htpasswd", "-P", "net use"),
            *("IDENTIFIED", "identified", "PASSWORD", "connect", "PDO", "mysqli", "Credential"),
        ),
        r"(?:\b(?:mysql|mysqldump|mysqladmin|mariadb(?:-dump)?)\b[^\n|;&]*?\s-p(?=\S)"
        r"|\b(?:redis-cli|sshpass)\b[^\n|;&]*?\s-[ap]\s*"
        r"|\b(?:docker|podman|helm|nerdctl)\s+(?:registry\s+)?login\b[^\n|;&]*?\s-p\s+"
        r"|(?i:\bpsexec(?:64)?(?:\.exe)?)\b[^\n|;&]*?\s-p\s+"
        r"|(?i:\b(?:cmdkey|net\s+use|schtasks|runas)\b)[^\n|;&]*?\s/(?:pass|p|rp|password)[:\s]\s*"
        r"|\bcurl\b[^\n|;&]*?\s(?:-u|--user)\s+['\"]?[^\s:]+:"
        r"|\bhtpasswd\s+-\w*b\w*\s+(?:-\w+\s+)*(?:\S+\s+){2}"
        r"|(?i:ConvertTo-SecureString)\s+(?:-String\s+)?"
        r"|(?i:\bIDENTIFIED\s+BY\s+|\bWITH\s+(?:ENCRYPTED\s+)?PASSWORD\s+)"
        r"|\bnet\s+use\b[^\n|;&]*?/user:\S+\s+(?=[^\s/])"
        r"|(?:\bmysqli?_connect|\bmysqli|\bPDO|\bDBI(?:->|\.)connect)\s*\(\s*"
        r"(?:[\"'][^\"']*[\"']\s*,\s*){2}"  # PHP's strings may span lines
        r"|\bNetworkCredential(?:\]::new)?\s*\(\s*[\"'][^\"'\n]*[\"']\s*,\s*"
        r"|(?<![\w-])--?(?i:(?:[\w-]*?[_-])?(?:password|passwd|pass|token|secret|api[_-]?key|"
        r"auth[_-]?token|access[_-]?key|with-token))(?:=|[ \t]+))" + _FLAG_VALUE,
        _flag_value,
    ),
    _shape(  # host:port:database:user:password (~/.pgpass)
        "password",
        (_PGPASS_PORT,),
        r"(?<![\w.:/-])(?=[\w.*-]++:(?:\d{2,5}|\*):)(?:[\w.-]++|\*):(?:\d{2,5}|\*):"
        r"(?:[\w.-]++|\*):(?:[\w.@-]++|\*):"
        r"(?P<secret>(?:\\.|[^\s:\\]){4,})",  # `\:` and `\\` are escapes in a password
    ),
    _shape(  # <Password><Value>…</Value>, <AdministratorPassword>…, <apiKey>…
        "password",
        ("assword>", "ecret>", "oken>", "ey>"),
        r"<(?P<tag>[\w:.-]*(?:[Pp]assword|[Ss]ecret|[Tt]oken|[Kk]ey))>\s*(?:<Value>)?"
        r"(?P<secret>[^<\s][^<]{3,}?)\s*</",
        lambda m: m.group("secret").strip().lower() not in _PLACEHOLDERS,
    ),
    # Last, anything left that is long, mixed and random: keys with no prefix
    # (Azure, Mailjet, Alchemy, …) wherever they sit.
    _shape(
        "random_token",
        (),
        # It may begin with one symbol (a base64 value does one time in 32) and end
        # its padding at a full stop: "… key +Kx9…Jm9P==." is the key and the stop.
        r"(?<![A-Za-z0-9+/_.~-])[+/_~-]?[A-Za-z0-9][A-Za-z0-9+/_.~-]{15,}+={0,2}"
        r"(?![A-Za-z0-9+/=_~-]|\.[A-Za-z0-9+/=_~-])",
        _random_token,
    ),
)
_SHORTEST = len("pwd=x")  # no secret this finds is shorter
# Text with none of these holds none of the shapes: checked first, as nine
# substring searches cost less than one look at every shape's anchors.
_GATES = (
    *("_", "-", "IA", "AIza", "eyJ", "earer", "EARER", "://", "PRIVATE KEY", ":", "$", "Auth"),
    *("/p", "/rp", "ecureString", "ATBB", "AKCp", "EAA", "oy2", "pat", "ya29.", "dapi"),
    *("oauth", "OAUTH"),  # the lower- and upper-case forms `Auth` misses
    *("assword>", "ecret>", "oken>", "ey>", "1000.", "00D", "/v2/", "/v3/", "/hooks/", "/webhook"),
    *("PDO", "mysqli", "IDENTIFIED", "identified", "PASSWORD", "net use", "connect"),
    "Credential",  # C#'s `new NetworkCredential("alice", "…")` holds none of the above
)
_LONG_TOKEN = re.compile(r"(?<![\w.=+/~-])[\w.=+/~-]{16,}")
_SHORTEST_TOKEN = 16  # the shapes without an anchor find nothing shorter
# An AWS secret key is 40 characters of base64 with nothing to recognise it
# by; in the same text as an access key id it is taken for one.
_AWS_ID = re.compile(r"(?<![A-Za-z0-9])A[KS]IA[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# Values that stand for no secret (also under a secret's key: `password: null`).
_PLACEHOLDERS: set[str] = {"", "null", "none", "nil", "true", "false", "undefined", "...", "…"}
_PLACEHOLDERS |= {"changeme", "placeholder", "redacted"}
_PLACEHOLDERS |= {"bearer", "basic", "token"}  # `Authorization: Bearer <token>`
# type names: `password: str` in code, `"token": "string"` in a schema
_PLACEHOLDERS |= {"str", "int", "bool", "bytes", "float", "any", "string", "number", "boolean"}
_PLACEHOLDER = re.compile(
    r"\[redacted[^\]]*\]|\$\{?[A-Z_][A-Z0-9_]*\}?|\{\{.*\}\}|%\(?\w*\)?s|[*x•?]+"
    r"|<[^<>]*>|(?i:your|my)[_-][\w-]+|\[[a-z ]+\]|0x[0-9a-fA-F]{1,16}"
)
