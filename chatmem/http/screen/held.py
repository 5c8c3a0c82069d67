"""The Memory screen's Waiting calls: a curator's Allow once / Deny (SPEC §6).

Routes on the Memory screen's blueprint, kept apart because they act on held
calls (`chatmem.memory.held`), not on guidance. Same gate (admin_only: CSRF,
capability, licence), same answers (303 back to the tab with a message, or
JSON with `Accept: application/json`).
"""

from __future__ import annotations

from typing import Any

from flask import jsonify, request
from flask.typing import ResponseReturnValue

from ... import text
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams, NotFound
from ...memory import held
from .access import admin_only, error_response, flash_back, wants_json
from .blueprint import ID_MAX, actor_id, bp
from .forms import failed, read_fields, utc_json
from .view import helpers, visible


@bp.post(f"/held/<int(max={ID_MAX}):request_id>/<decision>")
@admin_only(changes_state=True)
def decide(request_id: int, decision: str) -> ResponseReturnValue:
    """Allow once or Deny a call an `ask` guardrail held; a second decision is a 409."""
    if decision not in held.DECISIONS:
        return error_response(NotFound(f"Unknown decision {decision!r}: allow or deny."))
    fields = read_fields()
    try:
        note = _note(fields.get("note"))
        call = held.decide(
            current_memory().db.session(),
            request_id,
            decision,
            actor_id=actor_id(),
            actor_name=helpers()["user_name"](actor_id()),
            note=note,
            grant_minutes=current_memory().settings.ask_grant_minutes,
        )
    except ChatmemError as error:
        return failed(error, "waiting")
    if call.state == "allowed":
        message = (
            f"Allowed request #{call.id} once: {call.user_name} may make this call "
            f"until {call.expires_at:%H:%M} UTC."
        )
    else:
        message = f"Denied request #{call.id}: {call.user_name}’s call is refused."
    message = visible(message)
    if wants_json():
        return jsonify({"ok": True, "request": held_json(call), "message": message})
    return flash_back(message, "ok", "waiting", request.form.get("page"))


def held_json(call: held.HeldCall) -> dict[str, Any]:

    return {
        "id": call.id,
        "tool": call.tool,
        "arguments": call.arguments,
        "user_id": call.user_id,
        "session_id": call.session_id,
        "guidance_id": call.guidance_id,
        "state": call.state,
        "created_at": utc_json(call.created_at),
        "decided_at": utc_json(call.decided_at),
        "decided_by": call.decided_by,
        "expires_at": utc_json(call.expires_at),
        "note": call.note,
    }


def _note(raw: Any) -> str | None:
    """A decision's optional note: text, through the text rules, at most NOTE_MAX."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise InvalidParams("note must be text.", details={"field": "note"})
    note = text.check_field("note", raw).strip()
    if len(note) > held.NOTE_MAX:
        raise InvalidParams(
            f"note is longer than {held.NOTE_MAX} characters.", details={"field": "note"}
        )
    return note or None
