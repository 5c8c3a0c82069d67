"""The facade's side of upkeep and notices: what needs Flask (config, hooks, the app).

The domain is in `memory/staleness.py` and `memory/notify.py`; this module
wires them to the app: SQLAlchemy session events that turn staged notices
into ready ones (and outbox rows when a webhook is set), the host hooks,
and the sweep steps.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from flask import current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import SessionTransaction

from .memory import notify, staleness

if TYPE_CHECKING:
    from .core import MemoryCore

log = logging.getLogger("chatmem.upkeep")

_installed = False


def install_session_events() -> None:
    """Once per process: staged notices follow their transaction's fate."""
    global _installed
    if _installed:
        return
    event.listen(OrmSession, "before_commit", _before_commit)
    event.listen(OrmSession, "after_commit", notify.promote)
    event.listen(OrmSession, "after_transaction_end", _after_transaction_end)
    _installed = True


def _before_commit(session: OrmSession) -> None:
    """With a webhook set, the notices go into the outbox in the same transaction."""
    notices = notify.staged_on(session)
    if not notices or not has_app_context():
        return
    state = current_app.extensions.get("chatmem")
    if state is not None and state.settings["CHATMEM_NOTIFY_WEBHOOK"]:
        session.add_all(notify.outbox_rows(notices))


def _after_transaction_end(session: OrmSession, transaction: SessionTransaction) -> None:
    # A savepoint ending says nothing about the outer transaction; the outer
    # one ending without its commit (rollback, close) drops what it staged.
    if transaction.parent is None:
        notify.drop_staged(session)


def fire(memory: MemoryCore) -> None:
    """Hand ready notices to the host's hooks; a failing hook is logged, never raised."""
    notices = notify.take_ready(memory.db)
    for notice in notices:
        for hook in memory._notice_hooks.get(notice.event, ()):
            try:
                hook(dict(notice.data))
            except Exception:
                log.exception("the %s hook failed for %s", notice.event, notice.data.get("id"))
                memory.db.session.rollback()


def resolvers(memory: MemoryCore) -> staleness.Resolvers:
    """What the host lets the sweep check: registered tools, post ids, post types."""
    names = frozenset(t.name.lower() for t in memory.registry.tools())
    types = None
    if memory._post_types is not None:
        types = frozenset(str(t).lower() for t in memory._post_types())
    return staleness.Resolvers(names, memory._post_type_resolver, types)


def run(memory: MemoryCore, *, now: datetime | None = None) -> staleness.Upkeep:
    """The upkeep sweep steps: targets gone, review dates due."""
    try:
        found = resolvers(memory)
    except Exception:
        log.exception("the post_types hook failed; post_type targets not checked this time")
        memory.db.session.rollback()
        found = staleness.Resolvers(frozenset(t.name.lower() for t in memory.registry.tools()))
    review = memory.config("CHATMEM_STALE_TARGETS") == "review"
    done = staleness.check_targets(memory.db, found, memory.server_name, review=review, now=now)
    done.review_due = staleness.review_due(memory.db, now=now)
    return done


def deliver(memory: MemoryCore, *, now: datetime | None = None, post: Any = None) -> notify.Sent:
    """Send due webhook notices (nothing without CHATMEM_NOTIFY_WEBHOOK)."""
    url = memory.config("CHATMEM_NOTIFY_WEBHOOK")
    if not url:
        return notify.Sent()
    return notify.deliver_due(
        memory.db, str(url), memory.job_policy(), post=post or notify.post_json, now=now
    )
