"""The one path every tool call takes, as named steps.

    lookup -> module switch -> validate -> authorize -> session -> guard -> run -> ledger
    (-> the targets it changed: revalidation)

Every channel (the chat loop, MCP, REST, Python) is a thin translation to
`Dispatcher.call`, so validation, permissions, guardrails and the ledger can
never differ between them. The dispatcher is handed narrow collaborators,
each a Protocol below, and never calls back into `ChatMemory`, which only
puts them together (see `extension.py`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.exc import DataError

from .errors import (
    ApprovalRequired,
    ChatmemError,
    Forbidden,
    InvalidParams,
    MemoryDisabled,
    NotFound,
    ToolFailed,
    Unauthorized,
)
from .identity import HostUser
from .memory import held, ledger, sessions
from .memory.guardrails.index import Rule
from .memory.guardrails.matching import Refusal
from .tools import CallContext, Tool, ToolRegistry, validate

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from .memory.models import LedgerEntry
    from .memory.switches import Snapshot

log = logging.getLogger("chatmem")


class Permissions(Protocol):
    def can(self, user: HostUser, capability: str) -> bool: ...


class StateReader(Protocol):
    def snapshot(self) -> Snapshot: ...


class Guardrails(Protocol):
    def guardrail_for(
        self, tool_name: str, arguments: dict[str, Any], snapshot: Snapshot
    ) -> Refusal | None: ...


class TargetChanges(Protocol):
    """Marks the active guidance a successful call's targets are named by (revalidation.py)."""

    def after_call(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        snapshot: Snapshot,
        row: LedgerEntry,
        *,
        besides: int | None = None,
    ) -> list[int]: ...


class SessionStore(Protocol):
    def resume(self, session_id: str, user_id: str) -> None: ...

    def begin(self, context: CallContext) -> str: ...

    def for_key(self, context: CallContext, key: str, *, write: bool) -> str | None: ...

    def exists(self, session_id: str) -> bool: ...


class Limits(Protocol):
    """The settings the path reads: how long a ledger value may be, how long a grant lasts."""

    @property
    def ledger_value_max(self) -> int: ...

    @property
    def ask_grant_minutes(self) -> int: ...

    @property
    def session_idle(self) -> timedelta: ...


@dataclass
class Call:
    """One call on its way through the steps."""

    context: CallContext
    tool: Tool
    snapshot: Snapshot
    args: dict[str, Any]

    @property
    def recorded(self) -> bool:
        """Writes are ledgered (and run in a session) while Memory is on; reads never are."""
        return self.snapshot.memory_enabled and not self.tool.read_only


class DbSessions:
    """The session store on the app's database: what the dispatcher needs of `memory.sessions`."""

    def __init__(self, session: Callable[[], OrmSession], limits: Limits) -> None:
        self.session = session
        self.limits = limits

    def resume(self, session_id: str, user_id: str) -> None:
        found = sessions.get_open(self.session(), session_id, user_id=user_id)
        sessions.touch(self.session(), session_id, found.last_seen_at)

    def begin(self, context: CallContext) -> str:
        started = sessions.start(
            self.session(),
            user_id=context.user_id,
            user_name=context.user_name,
            channel=context.channel,
            commit=False,
        )
        return started.id

    def for_key(self, context: CallContext, key: str, *, write: bool) -> str | None:
        return sessions.for_client(
            self.session(),
            user_id=context.user_id,
            user_name=context.user_name,
            channel=context.channel,
            key=key,
            idle=self.limits.session_idle,
            write=write,
        )

    def exists(self, session_id: str) -> bool:
        return sessions.exists(self.session(), session_id)


def host_failure(tool: Tool, error: Exception) -> ChatmemError:
    """A host tool's exception as the client's error: a host bug, unless it is the input's.

    A database `DataError` (an integer too large for its column, say) is a
    value the schema let through and the database refused: bad input, 400.
    """
    if isinstance(error, DataError):
        return InvalidParams(
            f"A value given to {tool.name} is out of the range the database can store.",
            details={"field": "arguments", "reason": "out_of_range"},
        )
    log.error("tool %s failed", tool.name, exc_info=error)
    return ToolFailed(f"The tool {tool.name} failed; the error was logged.")


