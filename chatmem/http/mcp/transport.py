"""The MCP endpoint: Streamable HTTP on plain Flask, JSON answers only.

One POST carries one JSON-RPC message. Requests whose `MCP-Protocol-Version`
header names the 2026-07-28 revision (or that call `server/discover`) take
the stateless path with its `_meta` envelope and header checks; everything
else is the `initialize` handshake era with `Mcp-Session-Id`. Every tool call
goes through `memory.call_tool(..., channel="mcp")`.

Checked before anything is parsed, in this order: the Host header (421) and
the Origin header (403), both in `security.py`; a GET outside a handshake
session (405; a session's GET is its notification stream, `subscriptions.py`); the bearer token
(401, never a cookie); the per-token rate limit (429); the body size (413).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from flask import Blueprint, Response, request

from ... import inputs
from ...auth.token_check import Bearer, authenticate
from ...core import current_memory
from ...errors import ChatmemError
from ...inputs import NotJson
from ..bearer import bearer, exempt_from_csrf, read_body
from ..errors import add_error_headers, method_not_allowed, server_failure
from . import encoding, protocol, rpc, security, subscriptions
from . import sessions as mcp_sessions
from . import tasks as mcp_tasks
from .rpc import RpcError

mcp = Blueprint("chatmem_mcp", __name__)
mcp.record_once(lambda state: exempt_from_csrf(state.app, mcp))


def _json(body: Any, status: int, headers: Mapping[str, str] | None = None) -> Response:
    return Response(
        encoding.to_bytes(body), status=status, mimetype="application/json", headers=headers
    )


def rpc_error(request_id: Any, error: RpcError, status: int) -> Response:
    return _json({"jsonrpc": "2.0", "id": request_id, "error": error.to_dict()}, status)


def refusal(error: ChatmemError) -> Response:
    """An HTTP-level refusal (auth, rate, size, host, origin) as a JSON-RPC error body."""
    response = rpc_error(
        None, RpcError(rpc.SERVER_ERROR, error.message, error.to_dict()), error.status
    )
    return add_error_headers(response, error)


# -- the route ------------------------------------------------------------------


@mcp.route("", methods=["GET", "POST", "DELETE"])
def endpoint() -> Response:
    refused = security.refused_request()
    if refused is not None:
        return refusal(refused)
    if request.method == "GET" and not _notification_stream():
        # No stream outside a handshake session: 405 is the answer clients expect.
        return refusal(method_not_allowed(["POST", "DELETE"]))
    try:
        try:
            _prefetch_session()
            who = bearer()
            if request.method == "DELETE":
                return end_session(who)
            if request.method == "GET":
                return notifications(who)
            body = read_body()
        except ChatmemError as error:
            return refusal(error)
        return dispatch(who, body)
    except Exception as error:
        # A JSON-RPC error, never a 500 page: the database down is HTTP 503 (retry
        # later), a bug -32603 with HTTP 200 as the handshake era answers errors.
        failure = server_failure(error, "MCP request")
        if failure.code == "unavailable":
            return refusal(failure)
        return rpc_error(None, RpcError(rpc.INTERNAL_ERROR, "Internal error; it was logged."), 200)


def header(name: str) -> str | None:
    """An MCP header's value without the whitespace around it (RFC 9110 §5.5)."""
    value = request.headers.get(name)
    return None if value is None else value.strip(" \t")


def end_session(who: Bearer) -> Response:
    session_id = header("Mcp-Session-Id")
    if not session_id:
        return rpc_error(None, RpcError(rpc.INVALID_REQUEST, "Mcp-Session-Id is required."), 400)
    try:
        mcp_sessions.resolve(current_memory(), who.user, session_id)
    except mcp_sessions.SessionGone:
        return _session_gone(None)
    current_memory().end_session(session_id)
    return Response(status=204)


def _notification_stream() -> bool:
    """A GET is a handshake-era session's notification stream; 2026-07-28 has no GET."""
    return _session_id_sent()


def _session_id_sent() -> bool:
    """A handshake-era request naming its session, which is then checked on every call."""
    return bool(header("Mcp-Session-Id")) and (
        header("MCP-Protocol-Version") not in rpc.MODERN_VERSIONS
    )


