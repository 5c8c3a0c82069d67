"""`flask chatmem guidance ...`: curate the memory from a shell, for headless hosts.

The commands act as the shell user, recorded in the audit trail as
`cli:<user>`, and go through the same domain functions as the Memory screen
(`memory/guidance.py`), so the same rules hold: approving or rejecting is
refused with `conflict` if the entry changed since the command read it.
"""

from __future__ import annotations

import functools
import getpass
import os
from collections.abc import Callable
from datetime import datetime

import click
from flask.cli import AppGroup

from .. import text as text_rules
from ..core import current_memory
from ..errors import ChatmemError
from ..memory import guidance, listing
from ..memory.models import Guidance

STATUSES = ("pending", "publish", "rejected", "trash")

guidance_cli = AppGroup(
    "guidance", help="Review and curate guidance (as the shell user, audited as cli:<user>)."
)


def cli_actor() -> str:
    """`cli:<login name>`: who acted, in the audit trail, when a shell did it."""
    try:
        name = getpass.getuser()
    except (KeyError, OSError):  # no login name in a bare container
        name = f"uid{os.getuid()}"
    return f"{guidance.CLI_ACTOR_PREFIX}{name}"[:64]


@guidance_cli.command("list")
@click.option(
    "--status",
    type=click.Choice(STATUSES),
    default="pending",
    show_default=True,
    help="Which entries: waiting for review, active (publish), rejected or in the trash.",
)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 1000))
def list_guidance(status: str, limit: int) -> None:
    """List guidance entries with one status, newest first."""
    db = current_memory().db.session()
    entries, total = listing.by_status(db, status, limit=limit)
    if not entries:
        click.echo(f"No {status} guidance.")
        return
    for entry in entries:
        switched_off = "" if entry.enabled or entry.status != "publish" else "  (switched off)"
        click.echo(
            f"#{entry.id}  {entry.status}  {entry.type}  v{entry.version}  "
            f"{_when(entry.created_at)}  {_plain(entry.title)}{switched_off}"
        )
    if total > len(entries):
        click.echo(f"... and {total - len(entries)} more (--limit).")


@guidance_cli.command("show")
@click.argument("entry_id", type=int)
def show(entry_id: int) -> None:
    """Show one entry in full, with its audit trail."""
    memory = current_memory()
    entry = _get(entry_id)
    click.echo(_describe(entry))
    for event in guidance.events(memory.db.session(), entry.id):
        reason = guidance.reason_of(event)
        actor = memory.permissions.actor_name(event.actor_id)
        click.echo(
            f"  {_when(event.at)}  {event.action}  by {actor}"
            + (f"  (reason: {_plain(reason)})" if reason else "")
        )


@guidance_cli.command("approve")
@click.argument("entry_id", type=int)
def approve(entry_id: int) -> None:
    """Approve pending entry ENTRY_ID: it is injected (and enforced) from the next session on."""
    _act(entry_id, "Approving", guidance.approve, "approved: active from the next session on")


@guidance_cli.command("reject")
@click.argument("entry_id", type=int)
@click.option("--reason", default=None, help="Why (shown to whoever proposes the same text).")
def reject(entry_id: int, reason: str | None) -> None:
    """Reject pending entry ENTRY_ID (its audit trail stays)."""
    _act(entry_id, "Rejecting", functools.partial(guidance.reject, reason=reason), "rejected")


@guidance_cli.command("trash")
@click.argument("entry_id", type=int)
def trash(entry_id: int) -> None:
    """Move entry ENTRY_ID to the trash (the Memory screen can restore it)."""
    _act(entry_id, "Trashing", guidance.trash, "moved to the trash")


def _act(entry_id: int, doing: str, step: Callable[..., Guidance], done: str) -> None:
    """Read the entry fresh, show it, then change exactly the version that was shown."""
    entry = _get(entry_id)
    click.echo(f"{doing}:\n{_describe(entry)}")
    try:
        step(
            current_memory().db.session(),
            entry.id,
            actor_id=cli_actor(),
            expected_version=entry.version,
        )
    except ChatmemError as error:
        current_memory().db.session.rollback()
        raise click.ClickException(error.message) from None
    click.echo(f"#{entry_id} {done}.")


def _get(entry_id: int) -> Guidance:
    try:
        return guidance.get(current_memory().db.session(), entry_id)
    except ChatmemError as error:
        raise click.ClickException(error.message) from None


def _describe(entry: Guidance) -> str:
    lines = [
        f"#{entry.id}  {entry.type}  {entry.status}  version {entry.version}",
        f"  title:  {_plain(entry.title)}",
        f"  text:   {_plain(entry.text)}",
    ]
    for name in ("scope", "target", "severity"):
        value = getattr(entry, name)
        if value:
            lines.append(f"  {name + ':':7} {_plain(value)}")
    origin = f"  from:   {entry.origin}, created {_when(entry.created_at)}"
    if entry.session_id:
        origin += f" in session {_plain(entry.session_id)}"
    lines.append(origin)
    return "\n".join(lines)


def _plain(text: str) -> str:
    """Agent-written text with hidden characters shown as `<U+XXXX>`, as the Memory screen does.

    A terminal obeys escape sequences and bidi overrides; an entry stored
    before the text rules must not be able to recolour, hide or reorder what
    the curator reads. Line breaks are escaped too: one field, one line.
    """
    shown = text_rules.visible(text)
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in shown)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") + " UTC" if value else "never"
