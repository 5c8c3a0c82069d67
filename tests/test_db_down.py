"""The database goes down mid-test, and comes back (SPEC §11 `unavailable`).

A private PostgreSQL cluster (tests/private_postgres.py) is stopped under a
running app: REST and the chat API answer 503 `unavailable` with
`Retry-After`, MCP answers HTTP 503 with a JSON-RPC error, the Memory screen
shows a plain 503 page, and no tool runs while the guardrails cannot be read.
Started again, every channel answers as before, with no restart of the app.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy.exc import OperationalError

from chatmem.errors import RETRY_AFTER_SECONDS, outage
from tests.demo_client import DemoClient
from tests.hostapp import USERS, create_host_app
from tests.private_postgres import Cluster, private_cluster
from tests.screen_helpers import login

# The cluster is this file's own: its runs do not depend on which database the
# suite was given, so the PostgreSQL pass need not repeat them.
pytestmark = [pytest.mark.slow, pytest.mark.db_free]

TOOL = "/chatmem/api/tools/ring-bell"
MCP = "/chatmem/mcp"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with private_cluster() as running:
        yield running


@contextmanager
def database_down(cluster: Cluster) -> Iterator[None]:
    cluster.stop()
    try:
        yield
    finally:
        cluster.start()


@pytest.fixture
def host(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[Flask]:
    """The test host app on the private cluster, with a tool that touches no database.

    `ring-bell` only counts its runs, so a call that got past the dispatcher
    would show here even with the database down.
    """
    name = f"host_{request.node.name.lower()}"[:60]
    app = create_host_app(cluster.create_database(name))
    memory = app.extensions["test_host"]["memory"]
    app.extensions["test_host"]["rings"] = rings = []

    @memory.tool(name="ring-bell", description="Ring the bell.", input_schema={"type": "object"})
    def ring_bell() -> dict[str, Any]:
        rings.append(1)
        return {"rang": len(rings)}

    yield app
    with app.app_context():
        app.extensions["test_host"]["db"].engine.dispose()


def rings(app: Flask) -> int:
    return len(app.extensions["test_host"]["rings"])


@pytest.fixture
def token(host: Flask) -> str:
    from chatmem.auth import tokens

    with host.app_context():
        return tokens.issue(host.extensions["test_host"]["memory"], USERS["editor"])[1]


def bearer(token: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **headers}


def assert_unavailable(response: Any) -> dict[str, Any]:
    assert response.status_code == 503, response.get_data(as_text=True)
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    return dict(response.get_json())


def test_rest_answers_503_unavailable_and_recovers(
    cluster: Cluster, host: Flask, token: str
) -> None:
    client = host.test_client()
    assert client.post(TOOL, json={}, headers=bearer(token)).json == {"rang": 1}
    with database_down(cluster):
        called = client.post(TOOL, json={}, headers=bearer(token))
        error = assert_unavailable(called)["error"]
        assert error["code"] == "unavailable"
        assert "try again" in error["message"]
        assert "psycopg" not in called.get_data(as_text=True)  # no driver detail leaks
        assert assert_unavailable(client.get("/chatmem/api/tools", headers=bearer(token)))
        assert rings(host) == 1  # refused before the tool, never run
    assert client.post(TOOL, json={}, headers=bearer(token)).json == {"rang": 2}


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def test_mcp_answers_http_503_with_a_json_rpc_error_and_recovers(
    cluster: Cluster, host: Flask, token: str
) -> None:
    client = host.test_client()
    call = rpc("tools/call", {"name": "ring-bell", "arguments": {}})
    assert client.post(MCP, json=call, headers=bearer(token)).json["result"]["isError"] is False
    with database_down(cluster):
        answer = assert_unavailable(client.post(MCP, json=call, headers=bearer(token)))
        assert answer["jsonrpc"] == "2.0" and "result" not in answer
        assert answer["error"]["code"] == -32000
        assert answer["error"]["data"]["code"] == "unavailable"
        assert assert_unavailable(client.post(MCP, json=rpc("tools/list"), headers=bearer(token)))
        assert rings(host) == 1
    recovered = client.post(MCP, json=call, headers=bearer(token)).json["result"]
    assert recovered["structuredContent"] == {"rang": 2}


def test_the_memory_screen_shows_a_plain_503_page_and_recovers(
    cluster: Cluster, host: Flask
) -> None:
    client = host.test_client()
    login(client, "admin")
    assert client.get("/chatmem/memory").status_code == 200
    with database_down(cluster):
        page = client.get("/chatmem/memory")
        assert page.status_code == 503
        assert page.mimetype == "text/html"
        assert page.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
        html = page.get_data(as_text=True)
        assert '<h1 id="cm-unavailable-title">Unavailable right now</h1>' in html
        assert "database cannot be reached" in html and "Traceback" not in html
        scripted = client.get("/chatmem/memory", headers={"Accept": "application/json"})
        assert assert_unavailable(scripted)["error"]["code"] == "unavailable"
    assert client.get("/chatmem/memory").status_code == 200


def test_a_python_call_fails_closed_and_the_tool_never_runs(cluster: Cluster, host: Flask) -> None:
    memory = host.extensions["test_host"]["memory"]
    with host.app_context():
        assert memory.call_tool("ring-bell", {}, user=USERS["editor"]) == {"rang": 1}
    with database_down(cluster), host.app_context():
        # The guardrails cannot be read, so nothing runs: the outage itself is
        # raised (never taken for "no guardrail matched"), for the edge to map.
        with pytest.raises(OperationalError) as refused:
            memory.call_tool("ring-bell", {}, user=USERS["editor"])
        assert outage(refused.value) is not None
        assert rings(host) == 1
    with host.app_context():
        assert memory.call_tool("ring-bell", {}, user=USERS["editor"]) == {"rang": 2}


# -- the demo's chat API -----------------------------------------------------------


@pytest.fixture
def demo(cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    from chatmem.demo import create_app

    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.delenv("SECRET_KEY", raising=False)
    url = cluster.create_database("demo")
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": url, "TESTING": True, "CHATMEM_PROVIDER": "none"},
        instance_path=str(tmp_path / "instance"),
    )
    yield app
    with app.app_context():
        app.extensions["sqlalchemy"].engine.dispose()


def test_the_chat_api_answers_503_unavailable_and_recovers(cluster: Cluster, demo: Flask) -> None:
    from sqlalchemy import select

    from chatmem.auth import tokens
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    with demo.app_context():
        user = db.session.scalars(select(User).where(User.username == "admin")).one()
        token = tokens.issue(memory, user)[1]
    client = demo.test_client()
    browser = DemoClient(demo, "admin")
    create = "/chat/api/conversations"
    assert client.post(create, json={}, headers=bearer(token)).status_code == 201
    with database_down(cluster):
        error = assert_unavailable(client.post(create, json={}, headers=bearer(token)))["error"]
        assert error["code"] == "unavailable"
        listed = client.get(create, headers=bearer(token))
        assert assert_unavailable(listed)["error"]["code"] == "unavailable"
        # The screen inside the demo's layout, whose navigation needs the database.
        page = browser.client.get("/chatmem/memory")
        assert page.status_code == 503 and "Unavailable right now" in page.get_data(as_text=True)
    assert client.post(create, json={}, headers=bearer(token)).status_code == 201
