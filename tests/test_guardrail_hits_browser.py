"""The dry run and hit counts in a real browser: the add form says what a target
would have refused as you type it, and the Active tab links a guardrail's hits.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from chatmem import BlockedByMemory
from tests.hostapp import USERS
from tests.test_memory_screen_browser import page, seed  # noqa: F401

pytestmark = pytest.mark.browser


def calls(memory: Any, db: Any) -> None:
    for post in (42, 42, 7):
        memory.call_tool("update-post", {"post_id": post, "title": "x"}, user=USERS["editor"])


def test_the_add_form_dry_runs_the_target_and_the_active_tab_links_hits(
    app: Flask,
    page: Any,  # noqa: F811
) -> None:
    seed(app, calls)
    page.goto("/chatmem/memory?tab=active")
    form = page.get_by_role("form", name="Add guidance")
    page.locator("details.cm-add").evaluate("details => { details.open = true; }")
    form.get_by_label("Type").select_option("guardrail")
    form.get_by_label("Text").fill("Never touch the checkout page.")
    result = form.locator("[data-dry-run-result]")
    form.get_by_label("Target").fill("post_id:42")
    expect(result).to_have_text("Dry run: would have refused 2 calls in the last 30 days")
    form.get_by_label("Target").fill("post_id:9")
    expect(result).to_have_text("Dry run: matches nothing in the last 30 days")
    form.get_by_label("Target").fill("colour:red")
    expect(result).to_have_text("Dry run: this target never matches")
    form.get_by_label("Severity").select_option("warn")
    expect(result).to_have_text("")
    form.get_by_label("Severity").select_option("block")
    form.get_by_label("Target").fill("post_id:42")
    expect(result).to_contain_text("would have refused 2 calls")
    form.get_by_role("button", name="Add").click()

    def refuse(memory: Any, db: Any) -> None:
        with pytest.raises(BlockedByMemory):
            memory.call_tool("update-post", {"post_id": 42, "title": "y"}, user=USERS["editor"])

    seed(app, refuse)
    page.goto("/chatmem/memory?tab=active")
    hits = page.locator(".cm-hits")
    expect(hits).to_contain_text("Refused 1 call, last just now")
    hits.get_by_role("link", name="see them").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Calls refused by")
    expect(page.locator("tbody tr")).to_have_count(1)
    expect(page.locator("tbody")).to_contain_text('"title": "y"')
