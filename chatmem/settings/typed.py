"""The settings as the code reads them: one frozen, typed attribute per key.

Built once per app by `init_app` (and `reload_settings`) with `Settings.load`;
related keys are grouped (`settings.jobs.lease`, `settings.rate.per_minute`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from .registry import parsed


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
    """Who may reach the MCP endpoint (Host headers, Origins), and how subscribers are told."""

    allowed_hosts: tuple[str, ...] | None  # CHATMEM_MCP_ALLOWED_HOSTS
    allowed_origins: tuple[str, ...]  # CHATMEM_MCP_ALLOWED_ORIGINS
    notify_seconds: float  # CHATMEM_MCP_NOTIFY_SECONDS
    listen_seconds: float  # CHATMEM_MCP_LISTEN_SECONDS
    listen_streams: int  # CHATMEM_MCP_LISTEN_STREAMS


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
    search_language: str  # CHATMEM_SEARCH_LANGUAGE: a Snowball stemmer or simple
    recall_min_match: float  # CHATMEM_RECALL_MIN_MATCH: 0 to 1
    ledger_value_max: int  # CHATMEM_LEDGER_VALUE_MAX
    dry_run_days: int  # CHATMEM_DRY_RUN_DAYS
    rejected_reproposals: str  # CHATMEM_REJECTED_REPROPOSALS: flag or refuse
    ask_grant_minutes: int  # CHATMEM_ASK_GRANT_MINUTES
    stale_targets: str  # CHATMEM_STALE_TARGETS: flag or review
    changed_targets: str  # CHATMEM_CHANGED_TARGETS: flag or review
    unused_days: int  # CHATMEM_UNUSED_DAYS
    retention_days: int  # CHATMEM_RETENTION_DAYS; zero: off
    notify_webhook: str | None  # CHATMEM_NOTIFY_WEBHOOK
    license_active: bool  # CHATMEM_LICENSE_ACTIVE
    max_body_bytes: int  # CHATMEM_MAX_BODY_BYTES
    background_sweep: timedelta  # CHATMEM_BACKGROUND_SWEEP_SECONDS; zero: off
    pre_review: bool  # CHATMEM_PRE_REVIEW
    provider: ProviderSettings
    mcp: McpSettings
    rate: RateSettings
    jobs: JobSettings
    screen: ScreenSettings

    @classmethod
    def load(cls, config: Mapping[str, Any]) -> Settings:
        """The settings in `config` (defaults for keys it lacks); ConfigError names bad keys."""
        v = parsed(config)
        return cls(
            url_prefix=v["CHATMEM_URL_PREFIX"],
            server_name=str(v["CHATMEM_SERVER_NAME"]),
            session_idle=timedelta(minutes=v["CHATMEM_SESSION_IDLE_MINUTES"]),
            recall_sessions=v["CHATMEM_RECALL_SESSIONS"],
            search_language=v["CHATMEM_SEARCH_LANGUAGE"],
            recall_min_match=v["CHATMEM_RECALL_MIN_MATCH"],
            ledger_value_max=v["CHATMEM_LEDGER_VALUE_MAX"],
            dry_run_days=v["CHATMEM_DRY_RUN_DAYS"],
            rejected_reproposals=v["CHATMEM_REJECTED_REPROPOSALS"],
            ask_grant_minutes=v["CHATMEM_ASK_GRANT_MINUTES"],
            stale_targets=v["CHATMEM_STALE_TARGETS"],
            changed_targets=v["CHATMEM_CHANGED_TARGETS"],
            unused_days=v["CHATMEM_UNUSED_DAYS"],
            retention_days=v["CHATMEM_RETENTION_DAYS"],
            notify_webhook=v["CHATMEM_NOTIFY_WEBHOOK"],
            license_active=bool(v["CHATMEM_LICENSE_ACTIVE"]),
            max_body_bytes=v["CHATMEM_MAX_BODY_BYTES"],
            background_sweep=timedelta(seconds=v["CHATMEM_BACKGROUND_SWEEP_SECONDS"]),
            pre_review=bool(v["CHATMEM_PRE_REVIEW"]),
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
                notify_seconds=v["CHATMEM_MCP_NOTIFY_SECONDS"],
                listen_seconds=v["CHATMEM_MCP_LISTEN_SECONDS"],
                listen_streams=v["CHATMEM_MCP_LISTEN_STREAMS"],
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
