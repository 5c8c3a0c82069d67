"""The demo chat over HTTP with no provider: `/tool` commands, the JSON API's
errors, permissions, CSRF, and the session hooks."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.demo.extensions import db, memory
from chatmem.demo.models import User
from chatmem.memory.models import LedgerEntry, Session, SummaryJob, utcnow
from tests.demo_client import DemoClient, tool_results
from tests.demo_story import (
    FACT,
    FIRST_POST,
    GUARDRAIL,
    HEADER,
    add_guardrail,
    approve,
    assert_digest,
    post_title,
)


def tool(client: DemoClient, conversation_id: int, name: str, args: object) -> dict:
    [card] = tool_results(client.say(conversation_id, f"/tool {name} {json.dumps(args)}"))
    return card


def test_the_story_with_tool_commands(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    first = editor.new_conversation()
    card = tool(editor, first["id"], "remember", {"type": "fact", "text": FACT})
    assert card["result"]["status"] == "pending"
    assert FACT not in editor.new_conversation()["system_context"], "pending is inert"

    approve(demo_app, card["result"]["id"])
    add_guardrail(demo_app)
    second = editor.new_conversation()
    assert FACT in second["system_context"]
    assert (
        FACT
        not in editor.client.get(f"/chat/api/conversations/{first['id']}").json["system_context"]
    )

    blocked = tool(editor, second["id"], "update-post", {"post_id": " 5", "title": "Hacked"})
    assert blocked["outcome"] == "blocked"
    assert blocked["result"]["error"]["title"] == GUARDRAIL["title"]
    assert post_title(demo_app, HEADER) == "Site header"
    done = tool(editor, second["id"], "update-post", {"post_id": FIRST_POST, "title": "Hi"})
    assert done["outcome"] == "ok"
    assert_digest(demo_app, editor.close(second["id"]), second["id"])


def test_chat_page_shows_cards_badge_and_admin_only_context(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()
    tool(
        editor,
        conversation["id"],
        "remember",
        {"type": "convention", "text": "Use British spelling."},
    )
    page = editor.client.get(f"/chat/{conversation['id']}").get_data(as_text=True)
    assert "Close conversation" in page and "New conversation" in page
    assert '"outcome": "ok"' in page and '"name": "remember"' in page
    assert "System context this conversation started with" not in page
    assert "/chatmem/memory" not in page, "no Memory link for a non-admin"

    admin = DemoClient(demo_app, "admin")
    own = admin.new_conversation()
    page = admin.client.get(f"/chat/{own['id']}").get_data(as_text=True)
    assert "System context this conversation started with" in page
    assert 'href="/chatmem/memory"' in page and 'aria-label="1 pending"' in page
    assert admin.client.get(f"/chat/{conversation['id']}").status_code == 404


def test_offline_replies_explain_how_to_configure_a_provider(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()
    added = editor.say(conversation["id"], "Hello there")
    assert [m["role"] for m in added] == ["user", "notice"]
    assert "CHATMEM_PROVIDER=openai" in added[1]["content"] and "/tool" in added[1]["content"]
    assert editor.say(conversation["id"], "/tool get-post {oops")[1]["role"] == "notice"
    assert "JSON object" in editor.say(conversation["id"], "/tool get-post [1]")[1]["content"]


def test_tool_errors_become_cards_and_change_nothing(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    cid = editor.new_conversation()["id"]
    missing = tool(editor, cid, "no-such-tool", {})
    assert (missing["outcome"], missing["result"]["error"]["code"]) == ("error", "not_found")
    invalid = tool(editor, cid, "update-post", {"post_id": FIRST_POST, "titel": "x"})
    assert invalid["result"]["error"] == {
        "code": "invalid_params",
        "message": "titel is not an accepted field.",
        "field": "titel",
    }
    admin_only = tool(editor, cid, "create-user", {"username": "mallory", "password": "x" * 8})
    assert admin_only["result"]["error"]["code"] == "forbidden"
    gone = tool(editor, cid, "delete-post", {"post_id": 999})
    assert gone["result"]["error"]["code"] == "not_found"

    viewer = DemoClient(demo_app, "viewer")
    vid = viewer.new_conversation()["id"]
    assert (
        tool(viewer, vid, "update-post", {"post_id": 1, "title": "x"})["result"]["error"]["code"]
        == "forbidden"
    )
    assert post_title(demo_app, FIRST_POST) == "Welcome to the demo"


def test_admin_creates_a_user_who_can_log_in_and_the_password_is_never_stored(
    demo_app: Flask,
) -> None:
    admin = DemoClient(demo_app, "admin")
    cid = admin.new_conversation()["id"]
    made = tool(
        admin,
        cid,
        "create-user",
        {"username": "writer", "password": "correct-horse", "capabilities": ["edit_posts"]},
    )
    assert made["result"] == {"user_id": 4, "username": "writer", "capabilities": ["edit_posts"]}
    again = tool(admin, cid, "create-user", {"username": "writer", "password": "whatever1"})
    assert again["result"]["error"]["code"] == "conflict"
    client = demo_app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    login = client.post(
        "/login", data={"username": "writer", "password": "correct-horse", "csrf_token": token}
    )
    assert login.status_code == 302
    with demo_app.app_context():
        stored = [e.arguments for e in db.session.query(LedgerEntry).all()]
    assert stored and all(a.get("password") == "[redacted:password]" for a in stored)
    assert "correct-horse" not in json.dumps(stored)


def test_api_needs_login_and_csrf(demo_app: Flask) -> None:
    anonymous = demo_app.test_client()
    response = anonymous.post("/chat/api/conversations", json={})
    assert response.status_code in (400, 401, 403) and "error" in response.get_json()
    assert anonymous.get("/chat/api/conversations").status_code == 401
    assert anonymous.get("/chat").headers["Location"].startswith("/login?next=")

    editor = DemoClient(demo_app, "editor")
    forged = editor.client.post("/chat/api/conversations", json={})
    assert forged.status_code == 403
    assert forged.get_json()["error"]["reason"] == "csrf"
    assert editor.client.get("/chat/api/conversations").get_json() == {"conversations": []}


def test_api_refuses_bad_input_without_a_500(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    cid = editor.new_conversation()["id"]
    path = f"/chat/api/conversations/{cid}/messages"
    headers = {"X-CSRFToken": editor.csrf}
    for body in ({}, {"content": ""}, {"content": 5}, {"content": "x" * 8001}):
        response = editor.client.post(path, json=body, headers=headers)
        assert response.status_code == 400
        assert response.get_json()["error"]["field"] == "content"
    raw = editor.client.post(path, data="not json", headers=headers)
    assert raw.status_code == 400
    huge = editor.client.post(path, data="x" * (2 * 1024 * 1024), headers=headers)
    assert huge.status_code == 413 and huge.get_json()["error"]["code"] == "payload_too_large"
    other = DemoClient(demo_app, "viewer")
    assert other.post(path, {"content": "hi"}, status=404)["error"]["code"] == "not_found"
    assert editor.client.get("/chat/api/nope").get_json()["error"]["code"] == "not_found"


def test_a_closed_conversation_takes_no_messages(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    cid = editor.new_conversation()["id"]
    closed = editor.close(cid)
    assert closed["closed"] is True and closed["changes"] == 0
    assert editor.close(cid)["closed"] is True, "closing twice is harmless"
    refused = editor.post(f"/chat/api/conversations/{cid}/messages", {"content": "hi"}, status=409)
    assert refused["error"]["code"] == "conflict"


def test_login_rejects_bad_passwords_and_foreign_redirects(demo_app: Flask) -> None:
    client = demo_app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    wrong = client.post("/login", data={"username": "admin", "password": "x", "csrf_token": token})
    assert wrong.status_code == 401 and "Wrong username or password" in wrong.get_data(True)
    ok = client.post(
        "/login?next=//evil.example/x",
        data={"username": "admin", "password": "admin", "csrf_token": token},
    )
    assert ok.headers["Location"] == "/chat"


def test_memory_off_hides_the_memory_tools(demo_app: Flask) -> None:
    from chatmem.demo.chat import tool_specs
    from chatmem.demo.models import User

    with demo_app.app_context():
        editor = db.session.query(User).filter_by(username="editor").one()
        names = {spec.name for spec in tool_specs(editor)}
        assert {"recall", "remember", "save-session-summary", "update-post"} <= names
        memory.set_setting("memory_enabled", False, actor=editor)
        assert {spec.name for spec in tool_specs(editor)} == names - {
            "recall",
            "remember",
            "save-session-summary",
        }
    client = DemoClient(demo_app, "editor")
    cid = client.new_conversation()["id"]
    card = tool(client, cid, "remember", {"type": "fact", "text": "x"})
    assert card["result"]["error"]["code"] == "memory_disabled"
    assert tool(client, cid, "get-post", {"post_id": 1})["outcome"] == "ok"


def test_the_idle_sweep_passes_the_transcript(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    cid = editor.new_conversation()["id"]
    tool(editor, cid, "update-post", {"post_id": FIRST_POST, "title": "Swept"})
    with demo_app.app_context():
        from chatmem.demo.models import Conversation, User

        admin = db.session.query(User).filter_by(username="admin").one()
        memory.set_setting("auto_summarize", True, actor=admin)
        session_id = db.session.get(Conversation, cid).session_id
        record = db.session.get(Session, session_id)
        record.last_seen_at = utcnow() - timedelta(hours=2)
        db.session.commit()
        assert memory.sweep() == 1
        job = db.session.query(SummaryJob).filter_by(session_id=session_id).one()
        assert job.transcript is not None
        assert "user: /tool update-post" in job.transcript
        assert 'tool update-post {"post_id": 1, "title": "Swept"} -> ok' in job.transcript
    refused = editor.post(f"/chat/api/conversations/{cid}/messages", {"content": "hi"}, status=409)
    assert "idle" in refused["error"]["message"]


def test_a_long_transcript_is_cut_at_a_line_break_never_between_a_key_and_its_secret(
    demo_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cut inside `TWILIO_AUTH_TOKEN`, the value would be left without the key that names it."""
    from chatmem.demo import conversations

    secret = "9f2c7e1a4b8d3f6e0a5c9b2d7e4f1a8c"
    monkeypatch.setattr(conversations, "TRANSCRIPT_MAX", len(f"KEN {secret}\nuser: done"))
    editor = DemoClient(demo_app, "editor")
    cid = editor.new_conversation()["id"]
    with demo_app.app_context():
        admin = db.session.query(User).filter_by(username="admin").one()
        memory.set_setting("auto_summarize", True, actor=admin)
    for content in ("hello", f"TWILIO_AUTH_TOKEN {secret}", "done"):
        editor.say(cid, content)
    editor.close(cid)
    with demo_app.app_context():
        [job] = db.session.scalars(select(SummaryJob)).all()
        assert job.transcript == "user: done"


