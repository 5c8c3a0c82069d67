"""Substring indexes for `recall(topic=...)`, per database engine.

`topic` is a case-insensitive substring, which no B-tree index can serve, so a
plain scan reads every summary and digest: fine at a thousand sessions, slow
at a hundred thousand. Each engine gets a trigram index instead:

- SQLite: FTS5 tables with the `trigram` tokenizer (SQLite >= 3.34) over
  session summary + digest and guidance title + text, kept in sync by
  triggers. They are *external content* tables, so the text is not stored
  twice. The index only narrows the candidates: the query still applies the
  exact scan predicate to them, so results are identical to a scan (FTS5
  folds Unicode case, SQLite's `lower()` only ASCII, so the index finds a
  superset). Topics under 3 characters have no trigram and fall back to the
  scan.
- PostgreSQL: `pg_trgm` GIN indexes on `lower(column)`, which the planner
  uses for the very `lower(column) LIKE '%...%'` predicate the scan uses.
  They are built with `fastupdate = off`: with GIN's default, new rows wait
  in a pending list that every search reads whole until (auto)vacuum merges
  it (a rare topic took 4-6 ms instead of 0.1 ms after 100,000 inserts),
  while writing a record straight into the index costs about 0.4 ms more.

These objects are not in the SQLAlchemy metadata (their DDL is engine
specific), so `install` is called both by the migration and, through the
`after_create` listeners below, by `create_all`: tests and production get the
same schema. `SEARCH_OBJECTS` names them so schema comparisons can leave
them out on purpose.
"""

from __future__ import annotations

import logging
import sqlite3
import weakref
from typing import Any

from sqlalchemy import Connection, Engine, Table, event, text
from sqlalchemy.orm import Session as OrmSession

from ..models import Guidance, Session

log = logging.getLogger("chatmem")

MIN_TOPIC = 3  # a trigram index cannot narrow a shorter substring
ESCAPE = "/"


def like_pattern(topic: str) -> str:
    """`%topic%` with LIKE's wildcards taken literally."""
    escaped = topic.lower().replace(ESCAPE, ESCAPE * 2).replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"


# table -> (FTS table, rowid column of the content table, indexed columns)
_FTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "chatmem_session": ("chatmem_session_fts", "rowid", ("summary", "digest")),
    "chatmem_guidance": ("chatmem_guidance_fts", "id", ("title", "text")),
}
FTS_TABLES = tuple(fts for fts, _rowid, _cols in _FTS.values())
# FTS5 keeps its index in shadow tables named after the virtual table.
_FTS_SHADOWS = ("data", "idx", "docsize", "config", "content")


def forget_deleted(db: OrmSession) -> None:
    """SQLite's FTS5 keeps a deleted row's terms until its segments merge: merge them now
    (after an erasure or a retention run, so no trigram of a deleted record is left).

    PostgreSQL's indexes hold no deleted row once vacuumed, which autovacuum does;
    docs/trust-model.md says to run VACUUM where the disk itself must forget.
    """
    if db.get_bind().dialect.name != "sqlite":
        return
    names = set(db.execute(text("SELECT name FROM sqlite_master")).scalars())
    for fts in FTS_TABLES:
        if fts in names:
            db.execute(text(f"INSERT INTO {fts}({fts}) VALUES ('optimize')"))
    db.commit()


_PG_INDEXES: dict[str, tuple[str, ...]] = {
    "chatmem_session": ("summary", "digest"),
    "chatmem_guidance": ("title", "text"),
}


def _pg_index_name(table: str, column: str) -> str:
    return f"ix_{table}_{column}_trgm"


def pg_index_names() -> list[str]:
    """The pg_trgm indexes `install` creates on PostgreSQL."""
    return [_pg_index_name(t, c) for t, cols in _PG_INDEXES.items() for c in cols]


SEARCH_OBJECTS: frozenset[str] = frozenset(
    [fts for fts, _rowid, _cols in _FTS.values()]
    + [f"{fts}_{shadow}" for fts, _rowid, _cols in _FTS.values() for shadow in _FTS_SHADOWS]
    + pg_index_names()
)


def sqlite_has_trigram() -> bool:
    """Whether this Python's SQLite can build FTS5 trigram tables."""
    if sqlite3.sqlite_version_info < (3, 34, 0):
        return False
    try:
        probe = sqlite3.connect(":memory:")
        try:
            probe.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='trigram')")
        finally:
            probe.close()
    except sqlite3.Error:
        return False
    return True


