"""Memory as MCP resources and a prompt, through the official MCP Python client
in both eras (`auto`: 2026-07-28, stateless; `legacy`: the initialize
handshake): the block exactly as injected, approved entries only, the
start-task prompt, and what a caller without recall's capability gets.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from chatmem.memory import guidance, switches
from tests.test_mcp_client import in_app, run_client

pytestmark = pytest.mark.slow
MODES = ["auto", "legacy"]


def seed(app: Any) -> dict[str, int]:
    def work(db: Any) -> dict[str, int]:
        fact = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Checkout is page 42."}, actor_id="1"
        )
        off = guidance.admin_add(
            db.session(), {"type": "fact", "text": "The shop is closed."}, actor_id="1"
        )
        guidance.set_enabled(db.session(), off.id, False, actor_id="1")
        memory = app.extensions["test_host"]["memory"]
        proposed = memory.call_tool(
            "remember",
            {"type": "fact", "text": "Blog is /news."},
            user=app.extensions["test_host"]["users"]["editor"],
        )
        return {"fact": fact.id, "off": off.id, "pending": int(proposed["id"])}

    return dict(in_app(app, work))


@pytest.mark.parametrize("mode", MODES)
def test_the_block_entries_and_prompt_as_resources(
    app: Any, live_server: str, make_token: Any, mode: str
) -> None:
    ids = seed(app)
    block = in_app(app, lambda db: app.extensions["test_host"]["memory"].system_context())
    assert "Checkout is page 42." in block
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        seen["caps"] = client.server_capabilities
        seen["instructions"] = client.instructions
        seen["list"] = await client.list_resources()
        seen["templates"] = await client.list_resource_templates()
        seen["block"] = await client.read_resource("chatmem://memory/block")
        seen["fact"] = await client.read_resource(f"chatmem://guidance/{ids['fact']}")
        for name in ("off", "pending"):
            try:
                await client.read_resource(f"chatmem://guidance/{ids[name]}")
            except MCPError as error:
                seen[name] = error.error.code
        seen["prompts"] = await client.list_prompts()
        seen["prompt"] = await client.get_prompt("start-task", {"task": "Rename the checkout page"})
        try:
            await client.get_prompt("do-anything", {})
        except MCPError as error:
            seen["unknown prompt"] = error.error.code

    run_client(live_server, make_token("editor"), mode, session)

    assert seen["caps"].resources is not None and seen["caps"].prompts is not None
    assert [r.uri for r in seen["list"].resources] == ["chatmem://memory/block"]
    assert [t.uri_template for t in seen["templates"].resource_templates] == [
        "chatmem://guidance/{id}"
    ]
    [contents] = seen["block"].contents
    assert contents.text == block == seen["instructions"], "exactly what a conversation gets"
    assert json.loads(seen["fact"].contents[0].text)["text"] == "Checkout is page 42."
    # not found: MCP's -32002 in the handshake era, Invalid Params from 2026-07-28 (SEP-2164)
    not_found = -32602 if mode == "auto" else -32002
    assert seen["off"] == seen["pending"] == not_found, "approved, enabled entries only"
    assert [p.name for p in seen["prompts"].prompts] == ["start-task"]
    [message] = seen["prompt"].messages
    assert message.content.text.startswith(block)
    assert "call the `recall` tool" in message.content.text
    assert message.content.text.endswith("Task: Rename the checkout page")
    assert seen["unknown prompt"] == -32602
    if mode == "auto":  # how long to keep them: tests/test_mcp_subscriptions.py
        assert (seen["list"].ttl_ms, seen["list"].cache_scope) == (3_600_000, "public")
        assert seen["block"].ttl_ms <= 5000 and seen["block"].cache_scope == "private"


@pytest.mark.parametrize("mode", MODES)
def test_reading_needs_recalls_capability_and_memory_on(
    app: Any, live_server: str, make_token: Any, mode: str
) -> None:
    ids = seed(app)
    seen: dict[str, Any] = {}

    async def viewer(client: Client) -> None:
        seen["list"] = await client.list_resources()
        for uri in ("chatmem://memory/block", f"chatmem://guidance/{ids['fact']}"):
            try:
                await client.read_resource(uri)
            except MCPError as error:
                seen[uri] = (error.error.code, (error.error.data or {}).get("code"))
        try:
            await client.get_prompt("start-task", {})
        except MCPError as error:
            seen["prompt"] = (error.error.data or {}).get("code")

    run_client(live_server, make_token("viewer"), mode, viewer)
    assert len(seen["list"].resources) == 1, "the list is the same for everyone"
    assert seen["chatmem://memory/block"] == (-32000, "forbidden")
    assert seen[f"chatmem://guidance/{ids['fact']}"] == (-32000, "forbidden")
    assert seen["prompt"] == "forbidden"

    in_app(
        app, lambda db: switches.set_setting(db.session(), "memory_enabled", False, actor_id="1")
    )

    async def editor(client: Client) -> None:
        try:
            await client.read_resource("chatmem://memory/block")
        except MCPError as error:
            seen["off"] = (error.error.data or {}).get("code")

    run_client(live_server, make_token("editor"), mode, editor)
    assert seen["off"] == "memory_disabled"


@pytest.mark.parametrize(
    "uri",
    [
        "chatmem://guidance/0",
        "chatmem://guidance/-1",
        "chatmem://guidance/99999999999999999999999",
        "chatmem://guidance/1x",
        "chatmem://guidance/",
        "file:///etc/passwd",
        "chatmem://memory/block/../../x",
    ],
)
def test_a_bad_uri_is_not_found(app: Any, live_server: str, make_token: Any, uri: str) -> None:
    seed(app)
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        try:
            await client.read_resource(uri)
        except MCPError as error:
            seen["code"] = error.error.code

    run_client(live_server, make_token("editor"), "auto", session)
    assert seen["code"] == -32602
