"""Memory change notifications: a client is told when a resource it watches changes.

What a resource holds is what `resources/read` would answer it now (its
digest), so an approval, edit, disable or trash is told to the subscribers
of what it changed, and to no one else. The revision and the subscriptions
live in the database: a change made on any worker or host is told within
CHATMEM_MCP_NOTIFY_SECONDS.

- Handshake era: `resources/subscribe` and `resources/unsubscribe` name a
  resource for the `Mcp-Session-Id` session, and the session's GET is its
  stream. A GET holds no server thread: it sends what changed since the
  session was last told, asks the client (`retry:`) to come back after the
  interval, and ends; clients reconnect a stream the server ended.
- 2026-07-28: `subscriptions/listen` is a POST whose answer is the stream:
  the acknowledgment first, then `notifications/resources/updated`, every
  frame tagged with the request's id, and after CHATMEM_MCP_LISTEN_SECONDS
  the listen result, a graceful end (the client listens again). An open
  stream holds a server thread, so a process keeps at most
  CHATMEM_MCP_LISTEN_STREAMS, two per token.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from flask import Response, stream_with_context

from ...errors import ChatmemError, RateLimited
from ...memory import subscriptions, switches
from ...state import request_store
from . import encoding, resources
from .params import ReadParams
from .rpc import INVALID_PARAMS, INVALID_REQUEST, SERVER_ERROR, Caller, RpcError, complete

LISTEN = "subscriptions/listen"
UPDATED = "notifications/resources/updated"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
PER_TOKEN = 2
#: What a resource that can no longer be read holds (trashed, disabled, Memory off).
GONE = "gone"


def read_digest(caller: Caller, uri: str) -> str:
    """The digest of what `resources/read` answers for `uri`; its error if it cannot be read."""
    contents = resources.read(caller, ReadParams(uri=uri))["contents"]
    canonical = json.dumps(contents, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def digest(caller: Caller, uri: str) -> str:
    try:
        return read_digest(caller, uri)
    except RpcError:
        return GONE


def updated(uri: str, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"uri": uri}
    if meta:
        params["_meta"] = dict(meta)
    return {"jsonrpc": "2.0", "method": UPDATED, "params": params}


def frame(message: Mapping[str, Any]) -> str:
    return f"event: message\ndata: {encoding.to_bytes(message).decode('utf-8')}\n\n"


def _stream(body: Any) -> Response:
    return Response(
        body,
        mimetype="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


# -- the handshake era -------------------------------------------------------------


def _session_of(caller: Caller) -> str:
    if not caller.session_id:
        raise RpcError(
            INVALID_REQUEST,
            "Subscribing needs an Mcp-Session-Id session: notifications go on its GET stream.",
        )
    return caller.session_id


def subscribe(caller: Caller, params: ReadParams) -> dict[str, Any]:
    """`resources/subscribe`: watch a resource the caller may read, from what it holds now."""
    session_id = _session_of(caller)
    seen = read_digest(caller, params.uri)
    db = caller.memory.db.session()
    try:
        subscriptions.add(db, session_id, params.uri, seen)
    except subscriptions.TooMany:
        db.rollback()
        raise RateLimited(
            f"A session watches at most {subscriptions.MAX_PER_SESSION} resources.",
            details={"limit": subscriptions.MAX_PER_SESSION},
        ) from None
    db.commit()
    return complete(caller, {})


def unsubscribe(caller: Caller, params: ReadParams) -> dict[str, Any]:
    db = caller.memory.db.session()
    subscriptions.remove(db, _session_of(caller), params.uri)
    db.commit()
    return complete(caller, {})


def poll(caller: Caller, session_id: str) -> Response:
    """A session's GET: what changed since it was last told, then come back after the interval."""
    db = caller.memory.db.session()
    told = []
    try:
        resources.may_read(caller)
        watched = subscriptions.watched(db, session_id)
    except ChatmemError:
        watched = []  # no longer allowed to read memory: told nothing
    for row in watched:
        now = digest(caller, row.uri)
        if now != row.seen and subscriptions.move_seen(db, row, now):
            told.append(row.uri)
    db.commit()
    retry_ms = round(caller.memory.settings.mcp.notify_seconds * 1000)
    return _stream("".join(frame(updated(uri)) for uri in told) + f"retry: {retry_ms}\n\n")


