"""MCP tasks: a call a client waits on, above all a call an `ask` guardrail held.

A client that asks for a task (MCP 2025-11-25, `tools/call` with `task`) gets
one whatever happens to its call. A call that ran or was refused gets a task
already finished, its answer kept. A held call gets a task that is `working`
while the request waits for a curator; each time the client asks about it,
`advance` looks at the request:

- allowed: the call is run once, through the one dispatch path, for the user
  who made it, with the arguments that were held. The grant is used up by a
  conditional UPDATE, and the run is claimed on the task first, so two polls
  on two workers cannot both run it. Where the request could not keep the
  arguments exactly (a secret redacted, a write-only field, a value cut), the
  task cannot run it and says so: the agent makes the same call again.
- denied or expired: failed, with the refusal the call itself would get.
- used by a call made outside the task, or gone: failed, saying which.

An answer is stored as the client will read it, redacted as the ledger is, and
deleted with its task `ttl_ms` after the task was made (`expire_due`). Nothing
in here knows Flask or MCP's wire format: the caller runs the call and shapes
its answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession

from ..errors import NotFound
from ..text import redaction
from . import held
from .guardrails.index import Rule
from .models import Guidance, HeldCall, Task, utcnow

WORKING, COMPLETED, FAILED, CANCELLED = "working", "completed", "failed", "cancelled"
TERMINAL = (COMPLETED, FAILED, CANCELLED)
TTL_DEFAULT_MS = 24 * 60 * 60 * 1000  # a curator may take a day
TTL_MAX_MS = 7 * 24 * 60 * 60 * 1000
POLL_MS = 5000
#: A claimed run not finished after this long was cut off (its worker died):
#: the task fails rather than run the call a second time.
RUN_LEASE = timedelta(minutes=5)
CUT_OFF = "The run was cut off before it finished; it is not run again."
GONE = "The held call is gone (erased, or past the site's retention)."
USED_ELSEWHERE = "The call was allowed and then made outside this task, which used the approval."
RAN_AND_FAILED = "The call ran and failed."

#: What a task runs: the held request's call; its answer (the tool's result,
#: or `{"error": ...}`) and whether that is an error.
Run = Callable[[HeldCall], tuple[dict[str, Any], bool]]


def ttl_of(requested: int | None) -> int:
    """The task's lifetime: what the client asked for, up to a week; a day if it did not ask."""
    if requested is None:
        return TTL_DEFAULT_MS
    return max(1000, min(requested, TTL_MAX_MS))


def finished(
    db: OrmSession, *, user_id: str, tool: str, answer: dict[str, Any], failed: bool, ttl_ms: int
) -> Task:
    """A task for a call that has already run or been refused: its answer kept."""
    task = Task(
        id=_new_id(),
        user_id=user_id,
        tool=tool,
        status=FAILED if failed else COMPLETED,
        result=_kept(answer),
        ttl_ms=ttl_ms,
    )  # made and last updated now: the columns' defaults
    db.add(task)
    db.commit()
    return task


def for_held(
    db: OrmSession, *, user_id: str, tool: str, request_id: int, message: str, ttl_ms: int
) -> Task:
    """The task of a held request (a request is one user's); the same call held again
    gets the same task while it lives."""
    now = utcnow()
    existing = db.scalar(select(Task).where(Task.held_call_id == request_id))
    if existing is not None and not _expired(existing, now):
        return existing
    if existing is not None:  # past its ttl, not yet swept: the wait starts again
        db.delete(existing)
        db.flush()
    task = Task(
        id=_new_id(),
        user_id=user_id,
        tool=tool,
        held_call_id=request_id,
        status=WORKING,
        status_message=message,
        created_at=now,
        updated_at=now,
        ttl_ms=ttl_ms,
    )
    db.add(task)
    try:
        db.commit()
    except IntegrityError:  # a second request for the same call made it first
        db.rollback()
        made = db.scalar(select(Task).where(Task.held_call_id == request_id))
        if made is None:
            raise
        return made
    return task


def find(db: OrmSession, task_id: str, user_id: str, *, now: datetime | None = None) -> Task:
    """The caller's own live task; another user's, an expired or an unknown one is not found."""
    task = db.get(Task, task_id)
    if task is None or task.user_id != user_id or _expired(task, now or utcnow()):
        raise NotFound("Task not found: it is unknown, not yours, or past its ttl.")
    return task


def listed(db: OrmSession, user_id: str, *, after: str | None, limit: int) -> list[Task]:
    """The caller's live tasks, newest first, `limit` from the one after `after`."""
    query = select(Task).where(Task.user_id == user_id)
    if after is not None:
        mark = db.get(Task, after)
        if mark is None or mark.user_id != user_id:
            raise NotFound("Invalid cursor: it names none of your tasks.")
        query = query.where(
            (Task.created_at < mark.created_at)
            | ((Task.created_at == mark.created_at) & (Task.id < mark.id))
        )
    now = utcnow()
    # Read on until `limit` live ones: expired tasks not yet swept must not hide older live ones.
    ordered = query.order_by(Task.created_at.desc(), Task.id.desc())
    live: list[Task] = []
    with db.scalars(ordered.execution_options(yield_per=limit * 2)) as rows:  # closed if left early
        for task in rows:
            if not _expired(task, now):
                live.append(task)
                if len(live) == limit:
                    break
    return live


