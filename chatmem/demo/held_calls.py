"""A call an `ask` guardrail held, in the chat: its card's state, and Run now.

The held call is a "Waiting for approval" card that polls `approval_state`;
once a curator allows it, **Run now** (`run_now`) runs it again through the
same dispatch path as every call, and the grant is the dispatcher's to honour.
"""

from __future__ import annotations

import secrets
from typing import Any

from chatmem import Conflict, NotFound
from chatmem.providers import ToolCall

from .chat import Turn, call_dict
from .conversations import require_open
from .extensions import db, memory
from .models import ChatMessage, Conversation, User


def held_request(conversation: Conversation, message_id: int) -> tuple[ChatMessage, int]:
    """A tool message of this conversation that an `ask` guardrail held, and its request id."""
    message = db.session.get(ChatMessage, message_id)
    if message is None or message.conversation_id != conversation.id:
        raise NotFound("No such message in this conversation.", details={"id": message_id})
    error = (message.result or {}).get("error") or {}
    request_id = error.get("request_id")
    if message.role != "tool" or message.outcome != "held" or not isinstance(request_id, int):
        raise Conflict(
            "That message is not a call waiting for approval.", details={"id": message_id}
        )
    return message, request_id


def approval_state(conversation: Conversation, user: User, message_id: int) -> dict[str, Any]:
    """Where a held call of this conversation stands (the card polls it)."""
    _message, request_id = held_request(conversation, message_id)
    found = memory.held_call(request_id)
    if found is None or found["user_id"] != str(user.id):
        raise NotFound("No such request.", details={"id": request_id})
    return {
        "request_id": request_id,
        "state": found["state"],
        "note": found["note"],
        "expires_at": found["expires_at"],
    }


def run_now(
    conversation: Conversation, user: User, message_id: int, *, read_only: bool = False
) -> list[ChatMessage]:
    """Run an allowed held call again, through the same dispatch path as every call.

    Added as a `/tool`-like turn (a user line, the call, its result), so the
    model reads the outcome on the next turn. Whether the grant is still
    there is the dispatcher's to decide: used or expired, the card says so.
    """
    message, request_id = held_request(conversation, message_id)
    require_open(conversation)
    state = approval_state(conversation, user, message_id)["state"]
    if state != "allowed":
        raise Conflict(
            f"Request #{request_id} is {state}, not allowed: nothing was run.",
            details={"request_id": request_id, "state": state},
        )
    turn = Turn(conversation, user, read_only=read_only)
    turn.add(role="user", content=f"Run now: request #{request_id} was allowed once.")
    call = ToolCall(
        id=f"run_{secrets.token_hex(6)}",
        name=message.tool_name or "",
        arguments=dict(message.arguments or {}),
    )
    turn.add(role="assistant", tool_calls=[call_dict(call)])
    turn.run_tool(call)
    return turn.added
