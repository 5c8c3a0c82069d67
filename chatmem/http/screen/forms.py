"""How the Memory screen's actions read a request and answer it.

Fields come from a JSON object or a form, through `chatmem.inputs`; an
action answers 303 back to its tab with a flash message, or JSON to a
client that asked for it (`Accept: application/json`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flask import jsonify, request
from flask.typing import ResponseReturnValue

from ... import inputs
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams
from ...memory.models import Guidance
from .access import flash_back, wants_json
from .blueprint import known_tab
from .view import visible


def read_fields() -> dict[str, Any]:
    """The action's fields, from a JSON object or a form, through `chatmem.inputs`."""
    if request.is_json:
        body = inputs.parse_json(request.get_data())
        if not isinstance(body, dict):
            raise InvalidParams("Send a JSON object of fields.", details={"field": "body"})
        return body
    if "anyway" in request.form:
        inputs.form_boolean(request.form, "anyway")  # sent twice: refused, never guessed
    fields = request.form.to_dict(flat=True) | {"value": _last(request.form.getlist("value"))}
    inputs.check_value(fields, field="")
    return fields


def _last(values: list[str]) -> str | None:
    """A switch form sends a hidden "false" then, when ticked, "true": the last one wins."""
    return values[-1] if values else None


def read_version(fields: dict[str, Any], *, required: bool) -> int | None:
    raw = fields.get("version")
    if raw in (None, ""):
        if required:
            raise InvalidParams(
                "version is required: send the version of the entry you reviewed.",
                details={"field": "version"},
            )
        return None
    return inputs.whole_number(raw, field="version")


def done(entry: Guidance, message: str, tab: str, status: int = 200) -> ResponseReturnValue:
    message = visible(message)  # it quotes the title, which may predate the text rules
    if wants_json():
        return jsonify({"ok": True, "entry": entry_json(entry), "message": message}), status
    return flash_back(
        message, "ok", known_tab(tab), request.form.get("page"), anchor=f"entry-{entry.id}"
    )


def failed(error: ChatmemError, tab: str) -> ResponseReturnValue:
    current_memory().db.session.rollback()
    if wants_json():
        return jsonify({"error": error.to_dict()}), error.status
    return flash_back(error.message, "error", known_tab(tab), request.form.get("page"))


def utc_json(value: datetime | None) -> str | None:
    """A stored (naive UTC) time as the screen's JSON gives it: ISO 8601 with a Z."""
    return value.isoformat() + "Z" if value else None


def entry_json(entry: Guidance) -> dict[str, Any]:
    return {
        **entry.to_dict(),
        "status": entry.status,
        "enabled": entry.enabled,
        "version": entry.version,
        "session_id": entry.session_id,
        "review_after": entry.review_after.isoformat() if entry.review_after else None,
        "target_gone_at": utc_json(entry.target_gone_at),
        "target_changed_at": utc_json(entry.target_changed_at),
    }
