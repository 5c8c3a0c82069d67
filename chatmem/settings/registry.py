"""Every CHATMEM_* key: its default, its meaning and how it is read (`SETTINGS`).

`init_app` applies the defaults with `setdefault`, so the host's own values
win. `from_environ` reads the same keys from environment variables, typed and
checked, for hosts (and the demo) that configure themselves that way. The
README's configuration table is checked against `SETTINGS` by a test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import snowballstemmer

from ..csp import source_list
from ..providers import DEFAULTS as PROVIDER_DEFAULTS
from .parsers import (
    Parser,
    boolean,
    choice,
    integer,
    key_prefix,
    optional_text,
    optional_web_url,
    optional_word_list,
    positive_number,
    seconds_or_off,
    share,
    storage_uri,
    template_name,
    text,
    url_path,
    word_list,
)


class ConfigError(ValueError):
    """One or more settings have values chatmem cannot use; `errors` maps key -> reason."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(self.errors.values()))


_INFERRED: dict[type, Parser] = {bool: boolean, int: integer(0), float: positive_number, str: text}


@dataclass(frozen=True)
class Setting:
    """One configuration key. `parse` defaults to the default's own type, as click does."""

    default: Any
    meaning: str
    parse: Parser | None = None

    def __post_init__(self) -> None:
        if self.parse is None:
            inferred = _INFERRED.get(type(self.default))
            if inferred is None:
                raise TypeError(f"say how to parse a setting whose default is {self.default!r}")
            object.__setattr__(self, "parse", inferred)

    def from_text(self, value: str) -> Any:
        assert self.parse is not None  # set in __post_init__
        return self.parse(value)


_PROVIDER_PARSERS: dict[str, Parser] = {
    "CHATMEM_PROVIDER": choice("openai", "anthropic", "none"),
    "CHATMEM_MODEL": optional_text,
    "CHATMEM_OPENAI_API": choice("responses", "chat"),
    "CHATMEM_PROVIDER_TIMEOUT": positive_number,
    "CHATMEM_PROVIDER_MAX_RETRIES": integer(0),
}

