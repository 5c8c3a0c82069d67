"""Curator notices after commit: what needs Flask (config, hooks, the app).

The notices themselves are made in `memory/notify.py`; this module wires them
to the app: SQLAlchemy session events that turn staged notices into ready
ones (and outbox rows when a webhook is set), and the host hooks that get
them once the agent's call is over. The webhook is sent by `webhook.py`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from flask import current_app, has_app_context
from sqlalchemy import event
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import SessionTransaction

from ..memory import notify

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..hooks import HostHooks

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


def fire(db: OrmSession, hooks: HostHooks) -> None:
    """Hand ready notices to the host's hooks; a failing hook is logged, never raised."""
    notices = notify.take_ready(db)
    for notice in notices:
        for hook in hooks.notice_hooks(notice.event):
            try:
                hook(dict(notice.data))
            except Exception:
                log.exception("the %s hook failed for %s", notice.event, notice.data.get("id"))
                db.rollback()
