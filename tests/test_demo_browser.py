"""The chat page in a real headless Chromium: log in, send a message, see the
model's tool cards, one of them refused by a guardrail. Saves the README's
screenshot (set CHATMEM_SCREENSHOTS=docs/screenshots to refresh the README's)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.demo_client import DemoClient
from tests.demo_story import FIRST_POST, GUARDRAIL, HEADER, add_guardrail, post_title
from tests.fake_llm import MESSAGES, FakeLLM, anthropic_text, anthropic_tool_use
from tests.hostapp import reconfigure
from tests.servers import serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def test_chat_page_shows_tool_cards_and_a_blocked_one(
    demo_app: Flask,
    live_url: str,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    browser: Any,
) -> None:
    from playwright.sync_api import expect

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-browser-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    reconfigure(demo_app, CHATMEM_PROVIDER="anthropic", CHATMEM_PROVIDER_MAX_RETRIES=0)
    add_guardrail(demo_app)
    editor = DemoClient(demo_app, "editor")  # a proposal waiting, for the badge
    editor.say(
        editor.new_conversation()["id"],
        '/tool remember {"type": "fact", "text": "Checkout is page 4."}',
    )
    fake_llm.enqueue(MESSAGES, body=anthropic_tool_use("recall", {}, call_id="t0"))
    fake_llm.enqueue(
        MESSAGES,
        body=anthropic_tool_use(
            "update-post", {"post_id": HEADER, "title": "Summer sale!"}, call_id="t1"
        ),
    )
    fake_llm.enqueue(
        MESSAGES,
        body=anthropic_tool_use(
            "update-post", {"post_id": FIRST_POST, "title": "Summer sale!"}, call_id="t2"
        ),
    )
    fake_llm.enqueue(
        MESSAGES,
        body=anthropic_text(
            "I renamed the welcome post to “Summer sale!”. I could not change the site "
            "header: project memory guardrail “Header and footer are off limits” refuses it."
        ),
    )

    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(f"{live_url}/login")
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill("admin")
        page.get_by_role("button", name="Log in").click()
        expect(page.locator(".nav .badge")).to_have_text("1")
        page.get_by_role("button", name="New conversation").click()
        page.wait_for_url(f"{live_url}/chat/*")

        box = page.get_by_label("Message")
        box.fill("Put “Summer sale!” in the site header and as the welcome post's title.")
        box.press("Enter")

        blocked = page.locator(".tool-card--blocked")
        # One turn is four model calls and three tool calls: on a loaded machine that
        # outlasts expect's 5-second default, which is about the page, not the server.
        expect(blocked).to_have_count(1, timeout=30_000)
        expect(blocked).to_contain_text("blocked_by_memory")
        expect(blocked).to_contain_text(GUARDRAIL["title"])
        ok_cards = page.locator('.tool-card[data-outcome="ok"]')
        expect(ok_cards).to_have_count(2)
        expect(ok_cards.nth(1)).to_contain_text("update-post")
        expect(page.locator(".message--assistant")).to_contain_text("I renamed")
        assert post_title(demo_app, HEADER) == "Site header"
        assert post_title(demo_app, FIRST_POST) == "Summer sale!"

        # CHATMEM_SCREENSHOTS=docs/screenshots refreshes the README's picture.
        folder = Path(os.environ.get("CHATMEM_SCREENSHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / "chat.png"), full_page=True)
        assert (folder / "chat.png").stat().st_size > 10_000

        page.once("dialog", lambda dialog: dialog.accept())  # "Close this conversation?"
        page.get_by_role("button", name="Close conversation").click()
        expect(page.locator(".conversation-head .pill")).to_have_text("Closed")
        expect(page.get_by_label("Message")).to_have_count(0)
    finally:
        context.close()
