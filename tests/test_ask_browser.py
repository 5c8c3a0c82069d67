"""The `ask` severity in a real browser: the Memory screen's Waiting calls tab
(Allow once, Deny with a note) and the demo chat's "Waiting for approval"
card with Run now. Set CHATMEM_SCREENSHOTS=docs/screenshots to refresh the
README's pictures (memory-waiting.png, chat-waiting.png).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect
from sqlalchemy import select

from chatmem import ApprovalRequired
from chatmem.memory import guidance
from tests.demo_client import DemoClient
from tests.hostapp import USERS
from tests.servers import serving
from tests.test_memory_screen_browser import page, seed  # noqa: F401

pytestmark = pytest.mark.browser


def screenshots(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("CHATMEM_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ask_before_the_header(memory: Any, db: Any) -> None:
    """An approved `ask` guardrail on the test host's header post (post 3)."""
    guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "title": "Ask before changing the site header",
            "text": "The header is on every page: a person looks first.",
            "target": "post_id:3",
            "severity": "ask",
        },
        actor_id=str(USERS["admin"].id),
    )


def hold_two(memory: Any, db: Any) -> list[int]:
    ask_before_the_header(memory, db)
    ids = []
    for title in ("Sale!", "Summer sale: 20% off"):
        with pytest.raises(ApprovalRequired) as caught:
            memory.call_tool("update-post", {"post_id": 3, "title": title}, user=USERS["editor"])
        ids.append(int(caught.value.details["request_id"]))
    return ids


def test_the_waiting_calls_tab_allows_once_and_denies(
    app: Flask,
    page: Any,  # noqa: F811
    tmp_path: Path,
) -> None:
    first, second = seed(app, hold_two)
    page.goto("/chatmem/memory?tab=pending")
    tab = page.get_by_role("link", name="Waiting calls")
    expect(tab).to_contain_text("2")
    tab.click()
    page.wait_for_url("**tab=waiting")
    rows = page.locator("li.cm-held")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text(
        "editor wants to run update-post on post 3 (header_footer): title → 'Sale!'"
    )
    expect(rows.first).to_contain_text("guardrail #1: Ask before changing the site header")
    expect(rows.first).to_contain_text('"post_id": 3')
    page.screenshot(path=str(screenshots(tmp_path) / "memory-waiting.png"), full_page=True)

    rows.first.get_by_label(f"Note on request #{first}").fill("Fine for the sale")
    page.get_by_role("button", name=f"Allow once: request #{first}").click()
    expect(page.locator(".cm-flashes")).to_contain_text(f"Allowed request #{first} once")
    expect(page.locator("li.cm-held")).to_have_count(1)
    page.get_by_label(f"Note on request #{second}").fill("Not during the sale")
    page.get_by_role("button", name=f"Deny: request #{second}").click()
    expect(page.locator(".cm-flashes")).to_contain_text(f"Denied request #{second}")
    expect(page.locator(".cm-empty")).to_contain_text("No calls are waiting.")

    def run_allowed(memory: Any, db: Any) -> str:
        return str(
            memory.call_tool("update-post", {"post_id": 3, "title": "Sale!"}, user=USERS["editor"])[
                "title"
            ]
        )

    assert seed(app, run_allowed) == "Sale!"


@pytest.fixture
def live_url(demo_app: Flask) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def test_the_chat_card_waits_then_runs_now(
    demo_app: Flask, live_url: str, browser: Any, tmp_path: Path
) -> None:
    from chatmem.demo.extensions import db
    from chatmem.demo.models import Post

    with demo_app.app_context():
        header = db.session.scalars(select(Post.id).filter_by(title="Site header")).one()
    admin = DemoClient(demo_app, "admin")
    response = admin.client.post(
        "/chatmem/memory/guidance",
        data={
            "csrf_token": admin.csrf,
            "type": "guardrail",
            "title": "Ask before changing the site header",
            "text": "The header is on every page: a person looks first.",
            "target": f"post_id:{header}",
            "severity": "ask",
        },
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 201
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(f"{live_url}/login")
        page.get_by_label("Username").fill("editor")
        page.get_by_label("Password").fill("editor")
        page.get_by_role("button", name="Log in").click()
        page.get_by_role("button", name="New conversation").click()
        page.wait_for_url(f"{live_url}/chat/*")
        box = page.get_by_label("Message")
        box.fill(f'/tool update-post {{"post_id": {header}, "title": "Sale!"}}')
        box.press("Enter")
        card = page.locator('.tool-card[data-outcome="held"]')
        expect(card).to_have_count(1)
        expect(card.locator(".tool-held-heading")).to_have_text("Waiting for approval")
        expect(card.locator(".tool-badge")).to_have_text("approval_required")
        expect(card).to_have_class("tool-card tool-card--held")
        expect(card.locator(".tool-held-state")).to_have_text("A curator has not decided yet.")
        run = card.get_by_role("button", name="Run now")
        expect(run).to_be_hidden()
        text = card.inner_text()
        request_id = int(text.split("request #", 1)[1].split(",", 1)[0])

        allowed = admin.client.post(
            f"/chatmem/memory/held/{request_id}/allow",
            data={"csrf_token": admin.csrf, "note": "Go ahead"},
            headers={"Accept": "application/json"},
        )
        assert allowed.status_code == 200
        # The card asks every few seconds; the button appears once allowed.
        expect(run).to_be_visible(timeout=15_000)
        expect(card.locator(".tool-held-state")).to_contain_text("Allowed once")
        page.screenshot(path=str(screenshots(tmp_path) / "chat-waiting.png"), full_page=True)
        run.click()
        ok = page.locator('.tool-card[data-outcome="ok"]')
        expect(ok).to_have_count(1)
        expect(ok).to_contain_text('"title": "Sale!"')
        expect(page.locator(".message--user").last).to_contain_text(
            f"Run now: request #{request_id} was allowed once."
        )
        expect(card.locator(".tool-held-state")).to_have_text("Already run.")
        expect(run).to_be_hidden()
        # Decided, the card says so: no "Waiting for approval" under an amber badge.
        expect(card.locator(".tool-held-heading")).to_have_text("Allowed and run")
        expect(card.locator(".tool-badge")).to_have_text("allowed_and_run")
        expect(card).not_to_contain_text("Waiting for approval")
        expect(card).to_have_class("tool-card tool-card--ok")

        # A second call, denied; after a reload both cards read their decision.
        box.fill(f'/tool update-post {{"post_id": {header}, "title": "Other"}}')
        box.press("Enter")
        expect(card).to_have_count(2)
        second = int(card.nth(1).inner_text().split("request #", 1)[1].split(",", 1)[0])
        denied = admin.client.post(
            f"/chatmem/memory/held/{second}/deny",
            data={"csrf_token": admin.csrf},
            headers={"Accept": "application/json"},
        )
        assert denied.status_code == 200
        expect(card.nth(1).locator(".tool-held-heading")).to_have_text("Denied", timeout=15_000)
        page.reload()
        expect(card.nth(0).locator(".tool-held-heading")).to_have_text("Allowed and run")
        expect(card.nth(1).locator(".tool-held-heading")).to_have_text("Denied")
        expect(card.nth(1).locator(".tool-badge")).to_have_text("denied")
        expect(card.nth(1)).to_have_class("tool-card tool-card--blocked")
        with demo_app.app_context():
            assert db.session.get(Post, header).title == "Sale!"
    finally:
        context.close()
