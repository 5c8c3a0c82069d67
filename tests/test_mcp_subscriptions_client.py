"""The official MCP Python SDK (mcp 2.3.0) is told of memory changes, in both eras.

The subscriber talks to one worker; a curator approves a proposal on
another (a second app on the same database, as a second process would be).
`legacy` subscribes with `resources/subscribe` and is told on the session's
GET stream; `auto` (2026-07-28) opens `subscriptions/listen`.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from flask import Flask
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from chatmem.http.mcp import subscriptions
from chatmem.memory import guidance
from tests.conftest import dispose
from tests.hostapp import create_host_app

pytestmark = pytest.mark.slow

BLOCK = "chatmem://memory/block"
TEXT = "Checkout moved to page 44"


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_host_app(
        database_url, CHATMEM_MCP_NOTIFY_SECONDS=0.1, CHATMEM_MCP_LISTEN_SECONDS=20
    )
    yield app
    dispose(app)


def propose(app: Flask) -> int:
    with app.app_context():
        db = app.extensions["test_host"]["db"].session()
        entry, _ = guidance.propose(
            db, {"type": "fact", "text": TEXT}, session_id=None, actor_id="2"
        )
        db.commit()
        return entry.id


def approve_on(worker: Flask, entry_id: int) -> None:
    with worker.app_context():
        db = worker.extensions["test_host"]["db"].session()
        guidance.approve(db, entry_id, actor_id="1")


def connect(url: str, token: str, mode: str, **options: Any) -> Any:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=20)
    transport = streamable_http_client(f"{url}/chatmem/mcp", http_client=http)
    return http, Client(transport, mode=mode, read_timeout_seconds=20, **options)


def block_text(read: Any) -> str:
    return str(read.contents[0].text)


def test_a_legacy_client_is_told_on_its_session_stream_of_an_approval_on_another_worker(
    app: Flask, live_server: str, second_worker: Flask, make_token: Any
) -> None:
    entry_id = propose(app)
    told: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        notification = getattr(message, "root", message)
        if getattr(notification, "method", None) == "notifications/resources/updated":
            await told.put(str(notification.params.uri))

    async def main() -> tuple[str, str, str]:
        http, client = connect(
            live_server, make_token("editor"), "legacy", message_handler=on_message
        )
        async with http, client:
            before = block_text(await client.read_resource(BLOCK))
            with warnings.catch_warnings():  # the handshake era's way, deprecated by 2026-07-28's
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await client.subscribe_resource(BLOCK)
            approve_on(second_worker, entry_id)
            uri = await asyncio.wait_for(told.get(), timeout=15)
            after = block_text(await client.read_resource(BLOCK))
            return before, uri, after

    before, uri, after = asyncio.run(main())
    assert TEXT not in before
    assert uri == BLOCK
    assert TEXT in after


def test_a_modern_client_is_told_on_its_listen_stream_of_an_approval_on_another_worker(
    app: Flask, live_server: str, second_worker: Flask, make_token: Any
) -> None:
    entry_id = propose(app)

    async def main() -> tuple[Any, Any, str]:
        http, client = connect(live_server, make_token("editor"), "auto")
        async with http, client:
            async with client.listen(resource_subscriptions=[BLOCK]) as subscription:
                honored = subscription.honored
                approve_on(second_worker, entry_id)
                event = await asyncio.wait_for(anext(subscription), timeout=15)
            after = block_text(await client.read_resource(BLOCK))
            return honored, event, after

    honored, event, after = asyncio.run(main())
    assert honored.resource_subscriptions == [BLOCK]
    assert event.uri == BLOCK
    assert TEXT in after
    # The client left: its stream ends at the server's next check, and frees its place.
    deadline = time.monotonic() + 10
    while subscriptions.STREAMS.count() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert subscriptions.STREAMS.count() == 0
