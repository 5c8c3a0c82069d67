"""The JSON-RPC vocabulary the MCP modules share: protocol versions, error
codes, the error itself, and one request's caller.

Kept apart so that `protocol` (the method table, tools, the handshake),
`params` and `resources` (resources, prompts) all build on it without
importing each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...identity import HostUser

if TYPE_CHECKING:
    from ...core import MemoryCore

HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
MODERN_VERSIONS = ("2026-07-28",)
ALL_VERSIONS = (*MODERN_VERSIONS, *HANDSHAKE_VERSIONS)
# Methods 2026-07-28 removed: a request declaring that revision gets -32601 for them.
HANDSHAKE_ONLY_METHODS = ("initialize", "ping", "resources/subscribe", "resources/unsubscribe")

META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_ERROR = -32000  # an HTTP-level refusal; data.code holds the SPEC §11 code
SESSION_NOT_FOUND = -32001
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021  # the request needs a capability (an extension) it did not declare
UNSUPPORTED_VERSION = -32022

# The 2026-07-28 transport's status for a JSON-RPC error (the handshake era answers 200).
MODERN_STATUS = {
    PARSE_ERROR: 400,
    INVALID_REQUEST: 400,
    INVALID_PARAMS: 400,
    HEADER_MISMATCH: 400,
    MISSING_CAPABILITY: 400,
    UNSUPPORTED_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


class RpcError(Exception):
    """A JSON-RPC error; `status` is the HTTP status when the era fixes one."""

    def __init__(
        self, code: int, message: str, data: Any = None, *, status: int | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
        self.status = status

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


def unsupported_version(requested: Any) -> RpcError:
    return RpcError(
        UNSUPPORTED_VERSION,
        "Unsupported protocol version",
        {"supported": list(ALL_VERSIONS), "requested": requested},
        status=400,
    )


@dataclass
class Caller:
    """One request's view: which era, who, and how to find its session."""

    memory: MemoryCore
    user: HostUser
    modern: bool
    # The handshake-era session, or the key the dispatcher groups a token's calls by.
    session_id: str | None = None
    session_key: str | None = None
    read_only: bool = False  # a read-only token: read-only tools only
    # MCP tasks offered (tasks.py): "session", a 2025-11-25 session; "extension", a
    # 2026-07-28 request declaring io.modelcontextprotocol/tasks; None: neither.
    tasks: str | None = None

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool call through the one dispatch path, as this caller, on the MCP channel."""
        return self.memory.call_tool(
            name,
            arguments,
            user=self.user,
            session_id=self.session_id,
            session_key=self.session_key,
            channel="mcp",
            read_only=self.read_only,
        )


def complete(caller: Caller, result: dict[str, Any]) -> dict[str, Any]:
    """2026-07-28 results carry `resultType`; older peers ignore it, so only add it there."""
    return {**result, "resultType": "complete"} if caller.modern else result


#: The resource, template and prompt lists name what chatmem serves: only a new
#: release changes them, and they are the same for everyone.
LISTS_TTL_MS = 3_600_000


def cached(
    caller: Caller, result: dict[str, Any], ttl_ms: int, scope: str = "private"
) -> dict[str, Any]:
    """A list or read result, completed; 2026-07-28 clients are told how long to keep it."""
    if caller.modern:
        result = {**result, "ttlMs": ttl_ms, "cacheScope": scope}
    return complete(caller, result)


def memory_ttl_ms(caller: Caller) -> int:
    """How long a client may keep an answer that follows the memory.

    RFC 9111's heuristic freshness: a tenth of the time since the memory last
    changed (memory that changed a minute ago may change again soon; memory
    untouched for a day rarely does), and at most one notification interval,
    within which a subscriber is told of a change anyway.
    """
    memory = caller.memory
    return int(min(memory.memory_age() / 10, memory.settings.mcp.notify_seconds) * 1000)