def _prefetch_session() -> None:
    """The state row and the session the call will use in one read, when a bearer token
    was sent: the token check reads the state, and the call its session (the one named
    by `Mcp-Session-Id`, or else the one its token's calls are grouped in)."""
    scheme, _, plain = (request.headers.get("Authorization") or "").strip().partition(" ")
    if scheme.lower() != "bearer":
        return
    if _session_id_sent():
        mcp_sessions.prefetch(current_memory(), header("Mcp-Session-Id") or "")
    elif request.method == "POST":
        mcp_sessions.prefetch_keyed(current_memory(), plain.strip())


def notifications(who: Bearer) -> Response:
    session_id = header("Mcp-Session-Id") or ""
    try:
        mcp_sessions.resolve(current_memory(), who.user, session_id)
    except mcp_sessions.SessionGone:
        return _session_gone(None)
    caller = rpc.Caller(
        memory=current_memory(),
        user=who.user,
        modern=False,
        session_id=session_id,
        read_only=who.read_only,
    )
    return subscriptions.poll(caller, session_id)


def _session_gone(request_id: Any) -> Response:
    return rpc_error(
        request_id, RpcError(rpc.SESSION_NOT_FOUND, "Session not found; initialize again."), 404
    )


class _Refused(Exception):
    """A message the transport answers itself, before any method runs."""

    def __init__(self, response: Response) -> None:
        self.response = response


def dispatch(who: Bearer, body: bytes) -> Response:
    """One JSON-RPC message: checked, placed in its era, answered."""
    try:
        message = _message(body)
        method, version = message["method"], header("MCP-Protocol-Version")
        modern = _is_modern(method, version)
        if "id" not in message:  # a notification: accepted, nothing to answer
            if modern and version not in rpc.MODERN_VERSIONS:
                return rpc_error(None, rpc.unsupported_version(version), 400)
            return Response(status=202)
        request_id, params = _request_id_and_params(message)
    except _Refused as refused:
        return refused.response
    if modern:
        return _modern(who, request_id, method, params, version)
    return _handshake(who, request_id, method, params)


def _message(body: bytes) -> dict[str, Any]:
    """The body as one JSON-RPC 2.0 message (a dict with a string `method`), or _Refused."""
    try:
        # Bounded parse only: a tool call's argument values (NUL, 2^63...) are
        # the dispatcher's to refuse, as a tool result the model can read.
        message = inputs.parse_json(body, values=False)
    except NotJson as error:
        not_json = error.details.get("reason") == "not_json"
        message_text = "the body is not JSON." if not_json else error.message
        raise _Refused(
            rpc_error(None, RpcError(rpc.PARSE_ERROR, f"Parse error: {message_text}"), 400)
        ) from None
    if not isinstance(message, dict):
        raise _Refused(
            rpc_error(
                None,
                RpcError(
                    rpc.INVALID_REQUEST, "Send one JSON-RPC message per request (no batches)."
                ),
                400,
            )
        )
    if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        raise _Refused(
            rpc_error(
                message.get("id") if _valid_id(message.get("id")) else None,
                RpcError(rpc.INVALID_REQUEST, "Not a JSON-RPC 2.0 request or notification."),
                400,
            )
        )
    return message


def _is_modern(method: str, version: str | None) -> bool:
    """Whether the message takes the 2026-07-28 (stateless) path.

    A version from no era we know takes the stateless path, which says so
    (-32022); only `initialize` ignores one (older clients send any). A request
    declaring 2026-07-28 is that era's, `initialize` included: it has none.
    """
    unplaced = version is not None and version not in rpc.ALL_VERSIONS
    return (
        method == "server/discover"
        or version in rpc.MODERN_VERSIONS
        or (unplaced and method != "initialize")
    )


