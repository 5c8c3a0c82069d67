"""A held call as a task in 2026-07-28, where tasks are the io.modelcontextprotocol/tasks
extension (SEP-2663), over raw JSON-RPC (the official SDK, mcp 2.3.0, has no client side).

A request that declares the extension and meets an `ask` guardrail gets a flat
`CreateTaskResult`; `tasks/get` inlines the end once a curator decides; a request
that does not declare it gets `approval_required` as before, and -32021 for a
tasks method.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.demo.extensions import db
from chatmem.memory import tasks
from chatmem.memory.models import HeldCall, Task
from tests.channels import MCP, Channels, make_token
from tests.test_ask_channels import allow, ask_rule, header_id, title
from tests.test_mcp_tasks import NEW_TITLE, deny

MODERN = "2026-07-28"
EXTENSION = {"extensions": {"io.modelcontextprotocol/tasks": {}}}


@pytest.fixture
def channels(demo_app: Flask) -> Channels:
    return Channels(demo_app)


def rpc(
    channels: Channels,
    method: str,
    params: dict[str, Any],
    *,
    declared: bool = True,
    token: str | None = None,
    status: int = 200,
) -> dict[str, Any]:
    """One 2026-07-28 request, declaring the tasks extension or not; the response's body."""
    capabilities = EXTENSION if declared else {}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    body = {"jsonrpc": "2.0", "id": 9, "method": method, "params": {**params, "_meta": meta}}
    headers = {
        "Authorization": f"Bearer {token or channels.token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    if method == "tools/call":
        headers["Mcp-Name"] = params["name"]
    response = channels.http.post(MCP, json=body, headers=headers)
    assert response.status_code == status, response.get_data(as_text=True)
    return dict(response.json)


def update_header(channels: Channels, post_id: int, **kw: Any) -> dict[str, Any]:
    arguments = {"post_id": post_id, "title": NEW_TITLE}
    return rpc(channels, "tools/call", {"name": "update-post", "arguments": arguments}, **kw)


def held(demo_app: Flask, channels: Channels) -> tuple[str, int, int]:
    """The header's update held by an `ask` rule, as a task: (task id, request id, post id)."""
    post_id = header_id(demo_app)
    rule = ask_rule(channels, f"post_id:{post_id}")
    created = update_header(channels, post_id)["result"]
    assert created["resultType"] == "task"
    assert created["status"] == "working"
    assert f"guardrail #{rule} (Ask before the header)" in created["statusMessage"]
    # The extension's names, flat: no v1 keys, no nested task, no end yet.
    assert created["ttlMs"] == tasks.TTL_DEFAULT_MS
    assert created["pollIntervalMs"] == tasks.POLL_MS
    assert not {"task", "ttl", "pollInterval", "result", "error"} & set(created)
    with demo_app.app_context():
        request_id = db.session.scalars(select(HeldCall.id)).one()
    return created["taskId"], request_id, post_id


def get(channels: Channels, task_id: str, **kw: Any) -> dict[str, Any]:
    return rpc(channels, "tasks/get", {"taskId": task_id}, **kw)


def test_discover_advertises_the_extension(channels: Channels) -> None:
    found = rpc(channels, "server/discover", {})["result"]["capabilities"]
    assert found["extensions"] == {"io.modelcontextprotocol/tasks": {}}
    assert "tasks" not in found  # the 2025-11-25 slot is not used


def test_a_held_call_becomes_a_task_that_runs_once_when_allowed(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held(demo_app, channels)
    working = get(channels, task_id)["result"]
    assert working["status"] == "working" and working["resultType"] == "complete"
    assert "result" not in working and "error" not in working
    assert title(demo_app, post_id) == "Site header"
    allow(channels, request_id)
    done = get(channels, task_id)["result"]
    assert done["status"] == "completed" and "pollIntervalMs" not in done
    assert done["result"]["isError"] is False
    assert done["result"]["structuredContent"]["title"] == NEW_TITLE
    assert done["result"]["content"][0]["type"] == "text"
    assert title(demo_app, post_id) == NEW_TITLE
    assert get(channels, task_id)["result"]["status"] == "completed"  # not run again
    with demo_app.app_context():
        assert db.session.get(HeldCall, request_id).state == "used"


def test_a_denied_call_fails_with_the_refusal(demo_app: Flask, channels: Channels) -> None:
    task_id, request_id, post_id = held(demo_app, channels)
    deny(channels, request_id, note="Not before the launch")
    failed = get(channels, task_id)["result"]
    assert failed["status"] == "failed" and "result" not in failed
    assert failed["error"]["code"] == -32000
    assert failed["error"]["data"]["code"] == "blocked_by_memory"
    assert "Not before the launch" in failed["error"]["message"]
    assert title(demo_app, post_id) == "Site header"


def test_cancel_acks_withdraws_the_request_and_is_idempotent(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, _ = held(demo_app, channels)
    assert rpc(channels, "tasks/cancel", {"taskId": task_id})["result"] == {
        "resultType": "complete"
    }
    assert get(channels, task_id)["result"]["status"] == "cancelled"
    with demo_app.app_context():
        assert db.session.get(HeldCall, request_id).state == "cancelled"
    # Cancelling an ended task is the same ack, and changes nothing.
    assert rpc(channels, "tasks/cancel", {"taskId": task_id})["result"] == {
        "resultType": "complete"
    }
    assert rpc(channels, "tasks/update", {"taskId": task_id, "inputResponses": {}})["result"] == {
        "resultType": "complete"
    }


def test_a_request_without_the_extension_gets_approval_required_and_no_tasks(
    demo_app: Flask, channels: Channels
) -> None:
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    answer = update_header(channels, post_id, declared=False)["result"]
    assert answer["isError"] is True and "taskId" not in answer
    assert answer["structuredContent"]["error"]["code"] == "approval_required"
    # The old `task` param promotes nothing either.
    arguments = {"post_id": post_id, "title": NEW_TITLE}
    old = {"name": "update-post", "arguments": arguments, "task": {"ttl": 60_000}}
    assert "taskId" not in rpc(channels, "tools/call", old, declared=False)["result"]
    for method in ("tasks/get", "tasks/cancel", "tasks/update"):
        refused = rpc(channels, method, {"taskId": "x"}, declared=False, status=400)["error"]
        assert refused["code"] == -32021, method
        assert refused["data"] == {"requiredCapabilities": EXTENSION}
    with demo_app.app_context():
        assert db.session.scalars(select(Task)).all() == []


def test_a_call_that_is_not_held_answers_as_always(demo_app: Flask, channels: Channels) -> None:
    answer = rpc(channels, "tools/call", {"name": "recall", "arguments": {}})["result"]
    assert answer["resultType"] == "complete" and "taskId" not in answer


def test_removed_methods_unknown_and_other_users_task_ids(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, _, _ = held(demo_app, channels)
    for method in ("tasks/result", "tasks/list"):
        refused = rpc(channels, method, {"taskId": task_id}, status=404)["error"]
        assert refused["code"] == -32601, method
    assert get(channels, "no-such-task", status=400)["error"]["code"] == -32602
    other = make_token(demo_app, "admin")
    assert get(channels, task_id, token=other, status=400)["error"]["code"] == -32602
    refused = rpc(channels, "tasks/cancel", {"taskId": task_id}, token=other, status=400)
    assert refused["error"]["code"] == -32602
    assert get(channels, task_id)["result"]["status"] == "working"  # nothing changed