# -- 2026-07-28 --------------------------------------------------------------------


@dataclass(frozen=True)
class ListenParams:
    """`subscriptions/listen`: the resources to watch (the other kinds are never sent)."""

    uris: tuple[str, ...]

    @classmethod
    def parse(cls, params: Mapping[str, Any]) -> ListenParams:
        wanted = params.get("notifications")
        if not isinstance(wanted, dict):
            raise RpcError(INVALID_PARAMS, "params.notifications must be an object.")
        uris = wanted.get("resourceSubscriptions") or []
        if not isinstance(uris, list) or not all(isinstance(u, str) and u for u in uris):
            raise RpcError(
                INVALID_PARAMS, "notifications.resourceSubscriptions must be a list of URIs."
            )
        if len(uris) > subscriptions.MAX_PER_SESSION:
            raise RpcError(
                INVALID_PARAMS,
                f"A stream watches at most {subscriptions.MAX_PER_SESSION} resources.",
            )
        return cls(uris=tuple(dict.fromkeys(uris)))


class _Streams:
    """The listen streams this process holds open, per token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: Counter[str] = Counter()

    def take(self, key: str, limit: int) -> None:
        with self._lock:
            if self._open.total() >= limit or self._open[key] >= PER_TOKEN:
                raise RateLimited(
                    "Too many subscription streams are open; close one or listen again later.",
                    details={"limit": min(limit, PER_TOKEN)},
                )
            self._open[key] += 1

    def release(self, key: str) -> None:
        with self._lock:
            self._open[key] -= 1

    def count(self) -> int:
        with self._lock:
            return self._open.total()


STREAMS = _Streams()


def listen(
    caller: Caller, request_id: Any, params: Mapping[str, Any], admitted: Callable[[], object]
) -> Response:
    """`subscriptions/listen`: checked like a read, then the stream (RpcError before it).

    `admitted` checks the request's token again (ChatmemError once it is revoked
    or expired): at each check, so does the stream, and it ends when either fails.
    """
    try:
        resources.may_read(caller)
        uris = ListenParams.parse(params).uris
        seen = {uri: read_digest(caller, uri) for uri in uris}
        settings = caller.memory.settings.mcp
        key = caller.session_key or ""
        STREAMS.take(key, settings.listen_streams)
    except ChatmemError as error:
        raise RpcError(SERVER_ERROR, error.message, error.to_dict(), status=error.status) from None
    meta = {SUBSCRIPTION_ID: request_id}
    honored = {"resourceSubscriptions": list(uris)} if uris else {}
    db = caller.memory.db.session()
    db.close()  # hold no connection between checks

    def frames() -> Iterator[str]:
        acknowledged = {"notifications": honored, "_meta": meta}
        yield frame({"jsonrpc": "2.0", "method": ACKNOWLEDGED, "params": acknowledged})
        deadline = time.monotonic() + settings.listen_seconds
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(settings.notify_seconds, left))
            switches.forget(request_store())  # read the revision and the token again
            try:
                admitted()
                resources.may_read(caller)
            except ChatmemError:
                break
            for uri in uris:
                now = digest(caller, uri)
                if now != seen[uri]:
                    seen[uri] = now
                    yield frame(updated(uri, meta))
            db.close()
            # A comment each check: the only way a WSGI server learns the client left.
            yield ":\n\n"
        ended = {"_meta": meta, "resultType": "complete"}
        yield frame({"jsonrpc": "2.0", "id": request_id, "result": ended})

    response = _stream(stream_with_context(frames()))
    # The server closes every response, read or not, the client gone or not.
    response.call_on_close(lambda: STREAMS.release(key))
    return response
