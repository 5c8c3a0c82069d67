"""The change ledger: every non-read-only call, redacted, with its outcome;
and the digest, a factual account of a session built from it.

What a row keeps of the arguments passes `chatmem.text.redaction` (agents paste
credentials into arguments more often than anyone would like) and then
`text.visible`, so a curator reading the ledger or a digest, and an agent
reading a digest through recall, sees hidden characters as `<U+200B>`
instead of receiving them.
"""

from __future__ import annotations

import json
from typing import Any, cast

from sqlalchemy import Table, select, update
from sqlalchemy.orm import Session as OrmSession

from .. import text
from ..text import redaction
from .models import HIT_OUTCOMES, Guidance, LedgerEntry, utcnow

SKIPPED_IN_DIGEST = ("save-session-summary",)
DETAIL_MAX = 500
# How the digest's first line counts an `ask` guardrail's ledger rows.
ASK_STEPS = (
    ("held", "held for approval"),
    ("allowed", "allowed once"),
    ("denied", "denied"),
    ("expired", "expired"),
    ("cancelled", "withdrawn by its caller"),
    ("granted-run", "run after approval"),
)


def safe_arguments(arguments: Any, max_len: int = 200) -> Any:
    """What the ledger stores of a call's arguments: redacted, visible, long values cut
    (keys are kept whole, so a curator always sees which field a value is)."""

    def shown(value: str) -> str:
        value = text.visible(value)
        if len(value) > max_len:
            value = f"{value[:max_len]}… [+{len(value) - max_len} chars]"
        return value

    return redaction.redact_value(arguments, finish=shown, finish_key=text.visible)


def safe_text(value: str, max_len: int) -> str:
    """Free text kept for people to read (an error detail): redacted, visible, cut."""
    return text.visible(redaction.redact(value))[:max_len]


def record(
    db: OrmSession,
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
    guidance_id: int | None = None,
) -> LedgerEntry:
    """Add a ledger row to the current transaction; the caller commits.

    A row that names the guardrail that refused or held it (`guidance_id`,
    outcome `blocked` or `held`) also counts a hit on that entry, in the same transaction: an atomic
    `hits = hits + 1`, exact under concurrent refusals, and a plain UPDATE
    that leaves the entry's `version` alone.
    """
    entry = LedgerEntry(
        session_id=session_id,
        user_id=user_id,
        channel=channel,
        tool=tool,
        arguments=safe_arguments(arguments, max_len),
        outcome=outcome,
        error_code=error_code,
        detail=safe_text(detail, DETAIL_MAX) if detail else None,
        guidance_id=guidance_id,
        at=utcnow(),
    )
    db.add(entry)
    if guidance_id is not None and outcome in HIT_OUTCOMES:
        table = cast(Table, Guidance.__table__)
        db.execute(
            update(table)
            .where(table.c.id == guidance_id)
            .values(hits=table.c.hits + 1, last_hit_at=entry.at)
        )
    return entry


def entries(db: OrmSession, session_id: str) -> list[LedgerEntry]:
    return list(
        db.scalars(
            select(LedgerEntry).where(LedgerEntry.session_id == session_id).order_by(LedgerEntry.id)
        )
    )


def refused_by(db: OrmSession, guidance_id: int, *, limit: int) -> list[LedgerEntry]:
    """The newest calls this guardrail refused or held (`ix_chatmem_ledger_guidance`)."""
    query = (
        select(LedgerEntry)
        .where(LedgerEntry.guidance_id == guidance_id, LedgerEntry.outcome.in_(HIT_OUTCOMES))
        .order_by(LedgerEntry.id.desc())
        .limit(limit)
    )
    return list(db.scalars(query))


def row_json(row: LedgerEntry) -> dict[str, Any]:
    """One ledger row for a script (the dry run's JSON): as stored, redacted."""
    return {
        "id": row.id,
        "at": f"{row.at.isoformat()}Z",
        "user_id": row.user_id,
        "session_id": row.session_id,
        "channel": row.channel,
        "tool": row.tool,
        "arguments": row.arguments,
        "outcome": row.outcome,
    }


def digest(db: OrmSession, session_id: str) -> tuple[str, int]:
    """The session's digest text and the number of calls it covers."""
    rows = [e for e in entries(db, session_id) if e.tool not in SKIPPED_IN_DIGEST]
    if not rows:
        return "No changes were made.", 0
    counts = {o: sum(1 for r in rows if r.outcome == o) for o in ("ok", "blocked", "error")}
    head = f"{len(rows)} call{'s' if len(rows) != 1 else ''}: {counts['ok']} ok"
    head += f", {counts['blocked']} blocked, {counts['error']} failed"
    # An `ask` guardrail's steps, only where the session has any.
    for outcome, label in ASK_STEPS:
        number = sum(1 for r in rows if r.outcome == outcome)
        head += f", {number} {label}" if number else ""
    head += "."
    # Rows ledgered before the text rules may hold hidden characters: recall
    # returns the digest to agents as it is stored.
    return text.for_agents("\n".join([head, *(describe(r) for r in rows)])), len(rows)


def describe(row: LedgerEntry) -> str:
    args = json.dumps(row.arguments, ensure_ascii=False, sort_keys=True)
    line = f"- {row.at:%H:%M:%S} {row.tool} {args} → {row.outcome}"
    said = ": ".join(part for part in (row.error_code, row.detail) if part)
    if said:
        line += f" ({said})"
    return line
