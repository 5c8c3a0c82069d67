"""The facade's side of upkeep and notices: what needs Flask (config, hooks, the app).

The domain is in `memory/staleness.py` and `memory/notify.py`; this module
wires them to the app: SQLAlchemy session events that turn staged notices
into ready ones (and outbox rows when a webhook is set), the host hooks,
and the sweep steps.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from flask import current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import SessionTransaction

from .memory import notify, staleness

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

    from .hooks import HostHooks

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
    if state is not None and state.settings.notify_webhook:
        session.add_all(notify.outbox_rows(notices))


def _after_transaction_end(session: OrmSession, transaction: SessionTransaction) -> None:
    # A savepoint ending says nothing about the outer transaction; the outer
    # one ending without its commit (rollback, close) drops what it staged.
    if transaction.parent is None:
        notify.drop_staged(session)


def fire(db: SQLAlchemy, hooks: HostHooks) -> None:
    """Hand ready notices to the host's hooks; a failing hook is logged, never raised."""
    notices = notify.take_ready(db)
    for notice in notices:
        for hook in hooks.notice_hooks(notice.event):
            try:
                hook(dict(notice.data))
            except Exception:
                log.exception("the %s hook failed for %s", notice.event, notice.data.get("id"))
                db.session.rollback()


def resolvers(hooks: HostHooks) -> staleness.Resolvers:
    """What the host lets the sweep check: registered tools, post ids, post types, labels."""
    names = frozenset(t.name.lower() for t in hooks.registry.tools())
    types = None
    if hooks.post_types_hook is not None:
        types = frozenset(str(t).lower() for t in hooks.post_types_hook())
    return staleness.Resolvers(names, hooks.post_type_resolver_hook, types, hooks.label_exists_hook)


def run(
    db: SQLAlchemy,
    hooks: HostHooks,
    *,
    server_name: str,
    review: bool,
    now: datetime | None = None,
) -> staleness.Upkeep:
    """The upkeep sweep steps: targets gone (back to Pending when `review`), review dates due."""
    try:
        found = resolvers(hooks)
    except Exception:
        log.exception("the post_types hook failed; post_type targets not checked this time")
        db.session.rollback()
        found = staleness.Resolvers(
            frozenset(t.name.lower() for t in hooks.registry.tools()),
            label_exists=hooks.label_exists_hook,
        )
    done = staleness.check_targets(db, found, server_name, review=review, now=now)
    done.review_due = staleness.review_due(db, now=now)
    return done
