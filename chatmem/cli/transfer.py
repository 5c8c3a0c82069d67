"""`flask chatmem export` and `flask chatmem import`: guidance to and from a
versioned JSON file (`chatmem/schemas/memory-export.v1.json`).

An import acts as the shell user (`cli:<login>` in the audit trail) through
the same function as the Memory screen's Import button (`memory/transfer/`).
"""

from __future__ import annotations

import json
from typing import IO

import click
from flask.cli import with_appcontext

from ..core import current_memory
from ..errors import ChatmemError
from ..memory import transfer
from .guidance import STATUSES, cli_actor


@click.command("export")
@with_appcontext
@click.option(
    "--status",
    "statuses",
    type=click.Choice(STATUSES),
    multiple=True,
    help="Only entries with this status (repeat it for several); default: every entry.",
)
def export(statuses: tuple[str, ...]) -> None:
    """Print guidance, its provenance and audit trail as JSON (redirect it to a file)."""
    memory = current_memory()
    document = transfer.export_document(
        memory.db.session(),
        statuses or STATUSES,
        server_name=memory.server_name,
        name_of=memory.permissions.actor_name,
    )
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))
    count = len(document["entries"])
    click.echo(f"Exported {count} entr{'y' if count == 1 else 'ies'}.", err=True)


@click.command("import")
@with_appcontext
@click.argument("file", type=click.File("rb"))
@click.option(
    "--as-pending/--keep-status",
    default=True,
    show_default=True,
    help=(
        "Imported entries wait for review (default), or keep the status they had: an "
        "active one the poisoning screen flags waits for review all the same."
    ),
)
def import_(file: IO[bytes], as_pending: bool) -> None:
    """Add the entries of FILE (a `flask chatmem export`); all or nothing, never overwrites."""
    memory = current_memory()
    snapshot = memory.snapshot()
    try:
        result = transfer.import_document(
            memory.db.session(),
            transfer.parse(file.read()),
            actor_id=cli_actor(),
            keep_status=not as_pending,
            screen=lambda fields: memory.screen(dict(fields), snapshot=snapshot),
        )
    except ChatmemError as error:
        memory.db.session.rollback()
        raise click.ClickException(error.message) from None
    ids = ", ".join(f"#{i}" for i in result.imported)
    click.echo(transfer.summary(result) + (f" New: {ids}." if ids else ""))
    for skipped in result.skipped:
        click.echo(
            f"Skipped entry {skipped['entry']} (#{skipped['id']} in the file): "
            f"the same text is already here as #{skipped['existing']}."
        )
    for flagged in result.flagged:
        click.echo(
            f"Flagged entry {flagged['entry']} (#{flagged['id']} in the file, here "
            f"#{flagged['new']}): {', '.join(flagged['flags'])}."
        )
    for altered in result.altered:
        click.echo(
            f"Changed after export: entry {altered['entry']} (#{altered['id']} in the file, "
            f"here #{altered['new']}); it waits in Pending review."
        )
