"""Errors under chatmem's /api and /mcp come back as JSON, routing failures included.

An unmatched URL and a wrong method fail in the router, before any
blueprint's error handler could see them; they must still answer in the
surface's JSON (REST's `{"error": {...}}`, MCP's JSON-RPC error), a 405 with
its `Allow` header. The host's own pages keep the host's errors. A CSRF
failure on the Memory screen answers JSON to a client that asked for it.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from tests.demo_client import DemoClient


@pytest.fixture
def client(app: Flask) -> Any:
    return app.test_client()


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def rest_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    error: dict[str, Any] = response.json["error"]
    assert error["code"] == code
    return error


def test_an_unmatched_rest_route_is_a_json_404(client: Any, make_token: Any) -> None:
    token = make_token("editor")
    for path in ("/chatmem/api/nope", "/chatmem/api/tools/get-post/extra", "/chatmem/api"):
        error = rest_error(client.get(path, headers=auth(token)), 404, "not_found")
        assert path in error["message"]
    # Without a token too: the route does not exist for anyone.
    rest_error(client.post("/chatmem/api/nothing/here"), 404, "not_found")


def test_a_wrong_method_on_a_rest_route_is_a_json_405_with_allow(client: Any) -> None:
    response = client.get("/chatmem/api/tools/get-post")
    error = rest_error(response, 405, "method_not_allowed")
    assert response.headers["Allow"] == "POST"
    assert error["allow"] == ["POST"]
    response = client.delete("/chatmem/api/tools")
    rest_error(response, 405, "method_not_allowed")
    assert response.headers["Allow"] == "GET"


def test_mcp_routing_errors_are_json_rpc(client: Any) -> None:
    response = client.put("/chatmem/mcp")
    assert response.status_code == 405
    assert set(response.headers["Allow"].split(", ")) == {"DELETE", "GET", "POST"}
    assert response.json["jsonrpc"] == "2.0"
    assert response.json["error"]["data"]["code"] == "method_not_allowed"
    response = client.post("/chatmem/mcp/sessions")
    assert response.status_code == 404
    assert response.json["error"]["data"]["code"] == "not_found"


def test_get_on_mcp_is_a_json_405_with_allow(client: Any, make_token: Any) -> None:
    response = client.get("/chatmem/mcp", headers=auth(make_token("editor")))
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST, DELETE"
    assert response.json["error"]["data"]["code"] == "method_not_allowed"


def test_the_hosts_own_pages_keep_the_hosts_errors(client: Any) -> None:
    response = client.get("/no-such-host-page")
    assert response.status_code == 404
    assert response.mimetype == "text/html"
    # A path that only starts like chatmem's is not chatmem's.
    assert client.get("/chatmem/apis").mimetype == "text/html"


def test_the_screen_answers_json_to_a_script_and_html_to_a_browser(client: Any) -> None:
    big = f"/chatmem/memory/guidance/{2**63}/approve"
    response = client.post(big, headers={"Accept": "application/json"})
    rest_error(response, 404, "not_found")
    assert client.post(big, headers={"Accept": "text/html"}).mimetype == "text/html"


def test_a_screen_csrf_failure_is_json_when_json_was_asked_for(demo_app: Flask) -> None:
    """The demo's CSRFProtect refuses before the screen's own check: still JSON, 403."""
    admin = DemoClient(demo_app, "admin")
    response = admin.client.post(
        "/chatmem/memory/settings",
        json={"name": "memory_enabled", "value": False},
        headers={"Accept": "application/json", "X-CSRFToken": "forged"},
    )
    error = rest_error(response, 403, "forbidden")
    assert error["reason"] == "csrf"
    page = admin.client.post("/chatmem/memory/settings", data={"name": "memory_enabled"})
    assert page.status_code == 403 and page.mimetype == "text/html"
    from chatmem.demo.extensions import memory

    with demo_app.app_context():
        assert memory.snapshot().memory_enabled, "nothing changed: memory is still on"


def test_the_chat_apis_405_keeps_its_allow_header(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    response = editor.client.get("/chat/api/conversations/1/close")
    assert response.status_code == 405
    assert "POST" in response.headers["Allow"].split(", ")
    assert response.json["error"]["code"] == "http_error"
