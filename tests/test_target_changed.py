"""Revalidation when a target changes (issue 32).

A successful call on `post_id:4` marks every active entry that targets it or
names it in its text "target changed since approval", pointing to that call's
ledger row; `memory.target_changed(label)` does the same for a change made
outside chatmem. Upkeep lists the marks; Still true (or an edit) clears one.
With CHATMEM_CHANGED_TARGETS = "review" a marked entry is out of the block
and recall until then, on every worker, while its guardrail still holds.
Each test runs against the real database the suite is given (SQLite or
PostgreSQL) and reads what a curator or an agent sees.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from chatmem import ChatmemError
from chatmem.memory.models import Guidance, GuidanceEvent, LedgerEntry
from tests.hostapp import USERS, reconfigure, work
from tests.screen_helpers import JSON, SCREEN, entry, login, state, token
from tests.test_upkeep import add, events, squash

UPKEEP = f"{SCREEN}/upkeep"


def add_post(app: Flask, post_id: int, title: str = "About us") -> None:
    def write(memory: Any, db: Any) -> None:
        post = app.extensions["test_host"]["Post"]
        db.session.add(post(id=post_id, title=title, post_type="page"))
        db.session.commit()

    work(app, write)


def fact(app: Flask, text: str) -> int:
    return add(app, text, None, type="fact", severity=None)


def call(app: Flask, tool: str, arguments: dict[str, Any], user: str = "editor") -> Any:
    """The tool's result, or the code of the error it raised."""

    def run(memory: Any, db: Any) -> Any:
        try:
            return memory.call_tool(tool, arguments, user=USERS[user])
        except ChatmemError as error:
            return error.code

    return work(app, run)


def newest_call(app: Flask) -> LedgerEntry:
    def read(memory: Any, db: Any) -> LedgerEntry:
        row = db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id.desc())).first()
        db.session.expunge(row)
        return row

    return work(app, read)


def marks(app: Flask) -> dict[int, tuple[Any, ...]]:
    """Every marked entry: id -> (label, call id)."""

    def read(memory: Any, db: Any) -> dict[int, tuple[Any, ...]]:
        rows = db.session.execute(
            select(
                Guidance.id, Guidance.target_changed_label, Guidance.target_changed_call_id
            ).where(Guidance.target_changed_at.is_not(None))
        )
        return {entry_id: (label, call_id) for entry_id, label, call_id in rows}

    return work(app, read)


def in_block(app: Flask) -> tuple[int, ...]:
    return tuple(work(app, lambda m, db: m.block().included))


def revision(app: Flask) -> int:
    return int(work(app, lambda m, db: m.snapshot().revision))


def recalled(app: Flask, **arguments: Any) -> list[int]:
    found = call(app, "recall", arguments)
    return [g["id"] for g in found["guidance"]]


@pytest.fixture
def post4(app: Flask) -> int:
    add_post(app, 4)
    return 4


def test_a_successful_call_marks_the_entries_that_target_or_name_its_target(
    app: Flask, client: FlaskClient, post4: int
) -> None:
    targeting = add(app, "Keep the About page short.", "post_id:4", severity="warn")
    naming = fact(app, "The About page is post_id:4, written by the founders.")
    spelled = fact(app, "Its old address (`id:004`) still redirects.")
    near = fact(app, "The shop page is post_id:42; never rename it.")
    elsewhere = fact(app, "The header is post_id:3.")
    before = revision(app)

    result = call(app, "update-post", {"post_id": 4, "title": "About"})

    assert result == {"id": 4, "title": "About"}
    row = newest_call(app)
    assert (row.tool, row.outcome) == ("update-post", "ok")
    assert marks(app) == {
        targeting: ("post_id:4", row.id),
        naming: ("post_id:4", row.id),
        spelled: ("post_id:4", row.id),
    }
    assert near not in marks(app) and elsewhere not in marks(app)
    for entry_id in (targeting, naming, spelled):
        assert events(app, entry_id, "target_changed") == [
            {
                "label": "post_id:4",
                "call_id": row.id,
                "tool": "update-post",
                "session_id": row.session_id,
                "note": f"post_id:4 changed by update-post (call #{row.id})",
            }
        ]
        found = entry(app, entry_id)
        assert found.status == "publish" and found.enabled
    # Flag mode: they stay in the block, and nothing agents get changed.
    assert {targeting, naming, spelled} <= set(in_block(app))
    assert revision(app) == before

    page = client.get(UPKEEP, headers=JSON).json
    listed = {e["id"]: e for e in page["target_changed"]}
    assert set(listed) == {targeting, naming, spelled}
    assert listed[naming]["target_changed_label"] == "post_id:4"
    assert listed[naming]["call"]["tool"] == "update-post"
    assert listed[naming]["call"]["session_id"] == row.session_id
    html = squash(client.get(UPKEEP).get_data(as_text=True))
    assert 'Target changed since approval <span class="cm-count">3</span>' in html
    assert "changed by <code>update-post</code> (editor, python)" in html
    assert f'href="{SCREEN}/sessions/{row.session_id}">session</a>' in html
    assert "The shop page is post_id:42" not in html
    # The entry's own page says so, and its history has the event.
    page_html = squash(client.get(f"{SCREEN}/guidance/{naming}").get_data(as_text=True))
    assert "target changed</a> <code>post_id:4</code>" in page_html
    assert "<strong>Target changed</strong> by editor" in page_html
    assert f"post_id:4 changed by update-post (call #{row.id})" in page_html


