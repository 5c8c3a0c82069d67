"""Every page of the demo and the Memory screen, at 375 px and at 1280 px, seeded
with long and unbroken content: no horizontal overflow, no console errors, and
no serious or critical axe-core accessibility violation (axe-playwright-python
runs axe in the same Chromium).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axe_playwright_python.sync_playwright import Axe
from flask import Flask
from sqlalchemy import select

from tests.demo_client import DemoClient
from tests.servers import serving

pytestmark = [pytest.mark.browser, pytest.mark.slow]

UNBROKEN = "x" * 600
LONG_WORDS = " ".join(["Supercalifragilisticexpialidocious-checkout-page"] * 12)
SERIOUS = ("serious", "critical")


def screenshot_name(user: str, url: str, width: int) -> str | None:
    """CHATMEM_SCREENSHOTS=docs/screenshots keeps the README's phone-sized pictures current."""
    if width == 375 and user == "editor" and url.startswith("/chat/"):
        return "chat-mobile.png"
    if width == 375 and user == "admin" and url.endswith("?tab=pending"):
        return "memory-mobile.png"
    return None


@pytest.fixture
def seeded(demo_app: Flask) -> dict[str, Any]:
    """Long and unbroken content in every place a page shows agent or user text."""
    from chatmem.demo.extensions import db
    from chatmem.memory.models import Guidance, Session

    editor = DemoClient(demo_app, "editor")
    chat = editor.new_conversation()["id"]
    editor.say(chat, UNBROKEN)
    for text in (f"Fact {UNBROKEN[:500]}.", f"Convention: {LONG_WORDS}."):
        editor.say(chat, "/tool remember " + json.dumps({"type": "fact", "text": text}))
    guardrail = {
        "type": "guardrail",
        "text": f"Never touch {LONG_WORDS[:200]}.",
        "target": "post_id:" + "9" * 150,
        "severity": "block",
    }
    editor.say(chat, "/tool remember " + json.dumps(guardrail))
    rejected = {"type": "fact", "text": f"Rejected: {UNBROKEN[:400]}."}
    [reply] = [
        m for m in editor.say(chat, "/tool remember " + json.dumps(rejected)) if m["role"] == "tool"
    ]
    editor.say(chat, '/tool update-post {"post_id": 1, "title": "' + "y" * 300 + '"}')
    editor.close(chat)
    admin = DemoClient(demo_app, "admin")
    # An ask guardrail and a call it holds: the Waiting calls tab and the chat's card.
    admin.client.post(
        "/chatmem/memory/guidance",
        data={
            "csrf_token": admin.csrf,
            "type": "guardrail",
            "text": "Ask before titles.",
            "target": "update-post",
            "severity": "ask",
        },
    )
    waiting = editor.new_conversation()["id"]
    editor.say(waiting, '/tool update-post {"post_id": 2, "title": "' + "w" * 300 + '"}')
    made = admin.client.post(
        "/connect/tokens",
        data={"name": "t" * 100, "csrf_token": admin.csrf_from("/connect")},
    )
    assert made.status_code == 201, "the longest token name a user may give"
    with demo_app.app_context():
        from chatmem.memory import guidance

        reason = "z" * 500  # the longest reason, unbroken, on the Rejected tab
        guidance.reject(db, reply["result"]["id"], actor_id="1", reason=reason)
        first = db.session.scalars(select(Guidance.id).order_by(Guidance.id)).first()
        session_id = db.session.scalars(select(Session.id)).first()
    return {"chat": chat, "entry": first, "session": session_id, "waiting": waiting}


@pytest.fixture
def live_url(demo_app: Flask, seeded: dict[str, Any]) -> Iterator[str]:
    with serving(demo_app) as url:
        yield url


def pages(seeded: dict[str, Any]) -> dict[str, list[str]]:
    memory = "/chatmem/memory"
    return {
        "": ["/login"],
        "editor": [f"/chat/{seeded['chat']}", f"/chat/{seeded['waiting']}", "/connect"],
        "admin": [
            "/chat",
            "/connect",
            *(
                f"{memory}?tab={tab}"
                for tab in (
                    "pending",
                    "waiting",
                    "active",
                    "rejected",
                    "trash",
                    "history",
                    "tokens",
                )
            ),
            # The review desk: a searched, filtered and sorted list (with bulk actions).
            f"{memory}?tab=active&q=never&type=guardrail&sort=title",
            f"{memory}?tab=pending&q=fact&origin=agent&target=none",
            f"{memory}/sessions/{seeded['session']}",
            f"{memory}/guidance/{seeded['entry']}/hits",
            f"{memory}/guidance/{seeded['entry']}",
        ],
        "viewer": ["/chat", memory],
    }


def problems_on(page: Any, url: str, axe: Axe) -> list[str]:
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}") if r.status >= 400 and r.url != page.url else None
        ),
    )
    page.goto(url)
    page.wait_for_load_state("networkidle")
    found = [f"console: {e}" for e in errors if "favicon" not in e and "403" not in e]
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if width > inner:
        wide = page.evaluate(
            """() => [...document.querySelectorAll('body *')]
                .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
                .slice(-3).map(e => e.tagName + '.' + e.className)"""
        )
        found.append(f"overflow: {width} px wide in {inner} px ({wide})")
    for violation in axe.run(page).response["violations"]:
        if violation["impact"] in SERIOUS:
            targets = [n["target"] for n in violation["nodes"]][:3]
            summary = violation["nodes"][0].get("failureSummary", "")[:200]
            found.append(f"axe {violation['impact']} {violation['id']}: {targets} {summary}")
    return [f"{url}: {p}" for p in found]


@pytest.mark.parametrize("width", [375, 1280])
def test_every_page_fits_is_clean_and_passes_axe(
    browser: Any, live_url: str, seeded: dict[str, Any], width: int
) -> None:
    axe = Axe()
    problems: list[str] = []
    for user, urls in pages(seeded).items():
        context = browser.new_context(base_url=live_url, viewport={"width": width, "height": 900})
        context.set_default_timeout(15_000)
        page = context.new_page()
        try:
            if user:
                page.goto("/login")
                page.get_by_label("Username").fill(user)
                page.get_by_label("Password").fill(user)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url("**/chat**")
            for url in urls:
                problems += problems_on(page, url, axe)
                shot = screenshot_name(user, url, width)
                if shot and os.environ.get("CHATMEM_SCREENSHOTS"):
                    folder = Path(os.environ["CHATMEM_SCREENSHOTS"])
                    page.screenshot(path=str(folder / shot), full_page=True)
        finally:
            context.close()
    assert problems == [], "\n".join(problems)
