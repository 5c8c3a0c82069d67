"""`flask chatmem erase-user`: erase one person from chatmem (memory/erasure.py)."""

from __future__ import annotations

import click
from flask.cli import with_appcontext

from ..core import current_memory
from ..errors import ChatmemError
from .guidance import cli_actor


@click.command("erase-user")
@with_appcontext
@click.argument("username")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
def erase_user(username: str, yes: bool) -> None:
    """Remove or anonymise everything chatmem holds about USERNAME, and print what changed.

    Their sessions, summaries, ledger rows, held calls, tokens and notices go;
    guidance the site approved stays, its proposer shown as "erased user". A
    person the host already deleted is found by the name chatmem recorded.
    """
    memory = current_memory()
    try:
        user = memory.person_named(username)
    except ChatmemError as error:
        raise click.ClickException(error.message) from None
    if not yes:
        click.confirm(
            f"Erase everything chatmem holds about {username}? This cannot be undone.", abort=True
        )
    report = memory.erase_user(user, actor_id=cli_actor())
    for table, rows in report.items():
        click.echo(f"{table:<24} {rows:>6}")
    total = sum(report.values())
    click.echo(f"Erased {username}: {total} row{'s' if total != 1 else ''} removed or anonymised.")
