"""Per-user API tokens for the MCP endpoint, the REST routes and a host's own API (SPEC §9).

Only a SHA-256 hash of a token is stored, so a database dump cannot be
replayed; the plain text is shown once, when the token is made. Tokens start
with `cm_` so the ledger's redaction (and secret scanners) recognise them. A
token carries no capabilities of its own: it names a user, and the dispatcher
checks that user's capabilities on every call.

A token is bound to its user as that user was when it was made: the row
keeps a hash of the host's `user_fingerprint` for the user (default: the
name), and every request recomputes it for the user loaded by id. A host
that deletes a user and later gives the id to someone else does not hand
them the old token. A row made before binding existed (NULL fingerprint) is
bound to the user behind its id at its next use. A token may also expire
and may be read-only (only read-only tools are listed or callable: the
dispatcher enforces that, from `Bearer.read_only`).

Each worker remembers the tokens it has seen valid, in its per-revision cache
(`ChatMemory.known_tokens`): every MCP and REST request reads the state row
anyway, and revoking a token bumps the revision in the same transaction, so a
worker's next request after a revocation finds an empty cache and reads the
token row again. A cached token carries its expiry and fingerprint hash, so
it stops at its expiry and at a change of user without another read. The
user is still loaded through the host on every request.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, or_, select, update

from ..errors import Conflict, InvalidParams, NotFound, Unauthorized
from ..identity import HostUser
from ..memory import listing, reads, switches
from ..memory.models import ApiToken, GuidanceEvent, utcnow
from ..text import check_field

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..core import MemoryCore

log = logging.getLogger("chatmem")

TOKEN_PREFIX = "cm_"
NAME_MAX = 100
# `--expires-days` and the browser's "expires in days": past ten years a date
# stops meaning anything (and a huge number would overflow the clock).
EXPIRES_DAYS_MAX = 3650
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


def create(
    db: OrmSession,
    *,
    user_id: str,
    name: str = "default",
    fingerprint: str | None = None,
    expires_in: timedelta | None = None,
    read_only: bool = False,
) -> tuple[ApiToken, str]:
    """Make a token for a user; returns the row and the plain text (shown once).

    `fingerprint` is the user's (`ChatMemory.fingerprint_of`); `issue` fills it
    in. Without one the token is bound at its first use. `expires_in` counts
    from the token's creation time.
    """
    name = check_field("name", (name or "").strip()) or "default"
    if len(name) > NAME_MAX:
        raise InvalidParams(
            f"A token name is at most {NAME_MAX} characters.", details={"field": "name"}
        )
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = utcnow()
    token = ApiToken(
        user_id=str(user_id),
        name=name,
        token_hash=hash_token(plain),
        prefix=plain[:10],
        created_at=now,
        expires_at=now + expires_in if expires_in is not None else None,
        user_fingerprint=hash_fingerprint(fingerprint) if fingerprint is not None else None,
        read_only=read_only,
    )
    db.add(token)
    db.commit()
    return token, plain


def issue(
    memory: MemoryCore,
    user: HostUser,
    *,
    name: str = "default",
    expires_in: timedelta | None = None,
    read_only: bool = False,
) -> tuple[ApiToken, str]:
    """Make a token bound to this user as the host describes them now.

    Every channel that mints (the CLI, the demo's Connect page, a host's own
    page) comes through here, so each meets the per-user cap: a user with
    `CHATMEM_TOKENS_PER_USER` live tokens is refused (409 `conflict`, reason
    `too_many_tokens`) until one is revoked or expires. Without a cap, N
    tokens would also be N rate budgets (see `admission`).
    """
    from ..permissions import user_id_of, user_name_of

    user_id = user_id_of(user)
    cap = memory.settings.rate.tokens_per_user
    if cap:
        _one_mint_at_a_time(memory.db.session(), str(user_id))
    if cap and live_count(memory.db.session(), user_id=user_id) >= cap:
        memory.db.session.rollback()  # ends the lock taken above
        raise Conflict(
            f"{user_name_of(user)} already has {cap} live API tokens, the most one user may "
            "have (CHATMEM_TOKENS_PER_USER): revoke one first.",
            details={"reason": "too_many_tokens", "limit": cap},
        )
    return create(
        memory.db.session(),
        user_id=user_id,
        name=name,
        fingerprint=memory.fingerprint_of(user),
        expires_in=expires_in,
        read_only=read_only,
    )


def _one_mint_at_a_time(db: OrmSession, user_id: str) -> None:
    """Hold this user's mint lock until the transaction ends (`create` commits it).

    Without it, parallel mints each count the live tokens before any has written,
    and all pass the cap together. PostgreSQL: an advisory lock per user. SQLite:
    a write that changes nothing takes the database's write lock now, so the
    count that follows sees every other mint that went first.
    """
    if db.get_bind().dialect.name == "postgresql":
        db.execute(
            select(func.pg_advisory_xact_lock(func.hashtext("chatmem-token-mint:" + user_id)))
        )
    else:
        db.execute(
            update(ApiToken)
            .where(ApiToken.user_id == user_id, ApiToken.id < 0)
            .values(name=ApiToken.name)
        )


_DAYS = re.compile("[0-9]{1,19}")


def expires_in_days(raw: Any) -> timedelta | None:
    """The browser's "expires in days" field: empty is never, else 1..EXPIRES_DAYS_MAX."""
    text = str(raw if raw is not None else "").strip()
    if not text:
        return None
    # ASCII digits, at most 19 (chatmem.inputs): "9" * 5000 is refused, not a 500.
    days = int(text) if _DAYS.fullmatch(text) else 0
    if not 1 <= days <= EXPIRES_DAYS_MAX:
        raise InvalidParams(
            f"expires_days must be a whole number of days from 1 to {EXPIRES_DAYS_MAX}, "
            "or empty for no expiry.",
            details={"field": "expires_days"},
        )
    return timedelta(days=days)


