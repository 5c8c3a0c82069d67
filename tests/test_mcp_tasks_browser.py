"""End to end: an MCP agent waits on its held call while a curator allows it in a browser.

The agent is the official MCP Python SDK client (mcp 2.3.0, the 2025-11-25
handshake), sending the SDK's own task requests (`GetTaskRequest`,
`GetTaskPayloadRequest`) through its session: the SDK has the types but no
helper that waits on a task, and it checks a `tools/call` answer as a
CallToolResult only, so the call that asks for a task is raw JSON-RPC. The curator is a
headless Chromium signed in to the Memory screen.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2
import pytest
from flask import Flask
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    GetTaskPayloadRequest,
    GetTaskPayloadRequestParams,
    GetTaskRequest,
    GetTaskRequestParams,
    GetTaskResult,
)
from playwright.sync_api import expect

from tests.hostapp import USERS
from tests.test_ask_browser import ask_before_the_header, screenshots
from tests.test_memory_screen_browser import page, seed  # noqa: F401

pytestmark = pytest.mark.browser


def agent(url: str, token: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx2.AsyncClient(headers=headers, timeout=20) as http:
            transport = streamable_http_client(f"{url}/chatmem/mcp", http_client=http)
            async with Client(transport, mode="legacy", read_timeout_seconds=40) as client:
                return await body(client)

    # Its own thread: Playwright's sync API keeps an event loop on this one.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, asyncio.wait_for(main(), timeout=90)).result()


def test_an_agent_waits_on_its_held_call_until_a_curator_allows_it(
    app: Flask,
    page: Any,  # noqa: F811
    live_server: str,
    make_token: Any,
    tmp_path: Path,
) -> None:
    seed(app, ask_before_the_header)
    token = make_token("editor")

    # The SDK checks a `tools/call` answer as a CallToolResult only, so the call
    # that asks for a task is sent as raw JSON-RPC; the rest is the SDK's own.
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "update-post",
            "arguments": {"post_id": 3, "title": "Sale!"},
            "task": {"ttl": 600_000},
        },
    }
    headers = {"Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    created = httpx2.post(f"{live_server}/chatmem/mcp", json=body, headers=headers, timeout=20)
    task_id = created.json()["result"]["task"]["taskId"]

    async def start(client: Client) -> tuple[str, str]:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.tasks is not None
        polled = await client.session.send_request(
            GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), GetTaskResult
        )
        return polled.status, polled.status_message or ""

    status, message = agent(live_server, token, start)
    assert status == "working"
    assert "Ask before changing the site header" in message

    page.goto("/chatmem/memory?tab=waiting")
    row = page.locator("li.cm-held")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("editor wants to run update-post on post 3")
    page.screenshot(path=str(screenshots(tmp_path) / "memory-task-waiting.png"), full_page=True)
    row.get_by_role("button", name="Allow once").click()
    expect(page.locator(".cm-flashes")).to_contain_text("Allowed request")

    async def finish(client: Client) -> tuple[str, Any]:
        polled = await client.session.send_request(
            GetTaskRequest(params=GetTaskRequestParams(task_id=task_id)), GetTaskResult
        )
        payload = await client.session.send_request(
            GetTaskPayloadRequest(params=GetTaskPayloadRequestParams(task_id=task_id)),
            CallToolResult,
        )
        return polled.status, payload

    status, payload = agent(live_server, token, finish)
    assert status == "completed"
    assert payload.is_error is False
    assert payload.structured_content is not None
    assert payload.structured_content["title"] == "Sale!"

    def title(memory: Any, db: Any) -> str:
        return str(memory.call_tool("get-post", {"post_id": 3}, user=USERS["editor"])["title"])

    assert seed(app, title) == "Sale!"
