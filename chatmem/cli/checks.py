"""`flask chatmem doctor`: what a deploy would trip over, found before it does.

Each check looks at one thing and returns findings: `ok`, `warn` (works, but
read this) or `problem` (something is wrong: the command exits 1). The checks
read the app's settings, hooks and database; they change nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from flask import Flask
from sqlalchemy import inspect
from sqlalchemy.exc import SQLAlchemyError

OK, WARN, PROBLEM = "ok", "warn", "problem"

#: Secret keys copied from tutorials and examples: anyone can sign a session with them.
KNOWN_SECRET_KEYS = frozenset(
    {
        "dev",
        "development",
        "secret",
        "secret-key",
        "secret_key",
        "changeme",
        "change-me",
        "change_me",
        "test",
        "default",
        "you-will-never-guess",
        "your-secret-key",
        "super-secret",
        "supersecret",
    }
)
SECRET_KEY_MIN = 16


@dataclass(frozen=True)
class Finding:
    level: str
    topic: str
    message: str


def check(app: Flask, memory: Any, *, workers: int) -> list[Finding]:
    """Every finding for this app, in a fixed order (inside an app context)."""
    found: list[Finding] = []
    for one in CHECKS:
        found.extend(one(app, memory, workers))
    return found


def _tables(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    from .. import migrate

    engine = memory.db.engine
    try:
        current = migrate.current(engine)
        made_by_create_all = current is None and inspect(engine).has_table("chatmem_state")
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        yield Finding(PROBLEM, "database", f"cannot reach the database: {reason}")
        return
    head = migrate.head()
    if current == head:
        yield Finding(OK, "tables", f"chatmem's tables are at the newest revision ({head}).")
    elif made_by_create_all:
        yield Finding(
            PROBLEM,
            "tables",
            "chatmem's tables were made by create_all and carry no revision: run "
            "`flask chatmem db upgrade` (it adopts them).",
        )
    elif current is None:
        yield Finding(
            PROBLEM, "tables", "chatmem's tables are missing: run `flask chatmem db upgrade`."
        )
    else:
        yield Finding(
            PROBLEM,
            "tables",
            f"chatmem's tables are at revision {current}, the newest is {head}: run "
            "`flask chatmem db upgrade`.",
        )


def _host_revisions(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    from ..host_revisions import pending_drops

    try:
        drops = pending_drops(app, memory.db.engine)
    except SQLAlchemyError:
        return  # the tables check already says the database does not answer
    for drop in drops:
        yield Finding(
            PROBLEM,
            "host migrations",
            f"{drop} drops chatmem's tables: delete those op.drop_table lines from its "
            "upgrade() before `flask db upgrade` erases the memory.",
        )
    if not drops:  # said, so that a reader knows the check ran
        yield Finding(OK, "host migrations", "No pending host revision drops chatmem's tables.")


def _hooks(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    from ..permissions import _listed_capabilities

    permissions = memory.permissions
    if permissions.capability_checker is _listed_capabilities:
        yield Finding(
            WARN,
            "capabilities",
            "no @memory.capability_checker: a user may curate or use tools only if its "
            "`capabilities` attribute lists manage_options / the tool's capability.",
        )
    else:
        yield Finding(OK, "capabilities", "a capability checker is registered.")
    flask_login = getattr(getattr(app, "login_manager", None), "_user_callback", None)
    if permissions.user_loader is None and flask_login is None:
        yield Finding(
            PROBLEM,
            "users",
            "no way to load a user by id (@memory.user_loader or Flask-Login's user_loader): "
            "API tokens, MCP and REST cannot tell who is calling.",
        )
    else:
        yield Finding(OK, "users", "users are loaded by id.")
    if permissions.user_by_name is None:
        yield Finding(
            WARN,
            "users",
            "no @memory.user_by_name: `flask chatmem token create <username>` cannot find users.",
        )


def _secret_key(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    key = app.secret_key
    text = key.decode(errors="replace") if isinstance(key, bytes) else str(key or "")
    if not text:
        yield Finding(PROBLEM, "secret key", "SECRET_KEY is not set: sign-in cannot work.")
    elif text.strip().lower() in KNOWN_SECRET_KEYS or len(text) < SECRET_KEY_MIN:
        yield Finding(
            PROBLEM,
            "secret key",
            "SECRET_KEY is a well-known or short example value: anyone can forge a session. "
            "Set a random one: `python -c 'import secrets; print(secrets.token_hex(32))'`.",
        )
    else:
        yield Finding(OK, "secret key", "SECRET_KEY is set.")


def _rate_limits(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    from ..auth.ratelimit import EXTENSION_KEY
    from ..settings import shown

    uri = memory.settings.rate.storage_uri
    if not uri.startswith("memory://"):
        if app.extensions[EXTENSION_KEY].storage.check():
            yield Finding(OK, "rate limits", f"counted in a shared store ({shown(uri)}).")
        else:
            yield Finding(
                PROBLEM, "rate limits", f"the rate-limit store {shown(uri)} does not answer."
            )
    elif workers > 1:
        yield Finding(
            PROBLEM,
            "rate limits",
            f"{workers} workers but CHATMEM_RATELIMIT_STORAGE_URI is memory://: each worker "
            "counts alone, so a token gets the budget once per worker. Set it to a shared "
            "store (redis://...).",
        )
    else:
        yield Finding(
            OK,
            "rate limits",
            "counted in this process (memory://): right for one worker. Several? Give "
            "--workers N (or set WEB_CONCURRENCY) to check.",
        )


def _sqlite_workers(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    """Several workers on one SQLite file need WAL mode (docs: SQLite with more than one worker)."""
    engine = memory.db.engine
    if engine.dialect.name != "sqlite" or workers < 2:
        return
    if engine.url.database in (None, "", ":memory:"):
        yield Finding(
            PROBLEM,
            "database",
            f"{workers} workers on an in-memory SQLite database: each worker has its own.",
        )
        return
    try:
        with engine.connect() as connection:
            mode = str(connection.exec_driver_sql("PRAGMA journal_mode").scalar()).lower()
    except SQLAlchemyError:
        return  # the tables check already says the database does not answer
    if mode != "wal":
        yield Finding(
            PROBLEM,
            "database",
            f"{workers} workers on SQLite in {mode} mode: writers will fail with "
            "'database is locked'. Turn on WAL (see 'SQLite with more than one worker').",
        )
    else:
        yield Finding(OK, "database", f"SQLite in WAL mode for {workers} workers.")


def _csp(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    csp = memory.settings.screen.csp
    if not csp.strip():
        yield Finding(
            WARN,
            "csp",
            "CHATMEM_SCREEN_CSP is empty: the Memory screen, which shows agent-written text, "
            "is sent without a Content-Security-Policy.",
        )
        return
    directives = {
        part.split()[0].lower(): part.split()[1:] for part in csp.split(";") if part.split()
    }
    scripts = directives.get("script-src", directives.get("default-src", []))
    loose = [s for s in scripts if s in ("'unsafe-inline'", "'unsafe-eval'", "*")]
    if loose:
        yield Finding(
            WARN,
            "csp",
            f"CHATMEM_SCREEN_CSP lets scripts run from {' '.join(loose)}: an agent-written "
            "entry could run script on the curator's page. Prefer a nonce or host names.",
        )
    broad = list(_broad_host_sources(memory))
    yield from broad
    if not loose and not broad:
        yield Finding(OK, "csp", "the Memory screen sends a Content-Security-Policy.")


#: What each CHATMEM_SCREEN_*_SOURCES setting lets in, for the warning.
_LOADS = {"script-src": "scripts", "style-src": "stylesheets", "font-src": "fonts"}


def broad_source(source: str, directive: str) -> str | None:
    """Why a host source lets in more than one site's files, or None if it doesn't.

    `*`, a bare scheme (`https:`) and a wildcard without a domain
    (`https://*`, `*.com`) let any site in; `http://` lets a network
    attacker swap the file; `data:`/`blob:` script or style is inline code by
    another name. `data:` fonts are common and harmless, so they pass.
    """
    word = source.lower()
    if word in ("*", "http:", "https:", "ws:", "wss:"):
        return "any site"
    if word in ("data:", "blob:", "filesystem:"):
        return None if directive == "font-src" else "inline code"
    if word.startswith("http://"):
        return "unencrypted"
    host = word.split("://", 1)[-1].split("/", 1)[0].split(":", 1)[0]
    if host.startswith("*") and "." not in host.lstrip("*."):
        return "any site"
    return None


def _broad_host_sources(memory: Any) -> Iterator[Finding]:
    from ..csp import EXTRA_SOURCES

    sources = memory.settings.screen.host_sources
    for key, directive in EXTRA_SOURCES:
        broad = [
            f"{source} ({why})"
            for source in sources[key]
            if (why := broad_source(source, directive))
        ]
        if broad:
            yield Finding(
                WARN,
                "csp",
                f"{key} lets the Memory screen load {_LOADS[directive]} from "
                f"{', '.join(broad)}: list the exact origins your layout uses "
                "(https://cdn.example).",
            )


def _provider(app: Flask, memory: Any, workers: int) -> Iterator[Finding]:
    from ..providers import provider_from_config
    from ..providers.base import ProviderError

    settings = memory.settings.provider  # what the summary jobs build their provider from
    name = settings.name
    try:
        provider_from_config(settings.as_config())
    except ProviderError as error:
        yield Finding(PROBLEM, "provider", f"CHATMEM_PROVIDER={name}: {error}.")
        return
    if name == "none":
        yield Finding(OK, "provider", "no LLM provider (summaries are digests only).")
    else:
        yield Finding(OK, "provider", f"{name} is configured with a key.")


CHECKS: tuple[Callable[[Flask, Any, int], Iterator[Finding]], ...] = (
    _tables,
    _host_revisions,
    _hooks,
    _secret_key,
    _rate_limits,
    _sqlite_workers,
    _csp,
    _provider,
)


def workers_from_environ() -> int:
    """gunicorn's own default for its worker count: $WEB_CONCURRENCY, else 1."""
    try:
        return max(1, int(os.environ.get("WEB_CONCURRENCY", "1")))
    except ValueError:
        return 1
