"""chatmem's own Alembic migrations, run on the host's engine.

They ship inside the package (`chatmem/migrations`) and keep their version in
their own table, `chatmem_alembic_version`, so a host that uses Alembic (or
Flask-Migrate) for its own tables never sees chatmem's revisions and chatmem
never touches the host's. Autogenerate only looks at `chatmem_*` tables.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, inspect, text

if TYPE_CHECKING:
    from alembic.config import Config

VERSION_TABLE = "chatmem_alembic_version"
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "migrations")
# Revisions are numbered in a line ("0010" follows "0009"), named by their
# file's prefix: the newest file is the head. tests/test_migrations.py checks
# this against Alembic's own answer.
HEAD = max(p.name.split("_", 1)[0] for p in Path(SCRIPT_LOCATION, "versions").glob("[0-9]*_*.py"))


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """What autogenerate and schema comparisons look at: chatmem's tables only.

    The host's tables share the database and are none of chatmem's business;
    the recall search objects are engine-specific DDL kept outside the models'
    metadata (see `memory.recall.search`), managed by hand in the migrations.
    """
    from .memory.recall.search import SEARCH_OBJECTS

    if name is None:
        return True
    if name in SEARCH_OBJECTS:
        return False
    if type_ == "table":
        return name.startswith("chatmem_") and name != VERSION_TABLE
    return True


def alembic_config(engine: Engine) -> Config:
    """An Alembic config with no .ini file: the engine comes from the app."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    # Already at head (every start of an app that migrates, every `flask` command
    # of the demo): one SELECT, without importing Alembic and Mako, about a
    # third of a CLI command's start-up.
    if revision == "head" and stored_revision(engine) == HEAD:
        return
    from alembic import command

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

    from .memory.models import Base

    if current(engine) is not None or not inspect(engine).has_table("chatmem_state"):
        return None
    with engine.connect() as connection:
        context = MigrationContext.configure(
            connection, opts={"include_name": include_name, "compare_type": True}
        )
        matches = not compare_metadata(context, Base.metadata)
    return "head" if matches else "0001"


def stored_revision(engine: Engine) -> str | None:
    """The version row, read with plain SQL (None without the table or a row)."""
    if not inspect(engine).has_table(VERSION_TABLE):
        return None
    with engine.connect() as connection:
        rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()
        found = list(rows)
    return found[0] if len(found) == 1 else None


def downgrade(engine: Engine, revision: str = "-1") -> None:
    from alembic import command

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
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.set_main_option("path_separator", "os")
    return config


def revision(engine: Engine, message: str, *, autogenerate: bool = True) -> None:
    """Write a new migration into the package, compared against this database.

    Run it on a database upgraded to the current head: autogenerate writes the
    difference between that database and the models.
    """
    from alembic import command

    command.revision(alembic_config(engine), message=message, autogenerate=autogenerate)
