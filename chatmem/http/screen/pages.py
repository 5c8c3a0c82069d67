"""The Memory screen's pages (GETs): the tabs, one session's record, one entry's
history and hits, and the dry run the guardrail forms ask for.

Each tab's view is built by its own function (`TAB_VIEWS`); `index` only
adds what every tab shows and renders.
"""

from __future__ import annotations

from typing import Any

from flask import jsonify, render_template, request
from flask.typing import ResponseReturnValue
from sqlalchemy.orm import Session as OrmSession

from ... import text
from ...auth import tokens
from ...core import current_memory
from ...errors import ChatmemError, InvalidParams, NotFound
from ...memory import audit, guidance, held, ledger, listing, transfer
from ...memory.fields import TARGET_MAX
from ...memory.models import ENFORCED_SEVERITIES, Guidance, Session
from . import desk_view, lanes_view
from .access import admin_only, error_response
from .blueprint import ID_MAX, bp, known_tab
from .reads import history
from .view import helpers

HITS_SHOWN = 100
DRY_RUN_SHOWN = 20


@bp.get("")
@admin_only(changes_state=False)
def index() -> ResponseReturnValue:
    db = current_memory().db.session()
    tab = known_tab(request.args.get("tab", "pending"))
    held.expire_due(db)  # a grant past its time is not shown as allowed
    counts = listing.counts(db) | {
        "tokens": tokens.live_count(db),
        "waiting": held.waiting_count(db),
    }
    build = TAB_VIEWS.get(tab, _guidance_view)
    try:
        view = build(db, tab, counts)
    except ChatmemError as error:  # the review desk's search and filters, from the URL
        return error_response(error)
    return render_template(
        "chatmem/memory.html",
        tab=tab,
        counts=counts,
        **(_EMPTY_VIEW | view),
        refuses_rejected=current_memory().settings.rejected_reproposals == "refuse",
        upload_max_mb=transfer.UPLOAD_MAX_BYTES // (1024 * 1024),
        grant_minutes=current_memory().settings.ask_grant_minutes,
        snapshot=current_memory().snapshot(),
        block=current_memory().block(),
        token_state=tokens.state_of,
        **helpers(),
    )


# What a tab's view leaves out, the template finds empty.
_EMPTY_VIEW: dict[str, Any] = {
    "sources": {},
    "flags": {},
    "dry_runs": {},
    "rejected": {},
    "words": {},
    "rules": {},
    "listed": None,
    "lanes": [],
    "groups": {},
    "flagged_groups": set(),
    "lane_labels": {},
    "longest_lane": None,
}


def _tokens_view(db: OrmSession, tab: str, counts: dict[str, int]) -> dict[str, Any]:
    """Every user's API tokens, a page of them."""
    return {"page": tokens.page(db, request.args.get("page"))}


def _waiting_view(db: OrmSession, tab: str, counts: dict[str, int]) -> dict[str, Any]:
    """Calls an `ask` guardrail holds, each in words, with the rules that held it."""
    number = listing.clamp_page(request.args.get("page"), counts["waiting"])
    offset = (number - 1) * listing.PER_PAGE
    calls = held.waiting(db, offset=offset, limit=listing.PER_PAGE)
    resolve = current_memory().post_type_resolver_hook
    return {
        "page": listing.Page(calls, number, counts["waiting"]),
        "words": {call.id: held.describe(call, resolve) for call in calls},
        "rules": held.rules_of(db, calls),
    }


def _history_view(db: OrmSession, tab: str, counts: dict[str, int]) -> dict[str, Any]:
    """The sessions, newest first."""
    return {"page": listing.sessions_page(db, request.args.get("page"), counts["history"])}


def _guidance_view(db: OrmSession, tab: str, counts: dict[str, int]) -> dict[str, Any]:
    """A guidance tab: the review desk's page (search, filters, sort; `desk_view.py`),
    the sessions the entries came from, and what the tab adds (flags, rejections)."""
    triage: dict[str, Any] = {}
    if tab == "pending":  # in triage lanes, with each proposal's flags (`lanes_view.py`)
        page, listed, triage = lanes_view.pending(db)  # bad filters or lane: invalid_params
    else:
        page, listed = desk_view.tab_page(db, tab)  # bad filters: invalid_params
    view = {
        "page": page,
        "listed": listed,
        **desk_view.extras(db, tab, page),
        "sources": listing.sessions_by_id(db, (e.session_id for e in page.items)),
        **triage,
    }
    if tab == "rejected":
        # Who rejected each entry on the Rejected tab, when, and why.
        view["rejected"] = guidance.rejections(db, (e.id for e in page.items))
    if tab == "pending":
        view |= _pending_checks(page.items)
        # A group card lists its own members; its evidence shows the entries beyond them.
        view["evidence"] = lanes_view.beyond_groups(view["evidence"], view["groups"])
    return view


def _pending_checks(items: list[Guidance]) -> dict[str, Any]:
    """What a curator reads before approving beside the flags: a guardrail's dry run."""
    memory = current_memory()
    return {
        # What each proposed block (ask) guardrail would refuse (hold) once approved.
        "dry_runs": {
            e.id: memory.dry_run(e.target, limit=DRY_RUN_SHOWN, severity=e.severity)
            for e in items
            if e.type == "guardrail" and e.severity in ENFORCED_SEVERITIES and e.target
        },
    }


#: Each tab's view (every other tab is a guidance tab).
TAB_VIEWS = {"tokens": _tokens_view, "waiting": _waiting_view, "history": _history_view}


@bp.get("/sessions/<session_id>")
@admin_only(changes_state=False)
def session_record(session_id: str) -> ResponseReturnValue:
    db = current_memory().db.session()
    record = db.get(Session, session_id) if session_id.isprintable() else None
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
    db = current_memory().db.session()
    entry = db.get(Guidance, entry_id)
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
        source=db.get(Session, entry.session_id) if entry.session_id else None,
        trail=audit.verify(db, entry_id=entry_id),
        **helpers(),
    )


@bp.get(f"/guidance/<int(max={ID_MAX}):entry_id>/hits")
@admin_only(changes_state=False)
def hits(entry_id: int) -> ResponseReturnValue:
    """The calls this guardrail refused, newest first."""
    db = current_memory().db.session()
    entry = db.get(Guidance, entry_id)
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
        if not target.strip() or len(target) > TARGET_MAX:
            raise InvalidParams(
                f"target must be 1 to {TARGET_MAX} characters.",
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
