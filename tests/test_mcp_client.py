"""The official MCP Python SDK client (mcp 2.3.0) against a live chatmem server.

`mode="auto"` probes `server/discover` at 2026-07-28 and so runs the
stateless era; `mode="legacy"` runs the `initialize` handshake with
`Mcp-Session-Id`. Everything a client author would do is done in both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from chatmem.memory import guidance
from chatmem.memory.models import Guidance, Session

pytestmark = pytest.mark.slow


def run_client(url: str, token: str, mode: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=20) as http:
            transport = streamable_http_client(f"{url}/chatmem/mcp", http_client=http)
            async with Client(transport, mode=mode, read_timeout_seconds=20) as client:
                return await body(client)

    return asyncio.run(asyncio.wait_for(main(), timeout=60))


def in_app(app: Any, func: Callable[[Any], Any]) -> Any:
    with app.app_context():
        return func(app.extensions["test_host"]["db"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_real_mcp_client_uses_memory_and_host_tools(
    app: Any, live_server: str, make_token: Any, mode: str
) -> None:
    admin_id = "1"
    in_app(
        app,
        lambda db: guidance.admin_add(
            db.session(), {"type": "fact", "text": "Checkout is page 42"}, actor_id=admin_id
        ),
    )
    in_app(
        app,
        lambda db: guidance.admin_add(
            db.session(),
            {
                "type": "guardrail",
                "text": "Never edit the header template",
                "target": "post_type:header_footer",
                "severity": "block",
            },
            actor_id=admin_id,
        ),
    )
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        seen["version"] = client.protocol_version
        seen["instructions"] = client.instructions
        listed = await client.list_tools()
        seen["tools"] = {tool.name: tool for tool in listed.tools}

        proposed = await client.call_tool("remember", {"type": "convention", "text": "Use UK"})
        seen["remember"] = (proposed.is_error, proposed.structured_content)

        recalled = await client.call_tool("recall", {"topic": "checkout"})
        seen["recall"] = recalled.structured_content

        edited = await client.call_tool("update-post", {"post_id": 7, "title": "Hi there"})
        seen["edited"] = (edited.is_error, edited.structured_content)

        blocked = await client.call_tool("update-post", {"post_id": "3", "title": "Pwned"})
        seen["blocked"] = (blocked.is_error, blocked.structured_content, blocked.content)

        invalid = await client.call_tool("remember", {"type": "rumour", "text": "x"})
        seen["invalid"] = (invalid.is_error, invalid.structured_content)

        summary = await client.call_tool(
            "save-session-summary", {"summary": "Renamed post 7; header edit was refused."}
        )
        seen["summary"] = summary.structured_content

        with pytest.raises(MCPError) as caught:
            await client.call_tool("no-such-tool", {})
        seen["unknown"] = caught.value.error.code

    run_client(live_server, make_token("editor"), mode, session)

    assert seen["version"] == ("2026-07-28" if mode == "auto" else "2025-11-25")
    assert seen["instructions"].startswith("## Project memory")
    assert "Checkout is page 42" in seen["instructions"]

    tools = seen["tools"]
    assert list(tools)[:3] == ["recall", "remember", "save-session-summary"]
    assert {"get-post", "update-post", "create-user"} <= set(tools)
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["recall"].annotations.open_world_hint is False
    assert tools["remember"].annotations.read_only_hint is False
    assert tools["remember"].output_schema["required"] == ["id", "status", "flags"]
    assert tools["update-post"].input_schema["required"] == ["post_id", "title"]

    assert seen["remember"][0] is False
    assert seen["remember"][1]["status"] == "pending"
    texts = [g["text"] for g in seen["recall"]["guidance"]]
    assert texts == ["Checkout is page 42"]  # the pending proposal is not recalled

    assert seen["edited"] == (False, {"id": 7, "title": "Hi there"})
    is_error, structured, content = seen["blocked"]
    assert is_error is True
    assert structured["error"]["code"] == "blocked_by_memory"
    assert "Never edit the header template" in structured["error"]["message"]
    assert "blocked_by_memory" in content[0].text
    assert seen["invalid"][0] is True
    assert seen["invalid"][1]["error"]["code"] == "invalid_params"
    assert seen["invalid"][1]["error"]["field"] == "type"
    assert seen["summary"] == {"recorded": True, "proposed": 0}
    assert seen["unknown"] == -32602

    def check(db: Any) -> None:
        post = db.session.get(app.extensions["test_host"]["Post"], 3)
        assert post.title == "Site header"  # the blocked call did not run
        recorded = db.session.query(Session).filter(Session.summary.is_not(None)).one()
        assert recorded.channel == "mcp"
        assert recorded.summary == "Renamed post 7; header edit was refused."
        assert "update-post" in recorded.digest
        assert "blocked" in recorded.digest
        assert recorded.change_count >= 2
        proposal = db.session.query(Guidance).filter_by(status="pending").one()
        assert proposal.session_id == recorded.id  # remember ran in the same session

    in_app(app, check)
    if mode == "legacy":
        # The client sent DELETE on exit: the session is over.
        in_app(app, lambda db: _assert_ended(db))


def _assert_ended(db: Any) -> None:
    session = db.session.query(Session).filter_by(channel="mcp").one()
    assert session.ended_at is not None


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_user_without_edit_posts_sees_no_tools_and_is_refused(
    app: Any, live_server: str, make_token: Any, mode: str
) -> None:
    async def session(client: Client) -> Any:
        listed = await client.list_tools()
        refused = await client.call_tool("recall", {})
        return [t.name for t in listed.tools], refused

    names, refused = run_client(live_server, make_token("viewer"), mode, session)
    assert names == []
    assert refused.is_error is True
    assert refused.structured_content["error"]["code"] == "forbidden"


def test_a_bad_token_fails_the_connect(live_server: str) -> None:
    async def session(client: Client) -> None:  # pragma: no cover - never connects
        await client.list_tools()

    with pytest.raises(BaseExceptionGroup) as caught:
        run_client(live_server, "cm_not-a-real-token", "legacy", session)
    matched, _rest = caught.value.split(MCPError)
    assert matched is not None, caught.value
    error = next(_leaves(matched))
    assert error.error.data["code"] == "unauthorized"
    assert "not valid" in error.error.message


def _leaves(group: BaseExceptionGroup) -> Any:
    for inner in group.exceptions:
        if isinstance(inner, BaseExceptionGroup):
            yield from _leaves(inner)
        else:
            yield inner
