"""MCP's JSON-RPC methods, for both protocol eras, over the one dispatch path.

The HTTP transport (`transport.py`) decides the era and the session (it
starts one after `initialize`); this module answers every method from one
table, `METHODS`: method -> (params model, handler), as the MCP SDK's
low-level server routes them. The params are read by their model
(`params.py`) before the handler runs; a method not in the table is -32601.
`initialize`, `server/discover`, `ping` and the tools are answered here, the
resources and the prompt in `resources.py`. A tool failure is a *result* with `isError: true`
and the SPEC §11 error in `structuredContent`, so the client's model can
read it and adjust; an unknown tool or malformed params is a JSON-RPC error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar

from ...errors import ApprovalRequired, ChatmemError, NotFound
from ...tools import Tool
from . import resources, subscriptions, tasks
from .encoding import tool_result
from .params import CallParams, InitializeParams, NoParams, PageParams, PromptParams, ReadParams
from .rpc import (
    ALL_VERSIONS,
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    SERVER_ERROR,
    Caller,
    RpcError,
    cached,
    complete,
    memory_ttl_ms,
)

P = TypeVar("P")


def server_version() -> str:
    try:
        return metadata.version("chatmem")
    except metadata.PackageNotFoundError:
        return "0.1.0"


def capabilities(version: str | None = None) -> dict[str, Any]:
    offered: dict[str, Any] = {
        "tools": {"listChanged": False},
        "resources": {"subscribe": True, "listChanged": False},
        "prompts": {"listChanged": False},
    }
    if version == tasks.VERSION:
        offered["tasks"] = tasks.CAPABILITY
    if version is None:  # 2026-07-28 (`server/discover`): tasks are an extension there
        offered["extensions"] = {tasks.EXTENSION_ID: {}}
    return offered


def initialize(caller: Caller, params: InitializeParams) -> dict[str, Any]:
    """The handshake result: echo a version we speak, else offer our newest."""
    memory = caller.memory
    requested = params.protocol_version
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(version),
        "serverInfo": {"name": memory.server_name, "version": server_version()},
    }
    instructions = memory.system_context()
    if instructions:
        result["instructions"] = instructions
    return result


def ping(caller: Caller, params: NoParams) -> dict[str, Any]:
    return complete(caller, {})


def discover(caller: Caller, params: NoParams) -> dict[str, Any]:
    memory = caller.memory
    result: dict[str, Any] = {
        "supportedVersions": list(ALL_VERSIONS),
        "capabilities": capabilities(),
        "ttlMs": memory_ttl_ms(caller),  # `instructions` is the block
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: {"name": memory.server_name, "version": server_version()}},
    }
    instructions = memory.system_context()
    if instructions:
        result["instructions"] = instructions
    return complete(caller, result)


def describe_tool(tool: Tool, *, tasks_offered: bool = False) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": tool.annotations(),
    }
    if tasks_offered:  # any call may meet an `ask` guardrail, so any call may wait
        described["execution"] = {"taskSupport": "optional"}
    if tool.title:
        described["title"] = tool.title
    if tool.output_schema is not None:
        described["outputSchema"] = tool.output_schema
    return described


def list_tools(caller: Caller, params: PageParams) -> dict[str, Any]:
    visible = caller.memory.visible_tools(caller.user, read_only=caller.read_only)
    tools = [describe_tool(t, tasks_offered=caller.tasks is not None) for t in visible]
    # The memory tools come and go with the Memory switch.
    return cached(caller, {"tools": tools}, memory_ttl_ms(caller))


def call_tool(caller: Caller, params: CallParams) -> dict[str, Any]:
    name = params.name
    # Read before the call runs: a malformed `task` changes nothing. (2026-07-28 ignores
    # the old `task` param: there the server decides, and a held call becomes a task.)
    asked = params.task is not None and caller.tasks == tasks.SESSION
    ttl = tasks.ttl_of(params.task) if asked else None
    answer: Any
    try:
        answer = caller.call_tool(name, params.arguments)
        is_error = False
    except NotFound as error:
        if error.details.get("tool") == name:  # MCP: an unknown tool is a protocol error
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}") from None
        answer, is_error = error, True
    except ChatmemError as error:
        answer, is_error = error, True
    if ttl is not None:
        return tasks.created(caller, name, ttl, answer, is_error)
    if caller.tasks == tasks.EXTENSION and isinstance(answer, ApprovalRequired):
        return tasks.created_for_held(caller, name, answer)
    if isinstance(answer, ChatmemError):
        answer = {"error": answer.to_dict()}
    return complete(caller, tool_result(answer, is_error=is_error))


@dataclass(frozen=True)
class Method(Generic[P]):
    """One JSON-RPC method: how its params are read, and what answers it."""

    params: Callable[[str, Mapping[str, Any]], P]
    handler: Callable[[Caller, P], dict[str, Any]]
    #: Checked before the params are read: reading memory needs recall's capability.
    guard: Callable[[Caller], None] | None = None
    #: A refusal (ChatmemError) is a -32000 error carrying the SPEC §11 error,
    #: not a tool result: the resources and the prompt have no result to put it in.
    refusal_is_error: bool = False
    #: Only the 2026-07-28 era has it.
    modern_only: bool = False
    #: An MCP tasks method: the ways tasks are offered that have it (tasks.SESSION,
    #: tasks.EXTENSION); empty: not a tasks method.
    tasks: tuple[str, ...] = ()


#: Every method the endpoint answers; anything else is -32601.
METHODS: dict[str, Method[Any]] = {
    "initialize": Method(InitializeParams.parse, initialize),
    "ping": Method(NoParams.parse, ping),
    "server/discover": Method(NoParams.parse, discover, modern_only=True),
    "tools/list": Method(PageParams.parse, list_tools),
    "tools/call": Method(CallParams.parse, call_tool),
    "resources/list": Method(PageParams.parse, resources.list_resources, refusal_is_error=True),
    "resources/templates/list": Method(
        PageParams.parse, resources.list_templates, refusal_is_error=True
    ),
    "resources/read": Method(
        ReadParams.parse, resources.read, guard=resources.may_read, refusal_is_error=True
    ),
    "resources/subscribe": Method(
        ReadParams.parse, subscriptions.subscribe, guard=resources.may_read, refusal_is_error=True
    ),
    "resources/unsubscribe": Method(
        ReadParams.parse, subscriptions.unsubscribe, refusal_is_error=True
    ),
    "prompts/list": Method(PageParams.parse, resources.list_prompts, refusal_is_error=True),
    "prompts/get": Method(
        PromptParams.parse, resources.get_prompt, guard=resources.may_read, refusal_is_error=True
    ),
    "tasks/get": Method(tasks.TaskParams.parse, tasks.get, tasks=tasks.BOTH),
    "tasks/result": Method(tasks.TaskParams.parse, tasks.result, tasks=(tasks.SESSION,)),
    "tasks/list": Method(tasks.ListParams.parse, tasks.listed, tasks=(tasks.SESSION,)),
    "tasks/cancel": Method(tasks.TaskParams.parse, tasks.cancel, tasks=tasks.BOTH),
    "tasks/update": Method(tasks.TaskParams.parse, tasks.update, tasks=(tasks.EXTENSION,)),
}


def handle(caller: Caller, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one request: look the method up, guard it, read its params, run it."""
    entry = METHODS.get(method)
    if entry is not None and entry.tasks and caller.tasks not in entry.tasks:
        if caller.modern and caller.tasks is None and tasks.EXTENSION in entry.tasks:
            raise tasks.missing_extension()
        entry = None
    if entry is None or (entry.modern_only and not caller.modern):
        raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
    try:
        return _run(entry, caller, method, params)
    except ChatmemError as error:
        if not entry.refusal_is_error:
            raise
        raise RpcError(SERVER_ERROR, error.message, error.to_dict()) from None


def _run(
    entry: Method[P], caller: Caller, method: str, params: Mapping[str, Any]
) -> dict[str, Any]:
    if entry.guard is not None:
        entry.guard(caller)
    return entry.handler(caller, entry.params(method, params))
