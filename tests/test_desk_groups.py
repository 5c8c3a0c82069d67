"""One decision for the same proposal from many sessions (issue 32), over HTTP.

Near-duplicate proposals of one kind (the poisoning screen's similarity) are
one card on Pending review: "Proposed by 4 sessions of 3 users", each
session linked, the oldest proposal's text shown and every member's own text
on the card. Approve keeps that one and merges the others into it (audited on
both trails); Reject rejects them all with the curator's reason; a group one
of whose members changed meanwhile is refused whole (409) and nothing
changes; a flagged member makes the card Flagged and its flags are shown.
Runs on SQLite, and on PostgreSQL with CHATMEM_TEST_DATABASE_URL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import update

from chatmem.memory import groups, guidance
from chatmem.memory.models import Guidance, utcnow
from tests.hostapp import USERS, User, work
from tests.screen_helpers import JSON, SCREEN, add_token_route, entry, login, state, token

WRITER = User(4, "writer", {"edit_posts"})  # a third agent user (never signs in here)
REP = "Checkout is page 42."
COPIES = ("Checkout is always page 42.", "The checkout is page 42.", "Checkout is page 42, please.")


@pytest.fixture
def curator(app: Flask) -> Iterator[FlaskClient]:
    add_token_route(app)
    with app.test_client() as client:
        login(client, "admin")
        yield client


def _propose(memory: Any, text: str, user: Any, session_id: str, **fields: Any) -> int:
    arguments = {"type": "fact", "text": text, **fields}
    result = memory.call_tool("remember", arguments, user=user, session_id=session_id)
    return int(result["id"])


def _seed(app: Flask) -> dict[str, Any]:
    """Four near-duplicates from four sessions of three users; and what must stay apart."""

    def step(memory: Any, db: Any) -> dict[str, Any]:
        who = [USERS["editor"], USERS["admin"], WRITER, USERS["editor"]]
        sessions = [memory.start_session(user, "python") for user in who]
        ids = [
            _propose(memory, text, user, sid)
            for text, user, sid in zip((REP, *COPIES), who, sessions, strict=True)
        ]
        apart = {
            "other_text": _propose(memory, "The blog lives at /news.", who[0], sessions[0]),
            "other_number": _propose(memory, "Checkout is page 43.", who[1], sessions[1]),
            # The same words as a convention: another kind, never merged into a fact.
            "other_kind": _propose(
                memory, "Checkout is page 42, also.", who[2], sessions[2], type="convention"
            ),
        }
        # The first one is the oldest, so the one the card shows.
        now = utcnow()
        for age, entry_id in enumerate(ids):
            db.session.execute(
                update(Guidance)
                .where(Guidance.id == entry_id)
                .values(created_at=now - timedelta(hours=10 - age))
            )
        db.session.commit()
        return {"ids": ids, "sessions": sessions, **apart}

    seeded: dict[str, Any] = work(app, step)
    return seeded


def _page(client: FlaskClient, query: str = "") -> str:
    response = client.get(f"{SCREEN}?tab=pending{query}")
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(as_text=True).split('<aside class="cm-side-col">', 1)[0]


def _cards(html: str) -> dict[str, list[int]]:
    """Each lane on the page and the cards in it, in page order."""
    found = {}
    for part in html.split('<section class="cm-lane" data-lane="')[1:]:
        key = part.split('"', 1)[0]
        body = part.split("</section>", 1)[0]
        found[key] = [int(i) for i in re.findall(r'<li class="cm-row[^"]*" id="entry-(\d+)"', body)]
    return found


def _card(html: str, entry_id: int) -> str:
    return html.split(f'id="entry-{entry_id}"', 1)[1].split('<li class="cm-row', 1)[0]


def _words(html: str) -> str:
    """What a curator reads: tags dropped, white space folded."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


