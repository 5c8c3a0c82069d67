"""The Memory screen in a real browser: Debian's Chromium driven by Playwright
against the host app served by werkzeug on 127.0.0.1 in a thread.

An admin signs in through the host's own login form and does what SPEC §8
promises, clicking what a person would click. Set CHATMEM_SCREENSHOTS to a
folder (the README's are in docs/screenshots) to keep a picture of each tab.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from chatmem import ChatmemError
from chatmem.auth import tokens
from chatmem.memory import guidance, sessions
from tests.hostapp import USERS
from tests.screen_helpers import propose

pytestmark = pytest.mark.browser

TIMEOUT_MS = 10_000


@pytest.fixture
def page(browser: Any, live_server: str) -> Iterator[Any]:
    """A fresh browser profile signed in as admin through the host's login."""
    context = browser.new_context(base_url=live_server, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        page.goto("/chatmem/memory?tab=pending")
        assert "/login?next=" in page.url
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill("admin")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/chatmem/memory?tab=pending")
        yield page
    finally:
        context.close()


def seed(app: Flask, work: Any) -> Any:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        try:
            return work(memory, memory.db)
        finally:
            memory.db.session.remove()


def preview(page: Any) -> str:
    locator = page.locator("pre.cm-block")
    return str(locator.inner_text()) if locator.count() else ""


def see_flash(page: Any, text: str) -> None:
    """Wait for the page the action led to and its message (the old page may linger)."""
    from playwright.sync_api import expect

    expect(page.locator(".cm-flashes")).to_contain_text(text)


def test_approve_then_edit_and_approve_another(app: Flask, page: Any) -> None:
    first = seed(app, lambda m, db: propose(m, "Checkout is page 42."))
    second = seed(app, lambda m, db: propose(m, "Use sentence case in titels.", type="convention"))
    page.reload()
    row = page.locator(f"#entry-{first}")
    row.get_by_role("button", name="Approve").click()
    see_flash(page, "Approved “Checkout is page 42.”: active now.")
    assert "Site facts: Checkout is page 42." in preview(page)

    row = page.locator(f"#entry-{second}")
    row.get_by_text("Edit before approving").click()
    row.get_by_label("Text").fill("Use sentence case in titles.")
    row.get_by_role("button", name="Save and approve").click()
    see_flash(page, "Saved and approved “Use sentence case in titles.”")
    assert "Conventions: Use sentence case in titles." in preview(page)
    assert page.locator(f"#entry-{second}").count() == 0  # no longer pending
    page.get_by_role("link", name="Active guidance").click()
    assert page.locator(".cm-row").count() == 2


def test_a_stale_approval_from_another_tab_is_refused(app: Flask, page: Any) -> None:
    entry_id = seed(app, lambda m, db: propose(m, "Checkout is page 42."))
    page.reload()
    other = page.context.new_page()
    other.goto("/chatmem/memory?tab=pending")
    row = other.locator(f"#entry-{entry_id}")
    row.get_by_text("Edit before approving").click()
    row.get_by_label("Text").fill("Checkout is page 43.")
    row.get_by_role("button", name="Save", exact=True).click()
    see_flash(other, "Saved")
    page.locator(f"#entry-{entry_id}").get_by_role("button", name="Approve").click()
    see_flash(page, f"Guidance #{entry_id} changed since you loaded it")
    assert "Checkout is page 43." in page.locator(f"#entry-{entry_id}").inner_text()
    assert preview(page) == ""


def test_switching_an_entry_off_takes_it_out_of_the_block(app: Flask, page: Any) -> None:
    def work(m: Any, db: Any) -> int:
        guidance.admin_add(
            db.session(), {"type": "fact", "text": "Checkout is page 42."}, actor_id="1"
        )
        return guidance.admin_add(
            db.session(), {"type": "fact", "text": "Blog is /news."}, actor_id="1"
        ).id

    entry_id = seed(app, work)
    page.goto("/chatmem/memory?tab=active")
    assert "Checkout is page 42. Blog is /news." in preview(page)
    switch = page.locator(f"#entry-{entry_id}").get_by_role("switch")
    assert switch.get_attribute("aria-checked") == "true"
    switch.click()
    see_flash(page, "is off: kept, not injected")
    assert page.url.endswith(f"#entry-{entry_id}"), "back at the row, not the top of the list"
    assert "Blog is /news." not in preview(page)
    assert "Checkout is page 42." in preview(page)
    row = page.locator(f"#entry-{entry_id}")
    assert row.get_by_role("switch").get_attribute("aria-checked") == "false"
    row.get_by_role("switch").click()
    see_flash(page, "is on: injected and enforced")
    assert "Blog is /news." in preview(page)


def test_each_setting_saves_on_flip_and_is_kept(app: Flask, page: Any) -> None:
    for name, label in (
        ("memory_enabled", "Memory"),
        ("require_approval", "Require approval"),
        ("auto_summarize", "Auto-summarize sessions"),
    ):
        switch = page.get_by_role("switch", name=label, exact=True)
        was = switch.is_checked()
        switch.click(force=True)
        form = page.locator("form[data-setting]", has=page.locator(f"#setting-{name}"))
        form.locator(".cm-status").filter(has_text="Saved").wait_for()
        if name == "memory_enabled":
            # It says what is off at once, and the preview stops showing a block.
            assert page.locator(".cm-off-notice[data-memory-off]").is_visible()
            preview = page.locator("[aria-labelledby=cm-preview-title]")
            assert preview.locator("[data-memory-off]").is_visible() is was
            assert preview.get_by_label("Injected block").is_visible() is not was
        page.reload()
        assert page.get_by_role("switch", name=label, exact=True).is_checked() is (not was)
        assert getattr(seed(app, lambda m, db: m.snapshot()), name) is (not was)
    assert "Memory is off." in page.locator(".cm-off-notice[data-memory-off]").inner_text()


def test_add_a_guardrail_by_hand(app: Flask, page: Any) -> None:
    page.goto("/chatmem/memory?tab=active")
    form = page.get_by_role("form", name="Add guidance")
    form.get_by_label("Type").select_option(label="Site fact")
    assert not form.get_by_label("Target (guardrails)").is_visible()
    form.get_by_label("Type").select_option(label="Guardrail")
    form.get_by_label("Text").fill("Never edit the header template.")
    form.get_by_label("Target (guardrails)").fill("post_type:header_footer")
    form.get_by_label("Severity (guardrails)").select_option("block")
    form.get_by_role("button", name="Add").click()
    see_flash(page, "Added “Never edit the header template.”: active now.")
    row = page.locator(".cm-row").first
    assert "by admin" in row.inner_text()
    assert "Enforced: matching tool calls are refused" in row.inner_text()
    assert "Guardrails: Never edit the header template." in preview(page)

    def edit_the_header(m: Any, db: Any) -> str:
        try:
            m.call_tool("update-post", {"post_id": 3, "title": "x"}, user=USERS["editor"])
        except ChatmemError as error:
            return error.code
        return "ran"

    assert seed(app, edit_the_header) == "blocked_by_memory"  # enforced at once


def test_trash_and_restore(app: Flask, page: Any) -> None:
    seed(
        app,
        lambda m, db: guidance.admin_add(
            db.session(), {"type": "fact", "text": "Old fact."}, actor_id="1"
        ),
    )
    page.goto("/chatmem/memory?tab=active")
    page.get_by_role("button", name="Delete: Old fact.").click()
    see_flash(page, "Moved “Old fact.” to the trash.")
    assert preview(page) == ""
    page.get_by_role("link", name="Trash").click()
    page.get_by_role("button", name="Restore: Old fact.").click()
    see_flash(page, "Restored “Old fact.”.")
    page.get_by_role("link", name="Active guidance").click()
    assert "Site facts: Old fact." in preview(page)


def test_open_a_sessions_digest(app: Flask, page: Any) -> None:
    def work(m: Any, db: Any) -> str:
        editor = USERS["editor"]
        session_id = m.start_session(editor, "chat")
        m.call_tool(
            "update-post",
            {"post_id": 7, "title": "Hello again"},
            user=editor,
            session_id=session_id,
        )
        m.call_tool(
            "save-session-summary",
            {
                "summary": "Renamed post 7.",
                "takeaways": [{"type": "fact", "text": "Post 7 is the welcome post."}],
            },
            user=editor,
            session_id=session_id,
        )
        return str(session_id)

    session_id = seed(app, work)
    page.goto("/chatmem/memory?tab=history")
    digest = page.locator("details.cm-digest pre")
    assert not digest.is_visible()
    page.get_by_text("Digest", exact=True).click()
    assert "update-post" in digest.inner_text()
    assert "1 call: 1 ok" in digest.inner_text()
    # the proposal's "from session" link leads to the same record
    page.get_by_role("link", name="Pending review").click()
    page.get_by_role("link", name="from session of editor (chat)").click()
    page.wait_for_url(f"**/chatmem/memory/sessions/{session_id}")
    assert "Renamed post 7." in page.locator("main").inner_text()
    assert "Hello again" in page.locator("table").inner_text()


def test_screenshots_of_each_tab(app: Flask, page: Any, tmp_path: Path) -> None:
    seed(app, _showcase)
    folder = Path(os.environ.get("CHATMEM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    for tab in ("pending", "active", "history", "trash", "tokens"):
        page.goto(f"/chatmem/memory?tab={tab}")
        target = folder / f"memory-{tab}.png"
        page.screenshot(path=str(target), full_page=True)
        assert target.stat().st_size > 10_000


def _showcase(m: Any, db: Any) -> None:
    """A site a few weeks in: what the README's screenshots show."""
    editor, admin = USERS["editor"], USERS["admin"]
    chat = m.start_session(editor, "chat")
    m.call_tool("update-post", {"post_id": 42, "title": "Checkout"}, user=editor, session_id=chat)
    m.call_tool(
        "save-session-summary",
        {
            "summary": "Retitled the checkout page and checked the header is untouched.",
            "takeaways": [
                {
                    "type": "guardrail",
                    "text": "Never change the checkout page's slug: payment callbacks use it.",
                },
                {
                    "type": "fact",
                    "text": "The newsletter form posts to Mailchimp list 'site-news'.",
                },
            ],
        },
        user=editor,
        session_id=chat,
    )
    propose(
        m,
        "Write product titles in sentence case, no trailing period.",
        type="convention",
        scope="catalog",
    )
    mcp = m.start_session(editor, "mcp")
    m.call_tool("update-post", {"post_id": 7, "title": "Hello world"}, user=editor, session_id=mcp)
    m.end_session(mcp)
    rest = m.start_session(editor, "rest")
    m.call_tool(
        "create-user", {"username": "temp", "password": "hunter2"}, user=editor, session_id=rest
    )
    record = sessions.end(db.session(), rest)
    sessions.save_summary(
        db.session(), record, "Created a temporary user for a support ticket.", auto=True
    )
    db.session.commit()
    add = guidance.admin_add
    add(
        db.session(),
        {
            "type": "guardrail",
            "text": "Never edit the header or footer templates.",
            "target": "post_type:header_footer",
            "severity": "block",
        },
        actor_id="1",
    )
    add(
        db.session(),
        {
            "type": "guardrail",
            "text": "Do not create users without asking.",
            "target": "create-users",
            "severity": "block",
        },
        actor_id="1",
    )
    add(
        db.session(),
        {"type": "fact", "text": "Checkout is page 42; the cart is page 41.", "scope": "checkout"},
        actor_id="1",
    )
    add(
        db.session(),
        {"type": "instruction", "text": "Call recall before editing any page."},
        actor_id="1",
    )
    off = add(
        db.session(),
        {"type": "convention", "text": "Dates are written 2 March 2025."},
        actor_id="1",
    )
    guidance.set_enabled(db.session(), off.id, False, actor_id="1")
    gone = add(db.session(), {"type": "fact", "text": "The shop closes on Sundays."}, actor_id="1")
    guidance.trash(db.session(), gone.id, actor_id=str(admin.id))
    tokens.issue(m, editor, name="laptop (Claude Code)")
    tokens.issue(
        m, USERS["viewer"], name="docs reader", read_only=True, expires_in=timedelta(days=30)
    )
    old, _plain = tokens.issue(m, editor, name="old CI job")
    tokens.revoke(db.session(), old.id, actor_id=str(admin.id))
