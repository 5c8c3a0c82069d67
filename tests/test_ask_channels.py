"""An `ask` guardrail through every channel of the demo app (SPEC §6, §11).

The same call is held with `approval_required` (a tool-level error: REST
403 with the error body, MCP a tool result with `isError`, the chat a
"held" card, Python the exception), allowed once on the Memory screen, run
once, and the second identical call is held again.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.demo.extensions import db, memory
from chatmem.demo.models import Post, User
from chatmem.memory.models import HeldCall, LedgerEntry
from tests.channels import MCP, REST, SCREEN, Channels
from tests.demo_client import tool_results

TITLE = "Sale!"


@pytest.fixture
def channels(demo_app: Flask) -> Channels:
    return Channels(demo_app)


def header_id(app: Flask) -> int:
    with app.app_context():
        return int(db.session.scalars(select(Post.id).filter_by(title="Site header")).one())


def ask_rule(channels: Channels, target: str) -> int:
    added = channels.screen_add(
        {
            "type": "guardrail",
            "title": "Ask before the header",
            "text": "Ask first.",
            "target": target,
            "severity": "ask",
        }
    )
    return int(added["entry"]["id"])


def allow(channels: Channels, request_id: int) -> None:
    response = channels.admin.client.post(
        f"{SCREEN}/held/{request_id}/allow",
        data={"csrf_token": channels.admin.csrf},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def rest(channels: Channels, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = channels.http.post(f"{REST}/update-post", json=arguments, headers=channels.auth())
    return response.status_code, dict(response.json)


def mcp(channels: Channels, arguments: dict[str, Any]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "update-post", "arguments": arguments},
    }
    response = channels.http.post(MCP, json=body, headers=channels.auth())
    assert response.status_code == 200
    return dict(response.json["result"])


def title(app: Flask, post_id: int) -> str:
    with app.app_context():
        return str(db.session.get(Post, post_id).title)


@pytest.mark.parametrize("channel", ["python", "rest", "mcp", "chat"])
def test_held_allowed_run_once_then_held_again(
    demo_app: Flask, channels: Channels, channel: str
) -> None:
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    call = {"post_id": post_id, "title": f"{TITLE} ({channel})"}

    def attempt() -> dict[str, Any]:
        """One call on this channel; the error dict, or {} when it ran."""
        if channel == "rest":
            status, body = rest(channels, call)
            if status == 200:
                return {}
            assert status == 403  # a tool-level refusal, like blocked_by_memory
            return dict(body["error"])
        if channel == "mcp":
            result = mcp(channels, call)
            if not result["isError"]:
                return {}
            error = dict(result["structuredContent"]["error"])
            # The agent reads the text: retry the same call after approval.
            assert "make exactly the same call again" in result["content"][0]["text"]
            return error
        if channel == "chat":
            answer = channels.chat("update-post", call)
            return dict(answer.get("error") or {})
        answer = channels.python("update-post", call)
        return dict(answer.get("error") or {})

    first = attempt()
    assert first["code"] == "approval_required"
    assert first["title"] == "Ask before the header"
    request_id = first["request_id"]
    assert title(demo_app, post_id) == "Site header"
    allow(channels, request_id)
    assert attempt() == {}
    assert title(demo_app, post_id) == call["title"]
    again = attempt()
    assert again["code"] == "approval_required" and again["request_id"] != request_id
    with demo_app.app_context():
        rows = db.session.scalars(select(LedgerEntry.outcome).order_by(LedgerEntry.id)).all()
        assert [r for r in rows if r != "ok"][-4:] == ["held", "allowed", "granted-run", "held"]
        assert db.session.get(HeldCall, request_id).state == "used"


def test_the_chat_card_runs_an_allowed_call_and_the_model_sees_the_outcome(
    demo_app: Flask, channels: Channels
) -> None:
    from chatmem.demo.chat import history
    from chatmem.demo.models import Conversation

    post_id = header_id(demo_app)
    ask_rule(channels, "update-post")
    conversation = channels.conversation
    [card] = tool_results(
        channels.editor.say(
            conversation, f'/tool update-post {{"post_id": {post_id}, "title": "{TITLE}"}}'
        )
    )
    assert card["outcome"] == "held"
    request_id = card["result"]["error"]["request_id"]
    base = f"/chat/api/conversations/{conversation}/held/{card['id']}"
    state = channels.editor.client.get(base).json
    assert state["state"] == "waiting"
    # Run now before the grant: refused, nothing run.
    early = channels.editor.post(f"{base}/run", status=409)
    assert early["error"]["code"] == "conflict" and "waiting" in early["error"]["message"]
    allow(channels, request_id)
    assert channels.editor.client.get(base).json["state"] == "allowed"
    added = channels.editor.post(f"{base}/run", status=201)["messages"]
    [ran] = tool_results(added)
    assert ran["outcome"] == "ok" and ran["result"]["title"] == TITLE
    assert title(demo_app, post_id) == TITLE
    assert channels.editor.client.get(base).json["state"] == "used"
    # Used: a second Run now is refused.
    assert channels.editor.post(f"{base}/run", status=409)["error"]["code"] == "conflict"
    # The model's next turn carries the run and its result.
    with demo_app.app_context():
        turns = history(db.session.get(Conversation, conversation))
        assert f"request #{request_id} was allowed once" in str(turns[-3])
        assert TITLE in str(turns[-1])


def test_bad_card_requests_get_clear_errors(demo_app: Flask, channels: Channels) -> None:
    conversation = channels.conversation
    [card] = tool_results(channels.editor.say(conversation, '/tool list-posts {"limit": 1}'))
    base = f"/chat/api/conversations/{conversation}/held"
    assert channels.editor.client.get(f"{base}/{card['id']}").status_code == 409
    assert channels.editor.client.get(f"{base}/999999").status_code == 404
    # Someone else's conversation looks absent.
    admin_conversation = channels.admin.new_conversation()["id"]
    other = channels.editor.client.get(
        f"/chat/api/conversations/{admin_conversation}/held/{card['id']}"
    )
    assert other.status_code == 404
    # Without the CSRF token, Run now is refused.
    response = channels.editor.client.post(f"{base}/{card['id']}/run", json={})
    assert response.status_code in (400, 403)


def test_another_users_grant_does_not_run_for_the_editor(
    demo_app: Flask, channels: Channels
) -> None:
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    call = {"post_id": post_id, "title": TITLE}
    with demo_app.app_context():
        admin = db.session.scalars(select(User).filter_by(username="admin")).one()
        try:
            memory.call_tool("update-post", call, user=admin)
        except Exception as error:  # noqa: BLE001 - the hold
            request_id = error.details["request_id"]  # type: ignore[attr-defined]
    allow(channels, request_id)
    held_again = channels.python("update-post", call)["error"]
    assert held_again["code"] == "approval_required"
    assert held_again["request_id"] != request_id
    assert title(demo_app, post_id) == "Site header"


def test_every_channel_advertises_ask_as_a_severity(demo_app: Flask, channels: Channels) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    listed = channels.http.post(MCP, json=body, headers=channels.auth()).json["result"]["tools"]
    [remember] = [t for t in listed if t["name"] == "remember"]
    assert remember["inputSchema"]["properties"]["severity"]["enum"] == [
        "info",
        "warn",
        "ask",
        "block",
    ]
    rest_tools = channels.http.get(REST, headers=channels.auth()).json["tools"]
    [remember] = [t for t in rest_tools if t["name"] == "remember"]
    assert "ask" in remember["input_schema"]["properties"]["severity"]["enum"]
    # An agent's proposal with severity ask is accepted, and a typo names the field.
    assert (
        channels.rest("remember", {"type": "guardrail", "text": "Ask first", "severity": "ask"})[
            "status"
        ]
        == "pending"
    )
    wrong = channels.rest("remember", {"type": "guardrail", "text": "Ask", "severity": "asks"})
    assert wrong["error"]["field"] == "severity"
