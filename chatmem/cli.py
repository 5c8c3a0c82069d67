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
    """Create chatmem's tables on the app's database (quick starts and tests)."""
    _memory().create_all()
    click.echo("chatmem tables are ready.")


@chatmem_cli.command("sweep")
@click.option("--limit", default=100, show_default=True, help="Most summary jobs to run.")
def sweep(limit: int) -> None:
    """End sessions idle past CHATMEM_SESSION_IDLE_MINUTES and run due summary jobs."""
    memory = _memory()
    ended = memory.sweep()
    click.echo(f"Ended {ended} idle session{'s' if ended != 1 else ''}.")
    stats = memory.run_due_jobs(limit=limit)
    click.echo(f"Summary jobs: {stats.claimed} run: {stats}.")
    for error in stats.errors:
        click.echo(f"Summary jobs not run: {error}", err=True)
