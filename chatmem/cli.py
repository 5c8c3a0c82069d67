"""`flask chatmem ...`: commands a host runs from its shell or scheduler."""

from __future__ import annotations

import click
from flask import current_app
from flask.cli import AppGroup

chatmem_cli = AppGroup("chatmem", help="chatmem project memory.")


def _memory():  # type: ignore[no-untyped-def]
    return current_app.extensions["chatmem"].memory


@chatmem_cli.command("create-tables")
def create_tables() -> None:
    """Create chatmem's tables on the app's database (the same as `db upgrade`)."""
    _memory().upgrade_db()
    click.echo("chatmem tables are ready.")


@chatmem_cli.command("sweep")
def sweep() -> None:
    """End sessions idle past CHATMEM_SESSION_IDLE_MINUTES."""
    ended = _memory().sweep()
    click.echo(f"Ended {ended} idle session{'s' if ended != 1 else ''}.")


@chatmem_cli.group("db")
def db_group() -> None:
    """chatmem's own migrations (version table: chatmem_alembic_version)."""


@db_group.command("upgrade")
@click.argument("revision", default="head")
def db_upgrade(revision: str) -> None:
    """Create or update chatmem's tables on the app's database."""
    _memory().upgrade_db(revision)
    click.echo(f"chatmem database is at {_migrate().current(_memory().db.engine)}.")


@db_group.command("downgrade")
@click.argument("revision", default="-1")
def db_downgrade(revision: str) -> None:
    """Step chatmem's tables back (default: one revision; `base` removes them)."""
    _migrate().downgrade(_memory().db.engine, revision)
    click.echo(f"chatmem database is at {_migrate().current(_memory().db.engine) or 'base'}.")


@db_group.command("current")
def db_current() -> None:
    """Print the revision chatmem's tables are at, and the newest one shipped."""
    migrate = _migrate()
    click.echo(f"current: {migrate.current(_memory().db.engine) or 'none'}")
    click.echo(f"head: {migrate.head()}")


@db_group.command("revision")
@click.option("-m", "--message", required=True, help="What the migration changes.")
@click.option("--empty", is_flag=True, help="Write an empty revision instead of autogenerating.")
def db_revision(message: str, empty: bool) -> None:
    """For chatmem developers: write a migration for changed models.

    Run it against a database upgraded to head; the new file lands in
    chatmem/migrations/versions/ for review.
    """
    _migrate().revision(_memory().db.engine, message, autogenerate=not empty)


def _migrate():  # type: ignore[no-untyped-def]
    from . import migrate

    return migrate
