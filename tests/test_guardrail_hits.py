"""Hit counts and the dry run (SPEC §6): how often each block guardrail refused
a call, and what a target would have refused in the recent ledger, by the
enforcement matcher itself. Against the real host app and database.
"""

from __future__ import annotations

import html
import random
import threading
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import event, select, update

from chatmem import BlockedByMemory, ChatmemError
from chatmem.memory import guidance
from chatmem.memory.models import Guidance, LedgerEntry, utcnow
from chatmem.tools import validate
from tests.hostapp import USERS, reconfigure
from tests.screen_helpers import JSON, SCREEN, login, propose, state
from tests.test_guardrails import with_link_tool

ADMIN, EDITOR = USERS["admin"], USERS["editor"]


def guard(db: Any, target: str, severity: str = "block") -> int:
    entry = guidance.admin_add(
        db.session(),
        {"type": "guardrail", "text": f"Guard {target}", "target": target, "severity": severity},
        actor_id=str(ADMIN.id),
    )
    return int(entry.id)


def refused_by(memory: Any, name: str, arguments: dict[str, Any]) -> int:
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool(name, arguments, user=EDITOR)
    return int(caught.value.details["guidance_id"])


def hits(db: Any, entry_id: int) -> tuple[int, Any]:
    db.session.expire_all()
    entry = db.session.get(Guidance, entry_id)
    return entry.hits, entry.last_hit_at


# -- hit counts ---------------------------------------------------------------


def test_each_refusal_counts_one_hit_on_the_rule_that_refused_it(memory: Any, db: Any) -> None:
    header = guard(db, "post_id:3")
    users = guard(db, "create-user")
    version = db.session.get(Guidance, header).version

    assert refused_by(memory, "update-post", {"post_id": 3, "title": "Sale!"}) == header
    assert refused_by(memory, "update-post", {"post_id": "003", "title": "Sale!"}) == header
    memory.call_tool("update-post", {"post_id": 7, "title": "Fine"}, user=EDITOR)

    count, last = hits(db, header)
    rows = db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id)).all()
    assert [(r.outcome, r.guidance_id) for r in rows] == [
        ("blocked", header),
        ("blocked", header),
        ("ok", None),
    ]
    assert count == 2 and last == rows[1].at
    assert hits(db, users) == (0, None)
    # A hit is not an edit: a curator's open form (its version) stays valid.
    assert db.session.get(Guidance, header).version == version


def test_a_call_that_matches_nothing_writes_nothing_to_the_guidance_table(
    memory: Any, db: Any
) -> None:
    guard(db, "post_id:3")
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        memory.call_tool("update-post", {"post_id": 7, "title": "Fine"}, user=EDITOR)
        allowed = list(statements)
        refused_by(memory, "update-post", {"post_id": 3, "title": "No"})
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    assert not [s for s in allowed if s.lstrip().upper().startswith("UPDATE CHATMEM_GUIDANCE")]
    assert [s for s in statements[len(allowed) :] if "UPDATE chatmem_guidance" in s]


def test_hit_counts_are_exact_under_concurrent_refusals(
    app: Flask, second_worker: Flask, database_url: str
) -> None:
    with app.app_context():
        rule = guard(app.extensions["test_host"]["memory"].db, "update-post")
    threads, calls = 6, 15
    barrier = threading.Barrier(threads)
    refused: list[int] = []

    def worker(host: Flask) -> None:
        with host.app_context():
            memory = host.extensions["test_host"]["memory"]
            barrier.wait()
            for i in range(calls):
                refused.append(refused_by(memory, "update-post", {"post_id": 7, "title": f"{i}"}))
            memory.db.session.remove()

    running = [
        threading.Thread(target=worker, args=(app if n % 2 else second_worker,))
        for n in range(threads)
    ]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join()
    assert refused == [rule] * (threads * calls)
    with app.app_context():
        db = app.extensions["test_host"]["memory"].db
        assert hits(db, rule)[0] == threads * calls
        blocked = db.session.scalars(select(LedgerEntry.guidance_id)).all()
        assert blocked == [rule] * (threads * calls)


def test_a_curator_recalls_hit_counts_and_an_editor_does_not(memory: Any, db: Any) -> None:
    rule = guard(db, "post_id:3")
    advisory = guard(db, "post_id:7", severity="warn")
    refused_by(memory, "update-post", {"post_id": 3, "title": "No"})
    last = hits(db, rule)[1]

    curator = {g["id"]: g for g in memory.call_tool("recall", {}, user=ADMIN)["guidance"]}
    assert curator[rule]["hits"] == 1
    assert curator[rule]["last_hit_at"] == f"{last:%Y-%m-%dT%H:%M:%S}Z"
    assert "hits" not in curator[advisory], "only block guardrails refuse calls"
    editor = {g["id"]: g for g in memory.call_tool("recall", {}, user=EDITOR)["guidance"]}
    assert set(editor[rule]) == set(curator[advisory])
    # The per-revision cache the curator's answer came from was not changed.
    again = {g["id"]: g for g in memory.call_tool("recall", {}, user=EDITOR)["guidance"]}
    assert "hits" not in again[rule]


