"""The review desk (issue 15, points 1 and 5), on the domain and over HTTP.

Evidence beside a proposal (similar entries, the session's ledger lines),
"Replace #N with this" (approve + trash in one transaction, both audited),
the guidance tabs' search, filters and sort, and bulk disable/trash/restore
(all or nothing). Every refused request is checked to change nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from chatmem.errors import Conflict, InvalidParams
from chatmem.http.screen.reads import evidence, filters
from chatmem.memory import desk, guidance
from chatmem.memory.models import Guidance, GuidanceEvent
from tests.hostapp import USERS
from tests.screen_helpers import JSON, SCREEN, add_token_route, login, propose, state, token

# -- the domain ----------------------------------------------------------------


def _add(db: Any, text: str, **fields: Any) -> Guidance:
    return guidance.admin_add(db.session(), {"type": "fact", "text": text, **fields}, actor_id="1")


def test_similarity_is_pg_trgm_s() -> None:
    # cat: "  c", " ca", "cat", "at "; cart: "  c", " ca", "car", "art", "rt ": 2 shared of 7.
    assert evidence.similarity("cat", "cart") == pytest.approx(2 / 7)
    assert evidence.similarity("The Checkout page", "the  checkout PAGE") == 1.0
    assert evidence.similarity("", "anything") == 0.0


def test_similar_finds_active_pending_and_rejected_look_alikes_and_same_target(
    memory: Any, db: Any
) -> None:
    active = _add(db, "The checkout page is page 42 on this site.")
    other = _add(db, "Our brand colour is teal.")
    rejected = propose(memory, "Checkout page is page 42 on the site.", type="convention")
    guidance.reject(db.session(), rejected, actor_id="1", reason="Duplicate.")
    trashed = _add(db, "The checkout page is page 42 here.")
    guidance.trash(db.session(), trashed.id, actor_id="1")
    rule = _add(db, "Leave the front page alone.", type="guardrail", target="post_id:7")
    proposal = db.session.get(
        Guidance, propose(memory, "Checkout page is page 42 on this site!", target="POST_ID:7")
    )
    pending_twin = propose(memory, "The checkout page: page 42 on this site.")

    found = evidence.similar(db.session(), proposal)
    ids = [s.entry.id for s in found]
    assert ids[0] == rule.id and found[0].same_target  # same target first, however unlike
    assert set(ids) == {rule.id, active.id, rejected, pending_twin}
    assert other.id not in ids and trashed.id not in ids and proposal.id not in ids
    scores = [s.score for s in found[1:]]
    assert scores == sorted(scores, reverse=True) and min(scores) >= evidence.THRESHOLD


def test_session_lines_are_the_newest_few_oldest_first(memory: Any, db: Any) -> None:
    editor = USERS["editor"]
    sid = memory.start_session(editor, "python")
    for number in range(1, 5):
        memory.call_tool(
            "update-post", {"post_id": 7, "title": f"T{number}"}, user=editor, session_id=sid
        )
    rows, total = evidence.session_lines(db.session(), sid, limit=3)
    assert total == 4
    assert [r.arguments["title"] for r in rows] == ["T2", "T3", "T4"]
    assert evidence.session_lines(db.session(), None) == ([], 0)


def _events(db: Any, entry_id: int) -> list[tuple[str, Any]]:
    query = select(GuidanceEvent).where(GuidanceEvent.guidance_id == entry_id)
    return [(e.action, e.detail) for e in db.session.scalars(query.order_by(GuidanceEvent.id))]


def test_replace_approves_and_trashes_in_one_go_with_both_trails(memory: Any, db: Any) -> None:
    old = _add(db, "Checkout is page 42.")
    new = propose(memory, "Checkout is page 7 since November.")
    before = memory.snapshot().revision
    entry, gone = desk.replace(
        db.session(), new, old.id, actor_id="1", expected_version=1, old_version=old.version
    )
    db.session.expire_all()
    assert (entry.status, gone.status, gone.status_before_trash) == ("publish", "trash", "publish")
    assert _events(db, new)[-1] == ("approve", {"replaces": old.id})
    assert _events(db, old.id)[-1] == ("trash", {"replaced_by": new})
    assert memory.snapshot().revision > before
    assert "Checkout is page 7" in memory.block().text and "page 42" not in memory.block().text


def _world(db: Any) -> list[tuple[Any, ...]]:
    db.session.expire_all()
    rows = db.session.scalars(select(Guidance).order_by(Guidance.id))
    events = db.session.scalars(select(GuidanceEvent.id)).all()
    return [(g.id, g.status, g.enabled, g.version) for g in rows] + [("events", len(events))]


def test_replace_refuses_a_stale_side_and_a_non_active_one_changing_nothing(
    memory: Any, db: Any
) -> None:
    old = _add(db, "Checkout is page 42.")
    new = propose(memory, "Checkout is page 7.")
    pending = propose(memory, "Checkout is page 9.")
    seen = _world(db)
    with pytest.raises(Conflict):
        desk.replace(
            db.session(), new, old.id, actor_id="1", expected_version=1, old_version=old.version + 1
        )
    with pytest.raises(Conflict):
        desk.replace(
            db.session(), new, old.id, actor_id="1", expected_version=2, old_version=old.version
        )
    with pytest.raises(Conflict):  # only an active entry is replaced
        desk.replace(db.session(), new, pending, actor_id="1", expected_version=1, old_version=1)
    with pytest.raises(InvalidParams):
        desk.replace(db.session(), new, new, actor_id="1", expected_version=1, old_version=1)
    assert _world(db) == seen


def test_replace_is_atomic_when_the_second_step_fails(
    memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _add(db, "Checkout is page 42.")
    new = propose(memory, "Checkout is page 7.")
    seen, revision = _world(db), memory.snapshot().revision
    real = guidance._event

    def failing(db: Any, entry: Any, action: str, *args: Any) -> None:
        if action == "trash":
            raise RuntimeError("disk full")
        real(db, entry, action, *args)

    monkeypatch.setattr(guidance, "_event", failing)
    with pytest.raises(RuntimeError):
        desk.replace(
            db.session(), new, old.id, actor_id="1", expected_version=1, old_version=old.version
        )
    assert _world(db) == seen and memory.snapshot().revision == revision


def test_bulk_changes_all_or_none(memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = [_add(db, f"Fact number {n}.").id for n in range(3)]
    versions = {i: 1 for i in ids}
    done = desk.bulk(db.session(), "disable", versions, actor_id="1")
    assert [e.enabled for e in done] == [False, False, False]
    assert [_events(db, i)[-1][0] for i in ids] == ["disable"] * 3

    seen = _world(db)
    stale = {ids[0]: 2, ids[1]: 1, ids[2]: 2}  # ids[1] is at version 2 now
    with pytest.raises(Conflict):
        desk.bulk(db.session(), "trash", stale, actor_id="1")
    assert _world(db) == seen

    real = guidance._event
    calls = []

    def third_fails(db: Any, entry: Any, action: str, *args: Any) -> None:
        calls.append(entry.id)
        if len(calls) == 3:
            raise RuntimeError("lost connection")
        real(db, entry, action, *args)

    monkeypatch.setattr(guidance, "_event", third_fails)
    with pytest.raises(RuntimeError):
        desk.bulk(db.session(), "trash", {i: 2 for i in ids}, actor_id="1")
    assert _world(db) == seen
    monkeypatch.undo()

    desk.bulk(db.session(), "trash", {i: 2 for i in ids}, actor_id="1")
    restored = desk.bulk(db.session(), "restore", {i: 3 for i in ids}, actor_id="1")
    assert {e.status for e in restored} == {"publish"}
    with pytest.raises(Conflict):  # restore needs the trash
        desk.bulk(db.session(), "restore", {ids[0]: 4}, actor_id="1")
    with pytest.raises(InvalidParams):
        desk.bulk(db.session(), "approve", {ids[0]: 4}, actor_id="1")
    with pytest.raises(InvalidParams):
        desk.bulk(db.session(), "trash", {}, actor_id="1")


def test_filters_parse_refuses_bad_values() -> None:
    assert filters.parse({}) == filters.Filters()
    chosen = filters.parse({"q": "  check   out ", "type": "fact", "sort": "title"})
    assert chosen.q == "check out" and chosen.params() == {
        "q": "check out",
        "type": "fact",
        "sort": "title",
    }
    for name, value in (
        ("type", "rumour"),
        ("origin", "martian"),
        ("target", "galaxy"),
        ("sort", "random"),
        ("q", "x" * 201),
        ("scope", "s" * 65),
        ("q", "nul\x00"),
        ("scope", "zero\u200bwidth"),
    ):
        with pytest.raises(InvalidParams) as refused:
            filters.parse({name: value})
        assert refused.value.details == {"field": name}


def test_filtered_pages(memory: Any, db: Any) -> None:
    _add(db, "Checkout lives at page 42.", scope="shop")
    _add(db, "Never bulk-delete users.", type="guardrail", target="delete-user", severity="block")
    _add(db, "Leave page 9 alone.", type="guardrail", target="post_id:9", severity="block")
    _add(db, "Landing pages are post_type landing.", type="guardrail", target="post_type:landing")
    agent = propose(memory, "The CHECKOUT uses Stripe.")
    guidance.approve(db.session(), agent, actor_id="1")

    def titles(**args: str) -> list[str]:
        page = filters.page(db.session(), "active", filters.parse(args), 1)
        assert page.total == len(page.items)
        return [e.text for e in page.items]

    assert titles(q="checkout", sort="oldest") == [
        "Checkout lives at page 42.",
        "The CHECKOUT uses Stripe.",
    ]
    assert titles(origin="agent") == ["The CHECKOUT uses Stripe."]
    assert titles(target="tool") == ["Never bulk-delete users."]
    assert titles(target="post_id") == ["Leave page 9 alone."]
    assert titles(target="post_type") == ["Landing pages are post_type landing."]
    assert len(titles(target="none")) == 2
    assert titles(scope="SHOP") == ["Checkout lives at page 42."]
    assert len(titles(scope="global")) == 4  # no scope is global
    assert titles(type="guardrail", sort="title")[0] == "Landing pages are post_type landing."
    assert titles(q="no such words") == []
    assert filters.page(db.session(), "pending", filters.parse({}), "junk").total == 0


# -- over HTTP -------------------------------------------------------------------


@pytest.fixture
def desk_client(app: Flask) -> Iterator[FlaskClient]:
    add_token_route(app)
    with app.test_client() as client:
        login(client, "admin")
        yield client


def _seed(app: Flask) -> dict[str, int]:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        db = memory.db
        editor = USERS["editor"]
        sid = memory.start_session(editor, "python")
        memory.call_tool("update-post", {"post_id": 42, "title": "P"}, user=editor, session_id=sid)
        ids = {
            "old": _add(db, "Checkout is page 42 on this site.").id,
            "other": _add(db, "Brand colour is <b>teal</b>.", scope="brand").id,
            "new": _propose(memory, "Checkout is page 7 on this site.", sid),
        }
        db.session.remove()
    return ids


def _propose(memory: Any, text: str, session_id: str) -> int:
    result = memory.call_tool(
        "remember", {"type": "fact", "text": text}, user=USERS["editor"], session_id=session_id
    )
    return int(result["id"])


def test_pending_shows_the_evidence_and_replace(app: Flask, desk_client: FlaskClient) -> None:
    ids = _seed(app)
    html = _listed(desk_client.get(f"{SCREEN}?tab=pending"))
    # The session changed post 42, then proposed: both ledger lines, oldest first.
    assert "Evidence: 1 similar entry · 2 ledger lines from its session" in html
    assert f'href="/chatmem/memory/guidance/{ids["old"]}">#{ids["old"]}</a>' in html
    assert f"Replace #{ids['old']} with this" in html
    assert "&#34;post_id&#34;: 42" in html or "&quot;post_id&quot;: 42" in html
    assert "Brand colour" not in html


def _replace(client: FlaskClient, ids: dict[str, int], **overrides: Any) -> Any:
    data = {"csrf_token": token(client), "version": "1", "old_version": "1", **overrides}
    headers = overrides.pop("headers", None) if "headers" in overrides else None
    with client.post(
        f"{SCREEN}/guidance/{ids['new']}/replace/{ids['old']}", data=data, headers=headers or {}
    ) as response:
        return response


def test_replace_over_http(app: Flask, desk_client: FlaskClient) -> None:
    ids = _seed(app)
    seen = state(app)
    refused = [
        _replace(desk_client, ids, csrf_token="forged"),
        _replace(desk_client, ids, version="2"),
        _replace(desk_client, ids, old_version="9"),
        _replace(desk_client, ids, version=""),
    ]
    with desk_client.post(
        f"{SCREEN}/guidance/{ids['new']}/replace/{ids['old']}",
        data={"csrf_token": token(desk_client), "version": "1", "old_version": "1"},
        headers={"Authorization": "Bearer cm_anything", **JSON},
    ) as bearer:
        assert bearer.status_code == 401
    assert [r.status_code for r in refused] == [403, 303, 303, 303]
    stale = desk_client.post(
        f"{SCREEN}/guidance/{ids['new']}/replace/{ids['old']}",
        data={"csrf_token": token(desk_client), "version": "2", "old_version": "1"},
        headers=JSON,
    )
    assert stale.status_code == 409 and stale.json["error"]["code"] == "conflict"
    assert state(app) == seen

    done = desk_client.post(
        f"{SCREEN}/guidance/{ids['new']}/replace/{ids['old']}",
        data={"csrf_token": token(desk_client), "version": "1", "old_version": "1"},
    )
    assert done.status_code == 303
    page = desk_client.get(done.headers["Location"]).get_data(as_text=True)
    assert f"Approved “Checkout is page 7 on this site.”; it replaces #{ids['old']}" in page
    statuses = {e[0]: e[1] for e in state(app)["entries"]}
    assert statuses[ids["new"]] == "publish" and statuses[ids["old"]] == "trash"
    history = desk_client.get(f"{SCREEN}/guidance/{ids['old']}").get_data(as_text=True)
    assert f"replaced by #{ids['new']}" in history


def test_replace_needs_the_capability(app: Flask) -> None:
    ids = _seed(app)
    add_token_route(app)
    seen = state(app)
    with app.test_client() as client:
        login(client, "editor")
        response = client.post(
            f"{SCREEN}/guidance/{ids['new']}/replace/{ids['old']}",
            data={"csrf_token": token(client), "version": "1", "old_version": "1"},
            headers=JSON,
        )
        assert response.status_code == 403
    assert state(app) == seen


def _listed(response: Any) -> str:
    """The tab's list, without the side column (the block preview lists every active entry)."""
    assert response.status_code == 200
    return str(response.get_data(as_text=True).split('<aside class="cm-side-col">', 1)[0])


