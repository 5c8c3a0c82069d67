"""One rate-limit budget per token on every channel, and a throttled sign-in.

A token that got 429 on REST is refused on MCP and on the demo's chat API
too (the chat API used to let 150 of 150 calls through); the chat API's
calls count against the same budget. The demo's login refuses the 11th
failed attempt for a name within a minute, while another user signs in.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from tests.channels import MCP, REST, make_token
from tests.hostapp import reconfigure

LIMIT = 3
_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def limited(app: Flask) -> tuple[Any, dict[str, str]]:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=LIMIT)
    token = make_token(app, "editor")
    return app.test_client(), {"Authorization": f"Bearer {token}"}


def chat_list(client: Any, auth: dict[str, str]) -> Any:
    return client.get("/chat/api/conversations", headers=auth)


def mcp_list(client: Any, auth: dict[str, str]) -> Any:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    return client.post(MCP, json=body, headers=auth)


def assert_rate_limited(response: Any) -> None:
    assert response.status_code == 429, response.get_data(as_text=True)
    assert int(response.headers["Retry-After"]) >= 1
    body = response.json
    error = body["error"]
    code = error["data"]["code"] if "jsonrpc" in body else error["code"]
    assert code == "rate_limited"


def test_a_token_limited_on_rest_is_limited_on_chat_and_mcp(demo_app: Flask) -> None:
    client, auth = limited(demo_app)
    for _ in range(LIMIT):
        assert client.get(f"{REST}", headers=auth).status_code == 200
    assert_rate_limited(client.get(f"{REST}", headers=auth))
    assert_rate_limited(chat_list(client, auth))
    assert_rate_limited(mcp_list(client, auth))
    posted = client.post("/chat/api/conversations", headers=auth)
    assert_rate_limited(posted)


def test_chat_api_calls_spend_the_same_budget(demo_app: Flask) -> None:
    client, auth = limited(demo_app)
    for _ in range(LIMIT):
        assert chat_list(client, auth).status_code == 200
    assert_rate_limited(chat_list(client, auth))
    assert_rate_limited(client.get(f"{REST}", headers=auth))
    # Another user's token has its own budget.
    other = {"Authorization": f"Bearer {make_token(demo_app, 'admin')}"}
    assert chat_list(client, other).status_code == 200


def sign_in(client: Any, username: str, password: str) -> Any:
    page = client.get("/login").get_data(as_text=True)
    token = _FIELD.search(page)
    assert token
    return client.post(
        "/login", data={"username": username, "password": password, "csrf_token": token[1]}
    )


def test_the_eleventh_failed_sign_in_is_429_and_others_still_sign_in(demo_app: Flask) -> None:
    attacker = demo_app.test_client()
    for attempt in range(10):
        response = sign_in(attacker, "editor", f"wrong-{attempt}")
        assert response.status_code == 401, attempt
    refused = sign_in(attacker, "editor", "wrong-again")
    assert refused.status_code == 429
    assert int(refused.headers["Retry-After"]) >= 1
    assert "Too many failed sign-ins" in refused.get_data(as_text=True)
    # Locked for this name: even the right password waits out the minute.
    assert sign_in(attacker, "Editor ", "editor").status_code == 429
    # Another user, from the same address, is not affected.
    assert sign_in(demo_app.test_client(), "admin", "admin").status_code == 302


def test_right_passwords_are_never_counted(demo_app: Flask) -> None:
    client = demo_app.test_client()
    for _ in range(15):
        assert sign_in(client, "editor", "editor").status_code == 302


def test_many_names_from_one_address_are_throttled_too(demo_app: Flask) -> None:
    client = demo_app.test_client()
    for attempt in range(30):
        assert sign_in(client, f"nobody-{attempt}", "x").status_code == 401, attempt
    assert sign_in(client, "nobody-else", "x").status_code == 429
