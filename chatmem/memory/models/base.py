"""The base every chatmem table is declared on, and the vocabularies the tables share."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    MetaData,
)
from sqlalchemy.orm import DeclarativeBase

GUIDANCE_TYPES = ("guardrail", "fact", "convention", "instruction")
SEVERITIES = ("info", "warn", "ask", "block")
# The severities the guardrail index enforces: `block` refuses, `ask` holds.
ENFORCED_SEVERITIES = ("ask", "block")
STATUSES = ("pending", "publish", "rejected", "trash")
CHANNELS = ("chat", "mcp", "rest", "python")
OUTCOMES = (
    "ok",
    "error",
    "blocked",
    "held",
    "allowed",
    "denied",
    "expired",
    "cancelled",
    "granted-run",
)
# The outcomes that count a hit on the guardrail named by the row.
HIT_OUTCOMES = ("blocked", "held")
# The rows that are a call someone made; the rest (allowed, denied, expired)
# record a curator's decision or a grant running out.
CALL_OUTCOMES = ("ok", "error", "blocked", "held", "granted-run")
HELD_STATES = ("waiting", "allowed", "denied", "expired", "used", "cancelled")


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


class Base(DeclarativeBase):
    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


def iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") + "Z" if value else None
