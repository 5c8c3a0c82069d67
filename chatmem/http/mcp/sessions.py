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

from ...identity import HostUser
from ...memory import sessions
from ...permissions import user_id_of

if TYPE_CHECKING:
    from ...core import MemoryCore


class SessionGone(Exception):
    """The session id is unknown, another user's, or ended: HTTP 404."""


def resolve(memory: MemoryCore, user: HostUser, session_id: str) -> None:
    """Check that this user may use this open handshake-era session, and touch it; else SessionGone.

    Commits only when the touch wrote, so a read-only call stays read-only.
    """
    db = memory.db.session()
    # Ids we issue are short and printable: anything else (NUL included, which
    # PostgreSQL could not even compare) names no session.
    sane = len(session_id) <= 64 and session_id.isprintable()
    session = sessions.lookup(db, session_id) if sane else None
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
