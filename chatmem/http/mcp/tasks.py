"""MCP tasks: a held call the client can wait on, over memory/tasks.py.

A `tools/call` with `task` gets a `CreateTaskResult` whatever happens to the
call: a call that ran or was refused gets a finished task; a call an `ask`
guardrail held gets a `working` task whose status message names the
guardrail and the curator's queue. `tasks/get` brings the task up to date
(an allowed call is run then, once), `tasks/result` waits for the end and
answers exactly what `tools/call` would have, `tasks/list` and
`tasks/cancel` do what they say. A task is its caller's alone: another
user's task id is as unknown as a made-up one (-32602).

Tasks are offered two ways (`Caller.tasks`):

- SESSION: a 2025-11-25 session (the `tasks` capability, each tool's
  `execution.taskSupport`, the four methods above); the client asks for a
  task with `tools/call`'s `task`.
- EXTENSION: a 2026-07-28 request whose client capabilities declare the
  `io.modelcontextprotocol/tasks` extension (SEP-2663). There the server
  decides: a held call answers a flat `CreateTaskResult` (`resultType:
  "task"`), any other call answers as it always does. `tasks/get` inlines
  the end (`result`, or `error`), `tasks/cancel` and `tasks/update` answer an
  empty ack, and `tasks/result` and `tasks/list` are gone (-32601). A
  request that does not declare the extension gets -32021 for a tasks method.

Anyone else gets `approval_required` for a held call, as before.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import ApprovalRequired, ChatmemError, NotFound
from ...identity import user_id_of
from ...memory import tasks
from ...memory.models import HeldCall, Task
from .encoding import tool_result
from .rpc import (
    INVALID_PARAMS,
    META_CAPABILITIES,
    MISSING_CAPABILITY,
    SERVER_ERROR,
    Caller,
    RpcError,
)

VERSION = "2025-11-25"
CAPABILITY: dict[str, Any] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
SESSION, EXTENSION = "session", "extension"
BOTH = (SESSION, EXTENSION)
EXTENSION_ID = "io.modelcontextprotocol/tasks"
RELATED = "io.modelcontextprotocol/related-task"
IMMEDIATE = "io.modelcontextprotocol/model-immediate-response"
#: How long `tasks/result` waits for a task to finish before it answers that the
#: task is still working: a worker thread is not held for a curator's whole day.
RESULT_WAIT = 25.0
RESULT_POLL = 0.5
LIST_PAGE = 50


@dataclass(frozen=True)
class TaskParams:
    """`tasks/get`, `tasks/result`, `tasks/cancel`: the task's id."""

    task_id: str

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> TaskParams:
        task_id = params.get("taskId")
        if not isinstance(task_id, str) or not 0 < len(task_id) <= 64:
            raise RpcError(INVALID_PARAMS, "params.taskId must be a task id.")
        return cls(task_id=task_id)


@dataclass(frozen=True)
class ListParams:
    """`tasks/list`: an optional cursor from the page before."""

    cursor: str | None = None

    @classmethod
    def parse(cls, method: str, params: Mapping[str, Any]) -> ListParams:
        cursor = params.get("cursor")
        if cursor is not None and (not isinstance(cursor, str) or not cursor):
            raise RpcError(INVALID_PARAMS, "Invalid cursor.")
        return cls(cursor=cursor)


def ttl_of(task: Any) -> int:
    """The `task` of a `tools/call`: an object, with an optional whole `ttl` in ms."""
    if not isinstance(task, dict):
        raise RpcError(INVALID_PARAMS, "params.task must be an object.")
    ttl = task.get("ttl")
    if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0):
        raise RpcError(INVALID_PARAMS, "params.task.ttl must be a whole number of milliseconds.")
    return tasks.ttl_of(ttl)


def offered_to(params: Mapping[str, Any]) -> str | None:
    """EXTENSION when a 2026-07-28 request's client capabilities declare the tasks extension."""
    declared = params.get("_meta", {}).get(META_CAPABILITIES)
    extensions = declared.get("extensions") if isinstance(declared, dict) else None
    return EXTENSION if isinstance(extensions, dict) and EXTENSION_ID in extensions else None


