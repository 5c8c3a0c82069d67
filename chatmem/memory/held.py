"""Calls an `ask` guardrail held, and a curator's Allow once / Deny (SPEC §6).

A matching call is stored as a *request* (`HeldCall`) and refused with
`approval_required`. A curator allows it once or denies it. An allowed
request is a grant: exactly that user may make exactly that call (same
tool, same canonical arguments, compared by `call_hash`) once, until
`expires_at`. The same call after a denial, or after its grant expired
unused, is refused with `blocked_by_memory` for one more grant period;
anything else is held as a new request.

Every change of state is one conditional UPDATE on the state it expects
(`WHERE state = 'allowed' AND expires_at > now`), and only the caller whose
UPDATE changed the row goes on. Two workers that both see a grant cannot
both run it, and two curators cannot both decide one request: the database
serialises the two UPDATEs and the second one finds nothing to change.

Nothing in here knows Flask: the dispatcher and the Memory screen call it,
inside their own transaction; it never commits except in `decide` and
`expire_due`, which are curator/sweep actions of their own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, func, select, update
from sqlalchemy.orm import Session as OrmSession

from ..errors import ApprovalRequired, BlockedByMemory, ChatmemError, Conflict, NotFound
from . import ledger, notify
from .guardrails.index import Rule
from .guardrails.targets import ID_KEYS
from .models import Guidance, GuidanceEvent, HeldCall, utcnow

__all__ = ["HeldCall", "decide", "gate", "expire_due", "waiting", "waiting_count", "withdraw"]

DECISIONS = {"allow": "allowed", "deny": "denied"}
NOTE_MAX = 500
# Ledger rows written for a request keep its stored (already redacted and
# cut) arguments as they are: cutting them again would change them.
_KEEP = 10**9


def call_hash(tool: str, arguments: dict[str, Any]) -> str:
    """One call's identity: its tool and full canonical arguments, secrets included."""
    body = json.dumps([tool.lower(), arguments], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """Who makes the call, and from where (what a request stores of the CallContext)."""

    user_id: str
    user_name: str
    session_id: str | None
    channel: str


@dataclass(frozen=True)
class Verdict:
    """`run` (a grant was used: run the call), or `error` to raise (held or refused)."""

    request: HeldCall
    error: ChatmemError | None = None

    @property
    def run(self) -> bool:
        return self.error is None


def gate(
    db: OrmSession,
    rule: Rule,
    tool: str,
    arguments: dict[str, Any],
    shown: dict[str, Any],
    caller: Caller,
    *,
    grant_minutes: int,
    max_len: int,
    now: datetime | None = None,
) -> Verdict:
    """What happens to a call an `ask` rule matched; writes to the caller's transaction.

    `arguments` are the full canonical arguments (hashed), `shown` the ones
    that may be kept (writeOnly fields hidden); the request stores `shown`
    redacted, as the ledger does.
    """
    now = now or utcnow()
    digest = call_hash(tool, arguments)
    same_call = (
        HeldCall.user_id == caller.user_id,
        HeldCall.tool == tool,
        HeldCall.call_hash == digest,
    )
    expire_due(db, now=now, where=same_call, commit=False)
    grants = select(HeldCall.id).where(
        *same_call, HeldCall.state == "allowed", HeldCall.expires_at > now
    )
    for request_id in db.scalars(grants.order_by(HeldCall.id)).all():
        if _move(db, request_id, "allowed", "used", now=now, used_at=now):
            request = _fresh(db, request_id)
            _event(db, request, "call_run", caller.user_id, {"tool": tool})
            return Verdict(request)
    latest = db.scalars(select(HeldCall).where(*same_call).order_by(HeldCall.id.desc()))
    last = latest.first()
    window = timedelta(minutes=grant_minutes)
    if last is not None and last.state == "waiting":
        return Verdict(last, approval_required(last, rule, grant_minutes))
    if last is not None and last.state in ("denied", "expired"):
        since = last.decided_at if last.state == "denied" else last.expires_at
        if since is not None and since + window > now:
            return Verdict(last, refused(last, rule))
    request = HeldCall(
        tool=tool,
        arguments=ledger.safe_arguments(shown, max_len),
        call_hash=digest,
        user_id=caller.user_id,
        user_name=caller.user_name,
        session_id=caller.session_id,
        channel=caller.channel,
        guidance_id=rule.id,
        state="waiting",
        created_at=now,
    )
    db.add(request)
    db.flush()
    _event(db, request, "call_held", caller.user_id, {"tool": tool})
    notify.stage(db, notify.waiting_call_notice(request))
    return Verdict(request, approval_required(request, rule, grant_minutes))


def approval_required(request: HeldCall, rule: Rule, grant_minutes: int) -> ApprovalRequired:
    return ApprovalRequired(
        f"{request.tool} is waiting for a person's approval: project memory guardrail "
        f"#{rule.id} ({rule.title}) asks a curator first. Request #{request.id} is on the "
        "Memory screen's Waiting calls list. Do not try another way: once it is allowed, "
        f"make exactly the same call again (same tool, same arguments) within "
        f"{grant_minutes} minutes.",
        details={
            "request_id": request.id,
            "guidance_id": rule.id,
            "title": rule.title,
            "target": rule.target,
            "tool": request.tool,
        },
    )


def refused(request: HeldCall, rule: Rule) -> BlockedByMemory:
    why = (
        "a curator denied it" + (f" ({request.note})" if request.note else "")
        if request.state == "denied"
        else "its approval expired unused"
    )
    return BlockedByMemory(
        f"{request.tool} was refused by project memory guardrail #{rule.id} ({rule.title}): "
        f"request #{request.id} for this call was {request.state}: {why}.",
        details={
            "guidance_id": rule.id,
            "title": rule.title,
            "target": rule.target,
            "request_id": request.id,
            "state": request.state,
        },
    )


def decide(
    db: OrmSession,
    request_id: int,
    decision: str,
    *,
    actor_id: str,
    actor_name: str,
    note: str | None,
    grant_minutes: int,
    now: datetime | None = None,
) -> HeldCall:
    """Allow once or deny a waiting request; a second decision is a Conflict (409)."""
    now = now or utcnow()
    state = DECISIONS[decision]
    request = db.get(HeldCall, request_id)
    if request is None:
        raise NotFound(f"No waiting call #{request_id}.", details={"id": request_id})
    expires = now + timedelta(minutes=grant_minutes) if state == "allowed" else None
    values = {"decided_at": now, "decided_by": actor_id, "note": note, "expires_at": expires}
    if not _move(db, request_id, "waiting", state, now=None, **values):
        db.rollback()
        current = _fresh(db, request_id)
        raise Conflict(
            f"Request #{request_id} was already {current.state} by someone else; reload the page.",
            details={"id": request_id, "state": current.state},
        )
    request = _fresh(db, request_id)
    said = "allowed once" if state == "allowed" else "denied"
    detail = f"request #{request.id} {said} by {actor_name}" + (f": {note}" if note else "")
    _ledger(db, request, state, detail)
    _event(db, request, f"call_{state}", actor_id, {"request_id": request.id, "note": note})
    db.commit()
    return request


def withdraw(db: OrmSession, request_id: int, *, actor_id: str) -> bool:
    """The caller gave up waiting (its MCP task was cancelled): a request not yet
    decided leaves the curator's queue, and a grant not yet used is withdrawn."""
    for before in ("waiting", "allowed"):
        if _move(db, request_id, before, "cancelled", now=None):
            request = _fresh(db, request_id)
            _ledger(db, request, "cancelled", f"request #{request.id} withdrawn by its caller")
            _event(db, request, "call_cancelled", actor_id, {"request_id": request.id})
            return True
    return False


def expire_due(
    db: OrmSession, *, now: datetime | None = None, where: Any = (), commit: bool = True
) -> int:
    """Grants past their time become `expired` (ledgered, audited); how many did."""
    now = now or utcnow()
    due = select(HeldCall.id).where(*where, HeldCall.state == "allowed", HeldCall.expires_at <= now)
    done = 0
    for request_id in db.scalars(due).all():
        if _move(db, request_id, "allowed", "expired", now=None):
            request = _fresh(db, request_id)
            _ledger(db, request, "expired", f"request #{request.id}: the approval expired unused")
            _event(db, request, "call_expired", None, {"request_id": request.id})
            done += 1
    if commit and done:
        db.commit()
    return done


def state_of(db: OrmSession, request_id: Any) -> dict[str, Any] | None:
    """A held call's state for a host's "Waiting for approval" card; None for an unknown id.

    `state` is waiting, allowed, denied, expired or used; a grant past its
    time reads as expired.
    """
    if isinstance(request_id, bool) or not isinstance(request_id, int):
        return None
    expire_due(db, where=(HeldCall.id == request_id,))
    call = db.get(HeldCall, request_id)
    if call is None:
        return None
    return {
        "id": call.id,
        "tool": call.tool,
        "user_id": call.user_id,
        "state": call.state,
        "note": call.note,
        "expires_at": f"{call.expires_at.isoformat()}Z" if call.expires_at else None,
    }


def waiting_count(db: OrmSession) -> int:
    query = select(func.count()).select_from(HeldCall).where(HeldCall.state == "waiting")
    return int(db.scalar(query) or 0)


def waiting(db: OrmSession, *, offset: int, limit: int) -> list[HeldCall]:
    """Waiting requests, oldest first: the one waiting longest is on top."""
    query = select(HeldCall).where(HeldCall.state == "waiting").order_by(HeldCall.id)
    return list(db.scalars(query.offset(offset).limit(limit)))


def rules_of(db: OrmSession, requests: list[HeldCall]) -> dict[int, Guidance]:
    """The entries that held these requests, in one query (for "held by" on each row)."""
    ids = {r.guidance_id for r in requests if r.guidance_id is not None}
    if not ids:
        return {}
    return {g.id: g for g in db.scalars(select(Guidance).where(Guidance.id.in_(ids)))}


def describe(request: HeldCall, resolve_post_type: Callable[[Any], str | None] | None) -> str:
    """The call in words: "editor wants to run update-post on post 5 (page): title → 'Sale!'".

    The post's type comes from the host's resolver where it has one; without
    it (or when it fails) the post is just "post 5".
    """
    arguments = request.arguments if isinstance(request.arguments, dict) else {}
    key = next((k for k in ID_KEYS if arguments.get(k) not in (None, "")), None)
    words = f"{request.user_name} wants to run {request.tool}"
    if key is not None:
        kind = None
        if resolve_post_type is not None:
            try:
                kind = resolve_post_type(arguments[key])
            except Exception:
                kind = None  # the words are for people; the call is shown below
        words += f" on post {arguments[key]}" + (f" ({kind})" if kind else "")
    changes = [
        f"{name} → {_quoted(value)}" for name, value in arguments.items() if name not in ID_KEYS
    ]
    return words + (": " + ", ".join(changes) if changes else "")


def _quoted(value: Any) -> str:
    if isinstance(value, str):
        return f"'{value}'"
    return json.dumps(value, ensure_ascii=False)


def _move(
    db: OrmSession, request_id: int, before: str, after: str, *, now: datetime | None, **values: Any
) -> bool:
    """The one conditional UPDATE every state change is: True if this caller made it."""
    query = update(HeldCall).where(HeldCall.id == request_id, HeldCall.state == before)
    if now is not None:
        query = query.where(HeldCall.expires_at > now)
    result = db.execute(
        query.values(state=after, **values).execution_options(synchronize_session=False)
    )
    return cast(CursorResult[Any], result).rowcount == 1


def _fresh(db: OrmSession, request_id: int) -> HeldCall:
    request = db.get(HeldCall, request_id, populate_existing=True)
    assert request is not None
    return request


def _ledger(db: OrmSession, request: HeldCall, outcome: str, detail: str) -> None:
    """A decision in the requester's session ledger, so its digest tells the whole story."""
    ledger.record(
        db,
        session_id=request.session_id,
        user_id=request.user_id,
        channel=request.channel,
        tool=request.tool,
        arguments=request.arguments,
        outcome=outcome,
        detail=detail,
        max_len=_KEEP,
        guidance_id=request.guidance_id,
    )


def _event(
    db: OrmSession, request: HeldCall, action: str, actor_id: str | None, detail: dict[str, Any]
) -> None:
    """The entry's audit trail (a request whose entry was deleted has none)."""
    if request.guidance_id is None:
        return
    db.add(
        GuidanceEvent(
            guidance_id=request.guidance_id,
            action=action,
            actor_id=actor_id,
            detail={"request_id": request.id, **detail},
        )
    )
