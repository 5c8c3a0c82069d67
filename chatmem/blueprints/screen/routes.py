"""The Memory screen: the admin's page for reviewing and curating guidance.

Server-rendered and usable without JavaScript: every action is a plain form
POST that answers 303 back to its tab with a flash message. A client that
asks for JSON (`Accept: application/json`) gets `{"ok": true, "entry": ...}`
or `{"error": {"code", "message"}}` with the SPEC §11 status instead. All
changes go through `chatmem.memory.guidance`, so the audit trail, the
revision bump and the version check are the domain's, not this page's.
"""

from __future__ import annotations

import io
import json
from typing import Any

from flask import Blueprint, flash, jsonify, render_template, request
from flask.typing import ResponseReturnValue
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.exceptions import RequestEntityTooLarge
from werkzeug.wrappers import Response

from ... import inputs, text
from ...auth import tokens
from ...core import current_memory
from ...csp import policy, used_nonce
from ...errors import (
    ChatmemError,
    Conflict,
    Forbidden,
    InvalidParams,
    NotFound,
    PayloadTooLarge,
    outage,
)
from ...memory import (
    filters,
    guidance,
    held,
    history,
    ledger,
    listing,
    screening,
    staleness,
    transfer,
)
from ...memory.models import ENFORCED_SEVERITIES, STATUSES, ApiToken, Guidance, Session, utcnow
from ...memory.screening import Flag
from ...memory.switches import SWITCHES
from ...permissions import user_id_of
from ..http_errors import outage_page, server_failure
from . import desk_view, navigation
from .access import (
    admin_only,
    current_user,
    error_response,
    flash_back,
    wants_json,
)
from .view import SETTING_LABELS, helpers, visible

bp = Blueprint(
    "chatmem_memory",
    __name__,
    template_folder="../../templates",
    static_folder="../../static/chatmem",
    static_url_path="/static",
)

ACTIONS = ("approve", "reject", "edit", "enable", "disable", "trash", "restore")
# Where the admin lands after each action when the form does not say.
HOME_TAB = {"approve": "pending", "reject": "pending", "restore": "trash"}
BULK_MAX = 200
ID_MAX = 2**31 - 1  # the id column's range: a larger id in a URL is simply not found
HITS_SHOWN = 100
DRY_RUN_SHOWN = 20
# The guidance tabs, calls waiting for approval, then every user's API tokens
# (listed and revoked here, made elsewhere).
TABS = (*listing.TABS, "waiting", "tokens")


# -- pages ----------------------------------------------------------------


@bp.get("")
@admin_only(changes_state=False)
def index() -> ResponseReturnValue:
    db = current_memory().db
    tab = _tab(request.args.get("tab", "pending"))
    held.expire_due(db)  # a grant past its time is not shown as allowed
    counts = listing.counts(db) | {
        "tokens": tokens.live_count(db),
        "waiting": held.waiting_count(db),
    }
    flags: dict[int, list[Flag]] = {}
    listed: filters.Filters | None = None
    desk: dict[str, Any] = {}
    words: dict[int, str] = {}
    rules: dict[int, Guidance] = {}
    if tab == "tokens":
        page = tokens.page(db, request.args.get("page"))
        sources: dict[str, Session] = {}
    elif tab == "waiting":
        number = listing.clamp_page(request.args.get("page"), counts["waiting"])
        offset = (number - 1) * listing.PER_PAGE
        calls = held.waiting(db, offset=offset, limit=listing.PER_PAGE)
        page = listing.Page(calls, number, counts["waiting"])
        sources = {}
        resolve = current_memory().post_type_resolver_hook
        words = {call.id: held.describe(call, resolve) for call in calls}
        rules = held.rules_of(db, calls)
    elif tab == "history":
        page = listing.sessions_page(db, request.args.get("page"), counts["history"])
        sources = {}
    else:
        try:  # search, filters and sort: the review desk's (desk_view.py)
            page, listed = desk_view.tab_page(db, tab)
        except ChatmemError as error:
            return error_response(error)
        desk = desk_view.extras(db, tab, page)
        sources = listing.sessions_by_id(db, (e.session_id for e in page.items))
    dry_runs = {}
    # Who rejected each entry on the Rejected tab, when, and why.
    rejected = guidance.rejections(db, (e.id for e in page.items)) if tab == "rejected" else {}
    if tab == "pending":
        # Fresh, not stored: the active guidance may have changed since the proposal.
        flags = current_memory().screen_entries(page.items)
        # What each proposed block (ask) guardrail would refuse (hold) once approved.
        dry_runs = {
            e.id: current_memory().dry_run(e.target, limit=DRY_RUN_SHOWN, severity=e.severity)
            for e in page.items
            if e.type == "guardrail" and e.severity in ENFORCED_SEVERITIES and e.target
        }
    return render_template(
        "chatmem/memory.html",
        tab=tab,
        counts=counts,
        page=page,
        sources=sources,
        flags=flags,
        dry_runs=dry_runs,
        rejected=rejected,
        refuses_rejected=current_memory().settings.rejected_reproposals == "refuse",
        upload_max_mb=transfer.UPLOAD_MAX_BYTES // (1024 * 1024),
        words=words,
        rules=rules,
        grant_minutes=current_memory().settings.ask_grant_minutes,
        snapshot=current_memory().snapshot(),
        block=current_memory().block(),
        token_state=tokens.state_of,
        listed=listed,
        **desk,
        **helpers(),
    )


