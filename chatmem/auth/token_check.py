"""The check every bearer request takes: whose token this is, and whether it still works.

Only a SHA-256 hash of a token is stored, so a database dump cannot be
replayed, and the check compares hashes. Tokens start with `cm_` so the
ledger's redaction (and secret scanners) recognise them.

A token is bound to its user as that user was when it was made: the row
keeps a hash of the host's `user_fingerprint` for the user (default: the
name), and every request recomputes it for the user loaded by id. A host
that deletes a user and later gives the id to someone else does not hand
them the old token. A row made before binding existed (NULL fingerprint) is
bound to the user behind its id at its next use. An expired token is
refused; a read-only one says so in `Bearer.read_only` (only read-only
tools are listed or callable: the dispatcher enforces that).

Each worker remembers the tokens it has seen valid, in its per-revision cache
(`ChatMemory.known_tokens`): every MCP and REST request reads the state row
anyway, and revoking a token bumps the revision in the same transaction, so a
worker's next request after a revocation finds an empty cache and reads the
token row again. A cached token carries its expiry and fingerprint hash, so
it stops at its expiry and at a change of user without another read. The
user is still loaded through the host on every request.

Making, listing and revoking tokens is `tokens`'.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, select, update

from ..errors import Unauthorized
from ..identity import HostUser
from ..memory import reads
from ..memory.models import ApiToken, utcnow

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..core import MemoryCore

log = logging.getLogger("chatmem")

TOKEN_PREFIX = "cm_"
# One answer for every invalid token, so a refusal says nothing about which it was.
NOT_VALID = "This API token is not valid (unknown, revoked, expired, or made for another user)."
# Writing last_used_at on every request would make each read a write; a
# minute's precision is all the token list needs.
_TOUCH_EVERY = timedelta(minutes=1)
# Built once: this runs on every MCP and REST request, and building the
# statement cost more than running it. Columns, not the ORM row: nothing here
# needs an object, and none is left in the session's identity map.
_BY_HASH = select(
    ApiToken.id,
    ApiToken.user_id,
    ApiToken.revoked_at,
    ApiToken.last_used_at,
    ApiToken.user_fingerprint,
    ApiToken.expires_at,
    ApiToken.read_only,
).where(ApiToken.token_hash == bindparam("token_hash"))
# Valid tokens one worker remembers per revision; past this many it starts over.
KNOWN_MAX = 10_000


def hash_token(plain: str) -> str:
    return hashlib.sha256(plain.encode("utf-8")).hexdigest()


def hash_fingerprint(fingerprint: str) -> str:
    """What the token row keeps of its user's fingerprint (never the fingerprint itself)."""
    return hashlib.sha256(b"chatmem-user\0" + fingerprint.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Bearer:
    """Who a request's token says it is, and what the token allows."""

    user: HostUser
    token_id: int
    # A read-only token: only read-only tools are listed or callable.
    read_only: bool = False


@dataclass
class KnownToken:
    """A token seen valid at the cache's revision (never a revoked one).

    Holds everything the checks need, so a cached token costs no token read:
    the expiry is compared with the clock and the fingerprint with the user.
    """

    token_id: int
    user_id: str
    last_used_at: datetime | None
    fingerprint: str | None = None
    expires_at: datetime | None = None
    read_only: bool = False


def authenticate(memory: MemoryCore, authorization: str | None) -> Bearer:
    """The user behind an `Authorization: Bearer cm_...` header, or Unauthorized.

    An unknown, revoked or expired token, one whose user no longer exists and
    one whose user is no longer the user it was made for all get the same
    answer, so the response says nothing about which it was. A token this
    worker has already seen valid at the request's revision (`memory.snapshot()`,
    read once per request) is not read again.
    """
    plain = _bearer_token(authorization)
    token = _known_token(memory, hash_token(plain))
    now = utcnow()
    if token.expires_at is not None and now >= token.expires_at:
        raise Unauthorized(NOT_VALID)
    user = _token_user(memory, token)
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        # Each worker keeps its own copy, so with N workers this is at most N
        # writes a minute per token: still far from one per request.
        memory.db.session.execute(
            update(ApiToken).where(ApiToken.id == token.token_id).values(last_used_at=now)
        )
        memory.db.session.commit()
        token.last_used_at = now
    return Bearer(user=user, token_id=token.token_id, read_only=token.read_only)


def _bearer_token(authorization: str | None) -> str:
    scheme, _, plain = (authorization or "").strip().partition(" ")
    plain = plain.strip()
    if scheme.lower() != "bearer" or not plain.startswith(TOKEN_PREFIX):
        raise Unauthorized("Send an API token as 'Authorization: Bearer cm_...'.")
    return plain


def _known_token(memory: MemoryCore, token_hash: str) -> KnownToken:
    """The token's row, from this worker's cache at the request's revision or the database."""
    known = memory.known_tokens(memory.snapshot())
    token: KnownToken | None = known.get(token_hash)
    if token is not None:
        return token
    row = reads.first(memory.db.session(), _BY_HASH, {"token_hash": token_hash})
    if row is None or row.revoked_at is not None:
        raise Unauthorized(NOT_VALID)
    token = KnownToken(
        row.id,
        row.user_id,
        row.last_used_at,
        row.user_fingerprint,
        row.expires_at,
        bool(row.read_only),
    )
    if len(known) >= KNOWN_MAX:
        known.clear()
    known[token_hash] = token
    return token


def _token_user(memory: MemoryCore, token: KnownToken) -> Any:
    """The token's user, if it still exists, is active and is the user the token was made for."""
    user = memory.load_user(token.user_id)
    if user is None or getattr(user, "is_active", True) is False:
        raise Unauthorized(NOT_VALID)
    fingerprint = _fingerprint_hash(memory, user)
    if token.fingerprint is None:
        token.fingerprint = _bind(memory.db.session(), token.token_id, fingerprint)
    if fingerprint is None or token.fingerprint != fingerprint:
        raise Unauthorized(NOT_VALID)
    return user


def _fingerprint_hash(memory: MemoryCore, user: HostUser) -> str | None:
    """The user's fingerprint hash; None (refused) when the host's hook fails."""
    try:
        return hash_fingerprint(memory.fingerprint_of(user))
    except Exception:
        # A host bug fails closed, like a resolver outage does for guardrails.
        log.exception("user_fingerprint failed; refusing the API token")
        memory.db.session.rollback()
        return None


def _bind(db: OrmSession, token_id: int, fingerprint: str | None) -> str | None:
    """Bind a token made before binding existed to the user behind its id now.

    Returns the stored fingerprint: another worker may have bound it first.
    """
    if fingerprint is not None:
        db.execute(
            update(ApiToken)
            .where(ApiToken.id == token_id, ApiToken.user_fingerprint.is_(None))
            .values(user_fingerprint=fingerprint)
        )
        db.commit()
    return db.scalar(select(ApiToken.user_fingerprint).where(ApiToken.id == token_id))
