"""Handshake-era MCP resource subscriptions: which resources a session watches. No Flask here.

A row names a session, a resource URI and `seen`, the digest of what the
session was last told the resource holds. The rows live in the database, so
a session may subscribe on one worker and poll on another: the poll compares
what the resource holds now with `seen`, and moves `seen` with a conditional
UPDATE, so two polls at once tell the session of one change once.
"""

from __future__ import annotations

from sqlalchemy import delete, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession

from .models import Subscription

#: A session's subscriptions at most: each poll reads every one.
MAX_PER_SESSION = 20


class TooMany(Exception):
    """The session already watches MAX_PER_SESSION resources."""


def add(db: OrmSession, session_id: str, uri: str, seen: str) -> None:
    """Watch `uri` from `seen` on; subscribing again to a watched URI changes nothing."""
    if db.get(Subscription, (session_id, uri)) is not None:
        return
    count = db.scalar(
        select(func.count()).select_from(Subscription).where(Subscription.session_id == session_id)
    )
    if (count or 0) >= MAX_PER_SESSION:
        raise TooMany(session_id)
    try:
        with db.begin_nested():
            db.add(Subscription(session_id=session_id, uri=uri, seen=seen))
    except IntegrityError:
        pass  # the same subscribe, sent twice at once: one row is enough


def remove(db: OrmSession, session_id: str, uri: str) -> None:
    db.execute(
        delete(Subscription).where(Subscription.session_id == session_id, Subscription.uri == uri)
    )


def watched(db: OrmSession, session_id: str) -> list[Subscription]:
    return list(
        db.scalars(
            select(Subscription)
            .where(Subscription.session_id == session_id)
            .order_by(Subscription.uri)
        )
    )


def move_seen(db: OrmSession, row: Subscription, now: str) -> bool:
    """Record that the session is told `uri` now holds `now`; False if another poll did."""
    moved = db.execute(
        update(Subscription)
        .where(
            Subscription.session_id == row.session_id,
            Subscription.uri == row.uri,
            Subscription.seen == row.seen,
        )
        .values(seen=now)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(moved, "rowcount", 0))
