"""The Memory screen's blueprint and what holds for every page and action on it:
the tab names, who acts, the answers to a CSRF refusal and to the database
being down, the response headers, and what the layout and the host's
navigation are given.

The pages (`pages`), actions (`actions`), export and import (`transfer`),
tokens (`tokens`), waiting calls (`held`), review desk (`desk`) and upkeep
(`upkeep`) all hang their routes off `bp`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.wrappers import Response

from ...core import current_memory
from ...csp import policy, used_nonce
from ...errors import Forbidden, outage
from ...memory import listing
from ...permissions import user_id_of
from ..errors import outage_page, server_failure
from . import navigation
from .access import current_user, error_response, wants_json

bp = Blueprint(
    "chatmem_memory",
    __name__,
    template_folder="../../templates",
    static_folder="../../static/chatmem",
    static_url_path="/static",
)

ID_MAX = 2**31 - 1  # the id column's range: a larger id in a URL is simply not found
# The guidance tabs, calls waiting for approval, then every user's API tokens
# (listed and revoked here, made elsewhere).
TABS = (*listing.TABS, "waiting", "tokens")


def known_tab(tab: str) -> str:
    """A tab named by a form or URL, or Pending: an unknown name never reaches a template."""
    return tab if tab in TABS else "pending"


def actor_id() -> str:
    """The signed-in curator, as the audit trail names them."""
    return user_id_of(current_user())


@bp.errorhandler(CSRFError)
def _csrf_failed(error: CSRFError) -> ResponseReturnValue:
    """The host's CSRFProtect refused first: answer like our own check (JSON to scripts)."""
    return error_response(
        Forbidden(f"{error.description} Reload the page and try again.", details={"reason": "csrf"})
    )


@bp.errorhandler(SQLAlchemyError)
def _database_failed(error: SQLAlchemyError) -> ResponseReturnValue:
    """The database down: a clear page (JSON to scripts), 503 with Retry-After."""
    if outage(error) is None:
        raise error  # a bug, not an outage: the host's own 500 handling, as before
    failure = server_failure(error, "Memory screen")
    return error_response(failure) if wants_json() else outage_page(failure)


@bp.after_request
def _headers(response: Response) -> Response:
    """Pages carry CSRF tokens and agent-written text: never cache, never frame."""
    if request.endpoint != "chatmem_memory.static":
        response.headers.setdefault("Cache-Control", "no-store")
        memory = current_memory()
        base = memory.settings.screen.csp
        if base:
            csp = policy(base, memory.settings.screen.host_sources, used_nonce())
            response.headers.setdefault("Content-Security-Policy", csp)
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    response.headers.setdefault("Referrer-Policy", "same-origin")
    return response


@bp.context_processor
def _layout() -> dict[str, Any]:
    """The layout the screen's pages extend (the host's hook, else CHATMEM_BASE_TEMPLATE),
    and what the host's `screen_context` says its layout needs."""
    memory = current_memory()
    chosen = memory.base_template_hook() if memory.base_template_hook is not None else None
    extra = dict(memory.screen_context_hook()) if memory.screen_context_hook is not None else {}
    return {**extra, "chatmem_base": chosen or memory.settings.screen.base_template}


@bp.app_context_processor
def _navigation() -> dict[str, Any]:
    """For the host's navigation: the badge count (queried only when called) and the link."""

    def chatmem_pending_count() -> int:
        return navigation.pending_count()  # 0, never an error, on a host page

    def chatmem_memory_url(**params: Any) -> str:
        return navigation.memory_url(**params)

    return {
        "chatmem_pending_count": chatmem_pending_count,
        "chatmem_memory_url": chatmem_memory_url,
    }
