"""The MCP `tools/call` hot path: what it may skip, and what it must never skip.

Each worker keeps valid tokens and the approved guidance per revision, and a
call reuses the state row its request read. These tests pin the other side
of that bargain: a revocation, an approval or an edit made through one
worker is honoured by another on its very next request, and a read-only
call in steady state writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event

from chatmem import BlockedByMemory, NotFound
from chatmem.auth import tokens
from chatmem.memory import guidance
from chatmem.memory.models import Session, utcnow
from chatmem.memory.recall import recall
from tests.hostapp import USERS, reconfigure

URL = "/chatmem/mcp"
HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}


def auth(token: str, session_id: str | None = None) -> dict[str, str]:
    extra = {"Mcp-Session-Id": session_id} if session_id else {}
    return {**HEADERS, "Authorization": f"Bearer {token}", **extra}


def initialize(client: Any, token: str) -> str:
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t"}}
    response = client.post(
        URL, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        headers=auth(token),
    )  # fmt: skip
    assert response.status_code == 200
    return str(response.headers["Mcp-Session-Id"])


def call(client: Any, token: str, session_id: str | None, name: str, arguments: Any) -> Any:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return client.post(URL, json=body, headers=auth(token, session_id))


def recalled(client: Any, token: str, session_id: str | None = None) -> dict[str, Any]:
    response = call(client, token, session_id, "recall", {})
    assert response.status_code == 200
    result = response.json["result"]
    assert result["isError"] is False, result
    return dict(result["structuredContent"])


@contextmanager
def statements(app: Flask, *, whole: bool = False) -> Iterator[list[str]]:
    """The SQL statements the app's engine runs inside the block: each one's
    first word, or (`whole`) its text on one line."""
    seen: list[str] = []
    with app.app_context():
        engine = app.extensions["test_host"]["db"].engine

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        words = statement.split()
        seen.append(" ".join(words) if whole else words[0].upper())

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_a_steady_state_recall_reads_one_row_and_writes_nothing(
    app: Flask, make_token: Any
) -> None:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)  # off here; on, it adds nothing (below)
    token = make_token("editor")
    client = app.test_client()
    session_id = initialize(client, token)
    recalled(client, token, session_id)  # warms this worker's caches
    with statements(app) as seen:
        for _ in range(3):
            recalled(client, token, session_id)
    assert seen and set(seen) == {"SELECT"}, seen
    # Per call: the state row (with the records revision) and the session in
    # one statement (the endpoint's look-up; the dispatcher's reuses it). The
    # token, the guidance and the newest records come from the per-revision
    # caches.
    assert len(seen) == 3, seen


def test_with_the_rate_limit_on_the_database_sees_no_write(app: Flask, make_token: Any) -> None:
    """The count lives in the rate-limit store (memory here, Redis with workers), not a row."""
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=1000)
    token = make_token("editor")
    client = app.test_client()
    session_id = initialize(client, token)
    recalled(client, token, session_id)
    with statements(app) as seen:
        for _ in range(3):
            recalled(client, token, session_id)
    assert seen and set(seen) == {"SELECT"}, seen
    assert len(seen) == 3, seen


def test_a_revoked_token_is_refused_by_every_worker_on_its_next_request(
    app: Flask, second_worker: Flask, make_token: Any
) -> None:
    token, other = make_token("editor"), make_token("editor", "other")
    one, two = app.test_client(), second_worker.test_client()
    for client in (one, two):  # both workers now know both tokens
        recalled(client, token)
        recalled(client, other)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        tokens.revoke(
            db.session(), next(t.id for t in tokens.list_tokens(db.session()) if t.name == "test")
        )
    for client in (two, one):
        refused = call(client, token, None, "recall", {})
        assert refused.status_code == 401
        assert refused.json["error"]["data"]["code"] == "unauthorized"
        recalled(client, other)  # the other token still works


def test_a_known_token_whose_user_was_deactivated_is_refused(app: Flask, make_token: Any) -> None:
    token = make_token("editor")
    client = app.test_client()
    recalled(client, token)
    USERS["editor"].is_active = False
    try:
        assert call(client, token, None, "recall", {}).status_code == 401
    finally:
        USERS["editor"].is_active = True
    recalled(client, token)


def test_recall_shows_each_guidance_change_from_another_worker_at_once(
    app: Flask, second_worker: Flask, make_token: Any
) -> None:
    token = make_token("editor")
    other = second_worker.test_client()
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        memory = app.extensions["test_host"]["memory"]
        fact = memory.call_tool(
            "remember", {"type": "fact", "text": "Checkout is page 42"}, user=USERS["editor"]
        )
        rule = memory.call_tool(
            "remember",
            {"type": "guardrail", "text": "Leave checkout alone", "severity": "block"},
            user=USERS["editor"],
        )
        assert recalled(other, token)["guidance"] == []  # worker B's cache is warm

        def check(expected_texts: list[str]) -> None:
            seen = recalled(other, token)["guidance"]
            assert [g["text"] for g in seen] == expected_texts
            db.session.expire_all()
            assert seen == recall(db.session(), scan=True)["guidance"]  # the query's own answer

        guidance.approve(db.session(), fact["id"], actor_id="1")
        check(["Checkout is page 42"])
        guidance.approve(db.session(), rule["id"], actor_id="1")
        check(["Leave checkout alone", "Checkout is page 42"])  # guardrails first
        guidance.edit(db.session(), fact["id"], {"text": "Checkout is page 43"}, actor_id="1")
        check(["Leave checkout alone", "Checkout is page 43"])
        guidance.set_enabled(db.session(), rule["id"], False, actor_id="1")
        check(["Checkout is page 43"])
        guidance.trash(db.session(), fact["id"], actor_id="1")
        check([])


def test_recall_by_type_from_the_cache_matches_the_query(
    app: Flask, make_token: Any, memory: Any, db: Any
) -> None:
    for kind, text in (("fact", "Prices include VAT"), ("convention", "British spelling")):
        guidance.admin_add(db.session(), {"type": kind, "text": text}, actor_id="1")
    client = app.test_client()
    token = make_token("editor")
    for kind in ("fact", "convention", "instruction"):
        response = call(client, token, None, "recall", {"type": kind})
        shown = response.json["result"]["structuredContent"]["guidance"]
        assert shown == recall(db.session(), type=kind)["guidance"]
        assert all(g["type"] == kind for g in shown)
    assert [g["type"] for g in recall(db.session(), type="fact")["guidance"]] == ["fact"]


def test_a_reused_call_context_reads_the_state_again(memory: Any, db: Any, editor: Any) -> None:
    context = memory.context_for(editor, channel="python")
    memory.dispatcher.call("update-post", {"post_id": 42, "title": "one"}, context)
    rule = guidance.admin_add(
        db.session(),
        {"type": "guardrail", "text": "No", "target": "post_id:42", "severity": "block"},
        actor_id="1",
    )
    # The guardrail approved between the calls is enforced on the second.
    with pytest.raises(BlockedByMemory) as caught:
        memory.dispatcher.call("update-post", {"post_id": 42, "title": "two"}, context)
    assert caught.value.details["guidance_id"] == rule.id


def test_a_session_seen_a_while_ago_is_touched_by_a_read(
    app: Flask, make_token: Any, db: Any
) -> None:
    token = make_token("editor")
    client = app.test_client()
    session_id = initialize(client, token)
    earlier = utcnow() - timedelta(minutes=5)
    db.session.get(Session, session_id).last_seen_at = earlier
    db.session.commit()
    recalled(client, token, session_id)
    db.session.expire_all()
    assert db.session.get(Session, session_id).last_seen_at > earlier + timedelta(minutes=4)


def test_recall_sees_a_record_not_yet_flushed(memory: Any, db: Any) -> None:
    """Its Core reads flush pending changes first, as an ORM query would."""
    db.session.add(
        Session(
            id="pending-record",
            user_id="2",
            user_name="editor",
            channel="python",
            summary="Moved the banner",
            recorded_at=utcnow(),
        )
    )
    assert [s["id"] for s in recall(db.session())["sessions"]] == ["pending-record"]
    db.session.rollback()


def test_a_session_ended_elsewhere_is_refused_on_the_next_call(
    memory: Any, editor: Any, second_worker: Flask
) -> None:
    """The dispatcher's session look-up is reused within a transaction, never across one."""
    session_id = memory.start_session(editor, "python")
    memory.call_tool("recall", {}, user=editor, session_id=session_id)
    with second_worker.app_context():
        second_worker.extensions["test_host"]["memory"].end_session(session_id)
    with pytest.raises(NotFound, match="ended"):
        memory.call_tool(
            "remember", {"type": "fact", "text": "x"}, user=editor, session_id=session_id
        )