def missing_extension() -> RpcError:
    return RpcError(
        MISSING_CAPABILITY,
        f"Tasks need the {EXTENSION_ID} extension: declare it in the request's client "
        "capabilities.",
        {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
    )


def created(caller: Caller, name: str, ttl_ms: int, answer: Any, is_error: bool) -> dict[str, Any]:
    """The `CreateTaskResult` of a call a client asked to wait on, however it went."""
    if isinstance(answer, ApprovalRequired):
        task = _held_task(caller, name, answer, ttl_ms)
        return {"task": tasks.describe(task), "_meta": {IMMEDIATE: task.status_message}}
    db = caller.memory.db.session()
    user_id = str(user_id_of(caller.user))
    if isinstance(answer, ChatmemError):
        answer = {"error": answer.to_dict()}
    task = tasks.finished(
        db, user_id=user_id, tool=name, answer=answer, failed=is_error, ttl_ms=ttl_ms
    )
    return {"task": tasks.describe(task)}


def created_for_held(caller: Caller, name: str, held: ApprovalRequired) -> dict[str, Any]:
    """2026-07-28: a held call's flat `CreateTaskResult` (the extension's own names)."""
    task = _held_task(caller, name, held, tasks.TTL_DEFAULT_MS)
    return {**_renamed(tasks.describe(task)), "resultType": "task"}


def _held_task(caller: Caller, name: str, held: ApprovalRequired, ttl_ms: int) -> Task:
    found = held.details
    message = (
        f"Waiting for a curator: project memory guardrail #{found['guidance_id']} "
        f"({found['title']}) asks a person first. Request #{found['request_id']} is on the "
        "Memory screen's Waiting calls list; this task runs the call once it is allowed."
    )
    return tasks.for_held(
        caller.memory.db.session(),
        user_id=str(user_id_of(caller.user)),
        tool=name,
        request_id=int(found["request_id"]),
        message=message,
        ttl_ms=ttl_ms,
    )


def _renamed(described: dict[str, Any]) -> dict[str, Any]:
    """A task in the extension's names: durations say their unit (`ttlMs`, `pollIntervalMs`)."""
    shown = {key: value for key, value in described.items() if key not in ("ttl", "pollInterval")}
    shown["ttlMs"] = described["ttl"]
    if "pollInterval" in described:
        shown["pollIntervalMs"] = described["pollInterval"]
    return shown


def get(caller: Caller, params: TaskParams) -> dict[str, Any]:
    task = _advanced(caller, params.task_id)
    if caller.tasks == EXTENSION:
        return detailed(task)
    return tasks.describe(task)


def detailed(task: Task) -> dict[str, Any]:
    """2026-07-28's `tasks/get`: the task, with its end inlined.

    A call that ran is `completed` with its result, `isError` when the tool
    failed (the extension's rule: a tool's own error is a result); a call
    that never ran (denied, expired, gone, cut off) is `failed` with the
    refusal as `error`.
    """
    shown = {**_renamed(tasks.describe(task)), "resultType": "complete"}
    ran_and_failed = task.status == tasks.FAILED and task.status_message == tasks.RAN_AND_FAILED
    if task.status == tasks.COMPLETED or ran_and_failed:
        shown["status"] = tasks.COMPLETED
        shown["result"] = tool_result(task.result or {}, is_error=ran_and_failed)
    elif task.status == tasks.FAILED:
        refusal = (task.result or {}).get("error") or {"code": _failure_code(task)}
        message = task.status_message or refusal.get("message") or "The task failed."
        shown["error"] = {"code": SERVER_ERROR, "message": message, "data": refusal}
    return shown


def update(caller: Caller, params: TaskParams) -> dict[str, Any]:
    """2026-07-28's `tasks/update`: chatmem's tasks never ask for input, so there is
    nothing to deliver; the task must still be the caller's."""
    _advanced(caller, params.task_id)
    return {"resultType": "complete"}


def result(caller: Caller, params: TaskParams) -> dict[str, Any]:
    """The call's own answer once the task has ended; waits `RESULT_WAIT` seconds at most."""
    deadline = time.monotonic() + RESULT_WAIT
    task = _advanced(caller, params.task_id)
    while task.status not in tasks.TERMINAL and time.monotonic() < deadline:
        time.sleep(RESULT_POLL)
        task = _advanced(caller, params.task_id)
    if task.status not in tasks.TERMINAL:
        raise RpcError(
            SERVER_ERROR,
            f"Task {task.id} is still working: {task.status_message} "
            "Poll tasks/get, and ask for the result again when it has ended.",
            {"code": "task_working", "taskId": task.id},
        )
    answer = task.result or {
        "error": {"code": _failure_code(task), "message": task.status_message or task.status}
    }
    shaped = tool_result(answer, is_error=task.status != tasks.COMPLETED)
    return {**shaped, "_meta": {RELATED: {"taskId": task.id}}}


def listed(caller: Caller, params: ListParams) -> dict[str, Any]:
    db = caller.memory.db.session()
    user_id = str(user_id_of(caller.user))
    try:
        page = tasks.listed(db, user_id, after=params.cursor, limit=LIST_PAGE + 1)
    except NotFound as error:
        raise RpcError(INVALID_PARAMS, error.message) from None
    shown: dict[str, Any] = {"tasks": [tasks.describe(t) for t in page[:LIST_PAGE]]}
    if len(page) > LIST_PAGE:
        shown["nextCursor"] = page[LIST_PAGE - 1].id
    return shown


def cancel(caller: Caller, params: TaskParams) -> dict[str, Any]:
    """Cancel a task that has not ended. 2025-11-25 answers the task, and an error for
    one that has ended; 2026-07-28 answers an empty ack either way (idempotent)."""
    task = _advanced(caller, params.task_id)
    ended = task.status in tasks.TERMINAL
    if ended and caller.tasks != EXTENSION:
        raise RpcError(INVALID_PARAMS, f"Task {task.id} has already ended ({task.status}).")
    if not ended:
        db = caller.memory.db.session()
        task = tasks.cancel(db, task, actor_id=str(user_id_of(caller.user)))
    return {"resultType": "complete"} if caller.tasks == EXTENSION else tasks.describe(task)


def _advanced(caller: Caller, task_id: str) -> Task:
    db = caller.memory.db.session()
    try:
        task = tasks.find(db, task_id, str(user_id_of(caller.user)))
    except NotFound as error:
        raise RpcError(INVALID_PARAMS, error.message) from None
    return tasks.advance(db, task, lambda request: _run(caller, request))


def _run(caller: Caller, request: HeldCall) -> tuple[dict[str, Any], bool]:
    """The allowed call, through the one dispatch path, as its caller makes it now."""
    try:
        answer = caller.call_tool(request.tool, request.arguments)
    except ChatmemError as error:
        return {"error": error.to_dict()}, True
    return answer, False


def _failure_code(task: Task) -> str:
    return "cancelled" if task.status == tasks.CANCELLED else "task_failed"
