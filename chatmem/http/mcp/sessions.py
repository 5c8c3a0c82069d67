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

from typing import TYPE_CHECKING, Any

from sqlalchemy import Executable, Row, String, and_, bindparam, cast, literal, select
from sqlalchemy.orm import Session as OrmSession

from ...auth.token_check import hash_token
from ...identity import HostUser
from ...memory import reads, sessions, switches
from ...memory.models import ApiToken, Session, State
from ...permissions import user_id_of
from ...state import request_store

if TYPE_CHECKING:
    from ...core import MemoryCore


# The request's state row and its session's `sessions.lookup` columns in one
# statement: on PostgreSQL one round trip instead of two (built once).
_STATE_AND_SESSION = (
    select(
        *switches.STATE_COLUMNS,
        Session.user_id,
        Session.channel,
        Session.ended_at,
        Session.last_seen_at,
    )
    .select_from(State)
    .outerjoin(Session, Session.id == bindparam("session_id"))
    .where(State.id == switches.STATE_ID)
)


#: How a stateless call's session names its token (`token_key`).
TOKEN_KEY_PREFIX = "token:"

# The request's state row and the open session a token's stateless calls are
# grouped in (`sessions.find_open`'s columns, and whose key it is), found from
# the token's hash: one statement where the token check and the call made two.
_STATE_AND_KEYED_SESSION = (
    select(
        *switches.STATE_COLUMNS,
        ApiToken.id.label("token_id"),
        ApiToken.user_id.label("token_user_id"),
        Session.id,
        Session.last_seen_at,
    )
    .select_from(State)
    .outerjoin(ApiToken, ApiToken.token_hash == bindparam("token_hash"))
    .outerjoin(
        Session,
        and_(
            Session.user_id == ApiToken.user_id,
            Session.channel == "mcp",
            Session.external_key == literal(TOKEN_KEY_PREFIX) + cast(ApiToken.id, String),
            Session.ended_at.is_(None),
        ),
    )
    .where(State.id == switches.STATE_ID)
    .order_by(Session.started_at.desc())
    .limit(1)
)


class SessionGone(Exception):
    """The session id is unknown, another user's, or ended: HTTP 404."""


def _sane(session_id: str) -> bool:
    # Ids we issue are short and printable: anything else (NUL included, which
    # PostgreSQL could not even compare) names no session.
    return len(session_id) <= 64 and session_id.isprintable()


def _read_keeping_state(
    db: OrmSession, statement: Executable, params: dict[str, Any]
) -> Row[Any] | None:
    """A statement that reads the state row with something else; the state is kept for
    the request as `switches.current` keeps it. None outside a request, or when a fresh
    database has no state row yet (the usual reads then say what it has)."""
    kept = request_store()
    if kept is None:
        return None
    row = reads.first(db, statement, params)
    if row is not None:
        switches.keep(kept, db, switches.snapshot_of(row))
    return row


def prefetch(memory: MemoryCore, session_id: str) -> None:
    """Read the request's state and its session in one statement, before the token check.

    The state is kept for the request as `switches.current` keeps it (the
    token check and the call read it from there) and the session row as
    `sessions.lookup` keeps it (for this transaction only: a commit in
    between, such as the token's use being noted, reads it again). Whether the
    session may be used is still `resolve`'s to say, after the token check.
    """
    if not _sane(session_id):
        return
    db = memory.db.session()
    row = _read_keeping_state(db, _STATE_AND_SESSION, {"session_id": session_id})
    if row is None:
        return
    # The row has `lookup`'s columns by name; no user means the join found no
    # session (a session always has one).
    sessions.remember(db, session_id, row if row.user_id is not None else None)


def prefetch_keyed(memory: MemoryCore, plain_token: str) -> None:
    """Read the request's state and its token's stateless session in one statement,
    before the token check.

    The state is kept for the request as `prefetch` keeps it; the session for
    the call's `sessions.find_open`, in this transaction only. Whether the
    token is valid is still the token check's to say (a revoked one is found
    here too, and refused there); an unknown one leaves the call nothing kept.
    """
    db = memory.db.session()
    row = _read_keeping_state(db, _STATE_AND_KEYED_SESSION, {"token_hash": hash_token(plain_token)})
    if row is not None and row.token_id is not None:
        key = (row.token_user_id, "mcp", token_key(row.token_id))
        sessions.remember_open(db, key, row if row.id is not None else None)


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
    return f"{TOKEN_KEY_PREFIX}{token_id}"
