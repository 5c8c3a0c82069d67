"""Helpers for tests that build chatmem's schema with the migrations."""

from __future__ import annotations

from sqlalchemy import Engine, MetaData, inspect, text

from chatmem.memory.models import Base
from chatmem.memory.recall import search
from chatmem.migrate import VERSION_TABLE

# Tables older migrations made and newer ones drop: a database last used by an
# older checkout still holds them, and the next upgrade from base would fail.
RETIRED_TABLES = ("chatmem_rate",)


def drop_chatmem(engine: Engine) -> None:
    """Remove every chatmem table, search object and the version table."""
    Base.metadata.drop_all(engine)  # before_drop listeners remove the search objects
    with engine.begin() as connection:
        search.uninstall(connection)
        for table in (*RETIRED_TABLES, VERSION_TABLE):
            connection.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")


def search_objects(engine: Engine) -> set[str]:
    """The recall search objects present: FTS tables/triggers or trigram indexes."""
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            rows = connection.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE name LIKE 'chatmem_%fts%'"
            ).all()
        else:
            rows = connection.execute(
                text("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'ix_chatmem_%_trgm'")
            )
        return {row[0] for row in rows}


def chatmem_tables(engine: Engine) -> set[str]:
    """chatmem's tables, the FTS5 tables (search objects) left out."""
    names = inspect(engine).get_table_names()
    return {t for t in names if t.startswith("chatmem_") and t not in search.SEARCH_OBJECTS}


def dump_tables(engine: Engine, *metadatas: MetaData) -> dict[str, list[tuple[str, ...]]]:
    """Every row of every table of these metadatas (chatmem's by default), as text.

    For "changes nothing": compare a dump taken before a refused request with
    one taken after.
    """
    out: dict[str, list[tuple[str, ...]]] = {}
    with engine.connect() as connection:
        for metadata in metadatas or (Base.metadata,):
            for table in metadata.sorted_tables:
                rows = connection.execute(table.select().order_by(*table.primary_key.columns))
                out[table.name] = [tuple(str(value) for value in row) for row in rows]
    return out
