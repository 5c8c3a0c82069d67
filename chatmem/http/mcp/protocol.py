"""MCP's JSON-RPC methods, for both protocol eras, over the one dispatch path.

The HTTP transport (`transport.py`) decides the era and the session;
this module answers `initialize`, `server/discover`, `tools/list`,
`tools/call` and `ping`, and hands the resources and prompts methods to
`mcp_resources`. A tool failure is a *result* with `isError: true`
and the SPEC §11 error in `structuredContent`, so the client's model can
read it and adjust; an unknown tool or malformed params is a JSON-RPC error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ...errors import ChatmemError, NotFound
from ...tools import Tool
from . import resources
from .rpc import (
    ALL_VERSIONS,
    HANDSHAKE_VERSIONS,
    INVALID_PARAMS,
    META_SERVER_INFO,
    METHOD_NOT_FOUND,
    Caller,
    RpcError,
    complete,
    uncached,
)

if TYPE_CHECKING:
    from ...core import MemoryCore


def server_version() -> str:
    try:
        return metadata.version("chatmem")
    except metadata.PackageNotFoundError:
        return "0.1.0"


def capabilities() -> dict[str, Any]:
    return {
        "tools": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
        "prompts": {"listChanged": False},
    }


def initialize(memory: MemoryCore, params: Mapping[str, Any]) -> dict[str, Any]:
    """The handshake result: echo a version we speak, else offer our newest."""
    requested = params.get("protocolVersion")
    version = requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[0]
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": {"name": memory.server_name, "version": server_version()},
    }
    instructions = memory.system_context()
    if instructions:
        result["instructions"] = instructions
    return result


def discover(caller: Caller) -> dict[str, Any]:
    memory = caller.memory
    result: dict[str, Any] = {
        "supportedVersions": list(ALL_VERSIONS),
        "capabilities": capabilities(),
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {META_SERVER_INFO: {"name": memory.server_name, "version": server_version()}},
    }
    instructions = memory.system_context()
    if instructions:
        result["instructions"] = instructions
    return complete(caller, result)


def describe_tool(tool: Tool) -> dict[str, Any]:
    described: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "annotations": tool.annotations(),
    }
    if tool.title:
        described["title"] = tool.title
    if tool.output_schema is not None:
        described["outputSchema"] = tool.output_schema
    return described


def list_tools(caller: Caller, params: Mapping[str, Any]) -> dict[str, Any]:
    if params.get("cursor") is not None:
        # Every tool fits on one page, so no cursor we could have issued exists.
        raise RpcError(INVALID_PARAMS, "Invalid cursor: tools/list has a single page.")
    visible = caller.memory.visible_tools(caller.user, read_only=caller.read_only)
    tools = [describe_tool(t) for t in visible]
    return uncached(caller, {"tools": tools})


def tool_result(payload: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": json.dumps(payload, ensure_ascii=False)}],
        "structuredContent": payload,
        "isError": is_error,
    }


def call_tool(caller: Caller, params: Mapping[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str) or not name:
        raise RpcError(INVALID_PARAMS, "params.name must be the name of a tool.")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise RpcError(INVALID_PARAMS, "params.arguments must be an object.")
    try:
        result = caller.memory.call_tool(
            name,
            arguments,
            user=caller.user,
            session_id=caller.session_id,
            session_key=caller.session_key,
            channel="mcp",
            read_only=caller.read_only,
        )
    except NotFound as error:
        if error.details.get("tool") == name:  # MCP: an unknown tool is a protocol error
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}") from None
        return complete(caller, tool_result({"error": error.to_dict()}, is_error=True))
    except ChatmemError as error:
        return complete(caller, tool_result({"error": error.to_dict()}, is_error=True))
    return complete(caller, tool_result(result, is_error=False))


def handle(caller: Caller, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Answer one request (not `initialize`, which the transport owns with its session)."""
    if method == "ping":
        return complete(caller, {})
    if method == "tools/list":
        return list_tools(caller, params)
    if method == "tools/call":
        return call_tool(caller, params)
    if method == "server/discover" and caller.modern:
        return discover(caller)
    answer = resources.handle(caller, method, params)
    if answer is not None:
        return answer
    raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
