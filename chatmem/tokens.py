"""Per-user API tokens for the MCP endpoint and the REST routes (SPEC §9).

Only a SHA-256 hash of a token is stored, so a database dump cannot be
replayed; the plain text is shown once, when the token is made. Tokens start
with `cm_` so the ledger's redaction (and secret scanners) recognise them. A
token carries no capabilities of its own: it names a user, and the dispatcher
checks that user's capabilities on every call.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update

from .errors import InvalidParams, NotFound, Unauthorized
from .memory.models import ApiToken, utcnow

if TYPE_CHECKING:
    from flask_sqlalchemy import SQLAlchemy

    from .extension import ChatMemory

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


def hash_token(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Bearer:
    """Who a request's token says it is."""

    user: Any
    token_id: int


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
    """Revoke a token; revoking twice keeps the first revocation time."""
    token = db.session.get(ApiToken, token_id)
    if token is None:
        raise NotFound(f"No token #{token_id}.", details={"token_id": token_id})
    token.revoked_at = token.revoked_at or utcnow()
    db.session.commit()
    return token


def authenticate(memory: ChatMemory, authorization: str | None) -> Bearer:
    """The user behind an `Authorization: Bearer cm_...` header, or Unauthorized.

    A revoked token, an unknown one and one whose user no longer exists all
    get the same answer, so the response says nothing about which it was.
    """
    scheme, _, plain = (authorization or "").strip().partition(" ")
    plain = plain.strip()
    if scheme.lower() != "bearer" or not plain.startswith(TOKEN_PREFIX):
        raise Unauthorized("Send an API token as 'Authorization: Bearer cm_...'.")
    db = memory.db
    token = db.session.execute(_BY_HASH, {"token_hash": hash_token(plain)}).first()
    if token is None or token.revoked_at is not None:
        raise Unauthorized("This API token is not valid (unknown or revoked).")
    user = memory.load_user(token.user_id)
    if user is None or getattr(user, "is_active", True) is False:
        raise Unauthorized("This API token is not valid (its user no longer exists).")
    now = utcnow()
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        db.session.execute(update(ApiToken).where(ApiToken.id == token.id).values(last_used_at=now))
        db.session.commit()
    return Bearer(user=user, token_id=token.id)