def test_a_rest_call_marks_through_the_same_step(app: Flask, post4: int, make_token: Any) -> None:
    naming = fact(app, "The About page is post_id:4.")
    with app.test_client() as http:
        response = http.post(
            "/chatmem/api/tools/update-post",
            json={"post_id": "004", "title": "About"},
            headers={"Authorization": f"Bearer {make_token('editor')}"},
        )
    assert response.status_code == 200, response.json
    row = newest_call(app)
    assert row.channel == "rest"
    assert marks(app) == {naming: ("post_id:4", row.id)}


def test_a_failed_refused_or_unrecorded_call_marks_nothing(app: Flask, post4: int) -> None:
    missing = fact(app, "Post post_id:5 was the old About page.")
    guard = add(app, "Never change the header: post_id:3.", "post_id:3")
    header = fact(app, "The header (post_id:3) holds the logo.")
    about = fact(app, "The About page is post_id:4.")

    assert call(app, "update-post", {"post_id": 5, "title": "x"}) == "not_found"
    assert newest_call(app).outcome == "error"
    assert call(app, "update-post", {"post_id": 3, "title": "x"}) == "blocked_by_memory"
    assert newest_call(app).outcome == "blocked"
    assert call(app, "update-post", {"post_id": 4, "title": "x" * 201}) == "invalid_params"
    assert call(app, "get-post", {"post_id": 4}) == {
        "id": 4,
        "title": "About us",
        "post_type": "page",
    }
    assert call(app, "update-post", {"post_id": 4, "title": "x"}, user="viewer") == "forbidden"
    # Memory off: nothing is ledgered, so nothing is marked either.
    work(app, lambda m, db: m.set_setting("memory_enabled", False, actor=USERS["admin"]))
    assert call(app, "update-post", {"post_id": 4, "title": "Renamed"})["title"] == "Renamed"

    assert marks(app) == {}
    for entry_id in (missing, guard, header, about):
        assert events(app, entry_id, "target_changed") == []


