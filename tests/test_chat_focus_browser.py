"""The chat page in Chromium: after "New conversation" the message box has the
focus (not <body>), and a create-user password typed as a `/tool` command is
shown as [hidden] in the transcript and the title, never in clear."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask

from tests.servers import serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "correct horse battery"


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def test_new_conversation_focuses_the_message_box_and_hides_a_password(
    live_url: str, browser: Any
) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(f"{live_url}/login")
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill("admin")
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("button", name="New conversation").click()
        # Creating the conversation starts a chatmem session and migrates nothing, but on a
        # loaded two-core CI machine it once took over 10 s: wait longer, assert the same.
        page.wait_for_url(f"{live_url}/chat/*", timeout=30_000)
        box = page.get_by_label("Message")
        expect(box).to_be_focused()

        # Typing goes straight into the box.
        page.keyboard.type(f'/tool create-user {{"username": "bo", "password": "{PASSWORD}"}}')
        page.keyboard.press("Enter")
        expect(page.locator('.tool-card[data-outcome="ok"]')).to_have_count(1)
        expect(page.locator(".message--user")).to_contain_text('"password": "[hidden]"')
        # A /tool command is titled by its tool, on the page and in the sidebar at once.
        expect(page.locator(".conversation-head h1")).to_have_text("Tool call: create-user")
        expect(page.locator(".conversation-list a[aria-current] .title")).to_have_text(
            "Tool call: create-user"
        )
        expect(box).to_be_focused()
        assert PASSWORD not in page.locator("main").inner_text()
        page.reload()
        expect(page.locator(".tool-card")).to_have_count(1)
        assert PASSWORD not in page.content()
    finally:
        context.close()