def advance(db: OrmSession, task: Task, run: Run, *, now: datetime | None = None) -> Task:
    """Bring a held call's task up to date with its request (see the module's doc)."""
    if task.status in TERMINAL or task.held_call_id is None:
        return task
    now = now or utcnow()
    if task.run_at is not None:
        if task.run_at + RUN_LEASE <= now:
            return _end(db, task, FAILED, CUT_OFF, None)
        return task  # another request is running it
    held.expire_due(db, now=now, where=(HeldCall.id == task.held_call_id,))
    request = db.get(HeldCall, task.held_call_id)
    if request is None:
        return _end(db, task, FAILED, GONE, None)
    if request.state == "allowed":
        return _run_once(db, task, request, run, now)
    if request.state in ("denied", "expired"):
        refusal = held.refused(request, _rule_of(db, request))
        return _end(db, task, FAILED, refusal.message, {"error": refusal.to_dict()})
    if request.state == "used":
        return _end(db, task, FAILED, USED_ELSEWHERE, None)
    return task  # still waiting for a curator


def _run_once(db: OrmSession, task: Task, request: HeldCall, run: Run, now: datetime) -> Task:
    """Run an allowed request for its task: claimed first, so only one request runs it."""
    if held.call_hash(request.tool, request.arguments) != request.call_hash:
        message = (  # an allowed request always has its grant's end
            "Allowed, but chatmem does not keep this call's arguments as they were sent "
            "(a secret, a write-only field or a long value): make exactly the same call "
            f"again before {request.expires_at:%Y-%m-%d %H:%M} UTC to run it."
        )
        return _end(db, task, FAILED, message, None)
    claimed = db.execute(
        update(Task)
        .where(Task.id == task.id, Task.status == WORKING, Task.run_at.is_(None))
        .values(run_at=now)  # not a change of status: lastUpdatedAt stays
    )
    db.commit()
    if cast(CursorResult[Any], claimed).rowcount != 1:
        db.refresh(task)
        return task
    answer, is_error = run(request)
    db.rollback()  # the run committed its own work; start clean
    if is_error:
        return _end(db, task, FAILED, RAN_AND_FAILED, answer)
    return _end(db, task, COMPLETED, None, answer)


def cancel(db: OrmSession, task: Task, *, actor_id: str) -> Task:
    """Cancel a task that has not finished; its held request leaves the curator's queue."""
    if task.held_call_id is not None:
        held.withdraw(db, task.held_call_id, actor_id=actor_id)
    return _end(db, task, CANCELLED, "The task was cancelled by request.", None)


def expire_due(db: OrmSession, *, now: datetime | None = None) -> int:
    """Delete the tasks past their ttl, with their answers; how many went."""
    now = now or utcnow()
    rows = db.execute(select(Task.id, Task.created_at, Task.ttl_ms)).all()
    due = [row.id for row in rows if row.created_at + timedelta(milliseconds=row.ttl_ms) <= now]
    if due:
        db.execute(delete(Task).where(Task.id.in_(due)))
    db.commit()
    return len(due)


def describe(task: Task) -> dict[str, Any]:
    """The task as MCP's `Task` object."""
    shown: dict[str, Any] = {
        "taskId": task.id,
        "status": task.status,
        "createdAt": _iso(task.created_at),
        "lastUpdatedAt": _iso(task.updated_at),
        "ttl": task.ttl_ms,
    }
    if task.status_message:
        shown["statusMessage"] = task.status_message
    if task.status not in TERMINAL:
        shown["pollInterval"] = POLL_MS
    return shown


# -- inside ------------------------------------------------------------------------------


def _end(
    db: OrmSession,
    task: Task,
    status: str,
    message: str | None,
    answer: dict[str, Any] | None,
) -> Task:
    """Move a task that is not finished to `status`; a finished one stays as it is."""
    now = utcnow()
    values: dict[str, Any] = {"status": status, "status_message": message, "updated_at": now}
    if answer is not None:
        values["result"] = _kept(answer)
    db.execute(update(Task).where(Task.id == task.id, Task.status == WORKING).values(**values))
    db.commit()
    db.refresh(task)
    return task


def _kept(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer as it may be stored: secrets redacted, as the ledger keeps arguments."""
    kept = redaction.redact_value(answer)
    return kept if isinstance(kept, dict) else {"value": kept}


def _rule_of(db: OrmSession, request: HeldCall) -> Rule:
    """The guardrail a refusal names (`held.refused` reads its id, title and target)."""
    entry = db.get(Guidance, request.guidance_id) if request.guidance_id else None
    if entry is None:
        return Rule(request.guidance_id or 0, "a guardrail since removed", "")
    return Rule(entry.id, entry.title, entry.target or "")


def _expired(task: Task, now: datetime) -> bool:  # as `expire_due` reckons it
    return task.created_at + timedelta(milliseconds=task.ttl_ms) <= now


def _iso(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds") + "Z"


def _new_id() -> str:
    return secrets.token_urlsafe(24)