def test_the_mark_and_its_event_are_made_once(app: Flask, second_worker: Flask, post4: int) -> None:
    about = fact(app, "The About page is post_id:4.")
    call(app, "update-post", {"post_id": 4, "title": "First"})
    first = newest_call(app)
    call(app, "update-post", {"post_id": 4, "title": "Second"})
    assert newest_call(app).id != first.id

    assert marks(app) == {about: ("post_id:4", first.id)}
    assert len(events(app, about, "target_changed")) == 1

    # Two workers change the same post at once: one mark, one event.
    other = fact(app, "The About page's title is short (post_id:4).")
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def change(worker: Flask, title: str) -> None:
        try:
            start.wait(timeout=30)
            assert call(worker, "update-post", {"post_id": 4, "title": title})["title"] == title
        except BaseException as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [
        threading.Thread(target=change, args=(w, t))
        for w, t in ((app, "Third"), (second_worker, "Fourth"))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    assert errors == []
    assert len(events(app, other, "target_changed")) == 1
    label, call_id = marks(app)[other]
    two_calls = work(
        app,
        lambda m, db: list(
            db.session.scalars(select(LedgerEntry.id).order_by(LedgerEntry.id.desc()).limit(2))
        ),
    )
    assert label == "post_id:4" and call_id in two_calls


def test_review_mode_keeps_a_marked_entry_out_of_the_block_until_still_true(
    app: Flask, second_worker: Flask, client: FlaskClient, post4: int
) -> None:
    reconfigure(app, CHATMEM_CHANGED_TARGETS="review")
    reconfigure(second_worker, CHATMEM_CHANGED_TARGETS="review")
    about = fact(app, "The About page is post_id:4, written by the founders.")
    guard = add(app, "Never change the header (post_id:3): it mirrors post_id:4.", "post_id:3")
    kept = fact(app, "Prices include VAT.")
    # Both workers have composed the block before the change.
    assert {about, guard, kept} <= set(in_block(app))
    assert {about, guard, kept} <= set(in_block(second_worker))
    before = revision(app)

    call(app, "update-post", {"post_id": 4, "title": "About"})

    assert revision(app) == before + 1
    for worker in (app, second_worker):
        block = in_block(worker)
        assert about not in block and guard not in block and kept in block
        text = work(worker, lambda m, db: m.system_context())
        assert "written by the founders" not in text and "Prices include VAT." in text
    assert about not in recalled(app) and kept in recalled(app)
    assert recalled(app, topic="founders") == []
    # Its guardrail still holds: a change is no reason to stop refusing.
    assert call(app, "update-post", {"post_id": 3, "title": "x"}) == "blocked_by_memory"
    html = squash(client.get(UPKEEP).get_data(as_text=True))
    assert "Each is kept out of the block and <code>recall</code>" in html

    response = client.post(
        f"{UPKEEP}/{about}/still-true", data={"csrf_token": token(client)}, headers=JSON
    )

    assert response.status_code == 200, response.json
    assert response.json["entry"]["target_changed_at"] is None
    assert "back in the block" in response.json["message"]
    assert revision(app) == before + 2
    assert about not in marks(app) and guard in marks(app)
    for worker in (app, second_worker):
        assert about in in_block(worker) and guard not in in_block(worker)
    assert about in recalled(app, topic="founders")
    (still,) = events(app, about, "target_still_true")
    assert still == {"note": "post_id:4 changed; still true"}
    assert work(app, lambda m, db: _actor(db, about, "target_still_true")) == "1"

    # The page's own form: a 303 back to Upkeep, which says what happened.
    form = client.post(f"{UPKEEP}/{guard}/still-true", data={"csrf_token": token(client)})
    assert form.status_code == 303 and form.headers["Location"].endswith("/upkeep#target-changed")
    after = squash(client.get(UPKEEP).get_data(as_text=True))
    assert "is still true: it is back in the block." in after
    assert 'Target changed since approval <span class="cm-count">0</span>' in after
    assert guard in in_block(second_worker)


def _actor(db: Any, entry_id: int, action: str) -> Any:
    return db.session.scalar(
        select(GuidanceEvent.actor_id).where(
            GuidanceEvent.guidance_id == entry_id, GuidanceEvent.action == action
        )
    )


def test_an_edit_or_a_re_approval_clears_the_mark(
    app: Flask, client: FlaskClient, post4: int
) -> None:
    reconfigure(app, CHATMEM_CHANGED_TARGETS="review")
    about = fact(app, "The About page is post_id:4.")
    other = fact(app, "Its title is set by the founders (post_id:4).")
    call(app, "update-post", {"post_id": 4, "title": "About"})
    assert set(marks(app)) == {about, other}
    before = revision(app)
    found = entry(app, about)

    response = client.post(
        f"{SCREEN}/guidance/{about}/edit",
        data={
            "csrf_token": token(client),
            "version": str(found.version),
            "type": "fact",
            "text": "The About page is post_id:4; its title is About.",
        },
        headers=JSON,
    )

    assert response.status_code == 200, response.json
    assert response.json["entry"]["target_changed_at"] is None
    assert set(marks(app)) == {other}
    assert about in in_block(app) and revision(app) > before
    (edit,) = events(app, about, "edit")
    assert edit["note"] == "“target changed” (post_id:4) cleared"
    # A later change marks it again: the mark is "since approval", and this is after.
    call(app, "update-post", {"post_id": 4, "title": "About us"})
    assert set(marks(app)) == {about, other}

    # Approved again after it went back to Pending (its review date, say).
    def to_pending(memory: Any, db: Any) -> None:
        from chatmem.memory import staleness
        from chatmem.memory.models import utcnow

        staleness._to_pending(db.session(), other, "review_due", None, utcnow(), note="due")
        db.session.commit()

    work(app, to_pending)
    pending = entry(app, other)
    assert pending.status == "pending" and pending.target_changed_at is not None
    html = squash(client.get(UPKEEP).get_data(as_text=True))
    assert f'id="changed-{other}"' in html and "back in Pending" in html
    response = client.post(
        f"{SCREEN}/guidance/{other}/approve",
        data={"csrf_token": token(client), "version": str(pending.version)},
        headers=JSON,
    )
    assert response.status_code == 200, response.json
    assert set(marks(app)) == {about}
    assert other in in_block(app)


def test_the_host_says_a_target_changed_outside_chatmem(
    app: Flask, client: FlaskClient, post4: int
) -> None:
    about = fact(app, "The About page is post_id:4.")
    topic = add(app, "Ask before moving topics.", "label:topic:14", severity="warn")
    near = fact(app, "The shop page is post_id:42.")

    assert work(app, lambda m, db: m.target_changed(" ID:004 ")) == [about]
    assert work(app, lambda m, db: m.target_changed("label:Topic:014")) == [topic]
    assert work(app, lambda m, db: m.target_changed("post_id:4")) == []  # marked already

    assert marks(app) == {about: ("post_id:4", None), topic: ("label:topic:14", None)}
    assert near not in marks(app)
    assert events(app, about, "target_changed") == [
        {"label": "post_id:4", "call_id": None, "note": "post_id:4 changed outside chatmem"}
    ]
    html = squash(client.get(UPKEEP).get_data(as_text=True))
    assert "changed outside chatmem" in html
    listed = {e["id"]: e for e in client.get(UPKEEP, headers=JSON).json["target_changed"]}
    assert listed[about]["call"] is None and listed[about]["call_id"] is None


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("", "length"),
        ("   ", "length"),
        ("post_id:" + "4" * 300, "length"),
        (4, "type"),
        (None, "type"),
        (["post_id:4"], "type"),
        ("topic:14", "unparseable"),
        ("update-post", "unparseable"),
        ("tool:update-post", "unparseable"),
        ("post_type:page", "unparseable"),
        ("post_id:", "unparseable"),
    ],
)
def test_a_bad_label_from_the_host_is_refused_and_changes_nothing(
    app: Flask, post4: int, label: Any, reason: str
) -> None:
    fact(app, "The About page is post_id:4.")
    before = state(app)

    def refused(memory: Any, db: Any) -> ChatmemError:
        with pytest.raises(ChatmemError) as caught:
            memory.target_changed(label)
        return caught.value

    error = work(app, refused)

    assert error.code == "invalid_params"
    assert error.details == {"field": "label", "reason": reason}
    assert "post_id:4 or label:topic:14" in error.message
    assert state(app) == before and marks(app) == {}


