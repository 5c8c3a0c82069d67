"""The page checks' parts: a demo seeded with an item of every kind, the list of
pages each user opens, and what a page is checked for (status, horizontal
overflow, squeezed table cells, console errors, serious axe violations).

Used by tests/test_page_checks_browser.py; kept apart so the seeding and the
checks read on their own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from axe_playwright_python.sync_playwright import Axe
from flask import Flask
from sqlalchemy import select, update

from tests.demo_client import DemoClient, tool_results

UNBROKEN = "x" * 600
LONG_WORDS = " ".join(["Supercalifragilisticexpialidocious-checkout-page"] * 12)
SERIOUS = ("serious", "critical")
MEMORY = "/chatmem/memory"
# A word longer than this is agent or user text with no break point (a 600-character
# string, a 100-character token name): it must wrap rather than widen the page. Every
# shorter word (a header, a tool name, a date, a button) must never be broken.
UNBREAKABLE_UP_TO = 30


@dataclass(frozen=True)
class Theme:
    name: str
    color_scheme: str


THEMES = (Theme("light", "light"), Theme("dark", "dark"))
WIDTHS = (375, 1280)
# What a page shows depends on the database only through its rows: on PostgreSQL every
# page is checked once light at 375 px and once dark at 1280 px, half the time.
MATRIX = (
    [(THEMES[0], 375), (THEMES[1], 1280)]
    if os.environ.get("CHATMEM_TEST_DATABASE_URL")
    else [(theme, width) for theme in THEMES for width in WIDTHS]
)


def seed_everything(app: Flask) -> dict[str, Any]:
    """Every kind of item a page shows, with long and unbroken content where text goes:
    pending (agent and admin), active, rejected with a reason, trashed, an entry with
    several versions, a waiting held call, one allowed and run, one denied, tokens,
    closed sessions with a change ledger, upkeep items (target gone, review date,
    unused), and an entry whose audit trail was changed outside chatmem."""
    from chatmem.core import current_memory
    from chatmem.demo.extensions import db
    from chatmem.memory import guidance, held, staleness
    from chatmem.memory.models import Guidance, GuidanceEvent, Session

    editor = DemoClient(app, "editor")
    admin = DemoClient(app, "admin")
    chat = editor.new_conversation()["id"]
    editor.say(chat, UNBROKEN)
    proposed = []
    for fields in (
        {"type": "fact", "text": f"Fact {UNBROKEN[:500]}."},
        {"type": "convention", "text": f"Convention: {LONG_WORDS}."},
        {"type": "fact", "text": "Shipping to the EU takes five working days."},
        {"type": "instruction", "text": "Write post titles in sentence case."},
        {
            "type": "guardrail",
            "text": f"Never touch {LONG_WORDS[:200]}.",
            "target": "post_id:" + "9" * 150,
            "severity": "block",
        },
        {"type": "fact", "text": f"Rejected: {UNBROKEN[:400]}."},
    ):
        [reply] = tool_results(editor.say(chat, "/tool remember " + json.dumps(fields)))
        proposed.append(reply["result"]["id"])
    editor.say(chat, '/tool update-post {"post_id": 1, "title": "' + "y" * 200 + '"}')
    editor.say(chat, '/tool delete-post {"post_id": 6}')
    editor.close(chat)
    # An ask guardrail and three calls it holds: one waits, one is allowed and run, one denied.
    added = admin.client.post(
        f"{MEMORY}/guidance",
        data={
            "csrf_token": admin.csrf,
            "type": "guardrail",
            "text": "Ask before titles.",
            "target": "update-post",
            "severity": "ask",
        },
    )
    assert added.status_code == 303, added.get_data(as_text=True)
    held_chats = []
    for title in ("w" * 200, "Allowed title", "Denied title"):
        conversation = editor.new_conversation()["id"]
        editor.say(conversation, '/tool update-post {"post_id": 2, "title": "' + title + '"}')
        held_chats.append(conversation)
    waiting, allowed, denied = held_chats
    help_chat = editor.new_conversation()["id"]
    editor.say(help_chat, "/help")
    for name in ("t" * 100, "laptop"):
        made = admin.client.post(
            "/connect/tokens", data={"name": name, "csrf_token": admin.csrf_from("/connect")}
        )
        assert made.status_code == 201, "the longest token name a user may give, and a short one"
    made = editor.client.post(
        "/connect/tokens",
        data={"name": "ci", "read_only": "1", "csrf_token": editor.csrf_from("/connect")},
    )
    assert made.status_code == 201
    with app.app_context():
        pending_held = sorted(call.id for call in held.waiting(db.session(), offset=0, limit=10))
    assert len(pending_held) == 3, pending_held
    # HTTP outside the app context: a request inside it would share its `g`, and its user.
    for request_id, decision in zip(pending_held[1:], ("allow", "deny"), strict=True):
        decided = admin.client.post(
            f"{MEMORY}/held/{request_id}/{decision}",
            data={"csrf_token": admin.csrf, "note": f"{decision} for the page checks"},
        )
        assert decided.status_code == 303, decided.get_data(as_text=True)
    shown = editor.client.get(f"/chat/api/conversations/{allowed}").get_json()
    [call] = tool_results(shown["messages"])
    editor.post(f"/chat/api/conversations/{allowed}/held/{call['id']}/run", status=201)
    with app.app_context():
        reason = "z" * 500  # the longest reason, unbroken, on the Rejected tab
        rejected = proposed[-1]
        guidance.reject(db.session(), rejected, actor_id="1", reason=reason)
        convention, shipping, titles, guardrail = proposed[1:5]
        for entry_id in (convention, shipping, titles, guardrail):
            guidance.approve(db.session(), entry_id, actor_id="1")
        # History with several versions: two edits after approval.
        four_days = {"text": "Shipping to the EU takes four working days."}
        guidance.edit(db.session(), shipping, four_days, actor_id="1")
        guidance.edit(db.session(), shipping, {"title": "EU shipping time"}, actor_id="1")
        guidance.trash(db.session(), titles, actor_id="1")
        # Upkeep: a target that no longer resolves, and a review date.
        gone = guidance.admin_add(
            db.session(),
            {
                "type": "guardrail",
                "text": "Leave the old page alone.",
                "target": "post_id:9999",
                "severity": "block",
            },
            actor_id="1",
        )
        entry = guidance.get(db.session(), shipping)
        staleness.set_review_after(
            db.session(), entry, date.today() + timedelta(days=30), actor_id="1"
        )
        db.session.commit()
        current_memory().upkeep()
        assert guidance.get(db.session(), gone.id).target_gone_at is not None
        # A trail changed outside chatmem (its approver, by raw SQL): the history page warns.
        db.session.execute(
            update(GuidanceEvent)
            .where(GuidanceEvent.guidance_id == convention, GuidanceEvent.action == "approve")
            .values(actor_id="2")
        )
        db.session.commit()
        session_id = db.session.scalars(select(Session.id).order_by(Session.started_at)).first()
        first = db.session.scalars(select(Guidance.id).order_by(Guidance.id)).first()
    return {
        "chat": chat,
        "help": help_chat,
        "waiting": waiting,
        "allowed": allowed,
        "denied": denied,
        "entry": first,
        "versions": shipping,
        "altered": convention,
        "guardrail": guardrail,
        "session": session_id,
    }


@dataclass(frozen=True)
class Visit:
    url: str
    status: int = 200


def pages(seeded: dict[str, Any]) -> dict[str, list[Visit]]:
    """Every page, by who opens it ("" is a visitor): each Memory tab, Upkeep, a session,
    an entry's history and hits, filtered lists; the demo's chat, help, held-call cards,
    Connect and login."""
    tabs = ("pending", "waiting", "active", "rejected", "trash", "history", "tokens")
    return {
        "": [Visit("/login")],
        "editor": [
            *(Visit(f"/chat/{seeded[key]}") for key in ("chat", "help", "waiting", "allowed")),
            Visit(f"/chat/{seeded['denied']}"),
            Visit("/connect"),
            Visit("/chat/2147483647", status=404),  # the demo's error page
        ],
        "admin": [
            Visit("/chat"),
            Visit("/connect"),
            *(Visit(f"{MEMORY}?tab={tab}") for tab in tabs),
            # The review desk: a searched, filtered and sorted list (with bulk actions).
            Visit(f"{MEMORY}?tab=active&q=never&type=guardrail&sort=title"),
            Visit(f"{MEMORY}?tab=pending&q=fact&origin=agent&target=none"),
            Visit(f"{MEMORY}/upkeep"),
            Visit(f"{MEMORY}/sessions/{seeded['session']}"),
            Visit(f"{MEMORY}/guidance/{seeded['guardrail']}/hits"),
            Visit(f"{MEMORY}/guidance/{seeded['entry']}"),
            Visit(f"{MEMORY}/guidance/{seeded['versions']}"),
            Visit(f"{MEMORY}/guidance/{seeded['altered']}"),  # "altered outside chatmem"
        ],
        "viewer": [Visit("/chat"), Visit(MEMORY, status=403)],
    }


# Each word of each table cell (a Range over it): broken over two lines, or wider than
# the cell's content box, it is squeezed. Words not shown (visually hidden text, the
# inside of a closed <details>) are skipped.
SQUEEZED_CELLS = """(longest) => {
  const found = [];
  for (const cell of document.querySelectorAll('td, th')) {
    if (!cell.getClientRects().length) continue;
    const style = getComputedStyle(cell);
    const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const box = node.parentElement.getBoundingClientRect();
      if (box.width <= 2 || !node.parentElement.getClientRects().length) continue;
      if (node.parentElement.closest('details:not([open]) > :not(summary)')) continue;
      for (const match of node.data.matchAll(/\\S+/g)) {
        if (match[0].length > longest) continue;
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const rects = [...range.getClientRects()].filter((r) => r.width > 0);
        const lines = new Set(rects.map((r) => Math.round(r.top))).size;
        const width = rects.reduce((sum, r) => sum + r.width, 0);
        if (lines > 1 || width > room + 1) {
          found.push(`"${match[0]}" (${Math.round(width)} px) in a ${Math.round(room)} px `
            + `${cell.tagName.toLowerCase()}${lines > 1 ? `, over ${lines} lines` : ''}`);
        }
      }
    }
  }
  return [...new Set(found)].slice(0, 8);
}"""

# Wide content hidden in a scrolling box (a table wider than its wrapper) is overflow too.
SCROLLING_BOXES = """() => [...document.querySelectorAll('.cm-table-wrap, .table-wrap')]
  .filter((e) => e.scrollWidth > e.clientWidth + 1)
  .map((e) => `${e.className}: ${e.scrollWidth} px in ${e.clientWidth} px`)"""

WIDER_THAN_PAGE = """() => [...document.querySelectorAll('body *')]
  .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
  .slice(-3).map((e) => e.tagName + '.' + e.className)"""


def problems_on(page: Any, visit: Visit, axe: Axe) -> list[str]:
    """What is wrong with one page, as lines a reader can act on; [] when nothing is."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    # A failed request for anything but the page itself (whose status is checked below).
    page.on(
        "response",
        lambda r: (
            errors.append(f"{r.status} {r.url}")
            if r.status >= 400 and not r.request.is_navigation_request()
            else None
        ),
    )
    response = page.goto(visit.url)
    page.wait_for_load_state("networkidle")
    found = []
    if response is None or response.status != visit.status:
        found.append(f"answered {response.status if response else None}, not {visit.status}")
    # Chromium logs the page's own status too ("... status of 403"): expected, not an error.
    expected = f"status of {visit.status} " if visit.status != 200 else None
    found += [
        f"console: {e}" for e in errors if "favicon" not in e and not (expected and expected in e)
    ]
    width, inner = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    if width > inner:
        found.append(f"overflow: {width} px wide in {inner} px ({page.evaluate(WIDER_THAN_PAGE)})")
    found += [f"scrolls sideways: {box}" for box in page.evaluate(SCROLLING_BOXES)]
    found += [f"squeezed cell: {cell}" for cell in page.evaluate(SQUEEZED_CELLS, UNBREAKABLE_UP_TO)]
    for violation in axe.run(page).response["violations"]:
        if violation["impact"] in SERIOUS:
            targets = [n["target"] for n in violation["nodes"]][:3]
            summary = violation["nodes"][0].get("failureSummary", "")[:200]
            found.append(f"axe {violation['impact']} {violation['id']}: {targets} {summary}")
    return found