def _request_id_and_params(message: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    request_id = message["id"]
    if not _valid_id(request_id):
        raise _Refused(
            rpc_error(None, RpcError(rpc.INVALID_REQUEST, "id must be a string or number."), 400)
        )
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise _Refused(
            rpc_error(request_id, RpcError(rpc.INVALID_REQUEST, "params must be an object."), 400)
        )
    return request_id, params


def _valid_id(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _handshake(who: Bearer, request_id: Any, method: str, params: dict[str, Any]) -> Response:
    mem = current_memory()
    # `initialize` starts a session, so it ignores any it is sent.
    session_id = None if method == "initialize" else header("Mcp-Session-Id") or None
    if session_id:
        try:
            mcp_sessions.resolve(mem, who.user, session_id)
        except mcp_sessions.SessionGone:
            return _session_gone(request_id)
    caller = rpc.Caller(
        memory=mem,
        user=who.user,
        modern=False,
        session_id=session_id,
        session_key=None if session_id else mcp_sessions.token_key(who.token_id),
        read_only=who.read_only,
        tasks=mcp_tasks.SESSION if header("MCP-Protocol-Version") == mcp_tasks.VERSION else None,
    )
    try:
        result = protocol.handle(caller, method, params)
    except RpcError as error:
        return rpc_error(request_id, error, error.status or 200)
    headers = {}
    if method == "initialize":
        started = mem.start_session(who.user, "mcp")
        headers = {"Mcp-Session-Id": started} if started else {}
    return _json({"jsonrpc": "2.0", "id": request_id, "result": result}, 200, headers)


def _modern(
    who: Bearer, request_id: Any, method: str, params: dict[str, Any], version: str | None
) -> Response:
    try:
        if method in rpc.HANDSHAKE_ONLY_METHODS and version in rpc.MODERN_VERSIONS:
            # Removed in 2026-07-28: not found, whatever the envelope says.
            raise RpcError(
                rpc.METHOD_NOT_FOUND,
                f"Method not found: {method} is not part of protocol revision {version}.",
            )
        _check_envelope(method, params, version)
        caller = rpc.Caller(
            memory=current_memory(),
            user=who.user,
            modern=True,
            session_key=mcp_sessions.token_key(who.token_id),
            read_only=who.read_only,
            tasks=mcp_tasks.offered_to(params),
        )
        if method == subscriptions.LISTEN:  # its answer is a stream, not one result
            return subscriptions.listen(caller, request_id, params, _token_still_valid)
        result = protocol.handle(caller, method, params)
    except RpcError as error:
        return rpc_error(request_id, error, error.status or rpc.MODERN_STATUS.get(error.code, 200))
    return _json({"jsonrpc": "2.0", "id": request_id, "result": result}, 200)


def _token_still_valid() -> object:
    """The request's token checked again, uncharged (a stream's checks are not requests)."""
    return authenticate(current_memory(), request.headers.get("Authorization"))


def _check_envelope(method: str, params: dict[str, Any], version: str | None) -> None:
    """The 2026-07-28 ladder: `_meta` envelope, routing headers, then the version."""
    meta = params.get("_meta")
    if not isinstance(meta, dict) or any(
        key not in meta for key in (rpc.META_VERSION, rpc.META_CAPABILITIES)
    ):
        if version is not None and version not in rpc.MODERN_VERSIONS:
            # No envelope and a version from no era we know: say which versions we speak.
            raise rpc.unsupported_version(version)
        raise RpcError(
            rpc.INVALID_PARAMS,
            f"params._meta must carry {rpc.META_VERSION!r} and {rpc.META_CAPABILITIES!r}.",
        )
    if version is None or version != meta[rpc.META_VERSION]:
        raise RpcError(
            rpc.HEADER_MISMATCH, "MCP-Protocol-Version does not match params._meta's version."
        )
    if header("Mcp-Method") != method:
        raise RpcError(rpc.HEADER_MISMATCH, "Mcp-Method does not match the request's method.")
    name = params.get("name")
    if method == "tools/call" and name is not None and _decode_header(header("Mcp-Name")) != name:
        raise RpcError(rpc.HEADER_MISMATCH, "Mcp-Name does not match params.name.")
    if version not in rpc.MODERN_VERSIONS:
        raise rpc.unsupported_version(version)


def _decode_header(value: str | None) -> str | None:
    """Undo the `=?base64?...?=` wrapping clients use for non-ASCII header values."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