def test_a_hidden_character_in_the_label_is_refused(app: Flask, post4: int) -> None:
    fact(app, "The About page is post_id:4.")

    def refused(memory: Any, db: Any) -> ChatmemError:
        with pytest.raises(ChatmemError) as caught:
            memory.target_changed("post_id:4\u200b")
        return caught.value

    error = work(app, refused)
    assert (error.code, error.details["field"]) == ("invalid_params", "label")
    assert marks(app) == {}


def test_still_true_refuses_bad_requests_and_changes_nothing(
    app: Flask, client: FlaskClient, post4: int, make_token: Any
) -> None:
    about = fact(app, "The About page is post_id:4.")
    unmarked = fact(app, "Prices include VAT.")
    call(app, "update-post", {"post_id": 4, "title": "About"})
    before = state(app), marks(app)
    csrf = token(client)

    def unchanged() -> None:
        assert (state(app), marks(app)) == before

    unknown = client.post(f"{UPKEEP}/999999/still-true", data={"csrf_token": csrf}, headers=JSON)
    assert unknown.status_code == 404 and unknown.json["error"]["code"] == "not_found"
    unchanged()
    huge = client.post(f"{UPKEEP}/{2**40}/still-true", data={"csrf_token": csrf}, headers=JSON)
    assert huge.status_code == 404
    not_marked = client.post(
        f"{UPKEEP}/{unmarked}/still-true", data={"csrf_token": csrf}, headers=JSON
    )
    assert not_marked.status_code == 409 and not_marked.json["error"]["code"] == "conflict"
    assert "not marked" in not_marked.json["error"]["message"]
    unchanged()
    no_csrf = client.post(f"{UPKEEP}/{about}/still-true", headers=JSON)
    assert no_csrf.status_code == 403 and no_csrf.json["error"]["reason"] == "csrf"
    unchanged()
    bad_csrf = client.post(
        f"{UPKEEP}/{about}/still-true", data={"csrf_token": "forged"}, headers=JSON
    )
    assert bad_csrf.status_code == 403
    unchanged()
    assert client.get(f"{UPKEEP}/{about}/still-true").status_code == 405
    bearer = client.post(
        f"{UPKEEP}/{about}/still-true",
        data={"csrf_token": csrf},
        headers={**JSON, "Authorization": f"Bearer {make_token('admin')}"},
    )
    assert bearer.status_code == 401 and bearer.json["error"]["reason"] == "token"
    unchanged()
    # The page's own form gets its refusal as a message on Upkeep.
    form = client.post(f"{UPKEEP}/{unmarked}/still-true", data={"csrf_token": csrf})
    assert form.status_code == 303
    assert "is not marked" in squash(client.get(UPKEEP).get_data(as_text=True))
    unchanged()
    # Sanity: the same request done right works once, then is a conflict.
    done = client.post(f"{UPKEEP}/{about}/still-true", data={"csrf_token": csrf}, headers=JSON)
    assert done.status_code == 200 and "the mark is cleared" in done.json["message"]
    again = client.post(f"{UPKEEP}/{about}/still-true", data={"csrf_token": csrf}, headers=JSON)
    assert again.status_code == 409
    count = work(
        app,
        lambda m, db: db.session.scalar(
            select(func.count())
            .select_from(GuidanceEvent)
            .where(GuidanceEvent.action == "target_still_true")
        ),
    )
    assert count == 1