def test_filters_over_http(app: Flask, desk_client: FlaskClient) -> None:
    _seed(app)
    html = _listed(desk_client.get(f"{SCREEN}?tab=active&q=checkout"))
    assert "1 of 2 match." in html and "Brand colour" not in html
    html = _listed(desk_client.get(f"{SCREEN}?tab=active&scope=brand&sort=title"))
    assert "Brand colour is &lt;b&gt;teal&lt;/b&gt;." in html and "Checkout" not in html
    for bad in ("type=rumour", "sort=random", "origin=x", "target=x", "q=" + "x" * 300):
        response = desk_client.get(f"{SCREEN}?tab=active&{bad}")
        assert response.status_code == 400, bad
        assert "must be one of" in response.get_data(as_text=True) or "longer" in response.get_data(
            as_text=True
        )
        as_json = desk_client.get(f"{SCREEN}?tab=active&{bad}", headers=JSON)
        assert as_json.json["error"]["code"] == "invalid_params"
    assert desk_client.get(f"{SCREEN}?tab=active&q=%00").status_code == 400
    assert desk_client.get(f"{SCREEN}?tab=active&page=-3&q=%25_/").status_code == 200


def _bulk(client: FlaskClient, data: dict[str, Any], **kwargs: Any) -> Any:
    with client.post(f"{SCREEN}/desk/bulk", data=data, **kwargs) as response:
        return response