def _sqlite_ddl(table: str) -> list[str]:
    fts, rowid, columns = _FTS[table]
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    delete = f"INSERT INTO {fts}({fts}, rowid, {cols}) VALUES ('delete', old.{rowid}, {old});"
    insert = f"INSERT INTO {fts}(rowid, {cols}) VALUES (new.{rowid}, {new});"
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {fts} USING fts5({cols}, content='{table}', "
        f"content_rowid='{rowid}', tokenize='trigram')",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ai AFTER INSERT ON {table} BEGIN {insert} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_ad AFTER DELETE ON {table} BEGIN {delete} END",
        f"CREATE TRIGGER IF NOT EXISTS {fts}_au AFTER UPDATE OF {cols} ON {table} "
        f"BEGIN {delete} {insert} END",
        # Index whatever the table already holds (a migration on a live database).
        f"INSERT INTO {fts}({fts}) VALUES ('rebuild')",
    ]


def install(connection: Connection, tables: tuple[str, ...] = tuple(_FTS)) -> None:
    """Create the search objects for these tables on this connection's engine."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        if not sqlite_has_trigram():
            log.warning("SQLite %s lacks FTS5 trigram: recall scans", sqlite3.sqlite_version)
            return
        for table in tables:
            for statement in _sqlite_ddl(table):
                connection.exec_driver_sql(statement)
    elif dialect == "postgresql":
        if not _pg_trgm(connection):
            return
        for table in tables:
            for column in _PG_INDEXES[table]:
                connection.exec_driver_sql(
                    f"CREATE INDEX IF NOT EXISTS {_pg_index_name(table, column)} "
                    f"ON {table} USING gin (lower({column}) gin_trgm_ops) "
                    "WITH (fastupdate = off)"
                )
    _forget(connection.engine)


def uninstall(connection: Connection, tables: tuple[str, ...] = tuple(_FTS)) -> None:
    """Drop the search objects (triggers and PG indexes go with their table too)."""
    dialect = connection.dialect.name
    for table in tables:
        if dialect == "sqlite":
            fts = _FTS[table][0]
            for suffix in ("ai", "ad", "au"):
                connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {fts}_{suffix}")
            connection.exec_driver_sql(f"DROP TABLE IF EXISTS {fts}")
        elif dialect == "postgresql":
            for column in _PG_INDEXES[table]:
                connection.exec_driver_sql(f"DROP INDEX IF EXISTS {_pg_index_name(table, column)}")
    _forget(connection.engine)


def _pg_trgm(connection: Connection) -> bool:
    """Enable pg_trgm if we may; without it recall still works, by scanning."""
    installed = connection.exec_driver_sql(
        "SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'"
    ).first()
    if installed:
        return True
    try:
        with connection.begin_nested():
            connection.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except Exception as error:  # noqa: BLE001 - a missing privilege must not stop a migration
        log.warning("pg_trgm is not available (%s): recall scans", error)
        return False
    return True


# -- used by the recall queries ------------------------------------------------

_FTS_PRESENT: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()


def _forget(engine: Engine) -> None:
    _FTS_PRESENT.pop(engine, None)


def fts_table(engine: Engine, connection: Connection, table: str, topic: str) -> str | None:
    """The FTS table that can narrow this topic on SQLite, or None (scan)."""
    if engine.dialect.name != "sqlite" or len(topic) < MIN_TOPIC or "\x00" in topic:
        return None
    present = _FTS_PRESENT.get(engine)
    if present is None:
        present = connection.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
            tuple(fts for fts, _r, _c in _FTS.values()),
        ).scalar() == len(_FTS)
        _FTS_PRESENT[engine] = present
    return _FTS[table][0] if present else None


def match_phrase(topic: str) -> str:
    """An FTS5 query for the topic as one literal phrase (quotes doubled)."""
    return '"' + topic.replace('"', '""') + '"'


# -- keep create_all and drop_all in step with the migration --------------------


def _after_create(target: Table, connection: Connection, **_kw: Any) -> None:
    install(connection, (target.name,))


def _before_drop(target: Table, connection: Connection, **_kw: Any) -> None:
    uninstall(connection, (target.name,))


for _table in (Session.__table__, Guidance.__table__):
    event.listen(_table, "after_create", _after_create)
    event.listen(_table, "before_drop", _before_drop)
