"""The demo's pages: the chat, the Connect page with the user's own API tokens, notices.

Pages take the browser sign-in only (`blueprint`); the chat page draws the
conversation that the chat API (`chat_api`) then carries on.
"""

from __future__ import annotations

from typing import Any

from flask import Response, current_app, flash, redirect, render_template, request, url_for
from flask_login import current_user, login_required

from chatmem import ChatmemError, Forbidden, NotFound
from chatmem.auth import tokens
from chatmem.inputs import form_boolean
from chatmem.memory.models import ApiToken
from chatmem.permissions import user_id_of

from .. import conversations, notices
from ..connect import mcp_configs
from ..extensions import db, memory
from .blueprint import API, ID_MAX, bp
from .chat_api import own_conversation, own_conversations
from .signin import safe_next


@bp.get("/")
def index() -> Any:
    return redirect(url_for("demo.chat_page"))


@bp.get("/favicon.ico")
def favicon() -> Any:
    """Browsers ask for /favicon.ico on every page (the Memory screen's too): no 404s."""
    return current_app.send_static_file("favicon.svg")


@bp.get("/chat")
@bp.get(f"/chat/<int(max={ID_MAX}):conversation_id>")
@login_required
def chat_page(conversation_id: int | None = None) -> Any:
    conversation = own_conversation(conversation_id) if conversation_id is not None else None
    data: dict[str, Any] = {"conversation": None, "messages": []}
    if conversation is not None:
        data["conversation"] = conversation.to_dict()
        data["messages"] = [m.to_dict() for m in conversations.messages_of(conversation)]
        if not memory.can(current_user, "manage_options"):
            data["conversation"].pop("system_context")
    return render_template(
        "demo/chat.html",
        conversations=own_conversations(),
        conversation=conversation,
        data=data,
        provider=memory.settings.provider.name,
    )


@bp.get("/connect")
@login_required
def connect() -> Any:
    """Where an MCP client or a script connects, and the user's own API tokens."""
    return _connect_page()


@bp.post("/connect/tokens")
@login_required
def create_token() -> Any:
    """Make a token for the signed-in user: shown in this answer only, never again.

    The page is rendered here rather than after a redirect, so the plain
    token never travels through the session cookie or a second request.
    """
    form = request.form
    try:
        token, plain = tokens.issue(
            memory,
            current_user._get_current_object(),
            name=form.get("name", ""),
            expires_in=tokens.expires_in_days(form.get("expires_days")),
            read_only=form_boolean(form, "read_only"),
        )
    except ChatmemError as error:
        db.session.rollback()
        return _connect_page(error=error, form=form), error.status
    return _connect_page(created=token, plain=plain), 201


@bp.post(f"/connect/tokens/<int(max={ID_MAX}):token_id>/revoke")
@login_required
def revoke_token(token_id: int) -> Any:
    """Revoke one of the user's own tokens (anyone else's is 404, as if absent)."""
    user = current_user._get_current_object()
    token = tokens.revoke(
        memory.db.session(), token_id, owner_id=user_id_of(user), actor_id=user_id_of(user)
    )
    flash(f"Revoked token “{token.name}” ({token.prefix}…): it no longer works.")
    return redirect(url_for("demo.connect"), code=303)


def _connect_page(
    *,
    created: ApiToken | None = None,
    plain: str | None = None,
    error: ChatmemError | None = None,
    form: Any = None,
) -> Response:
    prefix = memory.settings.url_prefix.rstrip("/")
    mounted = {rule.rule for rule in current_app.url_map.iter_rules()}
    root = request.host_url.rstrip("/")
    mcp_url = f"{root}{prefix}/mcp"
    own = tokens.list_tokens(memory.db.session(), user_id=user_id_of(current_user))
    page = render_template(
        "demo/connect.html",
        mcp_url=mcp_url,
        mcp_mounted=f"{prefix}/mcp" in mounted,
        rest_url=f"{root}{prefix}/api/tools/<name>",
        chat_api=f"{root}{API}conversations",
        tokens=list(reversed(own)),
        token_state=tokens.state_of,
        created=created,
        plain=plain,
        error=error,
        form=form or {},
        configs=mcp_configs(mcp_url, plain),
        expires_days_max=tokens.EXPIRES_DAYS_MAX,
        name_max=tokens.NAME_MAX,
    )
    response = Response(page)
    # It may hold a token shown once: no cache keeps a copy.
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post(f"/notices/<int(max={ID_MAX}):notice_id>/dismiss")
@login_required
def dismiss_notice(notice_id: int) -> Any:
    """A curator hides one "waiting for you" line; the item stays in its queue."""
    if not memory.can(current_user, "manage_options"):
        raise Forbidden("Only a curator sees and dismisses these notices.")
    if not notices.dismiss(notice_id):
        raise NotFound("No such notice: it was dismissed already.")
    return redirect(safe_next(request.form.get("next")), code=303)
