"""Per-user API tokens for the MCP endpoint and the REST routes (SPEC §9).

Only a SHA-256 hash of a token is stored, so a database dump cannot be
replayed; the plain text is shown once, when the token is made. Tokens start
with `cm_` so the ledger's redaction (and secret scanners) recognise them. A
token carries no capabilities of its own: it names a user, and the dispatcher
checks that user's capabilities on every call.

Each worker remembers the tokens it has seen valid, in its per-revision cache
(`ChatMemory.known_tokens`): every MCP and REST request reads the state row
anyway, and revoking a token bumps the revision in the same transaction, so a
worker's next request after a revocation finds an empty cache and reads the
token row again. The user is still loaded through the host on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update

from .errors import InvalidParams, NotFound, Unauthorized
from .memory import reads, settings
from .memory.models import ApiToken, utcnow

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

    from .extension import ChatMemory
    from .memory.settings import Snapshot

TOKEN_PREFIX = "cm_"
NAME_MAX = 100
# Writing last_used_at on every request would make each read a write; a
# minute's precision is all the token list needs.
_TOUCH_EVERY = timedelta(minutes=1)
# Built once: this runs on every MCP and REST request, and building the
# statement cost more than running it. Columns, not the ORM row: nothing here
# needs an object, and none is left in the session's identity map.
_BY_HASH = select(ApiToken.id, ApiToken.user_id, ApiToken.revoked_at, ApiToken.last_used_at).where(
    ApiToken.token_hash == bindparam("token_hash")
)
# Valid tokens one worker remembers per revision; past this many it starts over.
KNOWN_MAX = 10_000


def hash_token(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Bearer:
    """Who a request's token says it is."""

    user: Any
    token_id: int
    # The state row as read for this request; the call it makes reuses it.
    snapshot: Snapshot | None = None


@dataclass
class KnownToken:
    """A token seen valid at the cache's revision (never a revoked one)."""

    token_id: int
    user_id: str
    last_used_at: datetime | None


def create(db: SQLAlchemy, *, user_id: str, name: str = "default") -> tuple[ApiToken, str]:
    """Make a token for a user; returns the row and the plain text (shown once)."""
    name = (name or "").strip() or "default"
    if len(name) > NAME_MAX:
        raise InvalidParams(
            f"A token name is at most {NAME_MAX} characters.", details={"field": "name"}
        )
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken(
        user_id=str(user_id), name=name, token_hash=hash_token(plain), prefix=plain[:10]
    )
    db.session.add(token)
    db.session.commit()
    return token, plain


def list_tokens(db: SQLAlchemy, *, user_id: str | None = None) -> list[ApiToken]:
    query = select(ApiToken).order_by(ApiToken.id)
    if user_id is not None:
        query = query.where(ApiToken.user_id == str(user_id))
    return list(db.session.scalars(query))


def revoke(db: SQLAlchemy, token_id: int) -> ApiToken:
    """Revoke a token; revoking twice keeps the first revocation time.

    Bumps the revision in the same transaction: that is what empties every
    worker's cache of known tokens on its next request.
    """
    token = db.session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"No token #{token_id}.", details={"token_id": token_id})
    token.revoked_at = token.revoked_at or utcnow()
    settings.bump_revision(db)
    db.session.commit()
    return token


def authenticate(
    memory: ChatMemory, authorization: str | None, snapshot: Snapshot | None = None
) -> Bearer:
    """The user behind an `Authorization: Bearer cm_...` header, or Unauthorized.

    A revoked token, an unknown one and one whose user no longer exists all
    get the same answer, so the response says nothing about which it was.
    With `snapshot` (the state row read for this request) a token this worker
    has already seen valid at that revision is not read again.
    """
    scheme, _, plain = (authorization or "").strip().partition(" ")
    plain = plain.strip()
    if scheme.lower() != "bearer" or not plain.startswith(TOKEN_PREFIX):
        raise Unauthorized("Send an API token as 'Authorization: Bearer cm_...'.")
    db = memory.db
    token_hash = hash_token(plain)
    known = memory.known_tokens(snapshot) if snapshot is not None else None
    token = known.get(token_hash) if known is not None else None
    if token is None:
        row = reads.first(db, _BY_HASH, {"token_hash": token_hash})
        if row is None or row.revoked_at is not None:
            raise Unauthorized("This API token is not valid (unknown or revoked).")
        token = KnownToken(row.id, row.user_id, row.last_used_at)
        if known is not None:
            if len(known) >= KNOWN_MAX:
                known.clear()
            known[token_hash] = token
    user = memory.load_user(token.user_id)
    if user is None or getattr(user, "is_active", True) is False:
        raise Unauthorized("This API token is not valid (its user no longer exists).")
    now = utcnow()
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        # Each worker keeps its own copy, so with N workers this is at most N
        # writes a minute per token: still far from one per request.
        db.session.execute(
            update(ApiToken).where(ApiToken.id == token.token_id).values(last_used_at=now)
        )
        db.session.commit()
        token.last_used_at = now
    return Bearer(user=user, token_id=token.token_id, snapshot=snapshot)
