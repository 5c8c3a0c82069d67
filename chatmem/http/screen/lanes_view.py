"""Pending review in triage lanes (issue 32): Flagged, Steers agents, Facts and conventions.

Which lane a proposal is in is `chatmem.memory.lanes`'s; near-duplicate
proposals are one card (`chatmem.memory.groups`), in the lane of its
representative, or in Flagged when any member is flagged. This module reads
the request (the desk's search, filters and sort, and `lane`), screens every
pending proposal once (a lane's count needs them all, and the page's flags
are the same ones), and pages through the lanes in their order, each lane in
the chosen sort, so the keys and the bulk bar work across lanes as on one list.

`chatmem_oldest_lane()` names, for the host's badge, the lane of the proposal
that has waited longest.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from flask import request
from sqlalchemy.orm import Session as OrmSession

from ...core import current_memory
from ...memory import groups, lanes, listing
from ...memory.models import Guidance, utcnow
from .blueprint import bp
from .reads import filters
from .upkeep import span, waiting_since


@dataclass(frozen=True)
class LaneView:
    """One lane as the Pending tab draws it: its cards (a group of near-duplicates is one)."""

    lane: lanes.Lane  # the cards (representatives) that match the filters, in the chosen sort
    total: int  # the lane's cards, filters aside
    waited: str | None  # how long its oldest match has waited: "3 days"
    shown: list[Guidance]  # its cards on this page
    proposals: int = 0  # the proposals its matching cards hold

    @property
    def key(self) -> str:
        return self.lane.key


def pending(db: OrmSession) -> tuple[listing.Page, filters.Filters, dict[str, Any]]:
    """Pending's page of cards, its filters and the lanes; bad filter or lane values raise
    invalid_params. The page's items are the cards' representatives."""
    chosen = filters.parse(request.args)
    memory = current_memory()
    everything = listing.pending_proposals(db)
    # Fresh, not stored: the active guidance may have changed since the proposal.
    flags = memory.screen_entries(everything)
    cards = groups.group(everything, memory.server_name)
    of = groups.by_member(cards)
    # A flagged member makes its card Flagged: a group never hides a flag.
    flagged = {g.id for g in cards if any(flags.get(m.id) for m in g.members)}
    # Each card once, where its first matching member falls in the chosen sort.
    # A proposal made between the two queries waits for the next page load.
    matching_cards = dict.fromkeys(
        of[i].id for i in filters.matching_ids(db, "pending", chosen) if i in of
    )
    by_id = {g.id: g for g in cards}
    shown = lanes.split((by_id[i].representative for i in matching_cards), flagged)
    every = lanes.split((g.representative for g in cards), flagged)
    totals = {lane.key: lane.count for lane in every}
    listed = [e for lane in shown if chosen.lane in ("", lane.key) for e in lane.items]
    number = listing.clamp_page(request.args.get("page"), len(listed))
    start = (number - 1) * listing.PER_PAGE
    page = listing.Page(listed[start : start + listing.PER_PAGE], number, len(listed))
    on_page = [by_id[entry.id] for entry in page.items]
    members = [m for g in on_page for m in g.members]
    card_ids = {g.id for g in on_page}
    now = utcnow()
    views = [
        LaneView(
            lane,
            totals[lane.key],
            span(waiting_since(lane.since, now)) if lane.since else None,
            [e for e in lane.items if e.id in card_ids],
            sum(by_id[e.id].size for e in lane.items),
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
            "flags": {m.id: flags[m.id] for m in members},
            "groups": {g.id: g for g in on_page if g.size > 1},
            "flagged_groups": {g.id for g in on_page if g.id in flagged},
            # Every member's session, for the group cards' links.
            "sources": listing.sessions_by_id(db, (m.session_id for m in members)),
        },
    )


def beyond_groups(panels: dict[int, Any], cards: dict[int, groups.Group]) -> dict[int, Any]:
    """Each group card's evidence without its own members (the card lists them already)."""
    trimmed = dict(panels)
    for card_id, group in cards.items():
        panel = panels.get(card_id)
        if panel is not None:
            members = {m.id for m in group.members}
            kept = [s for s in panel.similar if s.entry.id not in members]
            trimmed[card_id] = replace(panel, similar=kept)
    return trimmed


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
