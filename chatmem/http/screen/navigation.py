"""The helpers a host puts in its own layout: they never raise into a host page.

`chatmem_pending_count()` and `chatmem_memory_url()` render on every page of
the host, chatmem's or not. When chatmem's tables are missing (a host whose
fixtures build the database with `db.create_all()`, a forgotten
`flask chatmem db upgrade`) or the database is down, the badge renders
nothing (0) and the link stays, and the reason is logged once per app until
it recovers, instead of turning every host page into a 500.

The count runs on the host's session only once chatmem's tables are known to
be there (checked on a connection of its own): on PostgreSQL a failed query
aborts the session's transaction, and the rest of the host's page still needs
it.
"""

from __future__ import annotations

import logging
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from flask import current_app, url_for
from sqlalchemy import inspect
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.routing import BuildError

from ...core import current_memory

log = logging.getLogger("chatmem")

#: The table the badge counts from; its presence stands for the schema's.
COUNTED_TABLE = "chatmem_guidance"


@dataclass
class _Health:
    """Per app: whether the tables were seen, and which failures were logged."""

    tables_seen: bool = False
    logged: set[str] = field(default_factory=set)

    def failed(self, kind: str, message: str, *args: Any) -> None:
        if kind not in self.logged:
            self.logged.add(kind)
            log.warning(message, *args)

    def recovered(self, kind: str) -> None:
        self.logged.discard(kind)


def _health() -> _Health:
    health = current_app.extensions.get("chatmem.navigation")
    if health is None:
        health = current_app.extensions["chatmem.navigation"] = _Health()
    return health


def pending_count() -> int:
    """The badge number, or 0 when it cannot be known."""
    memory = current_memory()
    health = _health()
    try:
        if not health.tables_seen:
            with memory.db.engine.connect() as connection:
                if not inspect(connection).has_table(COUNTED_TABLE):
                    health.failed(
                        "tables",
                        "chatmem's tables are missing, so the pending badge shows nothing: "
                        "run `flask chatmem db upgrade` (or call memory.create_all() in "
                        "test fixtures that build the database with db.create_all()).",
                    )
                    return 0
            health.tables_seen = True
            health.recovered("tables")
        count = memory.pending_count()
    except SQLAlchemyError as error:
        with suppress(SQLAlchemyError):  # leave the host's session usable for the rest of the page
            memory.db.session.rollback()
        health.failed(
            "database",
            "chatmem's pending badge shows nothing: the database did not answer (%s).",
            type(error).__name__,
        )
        return 0
    health.recovered("database")
    return count


def memory_url(**params: Any) -> str:
    """The Memory screen's address, or '' when it cannot be built."""
    try:
        return url_for("chatmem_memory.index", **params)
    except (BuildError, RuntimeError, ValueError) as error:
        _health().failed("url", "chatmem_memory_url() renders nothing: %s", error)
        return ""
