"""The change ledger: every non-read-only call, redacted, with its outcome;
and the digest, a factual account of a session built from it.

Secrets are removed before anything is stored, both by key name (password,
token, api_key, ...) and by shape (bearer tokens, provider keys, PEM private
keys), because agents paste credentials into arguments more often than
anyone would like.
"""

from __future__ import annotations

import json
import re
from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import select

from .models import LedgerEntry

REDACTED = "[redacted]"
SECRET_KEY = re.compile(
    r"pass(word|wd|phrase)?|secret|token|api[_-]?key|authori[sz]ation|private[_-]?key"
    r"|credential|cookie|session[_-]?key",
    re.IGNORECASE,
)
SECRET_VALUE = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\bBearer\s+[A-Za-z0-9._~+/=-]{8,}"
    r"|\bsk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"
    r"|\bcm_[A-Za-z0-9_-]{20,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"
    r"|\bxox[abposr]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b",
    re.IGNORECASE | re.DOTALL,
)
MAX_DEPTH = 6
MAX_ITEMS = 50
SKIPPED_IN_DIGEST = ("save-session-summary",)


def redact_text(text: str) -> str:
    return SECRET_VALUE.sub(REDACTED, text)


def redact(value: Any, max_len: int = 200, _depth: int = 0) -> Any:
    """A copy of `value` safe to store: secrets masked, long strings cut."""
    if _depth > MAX_DEPTH:
        return "[…]"
    if isinstance(value, dict):
        return {
            str(k): REDACTED
            if SECRET_KEY.search(str(k)) and v not in (None, "")
            else redact(v, max_len, _depth + 1)
            for k, v in list(value.items())[:MAX_ITEMS]
        }
    if isinstance(value, list | tuple):
        return [redact(v, max_len, _depth + 1) for v in list(value)[:MAX_ITEMS]]
    if isinstance(value, str):
        text = redact_text(value)
        if len(text) > max_len:
            text = f"{text[:max_len]}… [+{len(text) - max_len} chars]"
        return text
    return value


def record(
    db: SQLAlchemy,
    *,
    session_id: str | None,
    user_id: str | None,
    channel: str,
    tool: str,
    arguments: dict[str, Any],
    outcome: str,
    error_code: str | None = None,
    detail: str | None = None,
    max_len: int = 200,
) -> LedgerEntry:
    """Add a ledger row to the current transaction; the caller commits."""
    entry = LedgerEntry(
        session_id=session_id,
        user_id=user_id,
        channel=channel,
        tool=tool,
        arguments=redact(arguments, max_len),
        outcome=outcome,
        error_code=error_code,
        detail=redact_text(detail)[:500] if detail else None,
    )
    db.session.add(entry)
    return entry


def entries(db: SQLAlchemy, session_id: str) -> list[LedgerEntry]:
    return list(
        db.session.scalars(
            select(LedgerEntry).where(LedgerEntry.session_id == session_id).order_by(LedgerEntry.id)
        )
    )


def digest(db: SQLAlchemy, session_id: str) -> tuple[str, int]:
    """The session's digest text and the number of calls it covers."""
    rows = [e for e in entries(db, session_id) if e.tool not in SKIPPED_IN_DIGEST]
    if not rows:
        return "No changes were made.", 0
    counts = {o: sum(1 for r in rows if r.outcome == o) for o in ("ok", "blocked", "error")}
    head = f"{len(rows)} call{'s' if len(rows) != 1 else ''}: {counts['ok']} ok"
    head += f", {counts['blocked']} blocked, {counts['error']} failed."
    return "\n".join([head, *(describe(r) for r in rows)]), len(rows)


def describe(row: LedgerEntry) -> str:
    args = json.dumps(row.arguments, ensure_ascii=False, sort_keys=True)
    line = f"- {row.at:%H:%M:%S} {row.tool} {args} → {row.outcome}"
    if row.outcome != "ok":
        line += f" ({row.error_code}: {row.detail})" if row.detail else f" ({row.error_code})"
    return line