class _Forms(HTMLParser):
    """The page's forms: action -> the fields a browser would post (buttons aside)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, list[tuple[str, str]]] = {}
        self._current: list[tuple[str, str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._current = self.forms.setdefault(named.get("action", ""), [])
        elif tag == "input" and self._current is not None and "form" not in named:
            self._current.append((named.get("name", ""), named.get("value", "")))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


def _form(html: str, action: str, **more: str) -> dict[str, list[str]]:
    parser = _Forms()
    parser.feed(html)
    fields: dict[str, list[str]] = {}
    for name, value in parser.forms[action]:
        fields.setdefault(name, []).append(value)
    for name, value in more.items():
        fields[name] = [value]
    return fields


def _events(app: Flask, entry_id: int) -> list[tuple[str, Any]]:
    return work(
        app, lambda m, db: [(e.action, e.detail) for e in guidance.events(db.session(), entry_id)]
    )


# -- grouping -------------------------------------------------------------------------


def test_near_duplicates_are_one_card_and_distinct_ones_are_not(
    app: Flask, curator: FlaskClient
) -> None:
    seeded = _seed(app)
    rep, *copies = seeded["ids"]
    html = _page(curator)
    cards = _cards(html)
    assert list(cards) == ["facts"]
    assert sorted(cards["facts"]) == sorted(
        [rep, seeded["other_text"], seeded["other_number"], seeded["other_kind"]]
    ), "one card for the four near-duplicates; another text, number or kind is its own card"
    for copy in copies:
        assert f'id="entry-{copy}"' not in html
    # The lane says what it counts.
    part = html.split('<section class="cm-lane" data-lane="facts"', 1)[1]
    head = _words(part.split(">", 1)[1].split("<ol", 1)[0])
    assert head == (
        "Facts and conventions 4 cards, holding 7 proposals "
        "The oldest proposal here has waited 10 h ."
    )

    card = _card(html, rep)
    said = _words(card)
    assert "Proposed by 4 sessions of 3 users" in said
    assert "(4 near-duplicate proposals, one decision)" in said
    # Each session linked, once, with whose it is.
    for sid in seeded["sessions"]:
        assert card.count(f'href="{SCREEN}/sessions/{sid}"') >= 1
    assert "session of writer (python)" in said and "session of admin (python)" in said
    # The card shows the oldest proposal's text; every member's own text is on it too.
    assert re.search(r'<h3 class="cm-title">\s*Checkout is page 42\.\s*</h3>', card)
    for member, text in zip(seeded["ids"], (REP, *COPIES), strict=True):
        assert f'data-member="{member}"' in card
        assert f'<p class="cm-text">{text}</p>' in card
    assert "Approve merges it into #" + str(rep) in said
    assert "Reject all 4" in said

    # The domain agrees: alike only with the same kind and nearly the same words.
    def grouped(memory: Any, db: Any) -> list[list[int]]:
        rows = [guidance.get(db.session(), i) for i in (*seeded["ids"], seeded["other_kind"])]
        return [[m.id for m in g.members] for g in groups.group(rows, memory.server_name)]

    assert work(app, grouped) == [seeded["ids"], [seeded["other_kind"]]]


def test_agent_text_on_a_group_card_is_escaped(app: Flask, curator: FlaskClient) -> None:
    def step(memory: Any, db: Any) -> list[int]:
        texts = ("Titles use <b>bold</b> words.", "Titles use <b>bold</b> words, always.")
        return [
            _propose(memory, text, USERS["editor"], memory.start_session(USERS["editor"], "python"))
            for text in texts
        ]

    first, second = work(app, step)
    card = _card(_page(curator), first)
    assert "<b>bold</b>" not in card
    assert "Titles use &lt;b&gt;bold&lt;/b&gt; words, always." in card
    assert f'data-member="{second}"' in card


# -- decisions ------------------------------------------------------------------------


def test_approve_keeps_the_shown_one_and_merges_the_others(
    app: Flask, curator: FlaskClient
) -> None:
    seeded = _seed(app)
    rep, *copies = seeded["ids"]
    html = _page(curator)
    action = f"{SCREEN}/guidance/{rep}/group/approve"
    response = curator.post(action, data=_form(html, action))
    assert response.status_code == 303
    assert response.headers["Location"].endswith(f"?tab=pending#entry-{rep}")

    kept = entry(app, rep)
    assert (kept.status, kept.text) == ("publish", REP), "exactly the text the card showed"
    for copy in copies:
        assert entry(app, copy).status == "rejected"
    # Both trails: the kept one names the merged ids, each merged one the kept id.
    assert _events(app, rep)[-1] == ("approve", {"merged": sorted(copies)})
    for copy in copies:
        assert _events(app, copy)[-1] == (
            "reject",
            {"reason": f"Merged into #{rep}.", "merged_into": rep},
        )
    # The curator is told, and the card is gone from Pending; the others stay.
    after = _page(curator)
    assert "merged its 3 near-duplicates" in after
    left = _cards(after)
    assert sorted(i for lane in left.values() for i in lane) == sorted(
        [seeded["other_text"], seeded["other_number"], seeded["other_kind"]]
    )
    # Now there is an active entry to compare with: the other number contradicts it,
    # and the convention in the same words is a near-duplicate of it.
    assert sorted(left["flagged"]) == sorted([seeded["other_number"], seeded["other_kind"]])
    history = curator.get(f"{SCREEN}/guidance/{copies[0]}").get_data(as_text=True)
    assert f"merged into #{rep} (a near-duplicate, approved)" in history
    kept_history = curator.get(f"{SCREEN}/guidance/{rep}").get_data(as_text=True)
    assert "kept; merged " + ", ".join(f"#{c}" for c in sorted(copies)) in kept_history


def test_reject_rejects_every_member_with_the_reason(app: Flask, curator: FlaskClient) -> None:
    seeded = _seed(app)
    rep = seeded["ids"][0]
    html = _page(curator)
    action = f"{SCREEN}/guidance/{rep}/group/reject"
    response = curator.post(
        action, data=_form(html, action, reason="Checkout moved to page 7."), headers=JSON
    )
    assert response.status_code == 200, response.json
    for member in seeded["ids"]:
        assert entry(app, member).status == "rejected"
        action_name, detail = _events(app, member)[-1]
        assert action_name == "reject"
        assert detail["reason"] == "Checkout moved to page 7."
        assert sorted(detail["group"]) == sorted(i for i in seeded["ids"] if i != member)
    assert rep not in _cards(_page(curator))["facts"]
    tab = curator.get(f"{SCREEN}?tab=rejected").get_data(as_text=True)
    assert tab.count("Checkout moved to page 7.") >= len(seeded["ids"])


def test_a_group_changed_meanwhile_is_refused_whole(app: Flask, curator: FlaskClient) -> None:
    seeded = _seed(app)
    rep, *copies = seeded["ids"]
    html = _page(curator)
    approve = f"{SCREEN}/guidance/{rep}/group/approve"
    reject = f"{SCREEN}/guidance/{rep}/group/reject"
    # Someone else rejects one member after the page was drawn.
    work(app, lambda m, db: guidance.reject(db.session(), copies[1], actor_id="1", reason="no"))
    before = state(app)
    for action in (approve, reject):
        refused = curator.post(action, data=_form(html, action), headers=JSON)
        assert refused.status_code == 409, refused.json
        assert refused.json["error"]["code"] == "conflict"
        assert f"#{copies[1]}" in refused.json["error"]["message"]
        assert state(app) == before, "nothing changed"
    # Through the page: a message, back to Pending, still nothing changed.
    as_page = curator.post(approve, data=_form(html, approve), follow_redirects=True)
    assert "was changed or decided since you loaded the page" in as_page.get_data(as_text=True)
    assert state(app) == before and entry(app, rep).status == "pending"
    # Reloaded, the card holds the three left, and one decision takes them.
    fresh = _page(curator)
    # The writer's was the one decided: three sessions of two users left.
    assert "Proposed by 3 sessions of 2 users" in _words(_card(fresh, rep))
    assert curator.post(approve, data=_form(fresh, approve)).status_code == 303
    assert entry(app, rep).status == "publish"


def test_the_same_decision_twice_approves_once(app: Flask, curator: FlaskClient) -> None:
    seeded = _seed(app)
    rep = seeded["ids"][0]
    html = _page(curator)
    action = f"{SCREEN}/guidance/{rep}/group/approve"
    assert curator.post(action, data=_form(html, action), headers=JSON).status_code == 200
    after = state(app)
    again = curator.post(action, data=_form(html, action), headers=JSON)
    assert again.status_code == 409 and state(app) == after
    approvals = [a for a, _d in _events(app, rep) if a == "approve"]
    assert approvals == ["approve"]


def test_a_forged_group_is_refused(app: Flask, curator: FlaskClient) -> None:
    """Only near-duplicates are decided together, whatever a form names; CSRF and the
    capability as for every action."""
    seeded = _seed(app)
    rep = seeded["ids"][0]
    html = _page(curator)
    action = f"{SCREEN}/guidance/{rep}/group/approve"
    fields = _form(html, action)
    forged = dict(fields)
    other = seeded["other_text"]
    forged["member"] = [*fields["member"], str(other)]
    forged[f"version-{other}"] = ["1"]
    before = state(app)
    refused = curator.post(action, data=forged, headers=JSON)
    assert refused.status_code == 400 and refused.json["error"]["code"] == "invalid_params"
    assert state(app) == before
    no_csrf = {k: v for k, v in fields.items() if k != "csrf_token"}
    assert curator.post(action, data=no_csrf, headers=JSON).status_code == 403
    assert curator.post(f"{SCREEN}/guidance/{rep}/group/merge", data=fields).status_code == 404
    with app.test_client() as editor:
        login(editor, "editor")
        assert editor.post(action, data=fields, headers=JSON).status_code in (403, 401)
    assert state(app) == before


def test_a_flagged_member_makes_the_card_flagged_and_shows_its_flags(
    app: Flask, curator: FlaskClient
) -> None:
    seeded = _seed(app)
    rep = seeded["ids"][0]

    # The same text as one rejected before: a near-duplicate with a rejected_before flag.
    def again(memory: Any, db: Any) -> int:
        old = _propose(memory, "Checkout is page 42, ok.", WRITER, seeded["sessions"][2])
        guidance.reject(db.session(), old, actor_id="1", reason="stale wording")
        return _propose(memory, "Checkout is page 42, ok.", WRITER, seeded["sessions"][2])

    flagged = work(app, again)
    html = _page(curator)
    assert _cards(html)["flagged"] == [rep], "the group's lane is Flagged"
    card = _card(html, rep)
    said = _words(card)
    assert f"Flagged (#{flagged}): read this before approving." in said
    assert "stale wording" in said
    assert f'aria-label="Site fact: {REP} (5 proposals) (flagged)"' in card
    assert "Approve anyway" in said

    action = f"{SCREEN}/guidance/{rep}/group/approve"
    plain = {k: v for k, v in _form(html, action).items() if k != "anyway"}
    before = state(app)
    refused = curator.post(action, data=plain, headers=JSON)
    assert refused.status_code == 409 and f"#{flagged}" in refused.json["error"]["message"]
    assert state(app) == before
    assert curator.post(action, data=_form(html, action)).status_code == 303
    assert entry(app, rep).status == "publish"
    assert _events(app, flagged)[-1] == (
        "reject",
        {"reason": f"Merged into #{rep}.", "merged_into": rep, "flags": ["rejected_before"]},
    )


def test_bulk_decides_a_ticked_group_card_whole(app: Flask, curator: FlaskClient) -> None:
    seeded = _seed(app)
    rep, *copies = seeded["ids"]
    html = _page(curator)
    bulk = f"{SCREEN}/bulk"
    fields = _bulk_fields(html, [rep, seeded["other_text"]])
    response = curator.post(bulk, data=fields | {"action": ["approve"]}, headers=JSON)
    assert response.json == {"ok": True, "done": [rep, seeded["other_text"]], "failed": []}
    assert entry(app, rep).status == "publish"
    assert [entry(app, c).status for c in copies] == ["rejected"] * 3
    assert _events(app, copies[0])[-1][1]["merged_into"] == rep


def _bulk_fields(html: str, ticked: list[int]) -> dict[str, list[str]]:
    """What Approve selected posts with these cards ticked (inputs with form="cm-bulk")."""
    fields = _form(html, f"{SCREEN}/bulk")
    fields["id"] = [str(i) for i in ticked]
    for name, value in re.findall(
        r'<input type="hidden" form="cm-bulk" name="([^"]+)" value="([^"]*)"', html
    ):
        fields.setdefault(name, []).append(value)
    return fields


def test_a_script_decides_a_group_with_json(app: Flask, curator: FlaskClient) -> None:
    """The same route answers a script: members as an object of id -> version."""
    seeded = _seed(app)
    rep, *copies = seeded["ids"]
    action = f"{SCREEN}/guidance/{rep}/group/approve"
    headers = {**JSON, "X-CSRFToken": token(curator)}
    body = {"version": 1, "members": {str(c): 1 for c in copies[:2]}}
    response = curator.post(action, json=body, headers=headers)
    assert response.status_code == 200, response.json
    assert response.json["entry"]["id"] == rep and response.json["entry"]["status"] == "publish"
    assert "merged its 2 near-duplicates" in response.json["message"]
    # Only the members named were decided: the one left out still waits.
    assert [entry(app, c).status for c in copies] == ["rejected", "rejected", "pending"]
    bad = curator.post(action, json={"version": 1, "members": [copies[2]]}, headers=headers)
    assert bad.status_code == 400 and bad.json["error"]["field"] == "members"
