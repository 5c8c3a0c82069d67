"""Session lifecycle: start, touch, summary, end, and the idle sweep.

A session becomes a *record* (shown by recall and on the Memory screen) when
it gets a summary or ends; `recorded_at` marks that moment. Ending a session
without a summary records it with its digest alone at once, and queues an
auto-summary job when the setting is on, so a provider outage can never lose
the session.
"""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, bindparam, select, update
from sqlalchemy.orm import Session as OrmSession

from ..errors import InvalidParams, NotFound
from ..text import for_agents
from . import ledger, reads, switches
from .models import CHANNELS, Session, SummaryJob, utcnow


def new_id() -> str:
    """An unguessable session id (visible ASCII, safe in an HTTP header)."""
    return secrets.token_urlsafe(24)


def start(
    db: OrmSession,
    *,
    user_id: str,
    user_name: str,
    channel: str,
    external_key: str | None = None,
    commit: bool = True,
) -> Session:
    if channel not in CHANNELS:
        raise InvalidParams(f"Unknown channel {channel!r}.", details={"field": "channel"})
    session = Session(
        id=new_id(),
        user_id=user_id,
        user_name=user_name,
        channel=channel,
        external_key=external_key,
    )
    db.add(session)
    if commit:
        db.commit()
    return session


# The open session a client's key names: the two columns `for_client` needs, read
# on the connection (an ORM row with the summary and digest cost five times as much).
_OPEN_BY_KEY = (
    select(Session.id, Session.last_seen_at)
    .where(
        Session.user_id == bindparam("user_id"),
        Session.channel == bindparam("channel"),
        Session.external_key == bindparam("external_key"),
        Session.ended_at.is_(None),
    )
    .order_by(Session.started_at.desc())
    .limit(1)
)


# A keyed look-up another statement already made (see `remember_open`).
_OPEN_MEMO = "chatmem.open_by_key"


def find_open(db: OrmSession, *, user_id: str, channel: str, external_key: str) -> Row[Any] | None:
    """(id, last_seen_at) of the open session a client-chosen key refers to, if any."""
    key = (user_id, channel, external_key)
    memo = db.info.pop(_OPEN_MEMO, None)
    transaction = db.get_transaction()
    if memo and transaction is not None and memo[0] is transaction and memo[1] == key:
        remembered: Row[Any] | None = memo[2]
        return remembered
    return reads.first(
        db, _OPEN_BY_KEY, {"user_id": user_id, "channel": channel, "external_key": external_key}
    )


def remember_open(db: OrmSession, key: tuple[str, str, str], row: Row[Any] | None) -> None:
    """Keep `find_open`'s answer for `key` (user, channel, external key), read by another
    statement, for the next look-up in this transaction: used once, so a session the
    request then starts or ends is read afresh."""
    db.info[_OPEN_MEMO] = (db.get_transaction(), key, row)


def for_client(
    db: OrmSession,
    *,
    user_id: str,
    user_name: str,
    channel: str,
    key: str,
    idle: timedelta,
    write: bool,
) -> str | None:
    """The session a client's key names (a REST header, an MCP token), by one rule.

    Its open session, unless idle past `idle`: that one is ended (digested,
    summarised) and the next write starts a fresh one. A call in it, read or
    write, is seen (`touch`), so only a client's silence ends it. A read alone
    starts nothing, as it leaves nothing to record.
    """
    found = find_open(db, user_id=user_id, channel=channel, external_key=key)
    if found is not None:
        found_id: str = found.id
        if utcnow() - found.last_seen_at <= idle:
            touch(db, found_id, found.last_seen_at)
            return found_id
        end(db, found_id)
    if not write:
        return None
    return start(db, user_id=user_id, user_name=user_name, channel=channel, external_key=key).id


def exists(db: OrmSession, session_id: str) -> bool:
    return db.get(Session, session_id) is not None


# What every call in a known session checks (and the MCP endpoint before it):
# columns read on the connection, not an ORM row, as this runs on every call.
_LOOKUP = select(Session.user_id, Session.channel, Session.ended_at, Session.last_seen_at).where(
    Session.id == bindparam("session_id")
)


# The last lookup, kept for the rest of its transaction (see `lookup`).
_MEMO = "chatmem.session_lookup"