@bp.get("/sessions/<session_id>")
@admin_only(changes_state=False)
def session_record(session_id: str) -> ResponseReturnValue:
    db = current_memory().db
    record = db.session.get(Session, session_id) if session_id.isprintable() else None
    if record is None:
        return error_response(NotFound("No such session."))
    return render_template(
        "chatmem/session.html",
        record=record,
        rows=ledger.entries(db, session_id),
        proposed=listing.proposed_in(db, session_id),
        conversation_url=current_memory().url_of_conversation,
        **helpers(),
    )


@bp.get(f"/guidance/<int(max={ID_MAX}):entry_id>")
@admin_only(changes_state=False)
def entry_history(entry_id: int) -> ResponseReturnValue:
    """One entry's page: every version with a diff, its audit trail, hits and session."""
    db = current_memory().db
    entry = db.session.get(Guidance, entry_id)
    if entry is None:
        return error_response(NotFound("No such entry."))
    events = guidance.events(db, entry_id)
    return render_template(
        "chatmem/entry.html",
        entry=entry,
        versions=list(reversed(history.versions(entry, events))),
        events=events,
        describe=history.describe,
        action_labels=history.ACTION_LABELS,
        status_words=history.STATUS_WORDS,
        source=db.session.get(Session, entry.session_id) if entry.session_id else None,
        **helpers(),
    )


@bp.get(f"/guidance/<int(max={ID_MAX}):entry_id>/hits")
@admin_only(changes_state=False)
def hits(entry_id: int) -> ResponseReturnValue:
    """The calls this guardrail refused, newest first."""
    db = current_memory().db
    entry = db.session.get(Guidance, entry_id)
    if entry is None:
        return error_response(NotFound("No such entry."))
    return render_template(
        "chatmem/hits.html",
        entry=entry,
        rows=ledger.refused_by(db, entry_id, limit=HITS_SHOWN),
        shown=HITS_SHOWN,
        **helpers(),
    )


@bp.get("/dry-run")
@admin_only(changes_state=False)
def dry_run() -> ResponseReturnValue:
    """What a guardrail with `?target=` would have refused (`&severity=ask`: held) lately."""
    try:
        target = text.check_field("target", request.args.get("target", ""))
        if not target.strip() or len(target) > guidance.TARGET_MAX:
            raise InvalidParams(
                f"target must be 1 to {guidance.TARGET_MAX} characters.",
                details={"field": "target"},
            )
    except ChatmemError as error:
        return jsonify({"error": error.to_dict()}), error.status  # a JSON route, for the forms
    severity = "ask" if request.args.get("severity") == "ask" else "block"
    result = current_memory().dry_run(target, limit=DRY_RUN_SHOWN, severity=severity)
    return jsonify(
        {
            "target": target,
            "days": result.days,
            "count": result.count,
            "never_matches": result.never_matches,
            "summary": result.summary(),
            "calls": [ledger.row_json(row) for row in result.calls],
        }
    )


# -- actions ----------------------------------------------------------------


@bp.post("/guidance")
@admin_only(changes_state=True)
def add() -> ResponseReturnValue:
    try:
        fields = {k: v for k, v in _fields().items() if k in guidance.EDITABLE}
        entry = guidance.admin_add(current_memory().db, fields, actor_id=_actor_id())
    except ChatmemError as error:
        return _failed(error, "active")
    return _done(entry, f"Added “{entry.title}”: active now.", "active", status=201)


