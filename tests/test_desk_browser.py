"""The review desk in a real browser: rejecting with a reason, the Rejected tab,
the flag an agent's re-proposal gets, and an entry's history page, at desktop
width and at 375 px. Set CHATMEM_SCREENSHOTS to a folder (the README's are in
docs/screenshots) to keep memory-rejected.png and memory-entry-history.png.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from chatmem import BlockedByMemory
from chatmem.memory import guidance
from tests.hostapp import USERS
from tests.screen_helpers import propose
from tests.test_memory_screen_browser import page, seed  # noqa: F401

pytestmark = pytest.mark.browser


def _desk(m: Any, db: Any) -> dict[str, int]:
    """A few proposals, one rejected without a reason; a guardrail edited twice and hit."""
    editor = USERS["editor"]
    ids = {
        "slug": propose(m, "Checkout is page 42.", user="editor"),
        "font": propose(m, "Use Comic Sans for all headings.", type="convention"),
        "cache": propose(m, "Clear the page cache after every edit.", type="instruction"),
    }
    guidance.reject(db.session(), ids["cache"], actor_id="1")
    rule = {"type": "guardrail", "target": "post_id:42", "severity": "block"}
    ids["rule"] = propose(m, "Never edit the checkout page.", **rule)
    guidance.edit(
        db.session(), ids["rule"], {"text": "Never edit the checkout or cart page."}, actor_id="1"
    )
    guidance.edit(
        db.session(),
        ids["rule"],
        {"text": "Never edit the checkout page: payment callbacks use its slug."},
        actor_id="1",
    )
    guidance.approve(db.session(), ids["rule"], actor_id="1")
    for _ in range(2):
        with pytest.raises(BlockedByMemory):
            m.call_tool("update-post", {"post_id": 42, "title": "Pay"}, user=editor)
    return ids


def shots() -> Path | None:
    folder = os.environ.get("CHATMEM_SCREENSHOTS")
    return Path(folder) if folder else None


def test_reject_with_a_reason_then_the_rejected_tab_and_the_reproposal_flag(
    app: Flask,
    page: Any,  # noqa: F811
) -> None:
    ids = seed(app, _desk)
    page.goto("/chatmem/memory?tab=pending")
    page.on("dialog", lambda dialog: dialog.accept())  # Reject asks first
    row = page.locator(f"#entry-{ids['slug']}")
    row.get_by_label("Reason for rejecting Checkout is page 42.").fill(
        "Checkout moved to page 7 in November."
    )
    row.get_by_role("button", name="Reject: Checkout is page 42.").click()
    expect(page.locator(".cm-flash-ok")).to_have_text("Rejected “Checkout is page 42.”.")
    # Bulk: tick one, give a reason, reject.
    page.locator(f"#entry-{ids['font']} .cm-select").check()
    page.get_by_label("Reason for rejecting the selected entries").fill("House style is Inter.")
    page.get_by_role("button", name="Reject selected").click()
    expect(page.locator(".cm-flash-ok")).to_have_text("Rejected 1 entry.")

    page.get_by_role("link", name="Rejected 3").click()
    rows = page.locator("#cm-main .cm-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_contain_text("Rejected by admin")
    expect(rows.nth(0)).to_contain_text("House style is Inter.")
    expect(rows.nth(1)).to_contain_text("Checkout moved to page 7 in November.")
    expect(rows.nth(2)).to_contain_text("(no reason given)")
    if shots():
        page.screenshot(path=str(shots() / "memory-rejected.png"), full_page=True)  # type: ignore[operator]

    # The agent proposes it again: the curator sees when, by whom and why.
    seed(app, lambda m, db: propose(m, "checkout is page 42."))
    page.goto("/chatmem/memory?tab=pending")
    flag = page.locator('[data-flag="rejected_before"]')
    expect(flag).to_contain_text("by admin: Checkout moved to page 7 in November.")


def test_the_history_page_from_a_row(app: Flask, page: Any) -> None:  # noqa: F811
    ids = seed(app, _desk)
    page.goto("/chatmem/memory?tab=active")
    page.locator(f"#entry-{ids['rule']}").get_by_role("link", name="History").click()
    page.wait_for_url(f"**/chatmem/memory/guidance/{ids['rule']}")
    expect(page.get_by_role("heading", level=1)).to_contain_text("History of")
    versions = page.locator(".cm-version")
    expect(versions).to_have_count(3)
    expect(versions.nth(0).locator("h3")).to_contain_text("Version 3 · Edited by admin")
    expect(versions.nth(0).locator(".cm-diff ins").first).to_be_visible()
    expect(versions.nth(2).locator("h3")).to_contain_text("Version 1 · Proposed by editor")
    trail = page.locator(".cm-trail li")
    expect(trail).to_have_count(4)
    expect(page.locator("main")).to_contain_text("refused 2 calls")
    if shots():
        page.screenshot(path=str(shots() / "memory-entry-history.png"), full_page=True)  # type: ignore[operator]
    page.get_by_role("link", name="see them").click()
    expect(page.locator("tbody tr")).to_have_count(2)

    # At 375 px the page and the Rejected tab fit: nothing scrolls sideways.
    page.set_viewport_size({"width": 375, "height": 800})
    history_url = f"/chatmem/memory/guidance/{ids['rule']}"
    for url in (history_url, "/chatmem/memory?tab=pending", "/chatmem/memory?tab=rejected"):
        page.goto(url)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{url} scrolls sideways by {overflow} px at 375 px"