def test_the_active_tab_shows_hits_and_links_to_the_refused_calls(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        rule = guard(memory.db, "post_id:3")
        other = guard(memory.db, "create-user")
        for title in ("<b>One</b>", "Two"):
            refused_by(memory, "update-post", {"post_id": 3, "title": title})
        refused_by(memory, "create-user", {"username": "mallory"})
        memory.db.session.remove()

    with client.get(f"{SCREEN}?tab=active") as response:
        page = response.get_data(as_text=True)
    link = f'href="{SCREEN}/guidance/{rule}/hits"'
    assert "Refused 2 calls, last" in page and "just now" in page and link in page
    assert "Refused 1 call, last" in page

    with client.get(f"{SCREEN}/guidance/{rule}/hits") as response:
        assert response.status_code == 200
        listing = response.get_data(as_text=True)
    assert "update-post" in listing and "create-user" not in listing
    assert html.escape("<b>One</b>") in listing
    assert "<b>One</b>" not in listing, "agent-written arguments are escaped"
    assert listing.count('class="cm-outcome cm-outcome-blocked"') == 2
    with client.get(f"{SCREEN}/guidance/{other}/hits") as response:
        assert response.get_data(as_text=True).count("cm-outcome-blocked") == 1


def test_hits_and_dry_run_are_for_curators_signed_in(app: Flask, make_token: Any) -> None:
    with app.app_context():
        rule = guard(app.extensions["test_host"]["memory"].db, "post_id:3")
    routes = (f"{SCREEN}/guidance/{rule}/hits", f"{SCREEN}/dry-run?target=post_id:3")
    with app.test_client() as anonymous:
        for route in routes:
            with anonymous.get(route, headers=JSON) as response:
                assert response.status_code == 401
            bearer = {"Authorization": f"Bearer {make_token('admin')}", **JSON}
            with anonymous.get(route, headers=bearer) as response:
                assert response.status_code == 401
                assert response.get_json()["error"]["reason"] == "token"
    with app.test_client() as editor:
        login(editor, "editor")
        for route in routes:
            with editor.get(route, headers=JSON) as response:
                assert response.status_code == 403
    with app.test_client() as admin:
        login(admin, "admin")
        with admin.get(f"{SCREEN}/guidance/999/hits", headers=JSON) as response:
            assert response.status_code == 404


# -- the dry run ----------------------------------------------------------------


def generated_calls(count: int, seed: int = 7) -> list[tuple[str, dict[str, Any]]]:
    """Calls of every kind the matcher tells apart: tools, ids in every spelling."""
    rng = random.Random(seed)
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(count):
        kind = rng.random()
        post = rng.choice([3, 7, 42, 4, 30, 420])
        if kind < 0.15:
            # `id` of any JSON type: only some spellings are post ids at all.
            odd = rng.choice(
                [
                    post,
                    f" {post}",
                    f"+{post}",
                    {"post": post},
                    [post],
                    None,
                    True,
                    post + 0.5,
                    "",
                    "page",
                ]
            )
            calls.append(("link-posts", {"post_id": rng.choice([1, post]), "id": odd}))
        elif kind < 0.6:
            spelled = rng.choice([post, str(post), f"0{post}", f" {post}", float(post)])
            calls.append(("update-post", {"post_id": spelled, "title": f"t{rng.random():.3f}"}))
        elif kind < 0.8:
            calls.append(("create-user", {"username": rng.choice(["ann", "bob", "3", "42"])}))
        else:
            calls.append(("remember", {"type": "fact", "text": f"Fact {rng.random():.6f}."}))
    return calls


TARGETS = (
    "post_id:3",
    "id:042",
    "post_type:page",
    "post_type:header_footer",
    "update-post",
    "tool:create-user",
    "chatmem/remember",
    "other/remember",
    "post_id:4",
    "post_type:nothing",
    "colour:red",
)


def test_the_dry_run_agrees_with_enforcement_on_a_thousand_calls(
    memory: Any, db: Any, app: Flask
) -> None:
    with_link_tool(memory)
    calls = generated_calls(1000)
    for name, arguments in calls:
        try:
            memory.call_tool(name, arguments, user=EDITOR)
        except ChatmemError as error:
            assert error.code == "not_found"  # posts 4, 30 and 420 do not exist: ledgered too
    rows = db.session.scalars(select(LedgerEntry).order_by(LedgerEntry.id)).all()
    assert [r.tool for r in rows] == [name for name, _ in calls]

    registry = memory.registry
    snapshot = memory.snapshot()
    for target in TARGETS:
        found = memory.dry_run(target, limit=len(calls))
        predicted = {row.id for row in found.calls}
        assert found.count == len(predicted)
        # Enforcement's verdict on each call, with the rule live.
        rule = guard(db, target)
        live = memory.snapshot()
        enforced = {
            row.id
            for row, (name, arguments) in zip(rows, calls, strict=True)
            if memory.dispatcher.guardrails.guardrail_for(
                name, validate(registry.find(name, memory.server_name), arguments), live
            )
        }
        assert predicted == enforced, target
        guidance.trash(db.session(), rule, actor_id=str(ADMIN.id))
    assert snapshot.revision < memory.snapshot().revision
    # The figures the assertion above stands on are not trivial.
    assert memory.dry_run("post_id:3").count > 50
    assert memory.dry_run("post_type:page").count > 50
    assert memory.dry_run("post_type:nothing").count == 0
    assert memory.dry_run("id:042").count > memory.dry_run("link-posts").count / 10
    assert memory.dry_run("colour:red").never_matches


def test_the_dry_run_reads_its_window_and_says_so(memory: Any, db: Any, app: Flask) -> None:
    for post in (3, 3, 7):
        memory.call_tool("update-post", {"post_id": post, "title": "x"}, user=EDITOR)
    first = db.session.scalars(select(LedgerEntry.id).order_by(LedgerEntry.id)).first()
    db.session.execute(
        update(LedgerEntry).where(LedgerEntry.id == first).values(at=utcnow() - timedelta(days=8))
    )
    db.session.commit()

    assert memory.dry_run("post_id:3").summary() == (
        "would have refused 2 calls in the last 30 days"
    )
    reconfigure(app, CHATMEM_DRY_RUN_DAYS=7)
    assert memory.dry_run("post_id:3").summary() == "would have refused 1 call in the last 7 days"
    assert memory.dry_run("post_id:3", days=9).count == 2
    assert memory.dry_run("post_id:99").summary() == "matches nothing in the last 7 days"
    assert memory.dry_run("nonsense:1").summary() == "this target never matches"


def test_a_resolver_that_fails_counts_as_a_refusal_as_enforcement_does(
    memory: Any, db: Any
) -> None:
    memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=EDITOR)
    memory.call_tool("update-post", {"post_id": 42, "title": "x"}, user=EDITOR)
    asked: list[Any] = []

    def broken(post_id: Any) -> str | None:
        asked.append(post_id)
        if post_id == 42:
            raise RuntimeError("the posts table is down")
        return "post"

    memory.post_type_resolver(broken)
    found = memory.dry_run("post_type:page")
    assert [row.arguments["post_id"] for row in found.calls] == [42]
    assert sorted(asked) == [7, 42]
    memory.call_tool("update-post", {"post_id": 42, "title": "y"}, user=EDITOR)
    memory.call_tool("update-post", {"post_id": 42, "title": "z"}, user=EDITOR)
    memory.dry_run("post_type:page")
    assert asked.count(42) == 2, "one resolver call per post per dry run, however many calls"


