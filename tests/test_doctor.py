"""`flask chatmem doctor`: it names what is wrong and exits 1, else says so and exits 0."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from flask import Flask
from flask_sqlalchemy import SQLAlchemy

from chatmem import ChatMemory
from chatmem import migrate as chatmem_migrate
from tests.hosts.microblog.app.extensions import db
from tests.hosts.microblog.testing import close_apps, empty_database, invoke, make_app


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    with empty_database(tmp_path) as url:
        yield url
    close_apps()


def microblog(url: str, **config: Any) -> Flask:
    return make_app(url, **config)


def doctor(app: Flask, *args: str, env: dict[str, str] | None = None) -> Result:
    return invoke(app, "chatmem", "doctor", *args, env=env)


def lines(result: Result, level: str) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith(level + " ")]


def upgraded(app: Flask) -> Flask:
    assert app.test_cli_runner().invoke(args=["chatmem", "db", "upgrade"]).exit_code == 0
    return app


@pytest.fixture
def healthy(url: str) -> Flask:
    return upgraded(microblog(url))


def test_a_healthy_host_passes(healthy: Flask, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WEB_CONCURRENCY", raising=False)
    result = doctor(healthy)
    assert result.exit_code == 0, result.output
    assert lines(result, "problem") == [] and lines(result, "warn") == []
    assert f"chatmem's tables are at the newest revision ({chatmem_migrate.head()})." in (
        result.output
    )
    assert result.output.rstrip().endswith("No problems found.")


def test_missing_tables_fail(url: str) -> None:
    result = doctor(microblog(url))
    assert result.exit_code == 1
    assert lines(result, "problem") == [
        "problem tables           chatmem's tables are missing: run `flask chatmem db upgrade`."
    ]
    assert "1 problem found." in result.output


def test_tables_behind_fail(url: str) -> None:
    app = microblog(url)
    with app.app_context():
        chatmem_migrate.upgrade(db.engine, "0009")
    result = doctor(app)
    assert result.exit_code == 1
    (problem,) = lines(result, "problem")
    assert f"at revision 0009, the newest is {chatmem_migrate.head()}" in problem


def test_tables_from_create_all_fail(url: str) -> None:
    app = microblog(url)
    with app.app_context():
        app.extensions["chatmem"].memory.create_all()
    (problem,) = lines(doctor(app), "problem")
    assert "made by create_all and carry no revision" in problem


def test_database_down_fails(tmp_path: Path) -> None:
    app = make_app(f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}")
    result = doctor(app)
    assert result.exit_code == 1
    assert "problem database" in result.output and "cannot reach the database" in result.output


@pytest.mark.parametrize("key", ["you-will-never-guess", "dev", "short"])
def test_a_known_or_short_secret_key_fails(url: str, key: str) -> None:
    app = microblog(url, SECRET_KEY=key)
    (problem, *_rest) = [p for p in lines(doctor(app), "problem") if "secret key" in p]
    assert "SECRET_KEY is a well-known or short example value" in problem


def test_several_workers_need_a_shared_store(healthy: Flask) -> None:
    by_option = doctor(healthy, "--workers", "4")
    by_environ = doctor(healthy, env={"WEB_CONCURRENCY": "3"})
    assert by_option.exit_code == by_environ.exit_code == 1
    assert "4 workers but CHATMEM_RATELIMIT_STORAGE_URI is memory://" in by_option.output
    assert "3 workers but CHATMEM_RATELIMIT_STORAGE_URI is memory://" in by_environ.output


def test_an_unreachable_shared_store_fails(url: str) -> None:
    app = microblog(url, CHATMEM_RATELIMIT_STORAGE_URI="redis://127.0.0.1:9")
    app.test_cli_runner().invoke(args=["chatmem", "db", "upgrade"])
    result = doctor(app, "--workers", "4")
    assert result.exit_code == 1
    assert "the rate-limit store redis://127.0.0.1:9 does not answer." in result.output


def test_a_provider_without_a_key_fails(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = upgraded(microblog(url, CHATMEM_PROVIDER="openai"))
    result = doctor(app)
    assert result.exit_code == 1
    (problem,) = lines(result, "problem")
    assert "CHATMEM_PROVIDER=openai: no OpenAI API key: set OPENAI_API_KEY" in problem
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert doctor(app).exit_code == 0


def test_csp_is_reported(url: str) -> None:
    empty = doctor(upgraded(microblog(url, CHATMEM_SCREEN_CSP="")))
    loose_csp = "default-src 'self'; script-src 'self' 'unsafe-inline'"
    loose = doctor(upgraded(microblog(url, CHATMEM_SCREEN_CSP=loose_csp)))
    assert empty.exit_code == loose.exit_code == 0  # a warning, not a failure
    assert "CHATMEM_SCREEN_CSP is empty" in lines(empty, "warn")[0]
    assert "lets scripts run from 'unsafe-inline'" in lines(loose, "warn")[0]


def test_host_sources_that_let_any_site_in_are_reported(url: str) -> None:
    """CHATMEM_SCREEN_*_SOURCES: `*`, a bare scheme, http:// and data: scripts warn, each named."""
    app = upgraded(
        microblog(
            url,
            CHATMEM_SCREEN_SCRIPT_SOURCES="https://cdn.jsdelivr.net https: data:",
            CHATMEM_SCREEN_STYLE_SOURCES="http://cdn.example *",
            CHATMEM_SCREEN_FONT_SOURCES="https://fonts.gstatic.com data:",
        )
    )
    result = doctor(app)
    assert result.exit_code == 0, result.output  # a warning, not a failure
    assert [line.split(None, 2)[1:] for line in lines(result, "warn")] == [
        [
            "csp",
            "CHATMEM_SCREEN_SCRIPT_SOURCES lets the Memory screen load scripts from "
            "https: (any site), data: (inline code): list the exact origins your layout uses "
            "(https://cdn.example).",
        ],
        [
            "csp",
            "CHATMEM_SCREEN_STYLE_SOURCES lets the Memory screen load stylesheets from "
            "http://cdn.example (unencrypted), * (any site): list the exact origins your layout "
            "uses (https://cdn.example).",
        ],
    ]
    assert not [line for line in lines(result, "ok") if line.split()[1] == "csp"]


