"""A held call as an MCP task (2025-11-25) the client waits on, over raw JSON-RPC.

The official Python SDK (mcp 2.3.0) has no client side of tasks, so these
tests speak JSON-RPC to the demo's endpoint as a client would. A call an
`ask` guardrail holds answers a `working` task naming the guardrail and the
curator's queue; the curator's Allow once on the Memory screen lets the
task's next poll run the call, once, for the user who made it; denial,
cancellation, another user's task id and malformed params each get their
answer and change nothing else.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, select

from chatmem.demo.extensions import db
from chatmem.demo.models import User
from chatmem.memory import tasks
from chatmem.memory.models import Guidance, GuidanceEvent, HeldCall, LedgerEntry, Task, utcnow
from tests.channels import MCP, SCREEN, Channels, make_token
from tests.test_ask_channels import allow, ask_rule, header_id, title

VERSION = "2025-11-25"
NEW_TITLE = "Sale! (task)"


@pytest.fixture
def channels(demo_app: Flask) -> Channels:
    return Channels(demo_app)


def rpc(
    channels: Channels,
    method: str,
    params: dict[str, Any],
    *,
    version: str = VERSION,
    token: str | None = None,
) -> dict[str, Any]:
    """One JSON-RPC request on the token's session; the response's body."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    headers = {"Authorization": f"Bearer {token or channels.token}"}
    headers["MCP-Protocol-Version"] = version
    response = channels.http.post(MCP, json=body, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return dict(response.json)


def call(channels: Channels, arguments: dict[str, Any], **task: Any) -> dict[str, Any]:
    params = {"name": "update-post", "arguments": arguments, "task": task}
    return rpc(channels, "tools/call", params)


def held_task(demo_app: Flask, channels: Channels) -> tuple[str, int, int]:
    """The header post's update, held by an `ask` rule, as a task: (task id, request, post)."""
    post_id = header_id(demo_app)
    rule = ask_rule(channels, f"post_id:{post_id}")
    answer = call(channels, {"post_id": post_id, "title": NEW_TITLE}, ttl=60_000)
    task = answer["result"]["task"]
    assert task["status"] == "working"
    assert f"guardrail #{rule} (Ask before the header)" in task["statusMessage"]
    assert "Waiting calls list" in task["statusMessage"]
    assert task["ttl"] == 60_000 and task["pollInterval"] == tasks.POLL_MS
    with demo_app.app_context():
        request_id = db.session.scalars(select(HeldCall.id)).one()
    return task["taskId"], request_id, post_id


def deny(channels: Channels, request_id: int, note: str = "") -> None:
    """A curator's Deny on the Memory screen."""
    response = channels.admin.client.post(
        f"{SCREEN}/held/{request_id}/deny",
        data={"csrf_token": channels.admin.csrf, "note": note},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def get(channels: Channels, task_id: str, **kw: Any) -> dict[str, Any]:
    return rpc(channels, "tasks/get", {"taskId": task_id}, **kw)


def outcomes(app: Flask) -> list[str]:
    with app.app_context():
        rows = db.session.scalars(select(LedgerEntry.outcome).order_by(LedgerEntry.id)).all()
        return [row for row in rows if row != "ok"]


def test_the_handshake_offers_tasks_and_each_tool_may_be_waited_on(channels: Channels) -> None:
    listed = rpc(channels, "tools/list", {})["result"]["tools"]
    assert {t["execution"]["taskSupport"] for t in listed} == {"optional"}
    older = rpc(channels, "tools/list", {}, version="2025-06-18")["result"]["tools"]
    assert all("execution" not in t for t in older)
    refused = rpc(channels, "tasks/list", {}, version="2025-06-18")
    assert refused["error"]["code"] == -32601


def test_a_held_call_waits_then_runs_once_when_a_curator_allows_it(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    assert get(channels, task_id)["result"]["status"] == "working"
    assert title(demo_app, post_id) == "Site header"
    allow(channels, request_id)
    polled = get(channels, task_id)["result"]
    assert polled["status"] == "completed" and "pollInterval" not in polled
    assert title(demo_app, post_id) == NEW_TITLE
    result = rpc(channels, "tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["title"] == NEW_TITLE
    assert result["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": task_id}}
    # Polled again, the task is not run again; the grant was used once.
    assert get(channels, task_id)["result"]["status"] == "completed"
    assert outcomes(demo_app)[-3:] == ["held", "allowed", "granted-run"]
    with demo_app.app_context():
        assert db.session.get(HeldCall, request_id).state == "used"


def test_the_same_call_held_again_is_the_same_task(demo_app: Flask, channels: Channels) -> None:
    task_id, _request_id, post_id = held_task(demo_app, channels)
    again = call(channels, {"post_id": post_id, "title": NEW_TITLE})["result"]["task"]
    assert again["taskId"] == task_id


def test_a_denied_call_fails_with_the_refusal_the_call_would_get(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    deny(channels, request_id, "not today")
    assert get(channels, task_id)["result"]["status"] == "failed"
    result = rpc(channels, "tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert error["code"] == "blocked_by_memory" and "not today" in error["message"]
    # Exactly what the call itself now gets.
    plain = rpc(
        channels,
        "tools/call",
        {"name": "update-post", "arguments": {"post_id": post_id, "title": NEW_TITLE}},
    )["result"]
    assert result["structuredContent"] == plain["structuredContent"]
    assert title(demo_app, post_id) == "Site header"


def test_a_denial_whose_guardrail_was_since_removed_still_fails_the_task(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, _post_id = held_task(demo_app, channels)
    deny(channels, request_id)
    with demo_app.app_context():
        rule = db.session.get(HeldCall, request_id).guidance_id
        db.session.execute(delete(GuidanceEvent).where(GuidanceEvent.guidance_id == rule))
        db.session.execute(delete(Guidance).where(Guidance.id == rule))
        db.session.commit()
    result = rpc(channels, "tasks/result", {"taskId": task_id})["result"]
    error = result["structuredContent"]["error"]
    assert {k: v for k, v in error.items() if k != "message"} == {
        "code": "blocked_by_memory",
        "guidance_id": rule,
        "title": "a guardrail since removed",
        "target": "",
        "request_id": request_id,
        "state": "denied",
    }
    assert f"guardrail #{rule} (a guardrail since removed)" in error["message"]


def test_cancelling_withdraws_the_request_from_the_curators_queue(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    cancelled = rpc(channels, "tasks/cancel", {"taskId": task_id})["result"]
    assert cancelled["status"] == "cancelled"
    assert cancelled["statusMessage"] == "The task was cancelled by request."
    with demo_app.app_context():
        assert db.session.get(HeldCall, request_id).state == "cancelled"
        editor = str(db.session.scalars(select(User.id).filter_by(username="editor")).one())
        withdrawn = db.session.scalars(
            select(GuidanceEvent.actor_id).where(GuidanceEvent.action == "call_cancelled")
        ).all()
        assert withdrawn == [editor]
    # The curator's late click finds nothing to decide; nothing runs.
    response = channels.admin.client.post(
        f"{SCREEN}/held/{request_id}/allow",
        data={"csrf_token": channels.admin.csrf},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 409
    assert get(channels, task_id)["result"]["status"] == "cancelled"
    again = rpc(channels, "tasks/cancel", {"taskId": task_id})
    assert again["error"]["code"] == -32602
    assert title(demo_app, post_id) == "Site header"
    assert outcomes(demo_app)[-2:] == ["held", "cancelled"]


def test_a_call_that_is_not_held_gets_a_finished_task(channels: Channels) -> None:
    answer = rpc(
        channels,
        "tools/call",
        {"name": "recall", "arguments": {"limit": 1}, "task": {}},
    )["result"]["task"]
    assert answer["status"] == "completed" and answer["ttl"] == tasks.TTL_DEFAULT_MS
    result = rpc(channels, "tasks/result", {"taskId": answer["taskId"]})["result"]
    assert result["isError"] is False and "guidance" in result["structuredContent"]


def test_a_refused_call_asked_as_a_task_gets_a_failed_task(channels: Channels) -> None:
    answer = call(channels, {"post_id": 999_999, "title": "Nobody"})["result"]["task"]
    assert answer["status"] == "failed" and "pollInterval" not in answer
    result = rpc(channels, "tasks/result", {"taskId": answer["taskId"]})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "not_found"


def test_a_task_is_its_callers_alone(demo_app: Flask, channels: Channels) -> None:
    task_id, request_id, _post_id = held_task(demo_app, channels)
    other = make_token(demo_app, "admin")
    for method in ("tasks/get", "tasks/result", "tasks/cancel"):
        refused = rpc(channels, method, {"taskId": task_id}, token=other)["error"]
        assert refused == {
            "code": -32602,
            "message": "Task not found: it is unknown, not yours, or past its ttl.",
        }, method
    assert rpc(channels, "tasks/list", {}, token=other)["result"]["tasks"] == []
    mine = rpc(channels, "tasks/list", {})["result"]["tasks"]
    assert [t["taskId"] for t in mine] == [task_id]
    with demo_app.app_context():
        assert db.session.get(HeldCall, request_id).state == "waiting"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tasks/get", {"taskId": "no-such-task"}),
        ("tasks/get", {"taskId": 7}),
        ("tasks/get", {}),
        ("tasks/result", {"taskId": "x" * 500}),
        ("tasks/cancel", {"taskId": ""}),
        ("tasks/list", {"cursor": "no-such-task"}),
        ("tasks/list", {"cursor": 3}),
    ],
)
def test_bad_task_requests_are_invalid_params(
    channels: Channels, method: str, params: dict[str, Any]
) -> None:
    error = rpc(channels, method, params)["error"]
    assert error["code"] == -32602
    if params.get("cursor") == "no-such-task":
        assert error["message"] == "Invalid cursor: it names none of your tasks."
    if params.get("taskId") == "x" * 500:
        assert error["message"] == "params.taskId must be a task id."


@pytest.mark.parametrize("task", [{"ttl": -1}, {"ttl": "soon"}, {"ttl": True}, [], "yes"])
def test_a_malformed_task_changes_nothing(demo_app: Flask, channels: Channels, task: Any) -> None:
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    params = {"name": "update-post", "arguments": {"post_id": post_id, "title": "x"}, "task": task}
    assert rpc(channels, "tools/call", params)["error"]["code"] == -32602
    with demo_app.app_context():
        assert db.session.scalars(select(HeldCall.id)).all() == []
        assert db.session.scalars(select(Task.id)).all() == []


def test_two_polls_at_once_run_the_allowed_call_once(demo_app: Flask, channels: Channels) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    allow(channels, request_id)
    start = threading.Barrier(2)
    seen: list[str] = []

    def poll() -> None:
        client = demo_app.test_client()
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": task_id}}
        headers = {"Authorization": f"Bearer {channels.token}", "MCP-Protocol-Version": VERSION}
        start.wait(10)
        seen.append(client.post(MCP, json=body, headers=headers).json["result"]["status"])

    threads = [threading.Thread(target=poll) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert "completed" in seen or get(channels, task_id)["result"]["status"] == "completed"
    assert outcomes(demo_app).count("granted-run") == 1
    assert title(demo_app, post_id) == NEW_TITLE
    with demo_app.app_context():  # the loser never made the call again (no new request)
        assert db.session.scalars(select(HeldCall.id)).all() == [request_id]
        assert db.session.get(Task, task_id).run_at is not None


def test_one_tasks_run_claims_that_task_alone(demo_app: Flask, channels: Channels) -> None:
    ask_rule(channels, "update-post")
    posts = [header_id(demo_app), 1]
    made = [call(channels, {"post_id": p, "title": f"T{p}"})["result"]["task"] for p in posts]
    with demo_app.app_context():
        requests = db.session.scalars(select(HeldCall.id).order_by(HeldCall.id)).all()
    allow(channels, requests[0])
    assert get(channels, made[0]["taskId"])["result"]["status"] == "completed"
    with demo_app.app_context():
        assert db.session.get(Task, made[1]["taskId"]).run_at is None
    allow(channels, requests[1])
    assert get(channels, made[1]["taskId"])["result"]["status"] == "completed"
    assert title(demo_app, 1) == "T1"


def test_a_task_past_its_ttl_is_gone(demo_app: Flask, channels: Channels) -> None:
    task_id, _request_id, _post_id = held_task(demo_app, channels)
    with demo_app.app_context():
        row = db.session.get(Task, task_id)
        ends = row.created_at + timedelta(milliseconds=row.ttl_ms)
        assert tasks.expire_due(db.session(), now=ends - timedelta(microseconds=1)) == 0
        assert tasks.expire_due(db.session(), now=ends) == 1
    assert get(channels, task_id)["error"]["code"] == -32602


def test_an_older_session_keeps_approval_required(demo_app: Flask, channels: Channels) -> None:
    """Tasks came with 2025-11-25: before it, a held call answers `approval_required`."""
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    answer = rpc(
        channels,
        "tools/call",
        {"name": "update-post", "arguments": {"post_id": post_id, "title": "x"}, "task": {}},
        version="2025-06-18",
    )["result"]
    assert answer["structuredContent"]["error"]["code"] == "approval_required"


def test_a_call_made_outside_the_task_uses_the_approval_and_the_task_says_so(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    allow(channels, request_id)
    plain = rpc(
        channels,
        "tools/call",
        {"name": "update-post", "arguments": {"post_id": post_id, "title": NEW_TITLE}},
    )["result"]
    assert plain["isError"] is False
    polled = get(channels, task_id)["result"]
    assert (polled["status"], polled["statusMessage"]) == ("failed", tasks.USED_ELSEWHERE)
    result = rpc(channels, "tasks/result", {"taskId": task_id})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"] == {
        "code": "task_failed",
        "message": tasks.USED_ELSEWHERE,
    }
    assert outcomes(demo_app).count("granted-run") == 1


def test_a_call_whose_arguments_were_not_kept_is_not_run_by_the_task(
    demo_app: Flask, channels: Channels
) -> None:
    """A secret in the call: the request keeps it redacted, so the task cannot make the call."""
    post_id = header_id(demo_app)
    ask_rule(channels, f"post_id:{post_id}")
    secret = "ghp_" + "a1B2c3D4e5" * 4
    arguments = {"post_id": post_id, "title": "Keys", "content": f"token {secret}"}
    task = call(channels, arguments)["result"]["task"]
    with demo_app.app_context():
        request = db.session.scalars(select(HeldCall)).one()
        assert secret not in str(request.arguments)
    allow(channels, request.id)
    polled = get(channels, task["taskId"])["result"]
    assert polled["status"] == "failed"
    with demo_app.app_context():
        until = db.session.get(HeldCall, request.id).expires_at
    assert polled["statusMessage"] == (
        "Allowed, but chatmem does not keep this call's arguments as they were sent "
        "(a secret, a write-only field or a long value): make exactly the same call "
        f"again before {until:%Y-%m-%d %H:%M} UTC to run it."
    )
    assert title(demo_app, post_id) == "Site header"
    with demo_app.app_context():
        assert db.session.get(HeldCall, request.id).state == "allowed"  # the grant is still there


def test_a_run_that_fails_ends_the_task_failed_with_the_tools_error(
    demo_app: Flask, channels: Channels
) -> None:
    ask_rule(channels, "update-post")
    task = call(channels, {"post_id": 999_999, "title": "Nobody"})["result"]["task"]
    with demo_app.app_context():
        request_id = db.session.scalars(select(HeldCall.id)).one()
    allow(channels, request_id)
    polled = get(channels, task["taskId"])["result"]
    assert (polled["status"], polled["statusMessage"]) == ("failed", tasks.RAN_AND_FAILED)
    result = rpc(channels, "tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "not_found"


def test_a_held_call_that_is_gone_or_a_run_cut_off_fails_the_task(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, _post_id = held_task(demo_app, channels)
    with demo_app.app_context():
        db.session.delete(db.session.get(HeldCall, request_id))
        db.session.commit()
    polled = get(channels, task_id)["result"]
    assert (polled["status"], polled["statusMessage"]) == ("failed", tasks.GONE)

    other = rpc(channels, "tools/call", {"name": "recall", "arguments": {}, "task": {}})["result"][
        "task"
    ]["taskId"]
    with demo_app.app_context():  # a working task whose run began past the lease
        row = db.session.get(Task, other)
        row.status, row.held_call_id = "working", request_id + 1
        row.run_at = utcnow() - tasks.RUN_LEASE
        db.session.commit()
    polled = get(channels, other)["result"]
    assert (polled["status"], polled["statusMessage"]) == ("failed", tasks.CUT_OFF)


def test_tasks_result_waits_a_bounded_time_for_a_task_still_working(
    demo_app: Flask, channels: Channels, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.http.mcp import tasks as mcp_tasks

    monkeypatch.setattr(mcp_tasks, "RESULT_WAIT", 0.2)
    monkeypatch.setattr(mcp_tasks, "RESULT_POLL", 0.05)
    task_id, _request_id, _post_id = held_task(demo_app, channels)
    answer = rpc(channels, "tasks/result", {"taskId": task_id})["error"]
    assert answer["code"] == -32000
    assert answer["data"] == {"code": "task_working", "taskId": task_id}
    assert "Waiting for a curator" in answer["message"]


def test_tasks_are_listed_newest_first_a_page_at_a_time(channels: Channels) -> None:
    from chatmem.http.mcp.tasks import LIST_PAGE

    made = [
        rpc(channels, "tools/call", {"name": "recall", "arguments": {}, "task": {}})["result"][
            "task"
        ]["taskId"]
        for _ in range(LIST_PAGE + 1)
    ]
    first = rpc(channels, "tasks/list", {})["result"]
    assert [t["taskId"] for t in first["tasks"]] == made[::-1][:LIST_PAGE]
    second = rpc(channels, "tasks/list", {"cursor": first["nextCursor"]})["result"]
    assert [t["taskId"] for t in second["tasks"]] == [made[0]]
    assert "nextCursor" not in second
    shown = first["tasks"][0]
    assert shown["createdAt"].endswith("Z") and shown["lastUpdatedAt"].endswith("Z")


def test_a_held_call_asked_again_after_its_task_expired_gets_a_new_task(
    demo_app: Flask, channels: Channels
) -> None:
    task_id, request_id, post_id = held_task(demo_app, channels)
    with demo_app.app_context():
        row = db.session.get(Task, task_id)
        row.created_at = utcnow() - timedelta(milliseconds=row.ttl_ms)
        db.session.commit()
    again = call(channels, {"post_id": post_id, "title": NEW_TITLE})["result"]["task"]
    assert again["taskId"] != task_id and again["status"] == "working"
    assert get(channels, task_id)["error"]["code"] == -32602
    with demo_app.app_context():
        assert db.session.scalars(select(Task.held_call_id)).all() == [request_id]
