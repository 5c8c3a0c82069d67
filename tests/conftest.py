from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from tests.hostapp import USERS, create_host_app
from tests.servers import serving

PG_URL = os.environ.get("CHATMEM_TEST_DATABASE_URL")

_MEMOIZED = type(functools.cache(len))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under bin/mutate, every test starts with chatmem's memoized functions empty.

    mutmut (which sets MUTANT_UNDER_TEST) runs a mutant's tests in a child
    forked after its own runs, and only the tests its stats run saw calling
    the mutated function. A statement one test built and cached would hide
    both the call from later tests and the mutant from every test (records'
    `_matches` works only inside the cached `_topic_statements`).
    """
    if "MUTANT_UNDER_TEST" not in os.environ:
        return
    modules = [m for name, m in list(sys.modules.items()) if name.startswith("chatmem.")]
    for value in (v for module in modules for v in vars(module).values()):
        held = vars(value).values() if isinstance(value, type) else ()
        for memo in (value, *held):
            if isinstance(memo, _MEMOIZED):
                memo.cache_clear()


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """A fresh SQLite file, or the PostgreSQL database CI names (tables reset)."""
    return PG_URL or f"sqlite:///{tmp_path / 'chatmem.db'}"


def dispose(app: Flask) -> None:
    with app.app_context():
        app.extensions["test_host"]["db"].engine.dispose()


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_host_app(database_url)
    yield app
    dispose(app)


@pytest.fixture
def second_worker(app: Flask, database_url: str) -> Iterator[Flask]:
    """Another app instance on the same database, as a second worker would be."""
    other = create_host_app(database_url, seed=False)
    yield other
    dispose(other)


@pytest.fixture
def ctx(app: Flask) -> Iterator[Flask]:
    with app.app_context():
        yield app


@pytest.fixture
def memory(ctx: Flask) -> Any:
    return ctx.extensions["test_host"]["memory"]


@pytest.fixture
def db(ctx: Flask) -> Any:
    return ctx.extensions["test_host"]["db"]


@pytest.fixture
def users() -> dict[str, Any]:
    return USERS


@pytest.fixture
def admin() -> Any:
    return USERS["admin"]


@pytest.fixture
def editor() -> Any:
    return USERS["editor"]


@pytest.fixture
def make_token(app: Flask) -> Any:
    """`make_token("editor")` -> a plain API token for that test user (`read_only=True`: scoped)."""
    from chatmem.auth import tokens

    def make(username: str, name: str = "test", *, read_only: bool = False) -> str:
        with app.app_context():
            memory = app.extensions["test_host"]["memory"]
            return tokens.issue(memory, USERS[username], name=name, read_only=read_only)[1]

    return make


@pytest.fixture
def client(app: Flask) -> Iterator[FlaskClient]:
    """The host app in a browser signed in as the curator (a module may define its own)."""
    from tests.screen_helpers import add_token_route, login

    add_token_route(app)
    with app.test_client() as client:
        login(client, "admin")
        yield client


@pytest.fixture
def live_server(app: Flask) -> Iterator[str]:
    """The test host app served over real HTTP; yields its base URL."""
    with serving(app) as url:
        yield url


CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium under Playwright; under CI its absence is a failure, not a skip."""
    executable = shutil.which("chromium")
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail(
                "chromium is missing; CI must run the browser tests (apt-get install chromium)"
            )
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    playwright = sync_playwright().start()
    try:
        launched = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS, timeout=30_000
        )
        yield launched
        launched.close()
    finally:
        playwright.stop()


# -- the demo app (chatmem.demo) -------------------------------------------------


def reset_demo_database(url: str) -> None:
    """Drop the demo's and chatmem's tables, so PostgreSQL starts clean like SQLite."""
    from sqlalchemy import create_engine

    from chatmem.demo.extensions import Base as DemoBase
    from tests.dbtools import drop_chatmem

    engine = create_engine(url)
    try:
        DemoBase.metadata.drop_all(engine)
        drop_chatmem(engine)  # the demo migrates: its version table goes too
    finally:
        engine.dispose()


@pytest.fixture
def demo_app(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    """A freshly seeded demo app (provider none) on the test database."""
    from chatmem.demo import create_app

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    reset_demo_database(database_url)
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": database_url, "TESTING": True, "CHATMEM_PROVIDER": "none"},
        instance_path=str(tmp_path / "instance"),
    )
    yield app
    with app.app_context():
        app.extensions["sqlalchemy"].engine.dispose()


# The fake LLM server and a scrubbed provider environment, for any test file.
from tests.fake_llm import fake_llm, provider_env  # noqa: E402, F401
