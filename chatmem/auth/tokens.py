"""Per-user API tokens (SPEC §9): making, listing and revoking them.

A token opens the MCP endpoint, the REST routes and a host's own API;
checking one on a request is `token_check`'s.

The plain text is shown once, when the token is made; the row keeps only its
hash, so a database dump cannot be replayed. A token carries no capabilities
of its own: it names a user, and the dispatcher checks that user's
capabilities on every call. A token may expire and may be read-only.
Revoking one bumps the revision in the same transaction: that is what
empties every worker's cache of known tokens.
"""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, or_, select, update

from ..errors import Conflict, InvalidParams, NotFound
from ..identity import HostUser
from ..memory import listing, switches
from ..memory.models import ApiToken, GuidanceEvent, utcnow
from ..text import check_field
from .token_check import TOKEN_PREFIX, hash_fingerprint, hash_token

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from ..core import MemoryCore

NAME_MAX = 100
# `--expires-days` and the browser's "expires in days": past ten years a date
# stops meaning anything (and a huge number would overflow the clock).
EXPIRES_DAYS_MAX = 3650


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
