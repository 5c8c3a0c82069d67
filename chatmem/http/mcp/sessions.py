"""Which chatmem session an MCP request belongs to, in either protocol era.

Handshake era: `Mcp-Session-Id` *is* a chatmem session id, minted by
`initialize`. It lives in the database (so any worker, before or after a
restart, honours it), it is 192 random bits, and it only resolves for the
user whose token opened it: anyone else gets the same 404 as for an id that
never existed.

Stateless era (2026-07-28, and handshake-era requests that send no session
id): calls are grouped per token and idle window, by an open `mcp` session
whose external key names the token. A session idle past
CHATMEM_SESSION_IDLE_MINUTES is ended and the next write starts a new one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import bindparam, select

from ...identity import HostUser
from ...memory import reads, sessions, switches
from ...memory.models import Session, State
from ...permissions import user_id_of
from ...state import request_store

if TYPE_CHECKING:
    from ...core import MemoryCore


# The request's state row and its session's `sessions.lookup` columns in one
# statement: on PostgreSQL one round trip instead of two (built once).
_STATE_AND_SESSION = (
    select(
        State.revision,
        State.memory_enabled,
        State.require_approval,
        State.auto_summarize,
        Session.user_id,
        Session.channel,
        Session.ended_at,
        Session.last_seen_at,
    )
    .select_from(State)
    .outerjoin(Session, Session.id == bindparam("session_id"))
    .where(State.id == switches.STATE_ID)
)


class SessionGone(Exception):
    """The session id is unknown, another user's, or ended: HTTP 404."""


def _sane(session_id: str) -> bool:
    # Ids we issue are short and printable: anything else (NUL included, which
    # PostgreSQL could not even compare) names no session.
    return len(session_id) <= 64 and session_id.isprintable()


def prefetch(memory: MemoryCore, session_id: str) -> None:
    """Read the request's state and its session in one statement, before the token check.

    The state is kept for the request as `switches.current` keeps it (the
    token check and the call read it from there) and the session row as
    `sessions.lookup` keeps it (for this transaction only: a commit in
    between, such as the token's use being noted, reads it again). Whether the
    session may be used is still `resolve`'s to say, after the token check.
    """
    kept = request_store()
    if kept is None or not _sane(session_id):
        return
    db = memory.db.session()
    row = reads.first(db, _STATE_AND_SESSION, {"session_id": session_id})
    if row is None:
        return  # no state row yet: the usual reads say what a fresh database has
    switches.keep(
        kept,
        switches.Snapshot(
            row.revision, row.memory_enabled, row.require_approval, row.auto_summarize
        ),
    )
    # The row has `lookup`'s columns by name; no user means the join found no
    # session (a session always has one).
    sessions.remember(db, session_id, row if row.user_id is not None else None)


def resolve(memory: MemoryCore, user: HostUser, session_id: str) -> None:
    """Check that this user may use this open handshake-era session, and touch it; else SessionGone.

    Commits only when the touch wrote, so a read-only call stays read-only.
    """
    db = memory.db.session()
    session = sessions.lookup(db, session_id) if _sane(session_id) else None
    if (
        session is None
        or session.user_id != user_id_of(user)
        or session.channel != "mcp"
        or session.ended_at is not None
    ):
        raise SessionGone(session_id)
    if sessions.touch(db, session_id, session.last_seen_at):
        db.commit()


def token_key(token_id: int) -> str:
    return f"token:{token_id}"
