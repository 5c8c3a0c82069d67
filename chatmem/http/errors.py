"""Errors under the prefix's `/api` and `/mcp` answer in JSON, routing failures included.

(And under `/memory`, the Memory screen, when the client asked for JSON.)

`server_failure` is the one mapping from an exception no route handled to
what the client is told: the database down is 503 `unavailable` with
`Retry-After` on every channel, anything else a logged 500.

A URL no rule matches, or a method a rule does not take, fails in Werkzeug's
router before any blueprint is chosen, so a blueprint's error handlers never
see it and Flask answers with an HTML page. A before-request hook sees the
routing failure first (`request.routing_exception`) and answers it in the
surface's own JSON shape: `{"error": {...}}` for REST, a JSON-RPC error for
MCP. Everywhere else (the host's pages) it does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import suppress

from flask import Flask, Response, current_app, jsonify, request
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import MethodNotAllowed, NotFound

from ..errors import ChatmemError, headers_for, outage

log = logging.getLogger("chatmem")

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


def server_failure(error: Exception, where: str) -> ChatmemError:
    """What the client is told about an exception no route handled (`where` labels the log).

    The request's transaction is rolled back first, so nothing is half-done.
    An outage is logged in one line, not a trace per request while it lasts.
    """
    _roll_back()
    unavailable = outage(error)
    if unavailable is not None:
        first_line = next(iter(str(error).splitlines()), "")
        log.warning("%s: the database is unreachable: %s", where, first_line)
        return unavailable
    log.error("%s failed", where, exc_info=error)
    return ChatmemError(
        "Something went wrong on the server; it was logged.", code="internal_error", status=500
    )


def outage_page(error: ChatmemError) -> tuple[str, int, dict[str, str]]:
    """The standalone HTML page for a 503, with its Retry-After.

    Rendered without the app's context processors: a host's (the signed-in
    user, a badge count) would query the very database that is down.
    """
    page = current_app.jinja_env.get_template("chatmem/unavailable.html").render(error=error)
    return page, error.status, headers_for(error)


def _roll_back() -> None:
    # A connection that is gone has nothing left to roll back.
    with suppress(SQLAlchemyError):
        current_app.extensions["chatmem"].memory.db.session.rollback()


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
