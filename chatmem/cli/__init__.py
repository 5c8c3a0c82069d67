"""`flask chatmem ...`: commands a host runs from its shell or scheduler."""

from __future__ import annotations

from datetime import datetime, timedelta
from types import ModuleType
from typing import Any

import click
from flask.cli import AppGroup

from ..auth import tokens
from ..core import current_memory
from ..errors import ChatmemError, NotFound
from ..memory.models import utcnow
from .audit import audit_cli
from .erasure import erase_user
from .guidance import guidance_cli
from .transfer import export, import_

chatmem_cli = AppGroup("chatmem", help="chatmem project memory.")
chatmem_cli.add_command(guidance_cli)
chatmem_cli.add_command(export)
chatmem_cli.add_command(import_)
chatmem_cli.add_command(erase_user)
chatmem_cli.add_command(audit_cli)


@chatmem_cli.command("create-tables")
def create_tables() -> None:
    """Create chatmem's tables on the app's database (the same as `db upgrade`)."""
    current_memory().upgrade_db()
    click.echo("chatmem tables are ready.")


@chatmem_cli.command("sweep")
@click.option("--limit", default=100, show_default=True, help="Most summary jobs to run.")
def sweep(limit: int) -> None:
    """End idle sessions, run due summary and pre-review jobs, check guidance upkeep, apply
    retention, send webhook notices."""
    memory = current_memory()
    ended = memory.sweep()
    click.echo(f"Ended {ended} idle session{'s' if ended != 1 else ''}.")
    stats = memory.run_due_jobs(limit=limit)
    click.echo(f"Summary jobs: {stats.claimed} run: {stats}.")
    for error in stats.errors:
        click.echo(f"Summary jobs not run: {error}", err=True)
    reviewed = memory.run_due_pre_reviews(limit=limit)
    if memory.settings.pre_review or reviewed.claimed:
        click.echo(f"Pre-review jobs: {reviewed.claimed} run: {reviewed}.")
    for error in reviewed.errors:
        click.echo(f"Pre-review jobs not run: {error}", err=True)
    click.echo(f"Upkeep: {memory.upkeep()}.")
    if memory.settings.retention_days:
        deleted = memory.apply_retention()
        shown = ", ".join(f"{n} from {table}" for table, n in deleted.items() if n) or "nothing"
        click.echo(f"Retention ({memory.settings.retention_days} days): deleted {shown}.")
    if memory.settings.notify_webhook:
        click.echo(f"Webhook notices: {memory.deliver_notices()}.")


token_cli = AppGroup("token", help="API tokens for the MCP endpoint and the REST routes.")
chatmem_cli.add_command(token_cli)


@token_cli.command("create")
@click.argument("username")
@click.option("--name", default="default", help="A label to tell this user's tokens apart.")
@click.option(
    "--expires-days",
    type=click.IntRange(min=1, max=tokens.EXPIRES_DAYS_MAX),
    default=None,
    help="Stop working after this many days (default: never).",
)
@click.option(
    "--read-only", is_flag=True, help="Only read-only tools are listed or callable with it."
)
def token_create(username: str, name: str, expires_days: int | None, read_only: bool) -> None:
    """Create an API token for USERNAME and print it (it is shown only this once)."""
    memory = current_memory()
    user = _user(memory, username)
    try:
        token, plain = tokens.issue(
            memory,
            user,
            name=name,
            expires_in=timedelta(days=expires_days) if expires_days else None,
            read_only=read_only,
        )
    except ChatmemError as error:
        raise click.ClickException(error.message) from None
    scope = "read-only" if token.read_only else "full"
    expiry = f"expires {_when(token.expires_at)}" if token.expires_at else "no expiry"
    click.echo(
        f"Created token #{token.id} ({token.name}) for {username}, scope {scope}, {expiry}. "
        "Copy it now: it is not stored and cannot be shown again.",
        err=True,
    )
    click.echo(plain)


@token_cli.command("list")
@click.argument("username", required=False)
def token_list(username: str | None) -> None:
    """List API tokens (all, or USERNAME's): never the tokens themselves."""
    from ..permissions import user_id_of, user_name_of

    memory = current_memory()
    user_id = user_id_of(_user(memory, username)) if username is not None else None
    rows = tokens.list_tokens(memory.db.session(), user_id=user_id)
    if not rows:
        click.echo("No tokens.")
        return
    now = utcnow()
    for row in rows:
        owner = memory.load_user(row.user_id)
        who = user_name_of(owner) if owner is not None else f"user {row.user_id} (gone)"
        scope = "read-only" if row.read_only else "full"
        expiry = f"expires {_when(row.expires_at)}" if row.expires_at else "no expiry"
        state = tokens.state_of(row, now)
        if row.revoked_at:
            state = f"revoked {_when(row.revoked_at)}"
        click.echo(
            f"#{row.id}  {who}  {row.name}  {row.prefix}…  scope {scope}  "
            f"created {_when(row.created_at)}  last used {_when(row.last_used_at)}  "
            f"{expiry}  {state}"
        )


