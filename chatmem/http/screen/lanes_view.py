"""Pending review in triage lanes (issue 32): Flagged, Steers agents, Facts and conventions.

Which lane a proposal is in is `chatmem.memory.lanes`'s. This module reads
the request (the desk's search, filters and sort, and `lane`), screens every
pending proposal once (a lane's count needs them all, and the page's flags
are the same ones), and pages through the lanes in their order, each lane in
the chosen sort, so the keys and the bulk bar work across lanes as on one list.

`chatmem_oldest_lane()` names, for the host's badge, the lane of the proposal
that has waited longest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from flask import request
from sqlalchemy.orm import Session as OrmSession

from ...core import current_memory
from ...memory import lanes, listing
from ...memory.models import Guidance, utcnow
from .blueprint import bp
from .reads import filters
from .upkeep import span, waiting_since


@dataclass(frozen=True)
class LaneView:
    """One lane as the Pending tab draws it."""

    lane: lanes.Lane  # the proposals that match the filters, in the chosen sort
    total: int  # the lane's proposals, filters aside
    waited: str | None  # how long its oldest match has waited: "3 days"
    shown: list[Guidance]  # its proposals on this page

    @property
    def key(self) -> str:
        return self.lane.key


def pending(db: OrmSession) -> tuple[listing.Page, filters.Filters, dict[str, Any]]:
    """Pending's page, its filters and the lanes; bad filter or lane values raise invalid_params."""
    chosen = filters.parse(request.args)
    everything = listing.pending_proposals(db)
    # Fresh, not stored: the active guidance may have changed since the proposal.
    flags = current_memory().screen_entries(everything)
    flagged = {entry_id for entry_id, found in flags.items() if found}
    by_id = {entry.id: entry for entry in everything}
    # A proposal made between the two queries waits for the next page load.
    matching = [by_id[i] for i in filters.matching_ids(db, "pending", chosen) if i in by_id]
    shown = lanes.split(matching, flagged)
    every = lanes.split(everything, flagged)
    totals = {lane.key: lane.count for lane in every}
    listed = [e for lane in shown if chosen.lane in ("", lane.key) for e in lane.items]
    number = listing.clamp_page(request.args.get("page"), len(listed))
    start = (number - 1) * listing.PER_PAGE
    page = listing.Page(listed[start : start + listing.PER_PAGE], number, len(listed))
    on_page = {entry.id for entry in page.items}
    now = utcnow()
    views = [
        LaneView(
            lane,
            totals[lane.key],
            span(waiting_since(lane.since, now)) if lane.since else None,
            [e for e in lane.items if e.id in on_page],
        )
        for lane in shown
    ]
    longest = lanes.longest_waiting(every)
    return (
        page,
        chosen,
        {
            "lanes": views,
            "lane_labels": lanes.LABELS,
            "longest_lane": longest.label if longest else None,
            "flags": {entry_id: flags[entry_id] for entry_id in on_page},
        },
    )


def oldest_lane() -> str | None:
    """The lane ("Flagged") of the proposal that has waited longest, or None."""
    memory = current_memory()
    oldest = listing.oldest_proposal(memory.db.session())
    if oldest is None:
        return None
    flagged = bool(memory.screen_entries([oldest]).get(oldest.id))
    return lanes.LABELS[lanes.lane_of(oldest.type, flagged)]


@bp.app_context_processor
def _lane_helpers() -> dict[str, Any]:
    """For the host's badge: which lane has waited longest (queried only when called)."""
    return {"chatmem_oldest_lane": oldest_lane}