@bp.post(f"/guidance/<int(max={ID_MAX}):entry_id>/<action>")
@admin_only(changes_state=True)
def act(entry_id: int, action: str) -> ResponseReturnValue:
    if action not in ACTIONS:
        return error_response(NotFound(f"Unknown action {action!r}."))
    try:
        fields = _fields()
    except ChatmemError as error:
        return _failed(error, HOME_TAB.get(action, "active"))
    tab = fields.get("tab") or HOME_TAB.get(action, "active")
    try:
        version = _version(fields, required=action in ("approve", "edit"))
        entry, message = _apply(entry_id, action, fields, version)
    except ChatmemError as error:
        return _failed(error, tab)
    return _done(entry, message, tab)


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
        reason = guidance.checked_reason(form.get("reason")) if action == "reject" else None
    except ChatmemError as error:
        return _failed(error, "pending")
    done: list[int] = []
    failed: list[dict[str, Any]] = []
    for entry_id in ids:
        try:
            version = _version({"version": form.get(f"version-{entry_id}")}, required=True)
            _apply(entry_id, action, {"reason": reason}, version)
            done.append(entry_id)
        except ChatmemError as error:
            failed.append({"id": entry_id, **error.to_dict()})
    if wants_json():
        return jsonify({"ok": not failed, "done": done, "failed": failed})
    verb = "Approved" if action == "approve" else "Rejected"
    for failure in failed:
        flash(failure["message"], "error")
    noun = "entry" if len(done) == 1 else "entries"
    message, category = f"{verb} {len(done)} {noun}.", "ok" if done else "error"
    return flash_back(message, category, _tab(form.get("tab") or "pending"), form.get("page"))


