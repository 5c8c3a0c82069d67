"""One error tree with stable codes, shared by every channel (SPEC §11).

Channels translate a `ChatmemError` to their wire format: REST uses `status`
and `to_dict()`, MCP puts the same dict in a tool result with `isError`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exc


class ChatmemError(Exception):
    """A failure a client can act on: a stable `code`, a message, a status."""

    code = "error"
    status = 400

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details: dict[str, Any] = details or {}

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


def headers_for(error: ChatmemError) -> dict[str, str]:
    """The HTTP headers an error's status calls for, on every channel that answers HTTP."""
    headers: dict[str, str] = {}
    if error.code == "unauthorized":
        headers["WWW-Authenticate"] = 'Bearer realm="chatmem"'
    if "retry_after" in error.details:
        headers["Retry-After"] = str(error.details["retry_after"])
    if error.status == 405 and "allow" in error.details:
        headers["Allow"] = ", ".join(error.details["allow"])
    return headers


class InvalidParams(ChatmemError):
    code, status = "invalid_params", 400


class Unauthorized(ChatmemError):
    code, status = "unauthorized", 401


class Forbidden(ChatmemError):
    code, status = "forbidden", 403


class NotFound(ChatmemError):
    code, status = "not_found", 404


class MemoryDisabled(ChatmemError):
    code, status = "memory_disabled", 403


class BlockedByMemory(ChatmemError):
    code, status = "blocked_by_memory", 403


class ApprovalRequired(ChatmemError):
    """An `ask` guardrail held the call: it waits for a curator (details: request_id)."""

    code, status = "approval_required", 403


class Conflict(ChatmemError):
    code, status = "conflict", 409


class PayloadTooLarge(ChatmemError):
    code, status = "payload_too_large", 413


class RateLimited(ChatmemError):
    code, status = "rate_limited", 429


class ProviderFailed(ChatmemError):
    code, status = "provider_error", 502


# How long a client is told to wait (Retry-After) while the database is down.
RETRY_AFTER_SECONDS = 5


class Unavailable(ChatmemError):
    """The database (or another dependency) cannot be reached: nothing was done, retry later."""

    code, status = "unavailable", 503

    def __init__(self, message: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("details", {"retry_after": RETRY_AFTER_SECONDS})
        super().__init__(
            message
            or "The service is unavailable: its database cannot be reached. "
            f"Nothing was changed; try again in {RETRY_AFTER_SECONDS} seconds.",
            **kwargs,
        )


# Connection-level SQLSTATEs: class 08 (connection exception), and the server
# shutting down or starting up (57P01-57P03).
_OUTAGE_SQLSTATES = ("57P01", "57P02", "57P03")


def outage(error: BaseException) -> Unavailable | None:
    """`error` as `unavailable` when it says the database cannot be reached, else None.

    A wrong query (a missing table, a constraint) is not an outage and stays a
    server fault: only a connection that failed, broke, or could not be had
    from the pool counts.
    """
    if isinstance(error, exc.TimeoutError | exc.DisconnectionError):
        return Unavailable()  # the pool had no connection to give in time
    if not isinstance(error, exc.DBAPIError):
        return None
    sqlstate = str(getattr(error.orig, "sqlstate", None) or "")
    # Refused while connecting: no statement was ever sent.
    refused = error.statement is None and isinstance(
        error, exc.OperationalError | exc.InterfaceError
    )
    if (
        refused
        or error.connection_invalidated  # lost mid-request
        or sqlstate.startswith("08")
        or sqlstate in _OUTAGE_SQLSTATES
    ):
        return Unavailable()
    return None


class ToolFailed(ChatmemError):
    """A host tool raised something that is not a ChatmemError: a host bug.

    The exception is logged server-side; clients only see this message.
    """

    code, status = "tool_error", 500