def state_of(token: ApiToken, now: datetime | None = None) -> str:
    """`active`, `expired` or `revoked`: what the lists show."""
    if token.revoked_at is not None:
        return "revoked"
    if token.expires_at is not None and (now or utcnow()) >= token.expires_at:
        return "expired"
    return "active"


def list_tokens(db: OrmSession, *, user_id: str | None = None) -> list[ApiToken]:
    query = select(ApiToken).order_by(ApiToken.id)
    if user_id is not None:
        query = query.where(ApiToken.user_id == str(user_id))
    return list(db.scalars(query))


def _live(now: datetime) -> Any:
    return (ApiToken.revoked_at.is_(None)) & (
        or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now)
    )


def live_count(db: OrmSession, *, user_id: str | None = None) -> int:
    """How many tokens still work (neither revoked nor expired): the screen's tab count.

    With `user_id`, that user's only: what the per-user cap counts.
    """
    query = select(func.count()).select_from(ApiToken).where(_live(utcnow()))
    if user_id is not None:
        query = query.where(ApiToken.user_id == str(user_id))
    return int(db.scalar(query) or 0)


def page(db: OrmSession, number: Any) -> listing.Page:
    """One page of every user's tokens for the Memory screen: revoked ones last, newest first."""
    total = int(db.scalar(select(func.count()).select_from(ApiToken)) or 0)
    current = listing.clamp_page(number, total)
    query = (
        select(ApiToken)
        .order_by(ApiToken.revoked_at.is_not(None), ApiToken.id.desc())
        .limit(listing.PER_PAGE)
        .offset((current - 1) * listing.PER_PAGE)
    )
    return listing.Page(list(db.scalars(query)), current, total)


def revoke(
    db: OrmSession,
    token_id: int,
    *,
    owner_id: str | None = None,
    actor_id: str | None = None,
) -> ApiToken:
    """Revoke a token; revoking twice keeps the first revocation time.

    Bumps the revision in the same transaction: that is what empties every
    worker's cache of known tokens on its next request. `owner_id`: only a
    token of this user (a person revoking their own); anyone else's answers
    like an unknown id, so the answer does not tell that it exists.
    `actor_id`: who did it, for the audit trail (the browser's revocations).
    """
    token = db.get(ApiToken, token_id)
    if token is None or (owner_id is not None and token.user_id != str(owner_id)):
        raise NotFound(f"No token #{token_id}.", details={"token_id": token_id})
    first = token.revoked_at is None
    token.revoked_at = token.revoked_at or utcnow()
    switches.bump_revision(db)
    if actor_id is not None and first:
        db.add(
            GuidanceEvent(
                action="token_revoke",
                actor_id=actor_id,
                detail={"token_id": token.id, "user_id": token.user_id, "name": token.name},
            )
        )
    db.commit()
    return token


def revoke_user(db: OrmSession, user_id: str) -> int:
    """Revoke every live token of one user, in one transaction; returns how many."""
    revoked = db.execute(
        update(ApiToken)
        .where(ApiToken.user_id == str(user_id), ApiToken.revoked_at.is_(None))
        .values(revoked_at=utcnow())
    )
    count = int(getattr(revoked, "rowcount", 0) or 0)
    if count:
        switches.bump_revision(db)
    db.commit()
    return count


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
