"""What the Memory screen's guidance tabs draw for the review desk.

The URL's search, filters and sort, evidence beside each proposal, and the
bulk actions a tab offers; the desk's actions are in `desk.py`.
"""

from __future__ import annotations

from typing import Any

from flask import request
from sqlalchemy.orm import Session as OrmSession

from ...memory import guidance, listing
from ...memory.models import Guidance
from .reads import evidence, filters

# Which bulk actions each tab offers (the domain refuses any other status).
BULK_TABS = {"active": ("disable", "enable", "trash"), "trash": ("restore",)}


def tab_page(db: OrmSession, tab: str) -> tuple[listing.Page, filters.Filters]:
    """A guidance tab's page with the URL's filters; bad filter values raise invalid_params."""
    chosen = filters.parse(request.args)
    return filters.page(db, tab, chosen, request.args.get("page")), chosen


def extras(db: OrmSession, tab: str, page: listing.Page) -> dict[str, Any]:
    """The desk's template values: evidence on Pending, bulk actions on Active and Trash."""
    panels = evidence.for_entries(db, page.items) if tab == "pending" else {}
    related = (s.entry.id for panel in panels.values() for s in panel.similar)
    return {
        "evidence": panels,
        "similar_rejections": guidance.rejections(db, related),
        "scopes": filters.scopes(db),
        "replaceable": replaceable,
        "bulk_actions": BULK_TABS.get(tab, ()),
        "filter_choices": {
            "origins": filters.ORIGINS,
            "target_kinds": filters.TARGET_KINDS,
            "sorts": filters.SORTS,
        },
    }


def replaceable(entry: Guidance, other: Guidance) -> bool:
    """Whether "Replace #N with this" is offered: a proposal over an active entry."""
    return entry.status == "pending" and other.status == "publish"
