"""Every CHATMEM_* setting: its default, how it is read from text, and what it means.

`init_app` applies the defaults with `setdefault`, so the host's own values
win. `from_environ` reads the same keys from environment variables, typed and
checked, for hosts (and the demo) that configure themselves that way. The
README's configuration table is checked against `SETTINGS` by a test.

`Settings` is what the code reads: one typed attribute per key
(`settings.jobs.lease` is a timedelta), built once per app by `init_app`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .csp import source_list
from .providers import DEFAULTS as PROVIDER_DEFAULTS

#: Turns an environment value into the setting's value; a ValueError's
#: message says what the setting expects ("a whole number of at least 1").
Parser = Callable[[str], Any]


class ConfigError(ValueError):
    """One or more settings have values chatmem cannot use; `errors` maps key -> reason."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(self.errors.values()))


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
    from limits.storage import SCHEMES

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
    "CHATMEM_UNUSED_DAYS": Setting(
        90,
        "Active entries neither returned by a `recall` topic search nor hit by a call for "
        "this many days are listed under Unused on the Memory screen's Upkeep page.",
        integer(1),
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


def _parsed(config: Mapping[str, Any]) -> dict[str, Any]:
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


# -- the typed settings object: built once per app, read by attribute -------------


@dataclass(frozen=True)
class JobSettings:
    """Auto-summary jobs: how often they are tried and how long a claim holds."""

    max_attempts: int  # CHATMEM_JOB_MAX_ATTEMPTS
    backoff: timedelta  # CHATMEM_JOB_BACKOFF_SECONDS
    backoff_max: timedelta  # CHATMEM_JOB_BACKOFF_MAX_SECONDS
    lease: timedelta  # CHATMEM_JOB_LEASE_SECONDS
    summary_input_max: int  # CHATMEM_SUMMARY_INPUT_MAX


@dataclass(frozen=True)
class RateSettings:
    """Request budgets and API-token caps, and where the counts are kept."""

    per_minute: int  # CHATMEM_RATE_LIMIT_PER_MINUTE
    per_token_per_minute: int  # CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE
    tokens_per_user: int  # CHATMEM_TOKENS_PER_USER
    storage_uri: str  # CHATMEM_RATELIMIT_STORAGE_URI
    key_prefix: str  # CHATMEM_RATELIMIT_KEY_PREFIX


@dataclass(frozen=True)
class McpSettings:
    """Who may reach the MCP endpoint: Host headers and Origins."""

    allowed_hosts: tuple[str, ...] | None  # CHATMEM_MCP_ALLOWED_HOSTS
    allowed_origins: tuple[str, ...]  # CHATMEM_MCP_ALLOWED_ORIGINS


@dataclass(frozen=True)
class ScreenSettings:
    """The Memory screen's layout, Content-Security-Policy and upgrade link."""

    csp: str  # CHATMEM_SCREEN_CSP
    script_sources: tuple[str, ...]  # CHATMEM_SCREEN_SCRIPT_SOURCES
    style_sources: tuple[str, ...]  # CHATMEM_SCREEN_STYLE_SOURCES
    font_sources: tuple[str, ...]  # CHATMEM_SCREEN_FONT_SOURCES
    base_template: str  # CHATMEM_BASE_TEMPLATE
    upgrade_url: str  # CHATMEM_UPGRADE_URL

    @property
    def host_sources(self) -> dict[str, tuple[str, ...]]:
        """The host layout's extra sources by setting, as `csp.policy` reads them."""
        return {
            "CHATMEM_SCREEN_SCRIPT_SOURCES": self.script_sources,
            "CHATMEM_SCREEN_STYLE_SOURCES": self.style_sources,
            "CHATMEM_SCREEN_FONT_SOURCES": self.font_sources,
        }


@dataclass(frozen=True)
class ProviderSettings:
    """The LLM provider the summary jobs (and the demo's chat) use."""

    name: str  # CHATMEM_PROVIDER
    model: str | None  # CHATMEM_MODEL
    openai_api: str  # CHATMEM_OPENAI_API
    timeout: float  # CHATMEM_PROVIDER_TIMEOUT
    max_retries: int  # CHATMEM_PROVIDER_MAX_RETRIES

    def as_config(self) -> dict[str, Any]:
        """The CHATMEM_PROVIDER* keys, as `providers.provider_from_config` reads them."""
        return {
            "CHATMEM_PROVIDER": self.name,
            "CHATMEM_MODEL": self.model,
            "CHATMEM_OPENAI_API": self.openai_api,
            "CHATMEM_PROVIDER_TIMEOUT": self.timeout,
            "CHATMEM_PROVIDER_MAX_RETRIES": self.max_retries,
        }


@dataclass(frozen=True)
class Settings:
    """Every CHATMEM_* setting, read from the app's config once, typed and checked.

    Built by `init_app` (and `ChatMemory.reload_settings`) with `Settings.load`,
    so a bad value fails at start-up with its key named instead of in the middle
    of a request. Frozen: what a request, a tool or a job reads cannot change
    under it.
    """

    url_prefix: str  # CHATMEM_URL_PREFIX
    server_name: str  # CHATMEM_SERVER_NAME
    session_idle: timedelta  # CHATMEM_SESSION_IDLE_MINUTES
    recall_sessions: str  # CHATMEM_RECALL_SESSIONS: own or site
    ledger_value_max: int  # CHATMEM_LEDGER_VALUE_MAX
    dry_run_days: int  # CHATMEM_DRY_RUN_DAYS
    rejected_reproposals: str  # CHATMEM_REJECTED_REPROPOSALS: flag or refuse
    ask_grant_minutes: int  # CHATMEM_ASK_GRANT_MINUTES
    stale_targets: str  # CHATMEM_STALE_TARGETS: flag or review
    unused_days: int  # CHATMEM_UNUSED_DAYS
    notify_webhook: str | None  # CHATMEM_NOTIFY_WEBHOOK
    license_active: bool  # CHATMEM_LICENSE_ACTIVE
    max_body_bytes: int  # CHATMEM_MAX_BODY_BYTES
    background_sweep: timedelta  # CHATMEM_BACKGROUND_SWEEP_SECONDS; zero: off
    provider: ProviderSettings
    mcp: McpSettings
    rate: RateSettings
    jobs: JobSettings
    screen: ScreenSettings

    @classmethod
    def load(cls, config: Mapping[str, Any]) -> Settings:
        """The settings in `config` (defaults for keys it lacks); ConfigError names bad keys."""
        v = _parsed(config)
        return cls(
            url_prefix=v["CHATMEM_URL_PREFIX"],
            server_name=str(v["CHATMEM_SERVER_NAME"]),
            session_idle=timedelta(minutes=v["CHATMEM_SESSION_IDLE_MINUTES"]),
            recall_sessions=v["CHATMEM_RECALL_SESSIONS"],
            ledger_value_max=v["CHATMEM_LEDGER_VALUE_MAX"],
            dry_run_days=v["CHATMEM_DRY_RUN_DAYS"],
            rejected_reproposals=v["CHATMEM_REJECTED_REPROPOSALS"],
            ask_grant_minutes=v["CHATMEM_ASK_GRANT_MINUTES"],
            stale_targets=v["CHATMEM_STALE_TARGETS"],
            unused_days=v["CHATMEM_UNUSED_DAYS"],
            notify_webhook=v["CHATMEM_NOTIFY_WEBHOOK"],
            license_active=bool(v["CHATMEM_LICENSE_ACTIVE"]),
            max_body_bytes=v["CHATMEM_MAX_BODY_BYTES"],
            background_sweep=timedelta(seconds=v["CHATMEM_BACKGROUND_SWEEP_SECONDS"]),
            provider=ProviderSettings(
                name=v["CHATMEM_PROVIDER"],
                model=v["CHATMEM_MODEL"],
                openai_api=v["CHATMEM_OPENAI_API"],
                timeout=v["CHATMEM_PROVIDER_TIMEOUT"],
                max_retries=v["CHATMEM_PROVIDER_MAX_RETRIES"],
            ),
            mcp=McpSettings(
                allowed_hosts=v["CHATMEM_MCP_ALLOWED_HOSTS"],
                allowed_origins=v["CHATMEM_MCP_ALLOWED_ORIGINS"],
            ),
            rate=RateSettings(
                per_minute=v["CHATMEM_RATE_LIMIT_PER_MINUTE"],
                per_token_per_minute=v["CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE"],
                tokens_per_user=v["CHATMEM_TOKENS_PER_USER"],
                storage_uri=v["CHATMEM_RATELIMIT_STORAGE_URI"],
                key_prefix=v["CHATMEM_RATELIMIT_KEY_PREFIX"],
            ),
            jobs=JobSettings(
                max_attempts=v["CHATMEM_JOB_MAX_ATTEMPTS"],
                backoff=timedelta(seconds=v["CHATMEM_JOB_BACKOFF_SECONDS"]),
                backoff_max=timedelta(seconds=v["CHATMEM_JOB_BACKOFF_MAX_SECONDS"]),
                lease=timedelta(seconds=v["CHATMEM_JOB_LEASE_SECONDS"]),
                summary_input_max=v["CHATMEM_SUMMARY_INPUT_MAX"],
            ),
            screen=ScreenSettings(
                csp=v["CHATMEM_SCREEN_CSP"],
                script_sources=v["CHATMEM_SCREEN_SCRIPT_SOURCES"],
                style_sources=v["CHATMEM_SCREEN_STYLE_SOURCES"],
                font_sources=v["CHATMEM_SCREEN_FONT_SOURCES"],
                base_template=v["CHATMEM_BASE_TEMPLATE"],
                upgrade_url=v["CHATMEM_UPGRADE_URL"],
            ),
        )


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