def test_the_dry_run_route_answers_json_and_refuses_bad_targets(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        for post in (3, 42, 3):
            memory.call_tool("update-post", {"post_id": post, "title": "x"}, user=EDITOR)
        memory.db.session.remove()

    with client.get(f"{SCREEN}/dry-run?target=post_id:3") as response:
        body = response.get_json()
    assert response.status_code == 200
    assert body["summary"] == "would have refused 2 calls in the last 30 days"
    assert [c["arguments"]["post_id"] for c in body["calls"]] == [3, 3]
    assert [c["tool"] for c in body["calls"]] == ["update-post"] * 2
    assert body["calls"][0]["id"] > body["calls"][1]["id"], "newest first"

    before = state(app)
    for bad in ("", "   ", "x" * 201, "post_id:3\u200b", "tool:\u202eedit", "ghp_" + "a" * 36):
        with client.get(f"{SCREEN}/dry-run", query_string={"target": bad}) as response:
            assert response.status_code == 400, bad
            error = response.get_json()["error"]
            assert error["code"] == "invalid_params" and error["field"] == "target"
    assert state(app) == before


def test_the_pending_tab_shows_what_a_proposed_guardrail_would_refuse(
    app: Flask, client: FlaskClient
) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        for post in (42, 42, 42, 7):
            memory.call_tool("update-post", {"post_id": post, "title": "x"}, user=EDITOR)
        propose(
            memory,
            "Never touch the checkout page.",
            type="guardrail",
            target="post_type:page",
            severity="block",
        )
        propose(
            memory, "Careful with post 7.", type="guardrail", target="post_id:7", severity="warn"
        )
        memory.db.session.remove()

    with client.get(f"{SCREEN}?tab=pending") as response:
        page = response.get_data(as_text=True)
    assert page.count("Dry run:") == 1, "only a block guardrail refuses calls"
    assert "Dry run: would have refused 3 calls in the last 30 days" in page
    # The calls it lists (the evidence panels below list their sessions' lines too).
    dry_run = page.split('<details class="cm-dry-run">', 1)[1].split("</details>", 1)[0]
    assert dry_run.count("cm-outcome-ok") == 3
