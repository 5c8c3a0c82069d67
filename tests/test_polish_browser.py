"""Confirmations in a real browser: Reject on the Memory screen and Close
conversation in the chat ask first; dismissing changes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect

from tests.demo_client import DemoClient
from tests.servers import serving

pytestmark = pytest.mark.browser


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def signed_in(browser: Any, live_url: str, user: str) -> Any:
    context = browser.new_context(base_url=live_url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto("/login")
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(user)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/chat**")
    return page


def test_reject_asks_first(demo_app: Flask, browser: Any, live_url: str) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    for text in ("The footer is blue.", "Posts are in English."):
        editor.say(conversation, "/tool remember " + json.dumps({"type": "fact", "text": text}))
    page = signed_in(browser, live_url, "admin")
    try:
        page.goto("/chatmem/memory?tab=pending")
        asked: list[str] = []

        def answer(accept: bool) -> None:
            def handle(dialog: Any) -> None:
                asked.append(dialog.message)
                dialog.accept() if accept else dialog.dismiss()

            page.once("dialog", handle)

        # By its heading: the other proposal's evidence panel quotes this text
        # (its session's ledger lines hold both `remember` calls).
        footer = page.get_by_role("heading", name="The footer is blue.")
        row = page.locator(".cm-row", has=footer)
        answer(False)
        row.get_by_role("button", name="Reject: The footer is blue.").click()
        expect(page.locator(".cm-row", has=footer)).to_have_count(1)
        assert asked == ["Reject “The footer is blue.”? Agents will not get it."]
        answer(True)
        row.get_by_role("button", name="Reject: The footer is blue.").click()
        expect(page.locator(".cm-flashes")).to_contain_text("Rejected")
        expect(page.locator(".cm-row", has=footer)).to_have_count(0)

        page.locator("[data-select-all]").check()
        answer(False)
        page.get_by_role("button", name="Reject selected").click()
        page.reload()
        expect(page.locator(".cm-row", has_text="Posts are in English.")).to_have_count(1)
        assert asked[-1] == "Reject the selected proposals? Agents will not get them."
    finally:
        page.context.close()


def test_close_conversation_asks_first(demo_app: Flask, browser: Any, live_url: str) -> None:
    page = signed_in(browser, live_url, "editor")
    try:
        page.get_by_role("button", name="New conversation").click()
        page.wait_for_url("**/chat/*")
        page.once("dialog", lambda dialog: dialog.dismiss())
        page.get_by_role("button", name="Close conversation").click()
        page.reload()  # what the server kept, not what the page still shows
        expect(page.get_by_label("Message")).to_be_visible()
        expect(page.locator(".conversation-head .pill")).to_have_count(0)
        page.once("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name="Close conversation").click()
        expect(page.locator(".conversation-head .pill")).to_have_text("Closed")
    finally:
        page.context.close()
