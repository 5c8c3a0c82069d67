"""chatmem's migrations build exactly the models' schema, on both databases."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from flask import Flask
from sqlalchemy import Engine, text

from chatmem import migrate
from chatmem.memory.models import Base
from chatmem.memory.recall import search
from chatmem.migrate import include_name
from tests.conftest import dispose
from tests.dbtools import chatmem_tables, drop_chatmem, search_objects
from tests.hostapp import create_host_app

ALL_TABLES = {
    "chatmem_state",
    "chatmem_guidance",
    "chatmem_guidance_event",
    "chatmem_session",
    "chatmem_ledger",
    "chatmem_summary_job",
    "chatmem_token",
    "chatmem_held_call",
    "chatmem_block_use",
    "chatmem_notify_job",
    "chatmem_task",
    "chatmem_subscription",
    "chatmem_pre_review_job",
    "chatmem_records_revision",
}


@pytest.fixture
def bare(database_url: str) -> Iterator[Flask]:
    """A host app on a database with no chatmem tables, and one host table."""
    app = create_host_app(database_url, seed=False)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        drop_chatmem(db.engine)
        db.drop_all()
        db.create_all()
        with db.engine.begin() as connection:
            # A host with its own Alembic: chatmem must not read or touch this.
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
            connection.exec_driver_sql(
                "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"
            )
            connection.exec_driver_sql("INSERT INTO alembic_version VALUES ('host0042')")
        yield app
        db.session.remove()
        drop_chatmem(db.engine)
        with db.engine.begin() as connection:
            connection.exec_driver_sql("DROP TABLE IF EXISTS alembic_version")
    dispose(app)


def _engine(app: Flask) -> Engine:
    return app.extensions["test_host"]["db"].engine


def _differences(engine: Engine) -> list[Any]:
    # The FTS5 tables (and their shadow tables) and the pg_trgm expression
    # indexes are engine-specific DDL outside the models' metadata, so they
    # are left out here on purpose; test_search_objects_match checks them.
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"include_name": include_name, "compare_type": True}
        )
        return list(compare_metadata(context, Base.metadata))


def test_migrated_schema_equals_the_models(bare: Flask) -> None:
    memory = bare.extensions["test_host"]["memory"]
    with bare.app_context():
        memory.upgrade_db()
        engine = _engine(bare)
        assert chatmem_tables(engine) == ALL_TABLES | {migrate.VERSION_TABLE}
        assert _differences(engine) == []
        assert migrate.current(engine) == migrate.head()
        # The state row every process reads exists from the start.
        assert memory.snapshot().revision == 0
        assert memory.system_context() == ""
        with engine.connect() as connection:
            host_version = connection.execute(text("SELECT version_num FROM alembic_version"))
            assert host_version.scalar() == "host0042"


def test_upgrade_is_idempotent_and_downgrade_removes_only_chatmem(bare: Flask) -> None:
    memory = bare.extensions["test_host"]["memory"]
    with bare.app_context():
        engine = _engine(bare)
        memory.upgrade_db()
        memory.call_tool("remember", {"type": "fact", "text": "Checkout is page 42"}, user=_admin())
        memory.upgrade_db()  # a second deploy: nothing to do, nothing lost
        assert _count(engine, "chatmem_guidance") == 1
        migrate.downgrade(engine, "base")
        assert chatmem_tables(engine) == {migrate.VERSION_TABLE}
        assert search_objects(engine) == set()
        assert _count(engine, "host_post") == 0  # the host's table is still there
        memory.upgrade_db()
        assert _differences(engine) == []
        assert _count(engine, "chatmem_state") == 1


def test_search_objects_match_between_migration_and_create_all(bare: Flask) -> None:
    memory = bare.extensions["test_host"]["memory"]
    with bare.app_context():
        engine = _engine(bare)
        memory.upgrade_db()
        migrated = search_objects(engine)
        drop_chatmem(engine)
        memory.create_all()
        created = search_objects(engine)
    assert migrated == created
    expected = {n for n in search.SEARCH_OBJECTS if n.endswith("_trgm")}
    if engine.dialect.name == "sqlite":
        expected = {"chatmem_session_fts", "chatmem_guidance_fts"}
        expected |= {f"{t}_{s}" for t in set(expected) for s in ("ai", "ad", "au")}
        expected |= {
            f"{t}_{s}"
            for t in ("chatmem_session_fts", "chatmem_guidance_fts")
            for s in ("data", "idx", "docsize", "config")
        }
    assert migrated == expected


def _fastupdate(engine: Engine) -> dict[str, str | None]:
    """Each trigram index's fastupdate option, as PostgreSQL stores it."""
    with engine.connect() as connection:
        rows = connection.exec_driver_sql(
            "SELECT relname, reloptions FROM pg_class WHERE relname LIKE 'ix_chatmem_%%_trgm'"
        ).all()
    return {
        name: next((o for o in options or [] if o.startswith("fastupdate=")), None)
        for name, options in rows
    }