@token_cli.command("revoke")
@click.argument("token_id", type=int, required=False)
@click.option("--user", "username", default=None, help="Revoke every token of this user.")
def token_revoke(token_id: int | None, username: str | None) -> None:
    """Revoke token TOKEN_ID, or all of a user's: they stop working at once, on every worker."""
    memory = current_memory()
    if username is not None and token_id is None:
        from ..permissions import user_id_of

        count = tokens.revoke_user(memory.db.session(), user_id_of(_user(memory, username)))
        click.echo(f"Revoked {count} token{'s' if count != 1 else ''} of {username}.")
        return
    if token_id is None or username is not None:
        raise click.UsageError("Give a token id or --user NAME (one of them).")
    try:
        tokens.revoke(memory.db.session(), token_id)
    except NotFound as error:
        raise click.ClickException(error.message) from None
    click.echo(f"Revoked token #{token_id}.")


def _user(memory: Any, username: str) -> Any:
    user = memory.load_user_by_name(username)
    if user is None:
        raise click.ClickException(f"No user named {username!r}.")
    return user


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") + " UTC" if value else "never"


@chatmem_cli.group("db")
def db_group() -> None:
    """chatmem's own migrations (version table: chatmem_alembic_version)."""


@db_group.command("upgrade")
@click.argument("revision", default="head")
@click.option(
    "--with-host",
    is_flag=True,
    help="First run the host's own upgrade to head (Flask-Migrate's or Flask-Alembic's).",
)
def db_upgrade(revision: str, with_host: bool) -> None:
    """Create or update chatmem's tables on the app's database."""
    if with_host:
        _host_upgrade()
    current_memory().upgrade_db(revision)
    click.echo(f"chatmem database is at {_migrate().current(current_memory().db.engine)}.")


@db_group.command("downgrade")
@click.argument("revision", default="-1")
def db_downgrade(revision: str) -> None:
    """Step chatmem's tables back (default: one revision; `base` removes them)."""
    _migrate().downgrade(current_memory().db.engine, revision)
    click.echo(
        f"chatmem database is at {_migrate().current(current_memory().db.engine) or 'base'}."
    )


@db_group.command("current")
def db_current() -> None:
    """Print the revision chatmem's tables are at, and the newest one shipped."""
    migrate = _migrate()
    click.echo(f"current: {migrate.current(current_memory().db.engine) or 'none'}")
    click.echo(f"head: {migrate.head()}")


@db_group.command("revision")
@click.option("-m", "--message", required=True, help="What the migration changes.")
@click.option("--empty", is_flag=True, help="Write an empty revision instead of autogenerating.")
def db_revision(message: str, empty: bool) -> None:
    """For chatmem developers: write a migration for changed models.

    Run it against a database upgraded to head; the new file lands in
    chatmem/migrations/versions/ for review.
    """
    _migrate().revision(current_memory().db.engine, message, autogenerate=not empty)


def _host_upgrade() -> None:
    """The host's `flask db upgrade`, in this process: one deploy command runs both.

    Messages go to stderr: stdout stays the one line scripts read.
    """
    from flask import current_app

    from ..host_revisions import pending_drops

    drops = pending_drops(current_app, current_memory().db.engine)
    if drops:
        raise click.ClickException(
            "Not upgrading: the host's migration "
            + ", ".join(drops)
            + " drops chatmem's tables (the memory). Delete those op.drop_table lines "
            "from its upgrade(), then run this again."
        )
    if "migrate" in current_app.extensions:
        import flask_migrate

        flask_migrate.upgrade()  # the directory given to Migrate(...), "migrations" by default
        click.echo("host database is upgraded (Flask-Migrate).", err=True)
    elif "alembic" in current_app.extensions:
        current_app.extensions["alembic"].upgrade()
        click.echo("host database is upgraded (Flask-Alembic).", err=True)
    else:
        click.echo(
            "No Flask-Migrate or Flask-Alembic on this app: only chatmem's upgrade runs.",
            err=True,
        )


@chatmem_cli.command("doctor")
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="How many worker processes serve the app (default: $WEB_CONCURRENCY, else 1).",
)
def doctor(workers: int | None) -> None:
    """Check the database, hooks, secret key, rate limits, CSP and provider; exit 1 on a problem."""
    from flask import current_app

    from . import checks

    memory = current_memory()
    count = workers or checks.workers_from_environ()
    findings = checks.check(current_app, memory, workers=count)
    width = max(len(f.topic) for f in findings)
    for finding in findings:
        click.echo(f"{finding.level:<7} {finding.topic:<{width}}  {finding.message}")
    problems = sum(f.level == checks.PROBLEM for f in findings)
    if problems:
        click.echo(f"{problems} problem{'s' if problems != 1 else ''} found.", err=True)
        raise SystemExit(1)
    click.echo("No problems found.")


def _migrate() -> ModuleType:
    """chatmem.migrate, imported when a command needs it (Alembic is slow to import)."""
    from .. import migrate

    return migrate
