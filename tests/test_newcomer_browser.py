"""Small things a newcomer met, in a real browser at phone width: the chat's
placeholder fits its box, /help reads as sections and lists, a curator
notice is dismissed with its button."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from chatmem.demo.extensions import db
from tests.demo_client import DemoClient
from tests.servers import serving

pytestmark = pytest.mark.browser


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def signed_in(browser: Any, live_url: str, user: str) -> Any:
    context = browser.new_context(base_url=live_url, viewport={"width": 375, "height": 800})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto("/login")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(user)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/chat**")
    return page


def test_the_placeholder_fits_and_help_reads_as_sections(browser: Any, live_url: str) -> None:
    page = signed_in(browser, live_url, "editor")
    try:
        page.get_by_role("button", name="New conversation").click()
        page.wait_for_url("**/chat/*")
        box = page.get_by_label("Message")
        # The placeholder, typed as text, must not need more room than the box has.
        overflows = box.evaluate(
            """box => { box.value = box.placeholder;
                        const over = box.scrollHeight > box.clientHeight
                          || box.scrollWidth > box.clientWidth;
                        box.value = ''; return over; }"""
        )
        assert not overflows, box.get_attribute("placeholder")
        box.fill("/help")
        box.press("Enter")
        notice = page.locator(".message--notice").last
        headings = notice.get_by_role("heading")
        expect(headings).to_have_text(
            ["Run a tool", "Site tools", "Project memory tools", "Commands"]
        )
        tools = notice.locator("ul").nth(0).get_by_role("listitem")
        expect(tools.first).to_contain_text("create-post {title: string")
        expect(notice.get_by_role("listitem").filter(has_text="remember {")).to_have_count(1)
        # Reloaded from the server, the same notice is drawn the same way.
        page.reload()
        expect(page.locator(".message--notice").last.get_by_role("heading")).to_have_count(4)
    finally:
        page.context.close()


def test_a_curator_dismisses_a_notice(demo_app: Flask, browser: Any, live_url: str) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    for text in ("The footer is blue.", "Posts are in English."):
        editor.say(conversation, "/tool remember " + json.dumps({"type": "fact", "text": text}))
    with demo_app.app_context():
        footer, english = (
            db.session.execute(
                db.text("select id from chatmem_guidance where text = :t"), {"t": text}
            ).scalar_one()
            for text in ("The footer is blue.", "Posts are in English.")
        )
    page = signed_in(browser, live_url, "admin")
    try:
        notices = page.get_by_role("complementary", name="Waiting for you")
        expect(notices.locator(".curator-notice")).to_have_count(2)
        page.get_by_role(
            "button", name=f"Dismiss: New proposal from editor: Proposal #{footer} (fact)"
        ).click()
        expect(notices.locator(".curator-notice")).to_have_count(1)
        # A notice names its item neutrally, never by the agent's words.
        expect(notices).to_contain_text(f"Proposal #{english} (fact)")
        expect(page.get_by_role("link", name="Memory")).to_contain_text("2")
        assert page.url.endswith("/chat"), "back on the page it was dismissed from"
    finally:
        page.context.close()
