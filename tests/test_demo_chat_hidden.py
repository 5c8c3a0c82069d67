"""The demo chat's `create-user`: a refused password is told the real rule,
and an accepted one reaches the tool but never the transcript (the page, the
chat API, the ledger, the digest). Real demo app and database."""

from __future__ import annotations

import json

from flask import Flask
from sqlalchemy import select

from chatmem.demo.extensions import db
from chatmem.demo.models import ChatMessage
from chatmem.memory.models import LedgerEntry
from tests.demo_client import DemoClient, tool_results

PASSWORD = "correct horse battery"


def test_a_short_password_is_told_the_rule(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    conversation = admin.new_conversation()["id"]
    [card] = tool_results(
        admin.say(conversation, '/tool create-user {"username":"bob","password":"short"}')
    )
    assert card["outcome"] == "error"
    assert card["result"]["error"]["message"] == "password must be at least 8 characters."
    [card] = tool_results(
        admin.say(conversation, '/tool create-user {"username":"b ob","password":"long enough"}')
    )
    assert card["result"]["error"]["message"] == (
        "username must match the pattern ^[a-zA-Z0-9_.-]{2,64}$ "
        "(2 to 64 letters, digits, dots, dashes or underscores)."
    )


def test_a_create_user_password_is_never_shown_in_clear(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    conversation = admin.new_conversation()["id"]
    command = f"/tool create-user {json.dumps({'username': 'bob', 'password': PASSWORD})}"
    added = admin.say(conversation, command)
    [card] = tool_results(added)
    assert card["outcome"] == "ok" and card["result"]["username"] == "bob"
    assert added[0]["content"] == '/tool create-user {"username": "bob", "password": "[hidden]"}'
    assert card["arguments"] == {"username": "bob", "password": "[hidden]"}

    # The tool got the real password: bob signs in with it.
    bob = demo_app.test_client()
    page = bob.get("/login").get_data(as_text=True)
    csrf = page.split('name="csrf_token" value="', 1)[1].split('"', 1)[0]
    login = bob.post("/login", data={"username": "bob", "password": PASSWORD, "csrf_token": csrf})
    assert login.status_code == 302

    shown = [
        admin.client.get(f"/chat/{conversation}").get_data(as_text=True),
        admin.client.get(f"/chat/api/conversations/{conversation}").get_data(as_text=True),
        json.dumps(admin.close(conversation)),
    ]
    with demo_app.app_context():
        rows = db.session.scalars(select(ChatMessage)).all()
        shown += [json.dumps([r.content, r.tool_calls, r.arguments]) for r in rows]
        shown += [json.dumps(r.arguments) for r in db.session.scalars(select(LedgerEntry))]
    for text in shown:
        assert PASSWORD not in text
    assert "[hidden]" in shown[0]