def test_trigram_indexes_take_new_rows_straight_in(bare: Flask) -> None:
    """No GIN pending list for a search to read whole (0010 turns it off on old databases)."""
    if _engine(bare).dialect.name != "postgresql":
        pytest.skip("pg_trgm indexes are PostgreSQL's")
    memory = bare.extensions["test_host"]["memory"]
    every = set(search.pg_index_names())
    with bare.app_context():
        engine = _engine(bare)
        memory.upgrade_db()
        assert _fastupdate(engine) == dict.fromkeys(every, "fastupdate=off")
        migrate.downgrade(engine, "0009")
        assert _fastupdate(engine) == dict.fromkeys(every, "fastupdate=on")
        memory.upgrade_db()
        assert _fastupdate(engine) == dict.fromkeys(every, "fastupdate=off")
        drop_chatmem(engine)
        memory.create_all()
        assert _fastupdate(engine) == dict.fromkeys(every, "fastupdate=off")


def test_upgrade_adopts_a_database_made_by_create_all(bare: Flask) -> None:
    memory = bare.extensions["test_host"]["memory"]
    with bare.app_context():
        engine = _engine(bare)
        memory.create_all()
        memory.call_tool(
            "remember", {"type": "fact", "text": "Kept across adoption"}, user=_admin()
        )
        memory.upgrade_db()  # no "table already exists": it records head and carries on
        assert migrate.current(engine) == migrate.head()
        assert _count(engine, "chatmem_guidance") == 1
        assert _differences(engine) == []


def test_upgrade_applies_the_text_rules_to_records_stored_before_them(bare: Flask) -> None:
    """0005: finished jobs lose their transcript; summaries, digests, ledger rows and
    waiting transcripts lose their secrets and hidden characters."""
    key = "ghp_R8tY2uI6oP0aS4dF8gH2jK6lZ0xC4vB8nM2qW"
    hidden = "\u200b" + "".join(chr(0xE0000 + ord(c)) for c in "obey")
    old = f"Used {key}{hidden} and password=hunter2 today."
    with bare.app_context():
        engine = _engine(bare)
        migrate.upgrade(engine, "0002")
        with engine.begin() as connection:
            for index, status in enumerate(("done", "failed", "queued")):
                connection.execute(
                    text(
                        "INSERT INTO chatmem_session (id, user_id, user_name, channel, "
                        "started_at, last_seen_at, summary_auto, change_count, summary, digest) "
                        "VALUES (:id, '2', 'editor', 'chat', :now, :now, :false, 0, :old, :old)"
                    ),
                    {"id": f"s{index}", "now": "2026-01-01 00:00:00", "false": False, "old": old},
                )
                connection.execute(
                    text(
                        "INSERT INTO chatmem_summary_job (session_id, status, attempts, "
                        "next_run_at, created_at, transcript) "
                        "VALUES (:sid, :status, 1, :now, :now, :old)"
                    ),
                    {
                        "sid": f"s{index}",
                        "status": status,
                        "now": "2026-01-01 00:00:00",
                        "old": old,
                    },
                )
            connection.execute(
                text(
                    "INSERT INTO chatmem_ledger (session_id, channel, tool, arguments, outcome, "
                    "detail, at) VALUES ('s0', 'chat', 'update-post', :arguments, 'ok', :old, :now)"
                ),
                {
                    "arguments": json.dumps({"title": old, "token": "abc"}),
                    "old": old,
                    "now": "2026-01-01 00:00:00",
                },
            )
        migrate.upgrade(engine)
        with engine.connect() as connection:
            jobs = connection.execute(
                text("SELECT status, transcript FROM chatmem_summary_job ORDER BY session_id")
            ).all()
            sessions = connection.execute(text("SELECT summary, digest FROM chatmem_session")).all()
            ledger = connection.execute(text("SELECT arguments, detail FROM chatmem_ledger")).one()
    clean = "Used [redacted:github_token] and password=[redacted:password] today."
    assert [tuple(row) for row in jobs] == [("done", None), ("failed", None), ("queued", clean)]
    assert {tuple(row) for row in sessions} == {(clean, clean)}
    arguments = ledger[0] if isinstance(ledger[0], dict) else json.loads(ledger[0])
    shown = "Used [redacted:github_token]<U+200B><U+E006F><U+E0062><U+E0065><U+E0079> and "
    shown += "password=[redacted:password] today."
    assert arguments == {"title": shown, "token": "[redacted:token]"}
    assert ledger[1] == shown


def test_cli_upgrade_current_and_downgrade(bare: Flask) -> None:
    runner = bare.test_cli_runner()
    result = runner.invoke(args=["chatmem", "db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"chatmem database is at {migrate.head()}." in result.output
    result = runner.invoke(args=["chatmem", "db", "current"])
    assert f"current: {migrate.head()}" in result.output
    result = runner.invoke(args=["chatmem", "db", "downgrade", "base"])
    assert result.exit_code == 0, result.output
    assert "chatmem database is at base." in result.output
    with bare.app_context():
        assert chatmem_tables(_engine(bare)) == {migrate.VERSION_TABLE}


def _count(engine: Engine, table: str) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)


def _admin() -> Any:
    from tests.hostapp import USERS

    return USERS["admin"]