def test_still_true_needs_a_signed_in_curator(app: Flask, post4: int) -> None:
    """Without the `client` fixture: its open context would lend its sign-in."""
    from tests.screen_helpers import add_token_route

    add_token_route(app)
    about = fact(app, "The About page is post_id:4.")
    call(app, "update-post", {"post_id": 4, "title": "About"})
    before = state(app), marks(app)
    with app.test_client() as editor:
        login(editor, "editor")
        refused = editor.post(
            f"{UPKEEP}/{about}/still-true", data={"csrf_token": token(editor)}, headers=JSON
        )
        assert refused.status_code == 403 and refused.json["error"]["code"] == "forbidden"
    assert (state(app), marks(app)) == before
    with app.test_client() as anonymous:
        signed_out = anonymous.post(
            f"{UPKEEP}/{about}/still-true", data={"csrf_token": token(anonymous)}, headers=JSON
        )
        assert signed_out.status_code == 401 and signed_out.json["error"]["code"] == "unauthorized"
        as_form = anonymous.post(
            f"{UPKEEP}/{about}/still-true", data={"csrf_token": token(anonymous)}
        )
        assert as_form.status_code == 302 and "/login" in as_form.headers["Location"]
    assert (state(app), marks(app)) == before


def test_a_call_run_on_a_grant_marks_all_but_the_guardrail_that_held_it(
    app: Flask, post4: int
) -> None:
    ask = add(app, "Ask before editing the About page (post_id:4).", "post_id:4", severity="ask")
    about = fact(app, "The About page is post_id:4.")
    arguments = {"post_id": 4, "title": "About"}
    assert call(app, "update-post", arguments) == "approval_required"
    assert marks(app) == {}

    def allow(memory: Any, db: Any) -> None:
        from chatmem.memory import held
        from chatmem.memory.models import HeldCall

        request_id = db.session.scalar(select(HeldCall.id))
        held.decide(
            db.session(),
            request_id,
            "allow",
            actor_id="1",
            actor_name="admin",
            note=None,
            grant_minutes=30,
        )

    work(app, allow)
    assert call(app, "update-post", arguments) == {"id": 4, "title": "About"}

    row = newest_call(app)
    assert row.outcome == "granted-run"
    # The curator allowed exactly this change under the `ask` guardrail: it holds as it is.
    assert marks(app) == {about: ("post_id:4", row.id)}
    assert ask not in marks(app)
