"""The review desk in a real browser (issue 15, points 1 and 5): the evidence
beside a proposal and "Replace #N with this", then a filtered Active list and
bulk actions on it, at 1280 px and at 375 px. Set CHATMEM_SCREENSHOTS to a
folder (the docs' are in docs/screenshots) to keep memory-evidence.png,
memory-filtered.png and memory-bulk.png.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from chatmem.memory import guidance
from tests.hostapp import USERS
from tests.test_desk_browser import shots
from tests.test_memory_screen_browser import page, preview, seed  # noqa: F401

pytestmark = pytest.mark.browser


def _no_sideways_scroll(page: Any, url: str) -> None:  # noqa: F811
    page.goto(url)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{url} scrolls sideways by {overflow} px"


def _proposal_world(m: Any, db: Any) -> dict[str, int]:
    """An active fact, a rejected look-alike, and a proposal from a session that edited a post."""
    editor = USERS["editor"]
    old = guidance.admin_add(
        db.session(), {"type": "fact", "text": "Checkout is page 42 on this site."}, actor_id="1"
    )
    rejected = m.call_tool(
        "remember", {"type": "fact", "text": "Checkout is page 9 on this site."}, user=editor
    )["id"]
    guidance.reject(db.session(), rejected, actor_id="1", reason="Page 9 is the cart.")
    sid = m.start_session(editor, "python")
    m.call_tool("update-post", {"post_id": 7, "title": "Checkout"}, user=editor, session_id=sid)
    new = m.call_tool(
        "remember",
        {"type": "fact", "text": "Checkout is page 7 on this site since November."},
        user=editor,
        session_id=sid,
    )["id"]
    return {"old": old.id, "rejected": int(rejected), "new": int(new)}


def test_evidence_beside_a_proposal_then_replace(app: Flask, page: Any) -> None:  # noqa: F811
    ids = seed(app, _proposal_world)
    page.goto("/chatmem/memory?tab=pending")
    row = page.locator(f"#entry-{ids['new']}")
    panel = row.locator(".cm-evidence")
    expect(panel.locator("summary")).to_have_text(
        "Evidence: 2 similar entries · 2 ledger lines from its session"
    )
    items = panel.locator(".cm-similar-item")
    expect(items).to_have_count(2)
    expect(panel).to_contain_text("Rejected by admin")
    expect(panel).to_contain_text("Page 9 is the cart.")
    expect(panel.locator("tbody tr").first).to_contain_text("update-post")
    if shots():
        row.screenshot(path=str(shots() / "memory-evidence.png"))  # type: ignore[operator]

    page.set_viewport_size({"width": 375, "height": 800})
    _no_sideways_scroll(page, "/chatmem/memory?tab=pending")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto("/chatmem/memory?tab=pending")

    page.on("dialog", lambda dialog: dialog.accept())  # Replace asks first
    page.get_by_role("button", name=f"Replace #{ids['old']} with").click()
    expect(page.locator(".cm-flash-ok")).to_have_text(
        "Approved “Checkout is page 7 on this site since”; "  # the title: 8 words
        f"it replaces #{ids['old']}, now in the trash."
    )
    assert "page 7" in preview(page) and "page 42" not in preview(page)
    page.goto(f"/chatmem/memory/guidance/{ids['old']}")
    expect(page.locator(".cm-trail")).to_contain_text(f"replaced by #{ids['new']}")


def _list_world(m: Any, db: Any) -> list[int]:
    rows = [
        {"type": "fact", "text": "Checkout is page 42.", "scope": "shop"},
        {"type": "guardrail", "text": "Never edit the checkout page.", "target": "post_id:42"},
        {"type": "guardrail", "text": "Never delete users.", "target": "delete-user"},
        {"type": "convention", "text": "Titles use sentence case."},
        {"type": "instruction", "text": "Clear the checkout cache after edits.", "scope": "shop"},
        {"type": "fact", "text": "Long: " + "the checkout flow has many steps " * 25},
    ]
    return [
        guidance.admin_add(db.session(), {"severity": None, **r}, actor_id="1").id for r in rows
    ]


def test_a_filtered_list_and_bulk_actions(app: Flask, page: Any) -> None:  # noqa: F811
    ids = seed(app, _list_world)
    page.goto("/chatmem/memory?tab=active")
    search = page.get_by_role("search", name="Search and filter")
    search.get_by_label("Search").fill("checkout")
    search.get_by_role("button", name="Apply").click()
    page.wait_for_url("**q=checkout**")
    expect(page.locator(".cm-matches")).to_have_text("4 of 6 match.")
    # The long one is clamped, and opens in full.
    long_row = page.locator(f"#entry-{ids[5]}")
    expect(long_row.locator(".cm-text-short")).to_be_visible()
    long_row.get_by_text("Show all").click()
    expect(long_row.locator(".cm-text-short")).to_be_hidden()

    search.get_by_label("Scope").fill("shop")
    search.get_by_label("Sort").select_option("title")
    search.get_by_role("button", name="Apply").click()
    page.wait_for_url("**scope=shop**")
    rows = page.locator("#cm-active-list > .cm-row")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("Checkout is page 42.")
    expect(rows.nth(1)).to_contain_text("Clear the checkout cache after edits.")
    if shots():
        page.screenshot(path=str(shots() / "memory-filtered.png"), full_page=True)  # type: ignore[operator]

    page.get_by_label("Select all").check()
    page.get_by_role("button", name="Switch off selected").click()
    expect(page.locator(".cm-flash-ok")).to_have_text("Switched off 2 entries.")
    assert "scope=shop" in page.url, "the list stays filtered"
    expect(rows.nth(0).get_by_role("switch")).to_have_attribute("aria-checked", "false")
    expect(rows.nth(1).get_by_role("switch")).to_have_attribute("aria-checked", "false")
    if shots():
        page.screenshot(path=str(shots() / "memory-bulk.png"), full_page=True)  # type: ignore[operator]

    page.get_by_label("Select all").check()
    page.get_by_role("button", name="Delete selected").click()
    expect(page.locator(".cm-flash-ok")).to_have_text("Moved to the trash 2 entries.")
    page.goto("/chatmem/memory?tab=trash")
    page.locator(f"#entry-{ids[0]} .cm-select").check()
    page.get_by_role("button", name="Restore selected").click()
    expect(page.locator(".cm-flash-ok")).to_have_text("Restored 1 entry.")

    page.set_viewport_size({"width": 375, "height": 800})
    for url in (
        "/chatmem/memory?tab=active&q=checkout&sort=title",
        "/chatmem/memory?tab=trash",
    ):
        _no_sideways_scroll(page, url)