class Dispatcher:
    def __init__(
        self,
        registry: ToolRegistry,
        *,
        session: Callable[[], OrmSession],
        server_name: str,
        permissions: Permissions,
        state: StateReader,
        guardrails: Guardrails,
        sessions: SessionStore,
        limits: Limits,
        changes: TargetChanges,
    ) -> None:
        self.registry = registry
        self.session = session
        self.server_name = server_name
        self.permissions = permissions
        self.state = state
        self.guardrails = guardrails
        self.sessions = sessions
        self.limits = limits
        self.changes = changes

    def call(self, name: str, arguments: Any, context: CallContext) -> dict[str, Any]:
        call = self.prepare(name, arguments, context)
        self.open_session(call)
        granted = self.guard(call) if call.recorded else None
        result = self.run(call)
        self.record_success(call, granted)
        self.session().commit()
        return result if isinstance(result, dict) else {"result": result}

    def prepare(self, name: str, arguments: Any, context: CallContext) -> Call:
        """Lookup, module switch, validation and authorization: nothing written yet."""
        tool = self.lookup(name)
        snapshot = self.state.snapshot()
        if tool.memory and not snapshot.memory_enabled:
            raise MemoryDisabled("Project memory is switched off on this site.")
        call = Call(context, tool, snapshot, validate(tool, arguments))
        self.authorize(call)
        return call

    def lookup(self, name: str) -> Tool:
        tool = self.registry.find(name, self.server_name)
        if tool is None:
            raise NotFound(f"Unknown tool {name!r}.", details={"tool": name})
        return tool

    def authorize(self, call: Call) -> None:
        """The caller's capability, then the token's scope."""
        context, tool = call.context, call.tool
        if context.user is None:
            raise Unauthorized("Sign in or send an API token to call tools.")
        if not self.permissions.can(context.user, tool.capability):
            raise Forbidden(
                f"Calling {tool.name} needs the {tool.capability} capability.",
                details={"capability": tool.capability},
            )
        if context.read_only and not tool.read_only:
            raise Forbidden(
                f"This API token has the read-only scope: it may call read-only tools only, "
                f"and {tool.name} changes things.",
                details={"scope": "read-only", "tool": tool.name},
            )

    def open_session(self, call: Call) -> None:
        """The caller's open session is touched, or found by the client's key; a write starts one.

        After validation and authorization, so a refused call writes nothing (SPEC §11).
        """
        context, write = call.context, not call.tool.read_only
        if not call.snapshot.memory_enabled:
            return
        if context.session_id is not None:
            self.sessions.resume(context.session_id, context.user_id)
        elif context.session_key is not None:
            context.session_id = self.sessions.for_key(context, context.session_key, write=write)
        elif write:
            context.session_id = self.sessions.begin(context)

    def guard(self, call: Call) -> held.HeldCall | None:
        """Raise the guardrails' refusal (ledgered first); or the grant this call uses.

        An `ask` rule's match goes to `held.gate`: a grant for exactly this
        call is used up (one conditional UPDATE, in this transaction), or the
        call is held as a request (`approval_required`), or refused because
        its request was denied or its grant expired.
        """
        refusal: ChatmemError | None
        refusal = self.guardrails.guardrail_for(call.tool.name, call.args, call.snapshot)
        if refusal is None:
            return None
        if isinstance(refusal, ApprovalRequired):
            verdict = self.gate(call, refusal)
            if verdict.error is None:
                return verdict.request
            refusal = verdict.error
        outcome = "held" if isinstance(refusal, ApprovalRequired) else "blocked"
        self.record(call, outcome, refusal)
        self.session().commit()
        raise refusal

    def gate(self, call: Call, asked: ApprovalRequired) -> held.Verdict:
        found, context = asked.details, call.context
        rule = Rule(found["guidance_id"], found["title"], found["target"], "ask")
        caller = held.Caller(
            context.user_id, context.user_name, context.session_id, context.channel
        )
        return held.gate(
            self.session(),
            rule,
            call.tool.name,
            call.args,
            call.tool.conceal(call.args),
            caller,
            grant_minutes=self.limits.ask_grant_minutes,
            max_len=self.limits.ledger_value_max,
        )

    def run(self, call: Call) -> Any:
        """The tool itself; a failure rolls its writes back and is ledgered apart."""
        tool = call.tool
        kwargs = {**call.args, "context": call.context} if tool.wants_context else call.args
        try:
            return tool.func(**kwargs)
        except ChatmemError as error:
            self.session().rollback()
            self.record_failure(call, error)
            raise
        except Exception as error:
            self.session().rollback()
            failure = host_failure(tool, error)
            self.record_failure(call, failure)
            raise failure from None

    def record_success(self, call: Call, granted: held.HeldCall | None) -> None:
        """The ledger line, in the same transaction as the tool's own writes.

        And as the grant's use: a run that fails rolls back with it, leaving the grant.
        The guidance naming what the call changed is marked in that transaction
        too, pointing to this line (not the `ask` guardrail whose grant it used).
        """
        if granted is not None:
            detail = f"allowed once: request #{granted.id}"
            row = self.record(call, "granted-run", None, granted.guidance_id, detail)
        elif call.recorded:
            row = self.record(call, "ok", None)
        else:
            return  # not ledgered (a read, or Memory off): nothing is marked either
        besides = granted.guidance_id if granted is not None else None
        self.changes.after_call(call.tool.name, call.args, call.snapshot, row, besides=besides)

    def record_failure(self, call: Call, error: ChatmemError) -> None:
        """Ledger a failed write in a fresh transaction (the tool's was rolled back)."""
        if call.tool.read_only or not self.state.snapshot().memory_enabled:
            return
        context = call.context
        if context.session_id is not None and not self.sessions.exists(context.session_id):
            context.session_id = None  # an implicit session was rolled back with the tool
        if context.session_id is None:
            context.session_id = self.sessions.begin(context)
        self.record(call, "error", error)
        self.session().commit()

    def record(
        self,
        call: Call,
        outcome: str,
        error: ChatmemError | None,
        guidance_id: int | None = None,
        detail: str | None = None,
    ) -> LedgerEntry:
        if isinstance(error, Refusal):
            guidance_id = error.details.get("guidance_id")
            detail = f"guidance #{guidance_id}: {error.details.get('title')}"
            if "request_id" in error.details:
                detail += f" (request #{error.details['request_id']})"
        elif error is not None:
            detail = error.message
        context = call.context
        return ledger.record(
            self.session(),
            session_id=context.session_id,
            user_id=context.user_id,
            channel=context.channel,
            tool=call.tool.name,
            arguments=call.tool.conceal(call.args),
            outcome=outcome,
            error_code=error.code if error else None,
            detail=detail,
            max_len=self.limits.ledger_value_max,
            guidance_id=guidance_id,
        )
