"""Target changed since approval, in a real browser: the mark on Upkeep, and Still true.

With CHATMEM_CHANGED_TARGETS = "review" the marked entry is missing from the
block preview until the curator clicks Still true on its Upkeep row.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from chatmem.memory import guidance
from tests.hostapp import USERS, reconfigure
from tests.test_memory_screen_browser import page, preview, seed  # noqa: F401

pytestmark = pytest.mark.browser

ABOUT = "The About page is post_id:4, written by the founders."


def _changed(m: Any, db: Any) -> int:
    """A fact naming post 4, then an agent's successful change of post 4."""
    entry_id = guidance.admin_add(db.session(), {"type": "fact", "text": ABOUT}, actor_id="1").id
    m.call_tool("update-post", {"post_id": 4, "title": "About"}, user=USERS["editor"])
    return int(entry_id)


def test_the_mark_on_upkeep_and_still_true(app: Flask, page: Any) -> None:  # noqa: F811
    reconfigure(app, CHATMEM_CHANGED_TARGETS="review")

    def add_post(m: Any, db: Any) -> None:
        model = app.extensions["test_host"]["Post"]
        db.session.add(model(id=4, title="About us", post_type="page"))
        db.session.commit()

    seed(app, add_post)
    entry_id = seed(app, _changed)

    page.goto("/chatmem/memory?tab=active")
    assert "written by the founders" not in preview(page)

    page.goto("/chatmem/memory/upkeep")
    row = page.locator(f"#changed-{entry_id}")
    expect(row).to_contain_text("target changed")
    expect(row).to_contain_text("post_id:4")
    expect(row.locator("[data-changed-by]")).to_contain_text(
        "changed by update-post (editor, python)"
    )
    expect(row.get_by_role("link", name="session")).to_have_count(1)
    expect(page.locator("#target-changed")).to_contain_text("Each is kept out of the block")

    row.get_by_role("button", name=re.compile("^Still true")).click()

    expect(page.locator(".cm-flashes")).to_contain_text("is still true: it is back in the block.")
    expect(page.locator("#target-changed .cm-row")).to_have_count(0)
    expect(page.locator("#target-changed")).to_contain_text("No target changed")
    page.goto("/chatmem/memory?tab=active")
    assert "written by the founders" in preview(page)
