"""The chat JSON API the chat page itself uses, which scripts may call with a token.

It takes the session cookie plus an `X-CSRFToken` header (Flask-WTF's
CSRFProtect guards every POST in the app), or an API token judged alone
(`api_login`). Either way the caller sees only their own conversations.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flask import g, jsonify, request
from flask_login import current_user
from sqlalchemy import select

from chatmem import InvalidParams, NotFound, Unauthorized
from chatmem.auth.admission import admit, admit_signed_in
from chatmem.inputs import parse_json
from chatmem.permissions import user_id_of

from .. import chat, conversations, held_calls
from ..extensions import csrf, db, memory
from ..models import Conversation
from .blueprint import API, ID_MAX, bp


def api_login(view: Callable[..., Any]) -> Callable[..., Any]:
    """The chat API's sign-in: an API token judged alone, else the cookie (+ CSRF on POST).

    With an `Authorization` header the header decides: a valid token is its
    user for this request only (no login, no cookie set) and needs no CSRF
    token, because another site's page cannot send that header without a
    CORS preflight this app never grants; anything else is 401, even beside
    a valid session cookie. Without the header: the session cookie, and on a
    POST the page's CSRF token.
    """

    @functools.wraps(view)
    def checked(*args: Any, **kwargs: Any) -> Any:
        authorization = request.headers.get("Authorization")
        if authorization is not None:
            # chatmem's door for tokens: the same check and the same per-token
            # budget as its MCP and REST endpoints, so no channel is a way around it.
            who = admit(memory, authorization)
            g.api_user, g.api_read_only = who.user, who.read_only
        else:
            if not current_user.is_authenticated:
                raise Unauthorized("Log in first (session cookie) or send an API token.")
            if request.method == "POST":
                csrf.protect()
            # The same door's budget, per user: the page is no way around the limit.
            admit_signed_in(memory, user_id_of(current_user))
            g.api_user, g.api_read_only = current_user._get_current_object(), False
        return view(*args, **kwargs)

    return csrf.exempt(checked)  # type: ignore[no-any-return]  # Flask-WTF ships no types


def caller() -> Any:
    """Who this request acts for: the chat API's caller, else the signed-in user."""
    return g.get("api_user") or current_user


@bp.get(API + "conversations")
@api_login
def api_list() -> Any:
    return jsonify({"conversations": [c.to_dict() for c in own_conversations()]})


@bp.post(API + "conversations")
@api_login
def api_create() -> Any:
    conversation = conversations.start_conversation(caller())
    return jsonify(conversation.to_dict()), 201


@bp.get(f"{API}conversations/<int(max={ID_MAX}):conversation_id>")
@api_login
def api_show(conversation_id: int) -> Any:
    conversation = own_conversation(conversation_id)
    body = conversation.to_dict()
    body["messages"] = [m.to_dict() for m in conversations.messages_of(conversation)]
    return jsonify(body)


@bp.post(f"{API}conversations/<int(max={ID_MAX}):conversation_id>/messages")
@api_login
def api_message(conversation_id: int) -> Any:
    conversation = own_conversation(conversation_id)
    # chatmem's bounded parser: deep nesting, NaN, NUL, lone surrogates and
    # 5,000-digit numbers are a 400 here too, never a 500 or a stored row.
    body = parse_json(request.get_data()) if request.is_json else None
    if not isinstance(body, dict):
        raise InvalidParams('Send a JSON object: {"content": "..."}.', details={"field": "content"})
    added = chat.post_message(
        conversation, caller(), body.get("content"), read_only=g.api_read_only
    )
    # The conversation too: its first message titles it, and the page shows the title.
    return jsonify(
        {"messages": [m.to_dict() for m in added], "conversation": conversation.to_dict()}
    ), 201


@bp.get(
    f"{API}conversations/<int(max={ID_MAX}):conversation_id>/held/<int(max={ID_MAX}):message_id>"
)
@api_login
def api_held_state(conversation_id: int, message_id: int) -> Any:
    """Where a held call stands: the "Waiting for approval" card asks."""
    conversation = own_conversation(conversation_id)
    return jsonify(held_calls.approval_state(conversation, caller(), message_id))


@bp.post(
    f"{API}conversations/<int(max={ID_MAX}):conversation_id>/held/<int(max={ID_MAX}):message_id>/run"
)
@api_login
def api_run_now(conversation_id: int, message_id: int) -> Any:
    """Run now: the allowed call, through the same dispatch path."""
    conversation = own_conversation(conversation_id)
    added = held_calls.run_now(conversation, caller(), message_id, read_only=g.api_read_only)
    return jsonify({"messages": [m.to_dict() for m in added]}), 201


@bp.post(f"{API}conversations/<int(max={ID_MAX}):conversation_id>/close")
@api_login
def api_close(conversation_id: int) -> Any:
    conversation = own_conversation(conversation_id)
    record = conversations.close_conversation(conversation)
    body = conversation.to_dict()
    body["digest"] = record.digest if record is not None else None
    body["changes"] = record.change_count if record is not None else 0
    return jsonify(body)


def own_conversation(conversation_id: int) -> Conversation:
    """The user's own conversation; anyone else's looks absent."""
    conversation = db.session.get(Conversation, conversation_id)
    if conversation is None or conversation.user_id != caller().id:
        raise NotFound("No such conversation.", details={"id": conversation_id})
    return conversation


def own_conversations() -> list[Conversation]:
    """The caller's latest 50 conversations, newest first."""
    return list(
        db.session.scalars(
            select(Conversation)
            .where(Conversation.user_id == caller().id)
            .order_by(Conversation.id.desc())
            .limit(50)
        )
    )