SETTINGS: dict[str, Setting] = {
    "CHATMEM_URL_PREFIX": Setting(
        "/chatmem",
        "URL prefix of the Memory screen, the MCP endpoint and the REST routes.",
        url_path,
    ),
    "CHATMEM_SERVER_NAME": Setting(
        "chatmem",
        "Server name: a tool's full name is `<server name>/<tool>`; also the MCP serverInfo name.",
    ),
    "CHATMEM_SESSION_IDLE_MINUTES": Setting(
        30, "A session idle this long is ended by the sweep.", integer(1)
    ),
    "CHATMEM_RECALL_SESSIONS": Setting(
        "own",
        "Whose session records `recall` returns: `own` (the caller's; a curator with "
        "manage_options sees everyone's) or `site` (everyone's, to anyone who may recall).",
        choice("own", "site"),
    ),
    "CHATMEM_SEARCH_LANGUAGE": Setting(
        "english",
        "The language `recall` cuts and stems a question in (a Snowball stemmer's name: "
        "`english`, `french`, `german`, ...; `simple` for no stemming). English also drops "
        "PostgreSQL's English stop words.",
        choice("simple", *snowballstemmer.algorithms()),
    ),
    "CHATMEM_RECALL_MIN_MATCH": Setting(
        0.15,
        "Abstention: `recall` returns no guidance for a question when no entry holds this "
        "share of the question's weight (its words, each by its rarity); 0 never abstains.",
        share,
    ),
    "CHATMEM_LEDGER_VALUE_MAX": Setting(
        200, "Argument strings longer than this are cut in the change ledger.", integer(1)
    ),
    "CHATMEM_DRY_RUN_DAYS": Setting(
        30,
        "How many days of the change ledger a guardrail's dry run reads (what its target "
        "would have refused).",
        integer(1),
    ),
    "CHATMEM_REJECTED_REPROPOSALS": Setting(
        "flag",
        "What happens when an agent proposes text a curator rejected before (folded as for "
        "de-duplication): `flag` stores it pending with a `rejected_before` flag saying when, "
        "by whom and why; `refuse` answers `invalid_params` and stores nothing.",
        choice("flag", "refuse"),
    ),
    "CHATMEM_ASK_GRANT_MINUTES": Setting(
        30,
        "How long a call a curator allowed once (an `ask` guardrail's Allow once) may be "
        "made; an unused grant then expires.",
        integer(1),
    ),
    "CHATMEM_STALE_TARGETS": Setting(
        "flag",
        "What the sweep does with an active entry whose `post_id:`/`post_type:`/`label:` target no "
        "longer resolves or whose `tool:` target names no registered tool: `flag` marks it "
        '"target gone" on the screen; `review` also moves it back to Pending with a note.',
        choice("flag", "review"),
    ),
    "CHATMEM_CHANGED_TARGETS": Setting(
        "flag",
        "What happens to an active entry when a successful call (or the host's "
        "`memory.target_changed`) changes a `post_id:`/`label:` target the entry has or names "
        'in its text: `flag` marks it "target changed since approval" on the Upkeep page and '
        "it stays in the block; `review` also keeps it out of the block and `recall` (its "
        "guardrail is still enforced) until a curator clicks Still true or edits it.",
        choice("flag", "review"),
    ),
    "CHATMEM_UNUSED_DAYS": Setting(
        90,
        "Active entries neither returned by a `recall` topic search nor hit by a call for "
        "this many days are listed under Unused on the Memory screen's Upkeep page.",
        integer(1),
    ),
    "CHATMEM_RETENTION_DAYS": Setting(
        0,
        "Days chatmem keeps ended sessions (summaries, digests, transcripts), ledger rows, "
        "decided held calls, injection rows and delivered notices; the sweep deletes older "
        "ones. Guidance and its audit trail are kept. 0 keeps everything.",
        integer(0),
    ),
    "CHATMEM_NOTIFY_WEBHOOK": Setting(
        None,
        "An http(s) URL that gets a JSON POST for every new proposal and held call, sent by "
        "the sweep and retried with back-off (redirects are not followed); the body names the "
        "item with a neutral title (`Proposal #12 (fact)`), never agent-written text or "
        "arguments. Empty: no webhook.",
        optional_web_url,
    ),
    "CHATMEM_LICENSE_ACTIVE": Setting(
        True, "The licence state used when the host registers no `license_checker`."
    ),
    **{
        key: Setting(default, meaning, _PROVIDER_PARSERS[key])
        for key, (default, meaning) in PROVIDER_DEFAULTS.items()
    },
    "CHATMEM_MCP_ALLOWED_HOSTS": Setting(
        None,
        "Host headers the MCP endpoint accepts (`host`, `host:port`, `host:*`, or `*`); "
        "None: localhost, 127.0.0.1 and [::1] on any port, plus SERVER_NAME.",
        optional_word_list,
    ),
    "CHATMEM_MCP_ALLOWED_ORIGINS": Setting(
        (),
        "Origins (`scheme://host[:port]`) allowed to call the MCP endpoint besides its own host.",
        word_list,
    ),
    "CHATMEM_MCP_NOTIFY_SECONDS": Setting(
        5.0,
        "How soon an MCP subscriber is told that a resource it watches changed: a "
        "`subscriptions/listen` stream checks this often, and a session's GET stream is told "
        "to come back after this long.",
    ),
    "CHATMEM_MCP_LISTEN_SECONDS": Setting(
        300.0,
        "How long one `subscriptions/listen` stream stays open; then it ends gracefully and "
        "the client listens again.",
    ),
    "CHATMEM_MCP_LISTEN_STREAMS": Setting(
        4,
        "`subscriptions/listen` streams one server process keeps open at once (each holds a "
        "server thread; two per token); 0 turns listening off.",
    ),
    "CHATMEM_MAX_BODY_BYTES": Setting(
        1024 * 1024,
        "Largest request body the MCP endpoint and the REST routes read (413 above it).",
        integer(1),
    ),
    "CHATMEM_RATE_LIMIT_PER_MINUTE": Setting(
        120,
        "Requests one user may make per minute, counted across all of that user's API "
        "tokens, every channel and a host API that charges the signed-in user (429 above "
        "it); 0: no limit.",
    ),
    "CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE": Setting(
        0,
        "A smaller budget for each API token inside its user's "
        "(CHATMEM_RATE_LIMIT_PER_MINUTE), so one busy token cannot starve the user's "
        "others; 0: none (a token may spend its user's whole budget).",
    ),
    "CHATMEM_TOKENS_PER_USER": Setting(
        20,
        "Most live (neither revoked nor expired) API tokens one user may have; minting one "
        "more on any channel (CLI, Connect page) is refused with `conflict`, reason "
        "`too_many_tokens`; 0: no cap.",
    ),
    "CHATMEM_RATELIMIT_STORAGE_URI": Setting(
        "memory://",
        "Where rate-limit counts are kept (a Flask-Limiter / `limits` storage URI): "
        "`memory://` counts in this process only; `redis://host:6379` shares one budget "
        "across workers and hosts.",
        storage_uri,
    ),
    "CHATMEM_RATELIMIT_KEY_PREFIX": Setting(
        "chatmem",
        "Prefix of every rate-limit key in the store, so deployments sharing one Redis "
        "keep their budgets apart.",
        key_prefix,
    ),
    "CHATMEM_PRE_REVIEW": Setting(
        False,
        "AI pre-review: with a provider configured, each new pending proposal gets a short "
        "advisory note from the provider (what it claims, which active entries it agrees or "
        "conflicts with, what risk to look at), written by a background job and shown beside "
        "the flags on Pending review. It never approves, rejects or edits; a failure shows no "
        "note. The proposal is sent redacted and fenced as data.",
    ),
    "CHATMEM_SUMMARY_INPUT_MAX": Setting(
        12_000,
        "Characters of transcript and digest sent to the provider for one summary.",
        integer(1),
    ),
    "CHATMEM_JOB_MAX_ATTEMPTS": Setting(
        5, "Tries of one auto-summary job before it is given up.", integer(1)
    ),
    "CHATMEM_JOB_BACKOFF_SECONDS": Setting(
        30, "Wait before the first retry of a failed summary job; doubles with every try."
    ),
    "CHATMEM_JOB_BACKOFF_MAX_SECONDS": Setting(3600, "Longest wait between two tries of one job."),
    "CHATMEM_JOB_LEASE_SECONDS": Setting(
        300,
        "A claimed job not finished within this time is claimed again (its worker died).",
        integer(1),
    ),
    "CHATMEM_BACKGROUND_SWEEP_SECONDS": Setting(
        0,
        "Seconds between in-process sweeps (idle sessions and due jobs); 0 turns it off.",
        seconds_or_off,
    ),
    "CHATMEM_UPGRADE_URL": Setting(
        "",
        'Where the locked Memory screen\'s "Upgrade to Pro" link goes (http(s) or a path); '
        "empty hides the link.",
    ),
    "CHATMEM_SCREEN_CSP": Setting(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'self'; base-uri 'none'; object-src 'none'",
        "Content-Security-Policy sent with the Memory screen's pages; empty sends none. "
        "The three settings below and a page's csp_nonce() widen it.",
    ),
    "CHATMEM_SCREEN_SCRIPT_SOURCES": Setting(
        (),
        "Sources added to the screen's script-src, for the host layout's scripts "
        "(https://cdn.example; spaces or commas between them; no 'unsafe-inline').",
        source_list,
    ),
    "CHATMEM_SCREEN_STYLE_SOURCES": Setting(
        (),
        "Sources added to the screen's style-src, for the host layout's stylesheets.",
        source_list,
    ),
    "CHATMEM_SCREEN_FONT_SOURCES": Setting(
        (),
        "Sources added to the screen's font-src (from default-src when the policy has none), "
        "for the host layout's web fonts.",
        source_list,
    ),
    "CHATMEM_BASE_TEMPLATE": Setting(
        "chatmem/base.html",
        "The layout every Memory screen page extends; it defines the chatmem_head and "
        "chatmem_content blocks. A themed host picks it per request with @memory.base_template.",
        template_name,
    ),
}