@pytest.mark.parametrize(
    ("source", "directive", "why"),
    [
        ("https://cdn.jsdelivr.net", "script-src", None),
        ("https://*.jsdelivr.net", "script-src", None),
        ("'self'", "script-src", None),
        ("data:", "font-src", None),
        ("*", "font-src", "any site"),
        ("HTTPS:", "style-src", "any site"),
        ("https://*", "script-src", "any site"),
        ("*.com", "script-src", "any site"),
        ("http://cdn.example", "font-src", "unencrypted"),
        ("blob:", "script-src", "inline code"),
        ("data:", "style-src", "inline code"),
    ],
)
def test_which_host_sources_are_too_broad(source: str, directive: str, why: str | None) -> None:
    from chatmem.cli.checks import broad_source

    assert broad_source(source, directive) == why


def test_a_host_without_hooks_is_told(tmp_path: Path) -> None:
    """No capability checker, no user loader (no Flask-Login either), no user_by_name."""
    bare = Flask("bare")
    bare.config.update(
        SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'bare.db'}", SECRET_KEY="x" * 32
    )
    bare_db = SQLAlchemy()
    bare_db.init_app(bare)
    ChatMemory(bare, db=bare_db)
    bare.test_cli_runner().invoke(args=["chatmem", "db", "upgrade"])
    result = doctor(bare)
    with bare.app_context():
        bare_db.engine.dispose()
    assert result.exit_code == 1
    assert [line.split()[1] for line in lines(result, "problem")] == ["users"]
    assert "no way to load a user by id" in lines(result, "problem")[0]
    warnings = "\n".join(lines(result, "warn"))
    assert "no @memory.capability_checker" in warnings and "no @memory.user_by_name" in warnings


def test_several_workers_on_sqlite_need_wal(tmp_path: Path) -> None:
    shared = {"CHATMEM_RATELIMIT_STORAGE_URI": "memory://"}
    app = upgraded(make_app(f"sqlite:///{tmp_path / 'workers.db'}", **shared))
    rollback_journal = doctor(app, "--workers", "2")
    assert "2 workers on SQLite in delete mode" in rollback_journal.output
    with app.app_context(), db.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA journal_mode=WAL")
    assert (
        "ok      database         SQLite in WAL mode for 2 workers."
        in doctor(app, "--workers", "2").output
    )
    assert "SQLite" not in doctor(app).output  # one worker: nothing to say