def lookup(db: OrmSession, session_id: str) -> Row[Any] | None:
    """(user_id, channel, ended_at, last_seen_at) of a session, or None.

    The MCP endpoint and then the dispatcher check the same session in one
    request: the second look-up in the same transaction reuses the first
    row, as the ORM's identity map would. A commit or rollback starts a new
    transaction, and with it a fresh read.
    """
    session = db
    memo = session.info.get(_MEMO)
    transaction = session.get_transaction()
    if memo and transaction is not None and memo[0] is transaction and memo[1] == session_id:
        remembered: Row[Any] | None = memo[2]
        return remembered
    row = reads.first(db, _LOOKUP, {"session_id": session_id})
    session.info[_MEMO] = (session.get_transaction(), session_id, row)
    return row


def remember(db: OrmSession, session_id: str, row: Row[Any] | None) -> None:
    """Keep a `lookup` row read by another statement, for the rest of this transaction."""
    db.info[_MEMO] = (db.get_transaction(), session_id, row)


def get_open(db: OrmSession, session_id: str, *, user_id: str) -> Row[Any]:
    """A session the user may add calls to (its `lookup` row); others' sessions look absent."""
    session = lookup(db, session_id)
    if session is None or session.user_id != user_id:
        raise NotFound("No such session.", details={"session_id": session_id})
    if session.ended_at is not None:
        raise NotFound(
            "This session has ended; start a new one.", details={"session_id": session_id}
        )
    return session


# last_seen_at only feeds the idle sweep (minutes), so it is refreshed at most
# this often: otherwise every read-only call (recall) would be a write
# transaction, and on SQLite all workers would queue for the write lock.
TOUCH_EVERY = timedelta(seconds=30)


def touch(db: OrmSession, session_id: str, last_seen_at: datetime | None) -> bool:
    """Refresh last_seen_at if it is due, in the caller's transaction; True when written."""
    now = utcnow()
    if last_seen_at is not None and now - last_seen_at < TOUCH_EVERY:
        return False
    db.execute(update(Session).where(Session.id == session_id).values(last_seen_at=now))
    db.info.pop(_MEMO, None)  # the remembered row is older than this write
    return True


def save_summary(db: OrmSession, session: Session, summary: str, *, auto: bool = False) -> None:
    """Record (or replace) the summary and refresh the digest; caller commits."""
    session.summary = summary
    session.summary_auto = auto
    _refresh_digest(db, session)
    session.recorded_at = session.recorded_at or utcnow()


def end(db: OrmSession, session_id: str, *, transcript: str | None = None) -> Session:
    """End a session: digest it and, if it has no summary, maybe queue one.

    Ending twice is harmless: the second call changes nothing.
    """
    session = db.get(Session, session_id)
    if session is None:
        raise NotFound("No such session.", details={"session_id": session_id})
    if session.ended_at is not None:
        return session
    now = utcnow()
    session.ended_at = now
    _refresh_digest(db, session)
    session.recorded_at = session.recorded_at or now
    if session.summary is None and switches.read(db).auto_summarize:
        # Kept only until the job ends, and never with a secret or hidden text in it.
        kept = for_agents(transcript) if transcript else None
        db.add(summary_job(session, kept, now=now))
    db.commit()
    return session


def idle_ids(db: OrmSession, idle: timedelta, now: datetime | None = None) -> list[str]:
    cutoff = (now or utcnow()) - idle
    return list(
        db.scalars(
            select(Session.id).where(Session.ended_at.is_(None), Session.last_seen_at < cutoff)
        )
    )


def _refresh_digest(db: OrmSession, session: Session) -> None:
    db.flush()
    session.digest, session.change_count = ledger.digest(db, session.id)


# The status of a summary job that was never run because its session had
# nothing to summarise: each one is a provider call saved.
DIGEST_ONLY = "digest_only"


def summary_job(session: Session, transcript: str | None, *, now: datetime) -> SummaryJob:
    """The summary job of a session that just ended (its digest already refreshed).

    A session with no ledgered call and no transcript (an agent that only
    called `recall`, say) would cost a paid call for a summary saying nothing:
    its job is recorded as finished, `digest_only`, and no worker claims it.
    """
    if session.change_count == 0 and not transcript:
        return SummaryJob(
            session_id=session.id,
            status=DIGEST_ONLY,
            outcome=DIGEST_ONLY,  # the Cost card's "provider calls saved" counts these
            next_run_at=now,
            finished_at=now,
        )
    return SummaryJob(session_id=session.id, transcript=transcript, next_run_at=now)