#: The (default, meaning) view of SETTINGS that older readers use.
DEFAULTS: dict[str, tuple[Any, str]] = {
    key: (setting.default, setting.meaning) for key, setting in SETTINGS.items()
}


def apply_defaults(config: dict[str, Any]) -> None:
    for key, setting in SETTINGS.items():
        config.setdefault(key, setting.default)


def read(config: Mapping[str, Any], key: str) -> Any:
    """A setting's value, falling back to its documented default."""
    return config.get(key, SETTINGS[key].default)


def shown(value: Any) -> Any:
    """A value as an error message may show it: a URI's password becomes ***."""
    return re.sub(r"://[^/@\s]*@", "://***@", value) if isinstance(value, str) else value


def coerce(key: str, value: Any) -> Any:
    """A configured value as its setting's type; ValueError says what it expects.

    Text is parsed as the environment's is; a Python value is checked by the
    same parser, so `CHATMEM_LEDGER_VALUE_MAX = 0` fails like `"0"` does.
    """
    setting = SETTINGS[key]
    if value is None and setting.default is None:
        return None
    if isinstance(value, bool) and isinstance(setting.default, bool):
        return value
    if isinstance(value, list | tuple):
        value = ", ".join(str(item) for item in value)
    return setting.from_text(value if isinstance(value, str) else str(value))


def parsed(config: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting's value, typed; ConfigError names every bad key and what it expects."""
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key in SETTINGS:
        raw = read(config, key)
        try:
            values[key] = coerce(key, raw)
        except ValueError as error:
            errors[key] = f"{key} must be {error}, not {shown(raw)!r}"
    if errors:
        raise ConfigError(errors)
    return values


def from_environ(
    environ: Mapping[str, str], settings: Mapping[str, Setting] = SETTINGS
) -> dict[str, Any]:
    """The settings present in `environ`, each parsed to its type.

    Keys not set are left out, so the caller's defaults (or `init_app`'s) stay.
    Raises ConfigError naming every bad key and what it expects; environment
    variables that are not settings (CHATMEM_TEST_..., say) are ignored.
    """
    values: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for key, setting in settings.items():
        if key not in environ:
            continue
        raw = environ[key]
        try:
            values[key] = setting.from_text(raw)
        except ValueError as error:
            errors[key] = f"{key} must be {error}, not {shown(raw)!r}"
    if errors:
        raise ConfigError(errors)
    return values
