"""Errors under the prefix's `/api` and `/mcp` answer in JSON, routing failures included.

(And under `/memory`, the Memory screen, when the client asked for JSON.)

A URL no rule matches, or a method a rule does not take, fails in Werkzeug's
router before any blueprint is chosen, so a blueprint's error handlers never
see it and Flask answers with an HTML page. A before-request hook sees the
routing failure first (`request.routing_exception`) and answers it in the
surface's own JSON shape: `{"error": {...}}` for REST, a JSON-RPC error for
MCP. Everywhere else (the host's pages) it does nothing.
"""

from __future__ import annotations

from collections.abc import Callable

from flask import Flask, Response, jsonify, request
from werkzeug.exceptions import MethodNotAllowed, NotFound

from ..errors import ChatmemError, headers_for

#: How one surface answers an error: a response, or None to leave it to Flask.
Answer = Callable[[ChatmemError], Response | None]


def add_error_headers(response: Response, error: ChatmemError) -> Response:
    """The headers an error's status calls for: WWW-Authenticate, Retry-After, Allow."""
    response.headers.update(headers_for(error))
    return response


def http_error(error: ChatmemError) -> Response:
    """The one JSON error of every chatmem route and a host's JSON API (SPEC §11).

    `{"error": {"code", "message", ...}}` with the error's status and the
    headers it calls for (Allow on 405, Retry-After on 429 and 503).
    """
    response = jsonify({"error": error.to_dict()})
    response.status_code = error.status
    return add_error_headers(response, error)


def method_not_allowed(allowed: list[str]) -> ChatmemError:
    listed = [m for m in allowed if m not in ("HEAD", "OPTIONS")] or allowed
    return ChatmemError(
        f"{request.method} is not allowed here; use {', '.join(listed)}.",
        code="method_not_allowed",
        status=405,
        details={"allow": listed},
    )


def routing_error() -> ChatmemError | None:
    """This request's routing failure as a ChatmemError (None: it was routed)."""
    failure = request.routing_exception
    if isinstance(failure, MethodNotAllowed):
        return method_not_allowed(sorted(failure.valid_methods or ()))
    if isinstance(failure, NotFound):
        return ChatmemError(
            f"Nothing here: {request.path} is no chatmem route.", code="not_found", status=404
        )
    return None  # routed, or a redirect Werkzeug answers itself


def answer_routing_errors(app: Flask, surfaces: dict[str, Answer]) -> None:
    """Answer routing failures under each surface's root (`<prefix>/api`, ...) in its own shape."""

    def hook() -> Response | None:
        if request.routing_exception is None:
            return None
        for root, answer in surfaces.items():
            if request.path == root or request.path.startswith(root + "/"):
                error = routing_error()
                return answer(error) if error is not None else None
        return None

    app.before_request(hook)
