"""What the demo answers when a request fails: JSON on the chat API, a page elsewhere.

Errors on the API are `{"error": {...}}` with chatmem's stable codes;
nothing here answers with a stack trace. `http_exception`, `server_error`
and `throttle_down` are registered app-wide by `create_app`.
"""

from __future__ import annotations

from typing import Any

from flask import redirect, render_template, request, url_for
from flask_wtf.csrf import CSRFError
from limits.errors import StorageError
from werkzeug.exceptions import HTTPException

from chatmem import ChatmemError, Forbidden, NotFound, PayloadTooLarge, Unauthorized
from chatmem.auth.ratelimit import store_unreachable
from chatmem.errors import headers_for
from chatmem.http.errors import http_error as json_error
from chatmem.http.errors import outage_page, server_failure

from ..extensions import login_manager
from .blueprint import bp, wants_json


@bp.errorhandler(ChatmemError)
def _chatmem_error(error: ChatmemError) -> Any:
    if wants_json():
        return json_error(error)
    return render_template("demo/error.html", message=error.message), error.status


@bp.errorhandler(CSRFError)
def _csrf_error(error: CSRFError) -> Any:
    message = "The page's security token is missing or expired: reload the page and try again."
    if wants_json():
        return json_error(Forbidden(message, details={"reason": "csrf"}))
    return render_template("demo/error.html", message=message), 400


def http_exception(error: HTTPException) -> Any:
    """App-wide: 404/405/413/500 as JSON on the API, a plain page elsewhere."""
    if error.response is not None:
        return error.response  # made for this error already (the sign-in throttle's page)
    status = error.code or 500
    if status == 413:
        mapped: ChatmemError = PayloadTooLarge("The request body is too large.")
    elif status == 404:
        mapped = NotFound("Nothing here.")
    else:
        mapped = ChatmemError(
            error.description or "Request failed.", code="http_error", status=status
        )
    # Keep what the status needs (Allow on a 405), whichever body answers.
    headers = {k: v for k, v in error.get_headers() if k in ("Allow", "Retry-After")}
    if wants_json():
        response = json_error(mapped)
        response.headers.update(headers)
        return response
    return render_template("demo/error.html", message=mapped.message), status, headers


def server_error(error: Exception) -> Any:
    """App-wide: chatmem's one mapping, so the database down is 503 `unavailable` here too."""
    failure = server_failure(error, "demo request")
    if wants_json():
        return json_error(failure)
    if failure.status == 503:
        return outage_page(failure)  # chatmem's: the demo's layout needs the database
    message = "Something went wrong on our side; it was logged."
    return render_template("demo/error.html", message=message), 500


def throttle_down(error: StorageError) -> Any:
    """The sign-in throttle's store cannot be reached: 503, as chatmem's own budgets answer.

    Failing open would make the throttle no throttle; a 500 would say it is our bug.
    """
    failure = store_unreachable(error.storage_error)
    if wants_json():
        return json_error(failure)
    page = render_template("demo/login.html", error=failure.message)
    return page, failure.status, headers_for(failure)


@login_manager.unauthorized_handler
def _unauthorized() -> Any:
    if wants_json():
        return json_error(Unauthorized("Log in first (session cookie)."))
    return redirect(url_for("demo.login", next=request.full_path.rstrip("?")))
