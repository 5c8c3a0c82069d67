"""The session records' revision: the database counts each change recall could see.

Session records are written by the tools, the summary workers, the sweeper,
retention, erasure, import, and by a host's own SQL. Rather than trust every
writer to say so, triggers on `chatmem_session` bump the one row of
`chatmem_records_revision` whenever a recorded session is added, deleted, or
changed in a column recall reads or filters on. A live session's touches
(`last_seen_at`, `ended_at`) are not counted: recall does not show it.

It is read with the state row (`switches.STATE_COLUMNS`), so the answers a
worker keeps (`records.session_records`) are checked on every call at no
statement of their own.

The counter has a table of its own, apart from `chatmem_state`. On
PostgreSQL the bump is a deferred constraint trigger: it runs at commit,
once per transaction, so a writer takes the counter's lock only as it
commits, never while it still waits for another lock. (Bumping
`chatmem_state` would deadlock a summary being saved against an erasure,
which holds the state row while it deletes that user's sessions.)

Like the search objects, the triggers are not in the metadata: `install` is
called by the migration and, through the listeners below, by `create_all`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Table, event, insert, inspect, select

from ..models import RecordsRevision, Session

ROW_ID = 1
#: The revision, as a column of the state row's reads (NULL without its row).
REVISION = (
    select(RecordsRevision.revision)
    .where(RecordsRevision.id == ROW_ID)
    .scalar_subquery()
    .label("records_revision")
)

# What recall reads or filters on (records.SESSION_RECORD_COLUMNS and the owner).
_WATCHED = (
    "id",
    "user_id",
    "recorded_at",
    "started_at",
    "user_name",
    "channel",
    "summary",
    "summary_auto",
    "digest",
    "change_count",
)
_TRIGGERS = {  # name -> (event, whether the row was or is a record)
    "chatmem_records_revision_ai": ("INSERT", "NEW.recorded_at IS NOT NULL"),
    "chatmem_records_revision_ad": ("DELETE", "OLD.recorded_at IS NOT NULL"),
    "chatmem_records_revision_au": (
        f"UPDATE OF {', '.join(_WATCHED)}",
        "OLD.recorded_at IS NOT NULL OR NEW.recorded_at IS NOT NULL",
    ),
}
_BUMP = f"UPDATE {RecordsRevision.__tablename__} SET revision = revision + 1"
_PG_FUNCTION = "chatmem_bump_records_revision"
# Once per transaction: its id is kept in a transaction-local setting.
_PG_BODY = f"""
CREATE OR REPLACE FUNCTION {_PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('chatmem.records_bumped_in', true) IS DISTINCT FROM txid_current()::text
    THEN
        PERFORM set_config('chatmem.records_bumped_in', txid_current()::text, true);
        {_BUMP};
    END IF;
    RETURN NULL;
END $$"""


def install(connection: Connection) -> None:
    """Create the triggers on this connection's engine (again: replaced)."""
    table = Session.__tablename__
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(_PG_BODY)
        for name, (when, condition) in _TRIGGERS.items():
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {table}")
            connection.exec_driver_sql(
                f"CREATE CONSTRAINT TRIGGER {name} AFTER {when} ON {table} "
                f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN ({condition}) "
                f"EXECUTE FUNCTION {_PG_FUNCTION}()"
            )
    else:
        for name, (when, condition) in _TRIGGERS.items():
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
            connection.exec_driver_sql(
                f"CREATE TRIGGER {name} AFTER {when} ON {table} WHEN {condition} BEGIN {_BUMP}; END"
            )


def uninstall(connection: Connection) -> None:
    """Drop the triggers (and PostgreSQL's function, which takes its triggers with it)."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"DROP FUNCTION IF EXISTS {_PG_FUNCTION}() CASCADE")
    else:
        for name in _TRIGGERS:
            connection.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")


def add_row(connection: Connection) -> None:
    connection.execute(insert(RecordsRevision).values(id=ROW_ID, revision=0))


# -- keep create_all and drop_all in step with the migration --------------------


def _triggers_after_create(_target: Table, connection: Connection, **_kw: Any) -> None:
    install(connection)


def _triggers_before_drop(_target: Table, connection: Connection, **_kw: Any) -> None:
    uninstall(connection)


def _row_after_create(_target: Table, connection: Connection, **_kw: Any) -> None:
    add_row(connection)
    # create_all on an older database makes this table but not chatmem_session,
    # whose listener then never runs: without triggers the count would stand still.
    if inspect(connection).has_table(Session.__tablename__):
        install(connection)


event.listen(Session.__table__, "after_create", _triggers_after_create)
event.listen(Session.__table__, "before_drop", _triggers_before_drop)
event.listen(RecordsRevision.__table__, "after_create", _row_after_create)
