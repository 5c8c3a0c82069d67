"""Settings from the environment: every documented key, typed and checked.

`config.from_environ` is what the demo's `create_app()` (and the README's
plug-in example) use; an invalid value stops start-up naming the key and
what it expects, and an explicit `create_app(config)` value wins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import snowballstemmer
from flask import Flask

from chatmem import settings as config
from chatmem.settings import SETTINGS, ConfigError, Setting, from_environ

# A valid text and the value it must become, for every setting (a new
# setting fails `test_every_setting_has_an_example` until it gets one).
EXAMPLES: dict[str, tuple[str, Any]] = {
    "CHATMEM_STALE_TARGETS": ("Review", "review"),
    "CHATMEM_CHANGED_TARGETS": (" Review ", "review"),
    "CHATMEM_UNUSED_DAYS": ("30", 30),
    "CHATMEM_NOTIFY_WEBHOOK": (" https://hooks.example/chatmem ", "https://hooks.example/chatmem"),
    "CHATMEM_URL_PREFIX": ("/memory-api", "/memory-api"),
    "CHATMEM_SERVER_NAME": ("shop", "shop"),
    "CHATMEM_SESSION_IDLE_MINUTES": ("45", 45),
    "CHATMEM_RECALL_SESSIONS": ("Site", "site"),
    "CHATMEM_SEARCH_LANGUAGE": (" French ", "french"),
    "CHATMEM_RECALL_MIN_MATCH": ("0.5", 0.5),
    "CHATMEM_LEDGER_VALUE_MAX": ("500", 500),
    "CHATMEM_DRY_RUN_DAYS": ("7", 7),
    "CHATMEM_REJECTED_REPROPOSALS": ("Refuse", "refuse"),
    "CHATMEM_ASK_GRANT_MINUTES": ("90", 90),
    "CHATMEM_LICENSE_ACTIVE": ("off", False),
    "CHATMEM_PROVIDER": ("Anthropic", "anthropic"),
    "CHATMEM_MODEL": ("claude-haiku-4-5", "claude-haiku-4-5"),
    "CHATMEM_OPENAI_API": ("chat", "chat"),
    "CHATMEM_PROVIDER_TIMEOUT": ("7.5", 7.5),
    "CHATMEM_PROVIDER_MAX_RETRIES": ("0", 0),
    "CHATMEM_MCP_ALLOWED_HOSTS": (
        "mcp.example.com, localhost:*",
        ("mcp.example.com", "localhost:*"),
    ),
    "CHATMEM_MCP_ALLOWED_ORIGINS": ("https://app.example", ("https://app.example",)),
    "CHATMEM_MCP_NOTIFY_SECONDS": ("2.5", 2.5),
    "CHATMEM_MCP_LISTEN_SECONDS": ("60", 60.0),
    "CHATMEM_MCP_LISTEN_STREAMS": ("0", 0),
    "CHATMEM_MAX_BODY_BYTES": ("2048", 2048),
    "CHATMEM_RATE_LIMIT_PER_MINUTE": ("0", 0),
    "CHATMEM_TOKENS_PER_USER": ("5", 5),
    "CHATMEM_RETENTION_DAYS": (" 90 ", 90),
    "CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE": ("30", 30),
    "CHATMEM_RATELIMIT_STORAGE_URI": (" redis://127.0.0.1:6379/2 ", "redis://127.0.0.1:6379/2"),
    "CHATMEM_RATELIMIT_KEY_PREFIX": ("shop-staging", "shop-staging"),
    "CHATMEM_PRE_REVIEW": ("on", True),
    "CHATMEM_SUMMARY_INPUT_MAX": ("9000", 9000),
    "CHATMEM_JOB_MAX_ATTEMPTS": ("3", 3),
    "CHATMEM_JOB_BACKOFF_SECONDS": ("10", 10),
    "CHATMEM_JOB_BACKOFF_MAX_SECONDS": ("600", 600),
    "CHATMEM_JOB_LEASE_SECONDS": ("120", 120),
    "CHATMEM_BACKGROUND_SWEEP_SECONDS": ("90.5", 90.5),
    "CHATMEM_UPGRADE_URL": ("https://example.com/pro", "https://example.com/pro"),
    "CHATMEM_SCREEN_CSP": ("default-src 'self'", "default-src 'self'"),
    "CHATMEM_SCREEN_SCRIPT_SOURCES": (
        "https://cdn.example, 'self'",
        ("https://cdn.example", "'self'"),
    ),
    "CHATMEM_SCREEN_STYLE_SOURCES": (
        "https://cdn.example https://fonts.example",
        ("https://cdn.example", "https://fonts.example"),
    ),
    "CHATMEM_SCREEN_FONT_SOURCES": ("https://fonts.example", ("https://fonts.example",)),
    "CHATMEM_BASE_TEMPLATE": (" layouts/chatmem.html ", "layouts/chatmem.html"),
}

# A value each typed setting refuses, and words its message must contain.
INVALID: dict[str, tuple[str, str]] = {
    "CHATMEM_STALE_TARGETS": ("trash", "one of flag, review"),
    "CHATMEM_CHANGED_TARGETS": ("ignore", "one of flag, review"),
    "CHATMEM_MCP_NOTIFY_SECONDS": ("0", "a number of seconds above 0"),
    "CHATMEM_MCP_LISTEN_STREAMS": ("-1", "a whole number of at least 0"),
    "CHATMEM_UNUSED_DAYS": ("0", "a whole number of at least 1"),
    "CHATMEM_RETENTION_DAYS": ("30.5", "a whole number of at least 0"),
    "CHATMEM_NOTIFY_WEBHOOK": ("ftp://x.example", "an http:// or https:// address, or empty"),
    "CHATMEM_URL_PREFIX": ("chatmem", "a path that starts with a single / (such as /chatmem)"),
    "CHATMEM_SESSION_IDLE_MINUTES": ("0", "a whole number of at least 1"),
    "CHATMEM_RECALL_SESSIONS": ("everyone", "one of own, site"),
    "CHATMEM_SEARCH_LANGUAGE": (
        "klingon",
        "one of " + ", ".join(["simple", *snowballstemmer.algorithms()]),
    ),
    "CHATMEM_RECALL_MIN_MATCH": ("1.5", "a number from 0 to 1"),
    "CHATMEM_LEDGER_VALUE_MAX": ("lots", "a whole number of at least 1"),
    "CHATMEM_DRY_RUN_DAYS": ("0", "a whole number of at least 1"),
    "CHATMEM_REJECTED_REPROPOSALS": ("block", "one of flag, refuse"),
    "CHATMEM_ASK_GRANT_MINUTES": ("half an hour", "a whole number of at least 1"),
    "CHATMEM_LICENSE_ACTIVE": ("maybe", "true or false (also 1/0, yes/no, on/off)"),
    "CHATMEM_PROVIDER": ("opneai", "one of openai, anthropic, none"),
    "CHATMEM_OPENAI_API": ("completions", "one of responses, chat"),
    "CHATMEM_PROVIDER_TIMEOUT": ("-1", "a number of seconds above 0"),
    "CHATMEM_PROVIDER_MAX_RETRIES": ("-2", "a whole number of at least 0"),
    "CHATMEM_MAX_BODY_BYTES": ("1e6", "a whole number of at least 1"),
    "CHATMEM_RATE_LIMIT_PER_MINUTE": ("ten", "a whole number of at least 0"),
    "CHATMEM_TOKENS_PER_USER": ("-1", "a whole number of at least 0"),
    "CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE": ("1.5", "a whole number of at least 0"),
    "CHATMEM_RATELIMIT_STORAGE_URI": (
        "127.0.0.1:6379",
        "a storage URI such as memory:// or redis://host:6379",
    ),
    "CHATMEM_RATELIMIT_KEY_PREFIX": ("a/b", "a non-empty name without /"),
    "CHATMEM_JOB_LEASE_SECONDS": ("0", "a whole number of at least 1"),
    "CHATMEM_BACKGROUND_SWEEP_SECONDS": ("-1", "a number of seconds, 0 or more"),
    "CHATMEM_SCREEN_SCRIPT_SOURCES": (
        "https://cdn.example 'unsafe-inline'",
        "CSP sources without 'unsafe-inline' or 'unsafe-eval' "
        '(mark inline code with nonce="{{ csp_nonce() }}" instead)',
    ),
    "CHATMEM_SCREEN_STYLE_SOURCES": (
        "https://cdn.example; script-src *",
        "CSP sources separated by spaces or commas, with no ;",
    ),
    "CHATMEM_BASE_TEMPLATE": ("../secret.html", "a template name such as layouts/chatmem.html"),
}


def test_every_setting_has_an_example() -> None:
    assert set(EXAMPLES) == set(SETTINGS)


@pytest.mark.parametrize("key", sorted(EXAMPLES))
def test_each_setting_reads_its_type_from_text(key: str) -> None:
    raw, value = EXAMPLES[key]
    assert from_environ({key: raw}) == {key: value}


@pytest.mark.parametrize("key", sorted(SETTINGS))
def test_each_default_written_as_text_reads_back_as_itself(key: str) -> None:
    default = SETTINGS[key].default
    if default is None:
        assert from_environ({key: ""}) == {key: None}, "empty means the documented fallback"
        return
    raw = ",".join(default) if isinstance(default, tuple) else str(default)
    assert from_environ({key: raw}) == {key: default}


@pytest.mark.parametrize("key", sorted(INVALID))
def test_an_invalid_value_is_refused_naming_the_key_and_what_it_expects(key: str) -> None:
    raw, expects = INVALID[key]
    with pytest.raises(ConfigError) as caught:
        from_environ({key: raw})
    assert caught.value.errors == {key: f"{key} must be {expects}, not {raw!r}"}


def test_every_bad_key_is_reported_at_once_and_others_are_ignored() -> None:
    environ = {
        "CHATMEM_PROVIDER": "gpt",
        "CHATMEM_JOB_MAX_ATTEMPTS": "0",
        "CHATMEM_MODEL": "m",
        "CHATMEM_TEST_DATABASE_URL": "postgresql://not-a-setting",
        "PATH": "/bin",
    }
    with pytest.raises(ConfigError) as caught:
        from_environ(environ)
    assert set(caught.value.errors) == {"CHATMEM_PROVIDER", "CHATMEM_JOB_MAX_ATTEMPTS"}
    assert "CHATMEM_PROVIDER must be one of openai, anthropic, none, not 'gpt'" in str(caught.value)
    assert from_environ({"CHATMEM_MODEL": "m", "HOME": "/root"}) == {"CHATMEM_MODEL": "m"}


def test_a_setting_whose_type_cannot_be_inferred_must_say_how_to_parse() -> None:
    with pytest.raises(TypeError, match="say how to parse"):
        Setting(None, "an optional thing")
    assert Setting(3, "a count").from_text("4") == 4
    assert config.DEFAULTS["CHATMEM_SESSION_IDLE_MINUTES"] == (
        30,
        SETTINGS["CHATMEM_SESSION_IDLE_MINUTES"].meaning,
    )


# -- the demo reads them ---------------------------------------------------------


@pytest.fixture
def demo_env(
    monkeypatch: pytest.MonkeyPatch, database_url: str, tmp_path: Path
) -> pytest.MonkeyPatch:
    """A clean environment pointing the demo at the test database."""
    from tests.conftest import reset_demo_database

    reset_demo_database(database_url)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("DEMO_INSTANCE_PATH", str(tmp_path / "instance"))
    monkeypatch.setenv("SECRET_KEY", "test")
    return monkeypatch


def _demo(config_: dict[str, Any] | None = None) -> Flask:
    from chatmem.demo import create_app

    app = create_app(config_)
    with app.app_context():
        app.extensions["sqlalchemy"].engine.dispose()
    return app


def test_the_demo_takes_every_setting_from_the_environment(
    demo_env: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for key, (raw, _value) in EXAMPLES.items():
        demo_env.setenv(key, raw)
    demo_env.setenv("DEMO_MAX_TOOL_STEPS", "3")
    demo_env.setenv("DEMO_LICENSE_ACTIVE", "false")
    app = _demo()
    for key, (_raw, value) in EXAMPLES.items():
        assert app.config[key] == value, key
    assert app.config["DEMO_MAX_TOOL_STEPS"] == 3
    assert app.config["DEMO_LICENSE_ACTIVE"] is False
    assert app.instance_path == str(tmp_path / "instance")
    client = app.test_client()
    try:
        assert client.get("/memory-api/memory").status_code == 302, "the prefix came from the env"
        assert app.extensions["chatmem"].sweeper.alive, "the sweep setting started the sweeper"
    finally:
        # The first request started the in-process sweeper on the test database.
        with app.app_context():
            app.extensions["chatmem"].memory.stop_background()


def test_explicit_config_wins_over_the_environment(demo_env: pytest.MonkeyPatch) -> None:
    demo_env.setenv("CHATMEM_PROVIDER", "anthropic")
    demo_env.setenv("CHATMEM_MODEL", "from-env")
    app = _demo({"CHATMEM_PROVIDER": "openai"})
    assert app.config["CHATMEM_PROVIDER"] == "openai"
    assert app.config["CHATMEM_MODEL"] == "from-env"


def test_an_invalid_environment_stops_the_demo_naming_the_key(
    demo_env: pytest.MonkeyPatch,
) -> None:
    from chatmem.demo import create_app

    demo_env.setenv("DEMO_MAX_TOOL_STEPS", "none")
    demo_env.setenv("CHATMEM_PROVIDER", "gemini")
    with pytest.raises(ConfigError) as caught:
        create_app()
    assert "CHATMEM_PROVIDER must be one of openai, anthropic, none, not 'gemini'" in str(
        caught.value
    )
    with pytest.raises(ConfigError, match="DEMO_MAX_TOOL_STEPS must be a whole number"):
        demo_env.delenv("CHATMEM_PROVIDER")
        create_app()


def host_app(tmp_path: Path, **settings: Any) -> Flask:
    from flask_sqlalchemy import SQLAlchemy

    from chatmem import ChatMemory

    app = Flask("host")
    app.config.update(SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'c.db'}", **settings)
    db = SQLAlchemy(app)
    ChatMemory(app, db=db)
    return app


@pytest.mark.parametrize("key", sorted(INVALID))
def test_init_app_refuses_a_bad_python_value_naming_the_key(key: str, tmp_path: Path) -> None:
    # The same check for a value the host set in Python as for the environment's text:
    # it fails at start-up, not in the middle of the first request that reads it.
    raw, expected = INVALID[key]
    with pytest.raises(ConfigError) as caught:
        host_app(tmp_path, **{key: raw})
    assert str(caught.value) == f"{key} must be {expected}, not {raw!r}"


def test_settings_are_read_once_typed_and_reread_on_request(tmp_path: Path) -> None:
    app = host_app(tmp_path, CHATMEM_RATE_LIMIT_PER_MINUTE="7", CHATMEM_MCP_ALLOWED_ORIGINS=["a"])
    memory = app.extensions["chatmem"].memory
    with app.app_context():
        assert memory.settings.rate.per_minute == 7
        assert memory.settings.mcp.allowed_origins == ("a",)
        app.config["CHATMEM_RATE_LIMIT_PER_MINUTE"] = 9
        assert memory.settings.rate.per_minute == 7, "read once, at init_app"
        memory.reload_settings()
        assert memory.settings.rate.per_minute == 9
        app.config["CHATMEM_LEDGER_VALUE_MAX"] = 0
        with pytest.raises(ConfigError, match="CHATMEM_LEDGER_VALUE_MAX must be"):
            memory.reload_settings()
        assert memory.settings.rate.per_minute == 9, "a bad reload changes nothing"
