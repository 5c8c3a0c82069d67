"""The Upkeep page, the Pending tab's waiting time, a review date set on the edit
form and a session's starting block, in a real browser at desktop width and at
375 px. Set CHATMEM_SCREENSHOTS to a folder (the docs' are in docs/screenshots)
to keep memory-upkeep.png and memory-session-block.png.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from playwright.sync_api import expect
from sqlalchemy import update

from chatmem.memory import guidance
from chatmem.memory.models import Guidance, GuidanceEvent, SummaryJob, utcnow
from tests.hostapp import USERS
from tests.screen_helpers import propose
from tests.test_memory_screen_browser import page, seed  # noqa: F401

pytestmark = pytest.mark.browser


def shots() -> Path | None:
    folder = os.environ.get("CHATMEM_SCREENSHOTS")
    return Path(folder) if folder else None


def _upkeep(m: Any, db: Any) -> dict[str, Any]:
    """Guidance needing a look, a queue with a history, and a conversation that cost something."""
    editor = USERS["editor"]
    long_ago = utcnow() - timedelta(days=120)
    ids: dict[str, Any] = {}

    def add(text: str, **fields: Any) -> int:
        return guidance.admin_add(
            db.session(), {"type": "fact", "text": text, **fields}, actor_id="1"
        ).id

    ids["importer"] = add(
        "Never run the old importer.",
        type="guardrail",
        target="tool:old-importer",
        severity="block",
    )
    ids["promo"] = add(
        "Ask before touching the spring promo page.",
        type="guardrail",
        target="post_id:999",
        severity="ask",
    )
    ids["checkout"] = add(
        "Never edit the checkout page.", type="guardrail", target="post_id:42", severity="block"
    )
    ids["ship"] = add("The shop ships to the EU only.")
    ids["vat"] = add("Prices include VAT.")
    ids["sunday"] = add("The shop closes on Sundays.", type="convention")
    db.session.execute(
        update(Guidance)
        .where(Guidance.id.in_([ids["ship"], ids["sunday"], ids["checkout"]]))
        .values(approved_at=long_ago, created_at=long_ago)
    )
    db.session.execute(
        update(Guidance)
        .where(Guidance.id == ids["vat"])
        .values(review_after=(utcnow() + timedelta(days=30)).date())
    )
    db.session.commit()
    m.call_tool("recall", {"topic": "VAT"}, user=editor)
    # The queue: two decided after 2 h and 6 h, one waiting for 3 days.
    for text, hours, decide in (
        ("Invoices carry the customer's VAT id.", 2, guidance.approve),
        ("Use Comic Sans for all headings.", 6, guidance.reject),
        ("The blog is written in English.", 72, None),
    ):
        entry_id = propose(m, text)
        then = utcnow() - timedelta(hours=hours)
        db.session.execute(update(Guidance).where(Guidance.id == entry_id).values(created_at=then))
        db.session.execute(
            update(GuidanceEvent)
            .where(GuidanceEvent.guidance_id == entry_id, GuidanceEvent.action == "propose")
            .values(at=then)
        )
        db.session.commit()
        if decide is not None:
            decide(db.session(), entry_id, actor_id="1")
        else:
            ids["waiting"] = entry_id
    m.upkeep()
    ids["session"] = m.start_session(editor, "python", block=m.block())
    m.start_session(editor, "python", block=m.block())
    m.note_prompt_tokens(ids["session"], 1240)
    now = utcnow()
    for outcome, tokens_in, tokens_out in (
        ("summary", 1830, 160),
        ("summary", 1210, 140),
        ("digest_only", None, None),
        ("digest_only", None, None),
        ("digest_only", None, None),
    ):
        session_id = m.start_session(editor, "python")
        db.session.add(
            SummaryJob(
                session_id=session_id,
                status="done",
                outcome=outcome,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                finished_at=now,
            )
        )
    db.session.commit()
    return ids


def test_the_upkeep_page_and_the_pending_wait(app: Flask, page: Any) -> None:  # noqa: F811
    ids = seed(app, _upkeep)
    page.goto("/chatmem/memory?tab=pending")
    age = page.locator("[data-pending-age]")
    expect(age).to_contain_text("The oldest item has waited 3 days.")
    expect(age).to_contain_text("Median time to review, last 30 days: 4 h.")

    page.get_by_role("link", name="Open Upkeep").click()
    page.wait_for_url("**/chatmem/memory/upkeep")
    gone = page.locator("#target-gone .cm-row")
    expect(gone).to_have_count(2)
    expect(page.locator("#target-gone")).to_contain_text("tool:old-importer")
    expect(page.locator("#target-gone")).to_contain_text("post_id:999")
    expect(page.locator("#review-dates .cm-row")).to_have_count(1)
    unused = page.locator("#unused .cm-row")
    expect(unused).to_have_count(3)  # ship, sunday, and the checkout rule nobody hit
    expect(page.locator("#unused")).not_to_contain_text("Prices include VAT.")
    expect(page.locator("#unused")).to_contain_text("in the block of 2 conversations (last 7 days)")
    expect(page.locator('[data-figure="oldest"]')).to_contain_text("3 days")
    expect(page.locator('[data-figure="median"]')).to_contain_text("4 h over 2 decisions")
    expect(page.locator('[data-figure="summary-tokens"]')).to_contain_text("3340")
    expect(page.locator('[data-figure="calls-saved"]')).to_contain_text("3")
    expect(page.locator('[data-figure="prompt-tokens"]')).to_contain_text("1240 tokens")
    if shots():
        page.screenshot(path=str(shots() / "memory-upkeep.png"), full_page=True)  # type: ignore[operator]

    # A flagged row on the Active tab says so and links here.
    page.goto("/chatmem/memory?tab=active")
    row = page.locator(f"#entry-{ids['importer']}")
    expect(row.locator(".cm-chip-gone")).to_have_text("target gone")

    # At 375 px the Upkeep page fits: nothing scrolls sideways.
    page.set_viewport_size({"width": 375, "height": 800})
    page.goto("/chatmem/memory/upkeep")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the Upkeep page scrolls sideways by {overflow} px at 375 px"


def test_a_review_date_on_the_edit_form_and_the_sessions_starting_block(
    app: Flask,
    page: Any,  # noqa: F811
) -> None:
    ids = seed(app, _upkeep)
    when = (utcnow() + timedelta(days=90)).date().isoformat()
    page.goto("/chatmem/memory?tab=active")
    row = page.locator(f"#entry-{ids['ship']}")
    row.locator("summary", has_text="Edit").click()
    row.locator('input[name="review_after"]').fill(when)
    row.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".cm-flash-ok")).to_contain_text("Saved")
    expect(page.locator(f"#entry-{ids['ship']}")).to_contain_text(f"Review on {when}")

    page.goto(f"/chatmem/memory/sessions/{ids['session']}")
    started = page.locator("#started-with")
    expect(started).to_contain_text("Memory revision")
    expect(started).to_contain_text("first prompt 1240 tokens")
    expect(started.locator("li")).to_have_count(7)  # every active entry fit in the block
    expect(started).to_contain_text("The shop ships to the EU only.")
    if shots():
        page.screenshot(path=str(shots() / "memory-session-block.png"), full_page=True)  # type: ignore[operator]
    started.get_by_role("link", name="Prices include VAT.").click()
    expect(page.locator("main")).to_contain_text("in the block of 2 conversations (last 7 days)")
    expect(page.locator("main")).to_contain_text("Review on")

    page.set_viewport_size({"width": 375, "height": 800})
    page.goto(f"/chatmem/memory/sessions/{ids['session']}")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the session page scrolls sideways by {overflow} px at 375 px"
