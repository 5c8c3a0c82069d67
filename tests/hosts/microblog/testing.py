"""Helpers for tests that run the microblog host: its database, apps and shell."""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import create_engine, inspect, make_url

from .app import create_app
from .app.extensions import db

PG_URL = os.environ.get("CHATMEM_TEST_DATABASE_URL")


@contextmanager
def empty_database(tmp_path: Path) -> Iterator[str]:
    """An empty database of the host's own: a SQLite file, or a new PostgreSQL database.

    Not the shared test database: the host's autogenerate compares every
    table it finds with its models, and other tests leave theirs there.
    """
    if not PG_URL:
        yield f"sqlite:///{tmp_path / 'microblog.db'}"
        return
    name = f"cm_microblog_{uuid.uuid4().hex[:10]}"
    server = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    with server.connect() as connection:
        connection.exec_driver_sql(f"CREATE DATABASE {name}")
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        close_apps()
        with server.connect() as connection:
            connection.exec_driver_sql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        server.dispose()


_apps: list[Flask] = []


def close_apps() -> None:
    """Close the pool of every app made since the last call."""
    while _apps:
        with _apps.pop().app_context():
            db.session.remove()
            db.engine.dispose()


def make_app(url: str, *, chatmem_first: bool = False, **config: Any) -> Flask:
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": url, "TESTING": True, **config}, chatmem_first=chatmem_first
    )
    _apps.append(app)
    return app


def invoke(app: Flask, *args: str, env: dict[str, str] | None = None) -> Any:
    """`flask ARGS` against this app, as the host's shell would run it (a click Result)."""
    # Flask-Migrate's env.py keeps the callback of its first run on the app
    # (`extensions["migrate"]`), bound to that run's options; a shell starts a
    # new process per command, so start each one clean here.
    if "migrate" in app.extensions:
        app.extensions["migrate"].configure_args.pop("process_revision_directives", None)
    with logging_kept():
        return app.test_cli_runner().invoke(args=list(args), env=env)


def flask(app: Flask, *args: str) -> str:
    """`flask ARGS`, which must succeed; its output."""
    result = invoke(app, *args)
    assert result.exit_code == 0, (result.output, result.exception)
    return str(result.output)


@contextmanager
def logging_kept() -> Iterator[None]:
    """Undo what Flask-Migrate's env.py does to logging (`fileConfig` from alembic.ini).

    It disables every logger that exists (chatmem's too) and replaces the
    root's handlers (pytest's capture); in a shell that dies with the
    command's process, here it would outlive the test.
    """
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)]
    kept = [(lg, lg.disabled, lg.level, lg.propagate, lg.handlers[:]) for lg in loggers]
    root = (logging.root.level, logging.root.handlers[:])
    try:
        yield
    finally:
        for lg, disabled, level, propagate, handlers in kept:
            lg.disabled, lg.propagate, lg.handlers[:] = disabled, propagate, handlers
            lg.setLevel(level)
        logging.root.handlers[:] = root[1]
        logging.root.setLevel(root[0])


def tables(app: Flask) -> set[str]:
    with app.app_context():
        names = set(inspect(db.engine).get_table_names())
        db.engine.dispose()
    return names
