from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.hostapp import USERS, create_host_app

PG_URL = os.environ.get("CHATMEM_TEST_DATABASE_URL")


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


# The fake LLM server and a scrubbed provider environment, for any test file.
from tests.fake_llm import fake_llm, provider_env  # noqa: E402, F401
