"""The review desk on the Memory screen (issue 15, points 1 and 5).

- The guidance tabs' search, filters and sort (`reads/filters.py`),
  and the evidence beside each proposal (`reads/evidence.py`), which
  the index view asks for through `tab_page` and `extras`.
- "Replace #N with this": approve a proposal and trash the entry it
  supersedes, in one transaction (`chatmem.memory.desk.replace`).
- Bulk disable, enable, trash and restore on Active and Trash, all or
  nothing (`chatmem.memory.desk.bulk`).

Routes hang off the Memory screen's blueprint: the same gate (admin_only:
no bearer, capability, licence, CSRF) and the same answers (303 back with a
message, or JSON with `Accept: application/json`).
"""

from __future__ import annotations

from typing import Any

from flask import flash, jsonify, redirect, request, url_for
from flask.typing import ResponseReturnValue

from ... import inputs
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams
from ...memory import curation, desk, guidance
from .access import admin_only, wants_json
from .actions import screen
from .blueprint import ID_MAX, actor_id, bp
from .desk_view import BULK_TABS
from .forms import entry_json, failed, read_version
from .reads import filters
from .view import visible

# Which bulk actions each tab offers (the domain refuses any other status).
BULK_WORDS = {
    "disable": "Switched off",
    "enable": "Switched on",
    "trash": "Moved to the trash",
    "restore": "Restored",
}


# -- actions ------------------------------------------------------------------


@bp.post(f"/guidance/<int(max={ID_MAX}):entry_id>/replace/<int(max={ID_MAX}):old_id>")
@admin_only(changes_state=True)
def replace(entry_id: int, old_id: int) -> ResponseReturnValue:
    """Approve proposal `entry_id` and move active entry `old_id` to the trash, as one."""
    form = request.form
    try:
        version = read_version({"version": form.get("version")}, required=True)
        old_version = read_version({"version": form.get("old_version")}, required=True)
        assert version is not None and old_version is not None
        # Flags about the entry being replaced (a near duplicate of it, say) are its point.
        despite = curation.screened(
            guidance.get(current_memory().db.session(), entry_id),
            {},
            version,
            anyway=inputs.form_boolean(form, "anyway"),
            screen=screen,
            besides=old_id,
        )
        entry, old = desk.replace(
            current_memory().db.session(),
            entry_id,
            old_id,
            actor_id=actor_id(),
            expected_version=version,
            old_version=old_version,
            despite=despite,
        )
    except ChatmemError as error:
        return failed(error, "pending")
    message = visible(f"Approved “{entry.title}”; it replaces #{old.id}, now in the trash.")
    if wants_json():
        replaced = entry_json(old)
        return jsonify(
            {"ok": True, "entry": entry_json(entry), "replaced": replaced, "message": message}
        )
    flash(message, "ok")
    return redirect(url_for("chatmem_memory.index", tab="pending"), code=303)


@bp.post("/desk/bulk")
@admin_only(changes_state=True)
def desk_bulk() -> ResponseReturnValue:
    """Disable, enable, trash or restore the ticked entries: all of them or none."""
    form = request.form
    tab = str(form.get("tab") or "")
    tab = tab if tab in BULK_TABS else "active"
    try:
        action = str(form.get("action") or "")
        if action not in BULK_TABS[tab]:
            raise InvalidParams(
                f"action must be one of {', '.join(BULK_TABS[tab])} on this tab.",
                details={"field": "action"},
            )
        versions = _versions(form.getlist("id"), form)
        done = desk.bulk(current_memory().db.session(), action, versions, actor_id=actor_id())
    except ChatmemError as error:
        return failed(error, tab)
    noun = "entry" if len(done) == 1 else "entries"
    message = f"{BULK_WORDS[action]} {len(done)} {noun}."
    if wants_json():
        return jsonify({"ok": True, "entries": [entry_json(e) for e in done], "message": message})
    flash(message, "ok")
    return redirect(_back(tab, form), code=303)


def _versions(raw_ids: list[str], form: Any) -> dict[int, int]:
    """Ticked id -> the version the curator saw (`version-<id>`), both required."""
    if len(raw_ids) > desk.BULK_MAX:
        raise InvalidParams(f"Select at most {desk.BULK_MAX} entries.", details={"field": "id"})
    ids = dict.fromkeys(inputs.whole_number(r, field="id") for r in raw_ids)
    versions: dict[int, int] = {}
    for entry_id in ids:
        version = read_version({"version": form.get(f"version-{entry_id}")}, required=True)
        assert version is not None
        versions[entry_id] = version
    return versions


def _back(tab: str, form: Any) -> str:
    """The tab with the filters the curator was working in (dropped if they no longer parse)."""
    try:
        params: dict[str, Any] = filters.parse(form).params()
    except InvalidParams:
        params = {}
    page = str(form.get("page") or "")
    if page.isdigit() and int(page) > 1:
        params["page"] = page
    return url_for("chatmem_memory.index", tab=tab, **params)
