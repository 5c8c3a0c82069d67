"""The Memory screen's actions on guidance (POSTs): add, one entry's action,
bulk approve or reject, and the settings switches.

What an action does to an entry is `chatmem.memory.curation`'s; a view reads
the request, calls it, and answers.
"""

from __future__ import annotations

from typing import Any

from flask import flash, jsonify, request
from flask.typing import ResponseReturnValue

from ... import inputs
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams, NotFound
from ...memory import curation, guidance
from ...memory.fields import EDITABLE, checked_reason
from ...memory.models import Guidance
from ...memory.screening import Flag
from ...memory.switches import SWITCHES
from . import group_actions
from .access import admin_only, current_user, error_response, flash_back, wants_json
from .blueprint import ID_MAX, actor_id, bp, known_tab
from .forms import done, failed, read_fields, read_version
from .view import SETTING_LABELS

ACTIONS = curation.ACTIONS
# Where the admin lands after each action when the form does not say.
HOME_TAB = {"approve": "pending", "reject": "pending", "restore": "trash"}
BULK_MAX = 200


@bp.post("/guidance")
@admin_only(changes_state=True)
def add() -> ResponseReturnValue:
    try:
        fields = {k: v for k, v in read_fields().items() if k in EDITABLE}
        entry = guidance.admin_add(current_memory().db.session(), fields, actor_id=actor_id())
    except ChatmemError as error:
        return failed(error, "active")
    return done(entry, f"Added “{entry.title}”: active now.", "active", status=201)


@bp.post(f"/guidance/<int(max={ID_MAX}):entry_id>/<action>")
@admin_only(changes_state=True)
def act(entry_id: int, action: str) -> ResponseReturnValue:
    if action not in ACTIONS:
        return error_response(NotFound(f"Unknown action {action!r}."))
    try:
        fields = read_fields()
    except ChatmemError as error:
        return failed(error, HOME_TAB.get(action, "active"))
    tab = fields.get("tab") or HOME_TAB.get(action, "active")
    try:
        version = read_version(fields, required=action in ("approve", "edit"))
        entry, message = _apply(entry_id, action, fields, version)
    except ChatmemError as error:
        return failed(error, tab)
    return done(entry, message, tab)


@bp.post("/bulk")
@admin_only(changes_state=True)
def bulk() -> ResponseReturnValue:
    form = request.form
    action = form.get("action")
    try:
        if action not in ("approve", "reject"):
            raise InvalidParams("action must be approve or reject.", details={"field": "action"})
        ids = _bulk_ids(form.getlist("id"))
        # One reason for every ticked entry, checked once: a bad one rejects nothing.
        reason = checked_reason(form.get("reason")) if action == "reject" else None
    except ChatmemError as error:
        return failed(error, "pending")
    finished: list[int] = []
    refused: list[dict[str, Any]] = []
    for entry_id in ids:
        try:
            version = read_version({"version": form.get(f"version-{entry_id}")}, required=True)
            members = form.getlist(f"member-{entry_id}")
            if members:  # a group card: one decision for every proposal it holds
                versions = group_actions.read_versions(
                    entry_id, version, members, lambda i: form.get(f"version-{i}")
                )
                group_actions.decide(entry_id, action, versions, anyway=False, reason=reason)
            else:
                _apply(entry_id, action, {"reason": reason}, version)
            finished.append(entry_id)
        except ChatmemError as error:
            refused.append({"id": entry_id, **error.to_dict()})
    if wants_json():
        return jsonify({"ok": not refused, "done": finished, "failed": refused})
    verb = "Approved" if action == "approve" else "Rejected"
    for failure in refused:
        flash(failure["message"], "error")
    noun = "entry" if len(finished) == 1 else "entries"
    message, category = f"{verb} {len(finished)} {noun}.", "ok" if finished else "error"
    return flash_back(message, category, known_tab(form.get("tab") or "pending"), form.get("page"))


def _bulk_ids(raw: list[str]) -> list[int]:
    if not raw:
        raise InvalidParams("Select at least one entry.", details={"field": "id"})
    if len(raw) > BULK_MAX:
        raise InvalidParams(f"Select at most {BULK_MAX} entries.", details={"field": "id"})
    return list(dict.fromkeys(inputs.whole_number(r, field="id") for r in raw))


@bp.post("/settings")
@admin_only(changes_state=True)
def settings() -> ResponseReturnValue:
    fields: dict[str, Any] = {}
    try:
        fields = read_fields()
        name = fields.get("name")
        if name not in SWITCHES:
            raise InvalidParams(
                f"name must be one of {', '.join(SWITCHES)}.", details={"field": "name"}
            )
        value = _bool(fields.get("value"))
        snapshot = current_memory().set_setting(name, value, actor=current_user())
    except ChatmemError as error:
        if _settings_wants_page():
            return failed(error, str(fields.get("tab") or "pending"))
        return jsonify({"error": error.to_dict()}), error.status
    state = {n: getattr(snapshot, n) for n in SWITCHES}
    if _settings_wants_page():
        word = "on" if value else "off"
        return flash_back(f"{SETTING_LABELS[name]} is {word}.", "ok", fields.get("tab", "pending"))
    return jsonify({"ok": True, "name": name, "value": value, "settings": state})


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if raw in ("true", "false"):  # exactly the documented values (fail closed)
        return str(raw) == "true"
    raise InvalidParams("value must be true or false.", details={"field": "value"})


def _settings_wants_page() -> bool:
    """Settings answer JSON, except to a browser posting the no-JS form."""
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return not request.is_json and best == "text/html"


def _apply(
    entry_id: int, action: str, fields: dict[str, Any], version: int | None
) -> tuple[Guidance, str]:
    """The curation domain's action, by this curator, screened by this app's rules."""
    db, actor = current_memory().db.session(), actor_id()
    anyway = inputs.boolean_field(fields.get("anyway"), field="anyway")
    return curation.apply(
        db, entry_id, action, fields, version, actor_id=actor, anyway=anyway, screen=screen
    )


def screen(fields: dict[str, Any], entry_id: int) -> list[Flag]:
    """Fresh poisoning flags for an entry's fields as they would go live."""
    return current_memory().screen(fields, entry_id=entry_id)
