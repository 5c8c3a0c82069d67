"""The Memory screen's Upkeep page: targets gone or changed, review dates, unused
entries, review pace and what memory costs; plus the waiting-time figures the Pending
tab and the host's badge show.

Routes on the Memory screen's blueprint (same gate: admin_only), reading
`memory/staleness.py`, `memory/revalidation.py` and `memory/costs.py`; the sweep
and the dispatcher make the changes, a curator's Still true clears one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from flask import flash, jsonify, redirect, render_template, url_for
from flask.typing import ResponseReturnValue

from ...core import current_memory
from ...errors import ChatmemError
from ...memory import costs, revalidation, staleness
from ...memory.models import Guidance, LedgerEntry, iso, utcnow
from .access import admin_only, wants_json
from .blueprint import ID_MAX, actor_id, bp
from .forms import entry_json, utc_json
from .view import helpers, visible

SHOWN = 100


def span(value: timedelta | None) -> str:
    """A duration in its largest whole unit: "3 days", "2 h", "5 min", "under a minute"."""
    if value is None:
        return "—"
    seconds = value.total_seconds()
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {'day' if unit == 'days' and count == 1 else unit}"
    return "under a minute"


def waiting_since(oldest: datetime | None, now: datetime | None = None) -> timedelta | None:
    return (now or utcnow()) - oldest if oldest else None


@bp.get("/upkeep")
@admin_only(changes_state=False)
def upkeep() -> ResponseReturnValue:
    """What needs a curator's look beyond Pending, and what memory costs."""
    mem = current_memory()
    db = mem.db.session()
    days = mem.settings.unused_days
    unused_count, unused = staleness.unused(db, days, limit=SHOWN)
    too_new, never_used = staleness.too_new(db, days)
    gone = staleness.gone(db, limit=SHOWN)
    changed = revalidation.changed(db, limit=SHOWN)
    calls = revalidation.calls_of(db, changed)
    scheduled = staleness.scheduled(db, limit=SHOWN)
    pace = costs.review_pace(db)
    oldest = mem.oldest_pending()
    cost = costs.cost(db)
    reach = costs.conversations_with(db, [e.id for e in (*gone, *scheduled, *unused)])
    if wants_json():
        return jsonify(
            {
                "oldest_pending_at": iso(oldest),
                "median_review_seconds": pace.median.total_seconds() if pace.median else None,
                "reviews": pace.reviews,
                "target_gone": [_row(e) for e in gone],
                "target_changed": [_changed_row(e, calls) for e in changed],
                "scheduled": [_row(e) for e in scheduled],
                "unused": {
                    "days": days,
                    "count": unused_count,
                    "entries": [_row(e) for e in unused],
                    "too_new": too_new,
                    "too_new_never_used": never_used,
                },
                "cost": cost.to_dict(),
            }
        )
    return render_template(
        "chatmem/upkeep.html",
        days=days,
        unused=unused,
        unused_count=unused_count,
        too_new=too_new,
        never_used=never_used,
        gone=gone,
        changed=changed,
        calls=calls,
        changed_mode=mem.settings.changed_targets,
        scheduled=scheduled,
        pace=pace,
        oldest=oldest,
        waited=waiting_since(oldest),
        cost=cost,
        reach=reach,
        stale_mode=mem.settings.stale_targets,
        shown=SHOWN,
        span=span,
        **helpers(),
    )


def _row(entry: Any) -> dict[str, Any]:
    return {
        "id": entry.id,
        "type": entry.type,
        "title": helpers()["visible"](entry.title),
        "target": entry.target,
        "status": entry.status,
        "review_after": entry.review_after.isoformat() if entry.review_after else None,
        "target_gone_at": iso(entry.target_gone_at),
        "last_recalled_at": iso(entry.last_recalled_at),
        "last_hit_at": iso(entry.last_hit_at),
    }


def _changed_row(entry: Guidance, calls: dict[int, LedgerEntry]) -> dict[str, Any]:
    call = calls.get(entry.target_changed_call_id or 0)
    return {
        **_row(entry),
        "target_changed_at": iso(entry.target_changed_at),
        "target_changed_label": entry.target_changed_label,
        # None: changed outside chatmem (the host's `target_changed`), or the
        # ledger row is gone (retention); `call_id` tells the two apart.
        "call_id": entry.target_changed_call_id,
        "call": None
        if call is None
        else {
            "id": call.id,
            "tool": call.tool,
            "at": utc_json(call.at),
            "session_id": call.session_id,
            "user_id": call.user_id,
            "channel": call.channel,
        },
    }


@bp.post(f"/upkeep/<int(max={ID_MAX}):entry_id>/still-true")
@admin_only(changes_state=True)
def still_true(entry_id: int) -> ResponseReturnValue:
    """A curator read an entry marked "target changed" and it holds: the mark goes."""
    db = current_memory().db.session()
    try:
        entry = revalidation.still_true(db, entry_id, actor_id=actor_id())
    except ChatmemError as error:
        db.rollback()
        if wants_json():
            return jsonify({"error": error.to_dict()}), error.status
        flash(error.message, "error")
        return redirect(url_for("chatmem_memory.upkeep", _anchor="target-changed"), code=303)
    back = current_memory().settings.changed_targets == "review" and entry.enabled
    message = visible(
        f"“{entry.title}” is still true: "
        + ("it is back in the block." if back else "the mark is cleared.")
    )
    if wants_json():
        return jsonify({"ok": True, "entry": entry_json(entry), "message": message})
    flash(message, "ok")
    return redirect(url_for("chatmem_memory.upkeep", _anchor="target-changed"), code=303)


@bp.app_context_processor
def _waiting() -> dict[str, Any]:
    """For the host's badge tooltip and the Pending tab: how long the oldest item has waited."""

    def chatmem_oldest_pending() -> str | None:
        """'3 days' (the oldest proposal or held call's wait), or None when nothing waits."""
        oldest = current_memory().oldest_pending()
        return span(waiting_since(oldest)) if oldest else None

    def chatmem_review_pace() -> costs.Pace:
        return costs.review_pace(current_memory().db.session())

    def chatmem_block_reach(entry_id: int) -> int:
        """In the block of how many conversations in the last 7 days."""
        return costs.conversations_with(current_memory().db.session(), [entry_id]).get(entry_id, 0)

    def session_block(session_id: str) -> list[tuple[int, Any]]:
        return costs.block_entries(current_memory().db.session(), session_id)

    return {
        "chatmem_oldest_pending": chatmem_oldest_pending,
        "chatmem_review_pace": chatmem_review_pace,
        "chatmem_span": span,
        "chatmem_block_reach": chatmem_block_reach,
        "session_block": session_block,
        "tokens_of": costs.tokens_of,
    }