@bp.get("/export")
@admin_only(changes_state=False)
def export() -> ResponseReturnValue:
    """The guidance (`?status=` repeated to narrow it) as a memory-export.v1 JSON download."""
    wanted = [s for s in request.args.getlist("status") if s] or list(STATUSES)
    if not set(wanted) <= set(STATUSES):
        return error_response(
            InvalidParams(
                f"status must be one of {', '.join(STATUSES)}.", details={"field": "status"}
            )
        )
    mem = current_memory()
    document = transfer.export_document(
        mem.db, wanted, server_name=mem.server_name, name_of=helpers()["user_name"]
    )
    body = json.dumps(document, ensure_ascii=False, indent=2)
    name = f"chatmem-memory-{utcnow():%Y-%m-%d}.json"
    return Response(
        body,
        mimetype="application/json",
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@bp.post("/import")
@admin_only(changes_state=True)
def import_memory() -> ResponseReturnValue:
    """An uploaded export: all or nothing, pending unless "keep their status" is ticked."""
    upload = request.files.get("file")
    try:
        if upload is None or not upload.filename:
            raise InvalidParams("Choose a file to import.", details={"field": "file"})
        try:
            raw = upload.read()
        finally:
            upload.close()  # a large upload is spooled to a temporary file: free it now
        mem = current_memory()
        snapshot = mem.snapshot()
        result = transfer.import_document(
            mem.db,
            transfer.parse(raw, max_bytes=transfer.UPLOAD_MAX_BYTES),
            actor_id=_actor_id(),
            keep_status=inputs.form_boolean(request.form, "keep_status"),
            screen=lambda fields: mem.screen(dict(fields), snapshot=snapshot),
        )
    except ChatmemError as error:
        return _failed(error, "pending")
    message = transfer.summary(result)
    if wants_json():
        return jsonify(
            {
                "ok": True,
                "imported": result.imported,
                "skipped": result.skipped,
                "flagged": result.flagged,
                "message": message,
            }
        )
    return flash_back(message, "ok", "active" if result.status != "pending" else "pending")


@bp.before_request
def _upload_limit() -> ResponseReturnValue | None:
    """The Import form's file is read only up to transfer.UPLOAD_MAX_BYTES."""
    if request.endpoint != "chatmem_memory.import_memory":
        return None
    request.max_content_length = transfer.UPLOAD_MAX_BYTES
    if (request.content_length or 0) > transfer.UPLOAD_MAX_BYTES:
        return _too_large()
    if request.content_length is None and request.environ.get("wsgi.input_terminated"):
        # Sent without a length (chunked): read it whole within the limit first
        # (413 past it), so the form parser never leaves half a file spooled.
        body = _bounded_body(request.environ["wsgi.input"], transfer.UPLOAD_MAX_BYTES)
        if body is None:
            return _too_large()
        request.environ["wsgi.input"] = io.BytesIO(body)
    return None


def _bounded_body(stream: Any, limit: int) -> bytes | None:
    """The whole of a stream the server ends at the body's end, or None past `limit`."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(64 * 1024, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    return None


@bp.errorhandler(RequestEntityTooLarge)
def _too_large(_error: Exception | None = None) -> ResponseReturnValue:
    """Also when the upload came without a length (chunked): found while reading it."""
    if request.endpoint != "chatmem_memory.import_memory":
        return error_response(PayloadTooLarge("The request is too large."))
    limit = transfer.UPLOAD_MAX_BYTES // (1024 * 1024)
    return error_response(PayloadTooLarge(f"The file is larger than {limit} MB."))


@bp.post("/settings")
@admin_only(changes_state=True)
def settings() -> ResponseReturnValue:
    fields: dict[str, Any] = {}
    try:
        fields = _fields()
        name = fields.get("name")
        if name not in SWITCHES:
            raise InvalidParams(
                f"name must be one of {', '.join(SWITCHES)}.", details={"field": "name"}
            )
        value = _bool(fields.get("value"))
        snapshot = current_memory().set_setting(name, value, actor=current_user())
    except ChatmemError as error:
        if _settings_wants_page():
            return _failed(error, str(fields.get("tab") or "pending"))
        return jsonify({"error": error.to_dict()}), error.status
    state = {n: getattr(snapshot, n) for n in SWITCHES}
    if _settings_wants_page():
        word = "on" if value else "off"
        return flash_back(f"{SETTING_LABELS[name]} is {word}.", "ok", fields.get("tab", "pending"))
    return jsonify({"ok": True, "name": name, "value": value, "settings": state})


@bp.post(f"/tokens/<int(max={ID_MAX}):token_id>/revoke")
@admin_only(changes_state=True)
def revoke_token(token_id: int) -> ResponseReturnValue:
    """Revoke anyone's API token (audited as this curator's `token_revoke`)."""
    try:
        token = tokens.revoke(current_memory().db, token_id, actor_id=_actor_id())
    except ChatmemError as error:
        return _failed(error, "tokens")
    owner = helpers()["user_name"](token.user_id)
    message = visible(
        f"Revoked {owner}’s token “{token.name}” ({token.prefix}…): it no longer works."
    )
    if wants_json():
        return jsonify({"ok": True, "token": token_json(token), "message": message})
    return flash_back(message, "ok", "tokens", request.form.get("page"))


def token_json(token: ApiToken) -> dict[str, Any]:
    """A token as the screen describes it: never its hash, only the prefix."""

    def when(value: Any) -> str | None:
        return value.isoformat() + "Z" if value else None

    return {
        "id": token.id,
        "user_id": token.user_id,
        "name": token.name,
        "prefix": token.prefix,
        "read_only": token.read_only,
        "created_at": when(token.created_at),
        "last_used_at": when(token.last_used_at),
        "expires_at": when(token.expires_at),
        "revoked_at": when(token.revoked_at),
        "state": tokens.state_of(token),
    }


# -- the one place actions meet the domain ------------------------------------


def _apply(
    entry_id: int, action: str, fields: dict[str, Any], version: int | None
) -> tuple[Guidance, str]:
    db, actor = current_memory().db, _actor_id()
    anyway = _bool_field(fields.get("anyway"), "anyway")
    if action == "edit":
        current = guidance.get(db, entry_id)
        changes = {k: fields[k] for k in guidance.EDITABLE if k in fields}
        then_approve = fields.get("then") == "approve"
        if then_approve and current.status != "pending":
            raise Conflict(f"Guidance #{entry_id} is no longer pending; reload the page.")
        # The edited text is what goes live: screen it before anything is saved.
        despite = _screened(current, changes, version, anyway=anyway) if then_approve else []
        if "review_after" in fields and (version is None or current.version == version):
            # Saved with the edit, in its transaction (one version step).
            review_after = staleness.parse_review_after(fields["review_after"])
            staleness.set_review_after(db, current, review_after, actor_id=actor)
        entry = guidance.edit(db, entry_id, changes, actor_id=actor, expected_version=version)
        if not then_approve:
            return entry, f"Saved “{entry.title}”."
        entry = guidance.approve(
            db, entry_id, actor_id=actor, expected_version=entry.version, despite=despite
        )
        return entry, f"Saved and approved “{entry.title}”: active now."
    if action == "approve":
        despite = _screened(guidance.get(db, entry_id), {}, version, anyway=anyway)
        entry = guidance.approve(
            db, entry_id, actor_id=actor, expected_version=version, despite=despite
        )
        return entry, f"Approved “{entry.title}”: active now."
    if action in ("enable", "disable"):
        entry = guidance.set_enabled(
            db, entry_id, action == "enable", actor_id=actor, expected_version=version
        )
        state = "on: injected and enforced" if entry.enabled else "off: kept, not injected"
        return entry, f"“{entry.title}” is {state}."
    if action == "reject":
        entry = guidance.reject(
            db, entry_id, actor_id=actor, expected_version=version, reason=fields.get("reason")
        )
        return entry, f"Rejected “{entry.title}”."
    step = {
        "trash": (guidance.trash, "Moved “{}” to the trash."),
        "restore": (guidance.restore, "Restored “{}”."),
    }[action]
    entry = step[0](db, entry_id, actor_id=actor, expected_version=version)
    return entry, step[1].format(entry.title)


def _screened(
    entry: Guidance,
    changes: dict[str, Any],
    version: int | None,
    *,
    anyway: bool,
    besides: int | None = None,
) -> list[str]:
    """The flags an approval goes ahead despite; a flagged one needs `anyway`.

    Computed now, on the text that would go live (an edit included), so a
    flag that appeared since the page was drawn still stops the approval.
    `besides`: an entry this approval replaces, whose flags (a near
    duplicate of it, say) are the point of replacing it.
    """
    if version is not None and entry.version != version:
        return []  # stale: the domain refuses it with its own message
    flags = current_memory().screen(screening.fields_of(entry, changes), entry_id=entry.id)
    flags = [flag for flag in flags if besides is None or flag.entry_id != besides]
    if flags and not anyway:
        reasons = " ".join(flag.reason for flag in flags)
        raise Conflict(
            f"“{entry.title}” is flagged, so it was not approved: {reasons} Read the flags; "
            "if it should still be active, use Approve anyway.",
            details={"id": entry.id, "flags": [flag.to_dict() for flag in flags]},
        )
    return [flag.code for flag in flags]


def _done(entry: Guidance, message: str, tab: str, status: int = 200) -> ResponseReturnValue:
    message = visible(message)  # it quotes the title, which may predate the text rules
    if wants_json():
        return jsonify({"ok": True, "entry": entry_json(entry), "message": message}), status
    return flash_back(
        message, "ok", _tab(tab), request.form.get("page"), anchor=f"entry-{entry.id}"
    )


def _failed(error: ChatmemError, tab: str) -> ResponseReturnValue:
    current_memory().db.session.rollback()
    if wants_json():
        return jsonify({"error": error.to_dict()}), error.status
    return flash_back(error.message, "error", _tab(tab), request.form.get("page"))


def entry_json(entry: Guidance) -> dict[str, Any]:
    return {
        **entry.to_dict(),
        "status": entry.status,
        "enabled": entry.enabled,
        "version": entry.version,
        "session_id": entry.session_id,
        "review_after": entry.review_after.isoformat() if entry.review_after else None,
        "target_gone_at": entry.target_gone_at.isoformat() + "Z" if entry.target_gone_at else None,
    }


# -- request parsing ------------------------------------------------------------


def _fields() -> dict[str, Any]:
    """The action's fields, from a JSON object or a form, through `chatmem.inputs`."""
    if request.is_json:
        body = inputs.parse_json(request.get_data())
        if not isinstance(body, dict):
            raise InvalidParams("Send a JSON object of fields.", details={"field": "body"})
        return body
    fields = request.form.to_dict(flat=True) | {"value": _last(request.form.getlist("value"))}
    inputs.check_value(fields, field="")
    return fields


