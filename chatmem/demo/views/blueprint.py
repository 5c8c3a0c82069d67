"""The demo's blueprint and what holds for every route of it.

Pages take the session cookie only: a request to one that carries an
`Authorization` header is refused. The chat API, under `API`, takes an API
token too (`chat_api.api_login`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, request
from flask_login import current_user

from chatmem import Unauthorized

from .. import notices
from ..extensions import memory

bp = Blueprint("demo", __name__)
API = "/chat/api/"
ID_MAX = 2**31 - 1  # the id column's range: a larger id in a URL is simply not found


def wants_json() -> bool:
    """The chat API answers in JSON; everything else is a page."""
    return request.path.startswith(API)


@bp.before_request
def _pages_take_no_tokens() -> None:
    """A token is for the chat API (and chatmem's MCP and REST), never a page login."""
    if "Authorization" in request.headers and not request.path.startswith(API):
        raise Unauthorized(
            "Pages take the browser sign-in; API tokens are for the chat API, MCP and REST."
        )


@bp.app_context_processor
def _navigation() -> dict[str, Any]:
    prefix = memory.settings.url_prefix.rstrip("/")
    is_admin = memory.can(current_user, "manage_options")
    pending = memory.pending_count() if is_admin else None
    return {
        "memory_url": f"{prefix}/memory",
        "pending_count": pending,
        "curator_notices": notices.recent() if is_admin and pending else [],
        "is_admin": is_admin,
    }
