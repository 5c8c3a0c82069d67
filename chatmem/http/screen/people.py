"""Erasing a person from the Memory screen (memory/erasure.py), confirmed by typing the name."""

from __future__ import annotations

from flask import jsonify, request
from flask.typing import ResponseReturnValue

from ...core import current_memory
from ...errors import ChatmemError, InvalidParams
from ...identity import user_id_of
from .access import admin_only, flash_back, wants_json
from .blueprint import actor_id, bp
from .forms import failed, read_fields
from .view import visible


@bp.post("/people/erase")
@admin_only(changes_state=True)
def erase_person() -> ResponseReturnValue:
    """Erase one person: their sessions, calls, tokens and notices; the site's guidance stays."""
    try:
        fields = read_fields()
        username = str(fields.get("username") or "").strip()
        if not username:
            raise InvalidParams("Name the person to erase.", details={"field": "username"})
        if str(fields.get("confirm") or "").strip() != username:
            raise InvalidParams(
                f"Type {username} again to confirm the erasure.", details={"field": "confirm"}
            )
        memory = current_memory()
        person = memory.person_named(username)
        if user_id_of(person) == actor_id():
            raise InvalidParams(
                "You cannot erase yourself here: another curator, or "
                "`flask chatmem erase-user`, can.",
                details={"field": "username"},
            )
        report = memory.erase_user(person, actor_id=actor_id())
    except ChatmemError as error:
        return failed(error, "tokens")
    total = sum(report.values())
    message = visible(f"Erased {username}: {total} rows removed or anonymised.")
    if wants_json():
        return jsonify({"ok": True, "rows": report, "message": message})
    return flash_back(message, "ok", "tokens", request.form.get("page"))
