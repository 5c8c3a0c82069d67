"""API tokens: stored hashed, bound to their user, scoped, expiring."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    Boolean,
    DateTime,
    Integer,
    String,
    false,
)
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base, utcnow


class ApiToken(Base):
    """A per-user API token; only its SHA-256 hash is stored.

    `user_fingerprint` is a hash of who the user was when the token was made
    (the host's `user_fingerprint` hook): a user id given to someone new does
    not inherit the token. NULL on rows made before it existed: such a token
    is bound to its user at its next use (see token_check.py).
    """

    __tablename__ = "chatmem_token"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[str] = mapped_column(String(64), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    token_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, nullable=False)
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime)
    user_fingerprint: Mapped[str | None] = mapped_column(String(64))
    expires_at: Mapped[datetime | None] = mapped_column(DateTime)
    # Read-only scope: only read-only tools are listed or callable.
    read_only: Mapped[bool] = mapped_column(
        Boolean, default=False, server_default=false(), nullable=False
    )