def test_the_licence_follows_demo_config(demo_app: Flask) -> None:
    with demo_app.app_context():
        assert memory.licensed() is True
        demo_app.config["DEMO_LICENSE_ACTIVE"] = False
        assert memory.licensed() is False


def test_scripts_can_use_an_api_token_instead_of_the_cookie(demo_app: Flask) -> None:
    from chatmem.auth import tokens

    with demo_app.app_context():
        editor = db.session.scalar(select(User).where(User.username == "editor"))
        _row, plain = tokens.create(db.session(), user_id=str(editor.id), name="script")
    client = demo_app.test_client()
    auth = {"Authorization": f"Bearer {plain}"}
    created = client.post("/chat/api/conversations", headers=auth)
    assert created.status_code == 201, created.get_json()
    cid = created.get_json()["id"]
    sent = client.post(
        f"/chat/api/conversations/{cid}/messages",
        json={"content": '/tool update-post {"post_id": 1, "title": "By token"}'},
        headers=auth,
    )
    assert sent.status_code == 201
    [result] = tool_results(sent.get_json()["messages"])
    assert "By token" in json.dumps(result)
    with demo_app.app_context():
        from chatmem.demo.models import Post

        assert db.session.get(Post, 1).title == "By token"
    # A wrong token is no login at all, and cookies without CSRF still fail.
    bad = client.post("/chat/api/conversations", headers={"Authorization": "Bearer cm_nope"})
    assert bad.status_code == 401
    assert client.post(f"/chat/api/conversations/{cid}/close", headers=auth).status_code == 200