def test_bulk_over_http(app: Flask, desk_client: FlaskClient) -> None:
    ids = _seed(app)
    both = [str(ids["old"]), str(ids["other"])]
    form = {"csrf_token": token(desk_client), "tab": "active", "id": both}
    versions = {f"version-{i}": "1" for i in both}
    seen = state(app)
    forged = _bulk(desk_client, {**form, **versions, "action": "trash", "csrf_token": "x"})
    assert forged.status_code == 403
    headers = {"Authorization": "Bearer cm_x", **JSON}
    bearer = _bulk(desk_client, {**form, **versions, "action": "trash"}, headers=headers)
    assert bearer.status_code == 401
    stale = _bulk(
        desk_client,
        {**form, **versions, f"version-{ids['other']}": "5", "action": "trash"},
        headers=JSON,
    )
    assert stale.status_code == 409
    missing = _bulk(desk_client, {**form, "action": "trash"}, headers=JSON)
    assert missing.status_code == 400 and missing.json["error"]["field"] == "version"
    wrong = _bulk(desk_client, {**form, **versions, "action": "restore"}, headers=JSON)
    assert wrong.status_code == 400 and wrong.json["error"]["field"] == "action"
    junk = _bulk(desk_client, {**form, **versions, "id": ["x"], "action": "trash"}, headers=JSON)
    assert junk.status_code == 400
    assert state(app) == seen

    done = _bulk(desk_client, {**form, **versions, "action": "trash", "q": "is", "sort": "title"})
    assert done.status_code == 303
    assert done.headers["Location"].endswith("tab=active&q=is&sort=title")
    page = desk_client.get(done.headers["Location"]).get_data(as_text=True)
    assert "Moved to the trash 2 entries." in page
    trash = desk_client.get(f"{SCREEN}?tab=trash").get_data(as_text=True)
    assert "Restore selected" in trash
    back = _bulk(
        desk_client,
        {"csrf_token": token(desk_client), "tab": "trash", "id": both, "action": "restore"}
        | {f"version-{i}": "2" for i in both},
        headers=JSON,
    )
    assert back.status_code == 200 and [e["status"] for e in back.json["entries"]] == [
        "publish",
        "publish",
    ]


def test_long_text_is_clamped_and_long_titles_never_a_giant_heading(
    app: Flask, desk_client: FlaskClient
) -> None:
    with app.app_context():
        db = app.extensions["test_host"]["memory"].db
        long_text = ("word " * 190).strip() + " END"
        _add(db, long_text, title="T" * 10 + " " + "title " * 31)
        db.session.remove()
    html = desk_client.get(f"{SCREEN}?tab=active").get_data(as_text=True)
    heading = html.split('<h3 class="cm-title">', 1)[1].split("</h3>", 1)[0]
    assert len(heading) <= 125 and heading.endswith("…")
    assert "Title: TTTTTTTTTT title" in html
    assert f"Show all ({len(long_text)} characters)" in html
    assert "END" in html.split("Show all", 1)[1]
    short = html.split('cm-text-short">', 1)[1].split("</p>", 1)[0]
    assert "END" not in short and len(short) <= 301
