"""`flask chatmem audit verify`: check every audit trail against its seals (memory/audit.py)."""

from __future__ import annotations

import sys

import click
from flask.cli import AppGroup

from ..core import current_memory
from ..memory import audit as _audit

audit_cli = AppGroup("audit", help="The audit trail of guidance and settings.")


@audit_cli.command("verify")
@click.option("--heads", is_flag=True, help="Also print each trail's last seal, to keep elsewhere.")
def verify(heads: bool) -> None:
    """Walk every trail; name each event or entry changed outside chatmem (exit 1 if any)."""
    report = _audit.verify(current_memory().db.session())
    for found in report.breaks:
        click.echo(f"ALTERED {found}")
    if heads:
        for trail, seal in sorted(report.heads.items(), key=lambda item: item[0] or 0):
            click.echo(f"{'site' if trail is None else f'entry #{trail}':<14} {seal}")
    walked = f"{_count(report.trails, 'trail')}, {_count(report.events, 'event')}"
    if report.verified:
        click.echo(f"Verified: {walked}.")
        return
    places = len(report.breaks)
    click.echo(
        f"Not verified: {_count(places, 'place')} changed outside chatmem ({walked} walked).",
        err=True,
    )
    sys.exit(1)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
