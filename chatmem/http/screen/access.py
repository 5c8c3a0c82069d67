"""Who may see and change the Memory screen, and how a refusal looks.

Every request passes the same gate: no `Authorization` header (else 401),
signed in (else the host's login, with a relative `next`), `manage_options`
(else 403), an active licence (else the locked screen), and for anything that
changes state a valid CSRF token (a token proves intent, never authority, so
it is checked *after* the capability). The gate runs before a view touches
the database, so a refused request changes nothing.

Separation of duties (SPEC §9): API tokens are for agents and scripts, and
the screen is where a person approves what agents propose, so a token never
opens it, whatever its user may do. A request that carries an Authorization
header is judged by that header alone, and here it can only be refused: the
check comes before the user is looked at, so it holds even when the host
has a flask-login `request_loader` that turns tokens into logins, and a
cookie sent alongside never rescues it. The token is not even checked: a
valid one, a revoked one and junk get the same 401.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from flask import current_app, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import validate_csrf
from wtforms import ValidationError

from ...core import current_memory
from ...errors import ChatmemError, Forbidden, Unauthorized, headers_for
from ...memory import lanes
from ..errors import http_error

CAPABILITY = "manage_options"
F = TypeVar("F", bound=Callable[..., ResponseReturnValue])


def current_user() -> Any:
    """The signed-in user, or None (also when the host has no flask-login)."""
    if getattr(current_app, "login_manager", None) is None:
        return None
    from flask_login import current_user as proxy

    user = proxy._get_current_object()
    return user if getattr(user, "is_authenticated", False) else None


def wants_json() -> bool:
    """A script (fetch, curl) asked for JSON; a browser form gets a page."""
    if request.is_json:
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


def safe_next(path: str) -> str:
    """A relative path to come back to after login, never another site."""
    parts = urlsplit(path)
    if parts.scheme or parts.netloc or not path.startswith("/") or path.startswith("//"):
        return url_for("chatmem_memory.index")
    return path.replace("\\", "/")


def _login_redirect() -> ResponseReturnValue | None:
    login_manager = getattr(current_app, "login_manager", None)
    view = getattr(login_manager, "login_view", None)
    if not view:
        return None
    from flask_login import login_url

    here = request.full_path.rstrip("?") if request.method == "GET" else None
    target = safe_next(here or url_for("chatmem_memory.index"))
    return redirect(login_url(view, next_url=target))


def refusal(*, changes_state: bool) -> ResponseReturnValue | None:
    """The response that refuses this request, or None when it may proceed."""
    if "Authorization" in request.headers:
        return error_response(
            Unauthorized(
                "The Memory screen takes your browser sign-in, never an API token: "
                "send the request without an Authorization header.",
                details={"reason": "token"},
            )
        )
    user = current_user()
    if user is None:
        if not wants_json():
            to_login = _login_redirect()
            if to_login is not None:
                return to_login
        return error_response(Unauthorized("Sign in to use the Memory screen."))
    if not current_memory().can(user, CAPABILITY):
        return error_response(
            Forbidden(f"The Memory screen needs the {CAPABILITY} capability."), page="refused"
        )
    if not current_memory().licensed():
        locked = Forbidden(
            "Project memory is a Pro feature: activate a Pro licence to use it.",
            details={"reason": "licence"},
        )
        return error_response(locked, page="locked")
    if changes_state:
        try:
            validate_csrf(_csrf_token())
        except ValidationError as error:
            return error_response(
                Forbidden(
                    f"{error} Reload the page and try again.",
                    details={"reason": "csrf"},
                )
            )
    return None


def _csrf_token() -> str | None:
    """The token from the form field or the header fetch() sends (never a JSON body)."""
    return (
        request.form.get("csrf_token")
        or request.headers.get("X-CSRFToken")
        or request.headers.get("X-CSRF-Token")
    )


def admin_only(*, changes_state: bool) -> Callable[[F], F]:
    """Guard a view: capability + licence, and CSRF when it changes state."""

    def decorator(view: F) -> F:
        @wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> ResponseReturnValue:
            refused = refusal(changes_state=changes_state)
            if refused is not None:
                return refused
            return view(*args, **kwargs)

        return cast(F, wrapper)

    return decorator


def error_response(error: ChatmemError, *, page: str = "refused") -> ResponseReturnValue:
    """JSON `{"error": ...}` for scripts, a small page for browsers."""
    headers = headers_for(error)  # Retry-After on a 503, as on every channel
    if wants_json():
        return http_error(error)
    upgrade_url = _upgrade_url() if page == "locked" else None
    html = render_template(f"chatmem/{page}.html", error=error, upgrade_url=upgrade_url)
    return html, error.status, headers


def flash_back(
    message: str, category: str, tab: str, page: Any = None, anchor: str | None = None
) -> ResponseReturnValue:
    """After a form POST: the message, then 303 back to the tab it came from.

    `anchor` (an element id) brings the browser back to the row it acted on,
    rather than to the top of a long list; a form's `lane` back to the lane
    of Pending it came from (one that is not a lane is dropped).
    """
    flash(message, category)
    args: dict[str, Any] = {"tab": tab}
    lane = request.form.get("lane")
    if tab == "pending" and lane in lanes.LANES:
        args["lane"] = lane
    if page and str(page).isdigit() and int(page) > 1:
        args["page"] = int(page)
    if anchor:
        args["_anchor"] = anchor
    return redirect(url_for("chatmem_memory.index", **args), code=303)


def _upgrade_url() -> str | None:
    """CHATMEM_UPGRADE_URL when it is a web or relative address (never javascript:)."""
    url = current_memory().settings.screen.upgrade_url.strip()
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") or (url.startswith("/") and not url.startswith("//")):
        return url
    return None