def _last(values: list[str]) -> str | None:
    """A switch form sends a hidden "false" then, when ticked, "true": the last one wins."""
    return values[-1] if values else None


def _version(fields: dict[str, Any], *, required: bool) -> int | None:
    raw = fields.get("version")
    if raw in (None, ""):
        if required:
            raise InvalidParams(
                "version is required: send the version of the entry you reviewed.",
                details={"field": "version"},
            )
        return None
    return inputs.whole_number(raw, field="version")


def _bulk_ids(raw: list[str]) -> list[int]:
    if not raw:
        raise InvalidParams("Select at least one entry.", details={"field": "id"})
    if len(raw) > BULK_MAX:
        raise InvalidParams(f"Select at most {BULK_MAX} entries.", details={"field": "id"})
    return list(dict.fromkeys(inputs.whole_number(r, field="id") for r in raw))


def _bool_field(raw: Any, field: str) -> bool:
    """A checkbox-like field: exactly the documented values, else 400 (`inputs.boolean_field`)."""
    return inputs.boolean_field(raw, field=field)


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if raw in ("true", "false"):  # exactly the documented values (fail closed)
        return raw == "true"
    raise InvalidParams("value must be true or false.", details={"field": "value"})


def _settings_wants_page() -> bool:
    """Settings answer JSON, except to a browser posting the no-JS form."""
    best = request.accept_mimetypes.best_match(["application/json", "text/html"])
    return not request.is_json and best == "text/html"


def _tab(tab: str) -> str:
    return tab if tab in TABS else "pending"


def _actor_id() -> str:
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
