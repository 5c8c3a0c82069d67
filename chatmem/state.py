"""The composition root: what chatmem puts together, once, for one Flask app.

`init_app` (and `ChatMemory.reload_settings`) call `build`, which wires the dispatcher
and its narrow collaborators from the host's hooks and the typed settings;
the result lives in ``app.extensions["chatmem"]``. Nothing here is read by
string key and nothing below it reaches back into the `ChatMemory` facade.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flask import has_request_context, request

from .dispatch import DbSessions, Dispatcher
from .hooks import HostHooks
from .memory import switches
from .memory.recall.ranking import Analyzer
from .memory.revalidation import Revalidator
from .revision import RevisionCache
from .settings import Settings

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

    from .workers.background import BackgroundSweeper


@dataclass
class AppState:
    """What chatmem keeps per Flask app."""

    #: The ChatMemory that built this state (`core.current_memory` reads it back).
    memory: HostHooks
    settings: Settings
    cache: RevisionCache
    dispatcher: Dispatcher
    #: Marks guidance whose target changed (after a call, or the host's `target_changed`).
    changes: Revalidator
    lock: threading.Lock = field(default_factory=threading.Lock)
    sweeper: BackgroundSweeper | None = None
    # Entries this process marked as found by `recall` (id -> when); see staleness.py.
    recalled: dict[int, datetime] = field(default_factory=dict)


def request_store() -> dict[str, Any] | None:
    """Where this request keeps what it read once (its WSGI environ); None outside one."""
    return request.environ if has_request_context() else None


def build(memory: HostHooks, db: SQLAlchemy, settings: Settings) -> AppState:
    """The per-app state: the dispatcher and its collaborators, put together once."""
    cache = RevisionCache(
        db.session,
        settings.server_name,
        lambda: memory.post_type_resolver_hook,
        lambda: memory.target_labels_hook,
        Analyzer(settings.search_language),
        hold_changed=settings.changed_targets == "review",
    )
    changes = Revalidator(
        db.session,
        cache.watched,
        lambda: memory.target_labels_hook,
        review=settings.changed_targets == "review",
    )
    dispatcher = Dispatcher(
        memory.registry,
        session=db.session,
        server_name=settings.server_name,
        permissions=memory.permissions,
        state=switches.Reader(db.session, request_store),
        guardrails=cache,
        sessions=DbSessions(db.session, settings),
        limits=settings,
        changes=changes,
    )
    return AppState(
        memory=memory,
        settings=settings,
        cache=cache,
        dispatcher=dispatcher,
        changes=changes,
    )
