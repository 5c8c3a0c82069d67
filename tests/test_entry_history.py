"""An entry's history page: every version of its text with a word diff, the
audit trail (who did what, when), its hits and the session it came from;
linked from every row of every guidance tab.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from chatmem import BlockedByMemory
from chatmem.memory import guidance
from chatmem.memory.models import Guidance, GuidanceEvent
from tests.hostapp import USERS, work
from tests.screen_helpers import JSON, SCREEN, entry, login, propose, token


def act(client: FlaskClient, app: Flask, entry_id: int, action: str, **fields: str) -> None:
    data = {"csrf_token": token(client), "version": str(entry(app, entry_id).version), **fields}
    response = client.post(f"{SCREEN}/guidance/{entry_id}/{action}", data=data, headers=JSON)
    assert response.status_code == 200, response.json


def history(client: FlaskClient, entry_id: int) -> str:
    response = client.get(f"{SCREEN}/guidance/{entry_id}")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


def test_every_version_with_its_diff_who_and_when(app: Flask, client: FlaskClient) -> None:
    proposed = {"type": "guardrail", "target": "post_id:42", "severity": "block"}
    entry_id = work(app, lambda m, db: propose(m, "Never edit the checkout page.", **proposed))
    act(client, app, entry_id, "edit", type="guardrail", text="Never edit the cart page.")
    act(
        client,
        app,
        entry_id,
        "edit",
        type="guardrail",
        text="Never edit the cart page <b>in December</b>.",
        target="post_id:42",
        severity="block",
        title="Cart freeze",
    )
    act(client, app, entry_id, "approve")

    def hit(memory: Any, db: Any) -> None:
        with pytest.raises(BlockedByMemory):
            memory.call_tool("update-post", {"post_id": 42, "title": "x"}, user=USERS["editor"])

    work(app, hit)
    html = squash(history(client, entry_id))
    assert "History of “Cart freeze”" in html
    # Newest version first; each says what made it, by whom.
    heads = re.findall(r'<h3 class="cm-subhead">Version (\d) · (\w[\w ]*) by (\w+)', html)
    assert heads == [
        ("3", "Edited", "admin"),
        ("2", "Edited", "admin"),
        ("1", "Proposed", "editor"),
    ]
    assert (
        '<dt>text</dt> <dd class="cm-diff"><span>Never edit the </span><del>checkout </del>'
        "<ins>cart </ins><span>page.</span></dd>"
    ) in html
    # Agent-written markup in a diff is text, never markup.
    assert "<ins>page &lt;b&gt;in December&lt;/b&gt;.</ins>" in html
    # A rewrite reads as the old words then the new, not interleaved.
    assert (
        '<dt>title</dt> <dd class="cm-diff"><del>Never edit the cart page.</del>'
        "<ins>Cart freeze</ins></dd>"
    ) in html
    assert html.count('<details class="cm-version-text"') == 3
    assert '<p class="cm-text">Never edit the checkout page.</p>' in html, "version 1's text"
    # The audit trail, the hits and the session it came from.
    trail = html[html.index("Audit trail") :]
    assert re.findall(r"<strong>([\w ]+)</strong> by (\w+)", trail) == [
        ("Proposed", "editor"),
        ("Edited", "admin"),
        ("Edited", "admin"),
        ("Approved", "admin"),
    ]
    assert trail.count("changed title, text") == 2
    # A title derived from the text follows it: its diff would only repeat the text's.
    assert html.count("<dt>title</dt>") == 1
    assert "refused 1 call, last" in html
    assert f'href="/chatmem/memory/guidance/{entry_id}/hits"' in html
    assert re.search(r'href="/chatmem/memory/sessions/[^"]+">editor \(python\)', html)


def test_an_edit_without_recorded_changes_shows_no_diff(app: Flask, client: FlaskClient) -> None:
    def seed(memory: Any, db: Any) -> int:
        added = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Prices include VAT."}, actor_id="1"
        )
        guidance.edit(db.session(), added.id, {"text": "Prices include 20% VAT."}, actor_id="1")
        guidance.edit(db.session(), added.id, {"text": "Prices include 21% VAT."}, actor_id="1")
        # The middle edit as a file from elsewhere may carry it: no changed fields.
        first_edit = min(
            e.id for e in guidance.events(db.session(), added.id) if e.action == "edit"
        )
        db.session.execute(
            update(GuidanceEvent).where(GuidanceEvent.id == first_edit).values(detail=None)
        )
        db.session.commit()
        return int(added.id)

    entry_id = work(app, seed)
    html = squash(history(client, entry_id))
    assert "Version 3 · Edited" in html and "<del>20% </del><ins>21% </ins>" in html
    assert "This edit did not record what it changed: no diff." in html
    assert "The text of this version is not known" in html, "version 1 is not guessed"
    assert "Version 1 · Added by hand by admin" in html


def test_unknown_entries_and_non_curators_are_refused(app: Flask, client: FlaskClient) -> None:
    missing = client.get(f"{SCREEN}/guidance/999", headers=JSON)
    assert missing.status_code == 404 and missing.json["error"]["code"] == "not_found"
    assert client.get(f"{SCREEN}/guidance/999").status_code == 404
    entry_id = work(app, lambda m, db: propose(m, "Checkout is page 42."))
    with app.test_client() as other:
        login(other, "editor")
        assert other.get(f"{SCREEN}/guidance/{entry_id}").status_code == 403


def test_every_row_of_every_guidance_tab_links_its_history(app: Flask, client: FlaskClient) -> None:
    def seed(memory: Any, db: Any) -> dict[str, int]:
        ids = {tab: propose(memory, f"Fact for the {tab} tab.") for tab in ("pending", "rejected")}
        active = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Active fact."}, actor_id="1"
        )
        trashed = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Trashed fact."}, actor_id="1"
        )
        guidance.reject(db.session(), ids["rejected"], actor_id="1")
        guidance.trash(db.session(), trashed.id, actor_id="1")
        return {**ids, "active": active.id, "trash": trashed.id}

    ids = work(app, seed)
    for tab, entry_id in ids.items():
        html = client.get(f"{SCREEN}?tab={tab}").get_data(as_text=True)
        link = f'href="/chatmem/memory/guidance/{entry_id}" class="cm-history-link"'
        assert link in html, tab
        assert html.count('class="cm-history-link"') == 1, tab
    session_id = work(app, lambda m, db: db.session.get(Guidance, ids["pending"]).session_id)
    session_page = client.get(f"{SCREEN}/sessions/{session_id}").get_data(as_text=True)
    assert f'href="/chatmem/memory/guidance/{ids["pending"]}"' in session_page
