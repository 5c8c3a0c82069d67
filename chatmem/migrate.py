"""chatmem's own Alembic migrations, run on the host's engine.

They ship inside the package (`chatmem/migrations`) and keep their version in
their own table, `chatmem_alembic_version`, so a host that uses Alembic (or
Flask-Migrate) for its own tables never sees chatmem's revisions and chatmem
never touches the host's. Autogenerate only looks at `chatmem_*` tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

VERSION_TABLE = "chatmem_alembic_version"
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "migrations")


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """What autogenerate and schema comparisons look at: chatmem's tables only.

    The host's tables share the database and are none of chatmem's business;
    the recall search objects are engine-specific DDL kept outside the models'
    metadata (see `memory.search`), managed by hand in the migrations.
    """
    from .memory.search import SEARCH_OBJECTS

    if name is None:
        return True
    if name in SEARCH_OBJECTS:
        return False
    if type_ == "table":
        return name.startswith("chatmem_") and name != VERSION_TABLE
    return True


def alembic_config(engine: Engine) -> Config:
    """An Alembic config with no .ini file: the engine comes from the app."""
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    config = alembic_config(engine)
    adopted = _adopt(engine)
    if adopted:
        command.stamp(config, adopted)
    command.upgrade(config, revision)


def _adopt(engine: Engine) -> str | None:
    """The revision to record for tables made by `create_all` before migrations.

    Such a database has chatmem's tables but no version row: stamp it at head
    when it already matches the models, else at the first revision, so that
    `db upgrade` takes over instead of failing on "table already exists".
    """
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlalchemy import inspect

    from .memory.models import Base

    if current(engine) is not None or not inspect(engine).has_table("chatmem_state"):
        return None
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"include_name": include_name, "compare_type": True}
        )
        matches = not compare_metadata(context, Base.metadata)
    return "head" if matches else "0001"


def downgrade(engine: Engine, revision: str = "-1") -> None:
    command.downgrade(alembic_config(engine), revision)


def current(engine: Engine) -> str | None:
    """The revision the database is at (None before the first upgrade)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def head() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config_without_engine()).get_current_head()


def alembic_config_without_engine() -> Config:
    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    return config


def revision(engine: Engine, message: str, *, autogenerate: bool = True) -> None:
    """Write a new migration into the package, compared against this database.

    Run it on a database upgraded to the current head: autogenerate writes the
    difference between that database and the models.
    """
    command.revision(alembic_config(engine), message=message, autogenerate=autogenerate)
