"""The chat page in a real headless Chromium: log in, send a message, see the
model's tool cards, one of them refused by a guardrail. Saves the README's
screenshot (docs/screenshots/chat.png)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from werkzeug.serving import make_server

from tests.demo_client import DemoClient
from tests.demo_story import FIRST_POST, GUARDRAIL, HEADER, add_guardrail, post_title
from tests.fake_llm import MESSAGES, FakeLLM, anthropic_text, anthropic_tool_use, fake_llm

__all__ = ["fake_llm"]

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOT = Path(__file__).resolve().parent.parent / "docs" / "screenshots" / "chat.png"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, demo_app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


def test_chat_page_shows_tool_cards_and_a_blocked_one(
    demo_app: Flask, live_url: str, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from playwright.sync_api import expect, sync_playwright

    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-browser-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    demo_app.config.update(CHATMEM_PROVIDER="anthropic", CHATMEM_PROVIDER_MAX_RETRIES=0)
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

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, timeout=20_000)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
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
            expect(blocked).to_have_count(1)
            expect(blocked).to_contain_text("blocked_by_memory")
            expect(blocked).to_contain_text(GUARDRAIL["title"])
            ok_cards = page.locator('.tool-card[data-outcome="ok"]')
            expect(ok_cards).to_have_count(2)
            expect(ok_cards.nth(1)).to_contain_text("update-post")
            expect(page.locator(".message--assistant")).to_contain_text("I renamed")
            assert post_title(demo_app, HEADER) == "Site header"
            assert post_title(demo_app, FIRST_POST) == "Summer sale!"

            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)

            page.get_by_role("button", name="Close conversation").click()
            expect(page.locator(".conversation-head .pill")).to_have_text("Closed")
            expect(page.get_by_label("Message")).to_have_count(0)
        finally:
            browser.close()
