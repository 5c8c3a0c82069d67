"""One rate-limit budget per user on every channel, and a throttled sign-in.

A token that got 429 on REST is refused on MCP and on the demo's chat API
too (the chat API used to let 150 of 150 calls through); the chat API's
calls count against the same budget. The budget is the user's: all of a
user's tokens and their signed-in chat page share it (N tokens used to get
N budgets), with an optional smaller budget per token inside it. The
demo's login refuses the 11th failed attempt for a name within a minute,
while another user signs in. The counts live in the store
CHATMEM_RATELIMIT_STORAGE_URI names (memory here; Redis across workers in
test_rate_limits_redis.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from chatmem.settings import ConfigError
from tests.channels import MCP, REST, make_token
from tests.demo_client import DemoClient
from tests.hostapp import create_host_app, reconfigure

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


def test_the_chat_page_is_charged_per_signed_in_user(demo_app: Flask) -> None:
    from chatmem.demo.extensions import db
    from chatmem.demo.models import ChatMessage as Message

    reconfigure(demo_app, CHATMEM_RATE_LIMIT_PER_MINUTE=LIMIT)
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]  # 1 of 3
    editor.say(conversation, "hello")  # 2 of 3
    assert editor.client.get("/chat/api/conversations").status_code == 200  # 3 of 3
    with demo_app.app_context():
        stored = db.session.scalar(select(func.count()).select_from(Message))
    refused = editor.client.post(
        f"/chat/api/conversations/{conversation}/messages",
        json={"content": "one more"},
        headers={"X-CSRFToken": editor.csrf},
    )
    assert_rate_limited(refused)
    with demo_app.app_context():
        assert db.session.scalar(select(func.count()).select_from(Message)) == stored
    assert_rate_limited(editor.client.get("/chat/api/conversations"))
    # Another signed-in user has a budget of their own; the editor's own token
    # spends the editor's: a token is no way around the page's limit.
    assert DemoClient(demo_app, "admin").client.get("/chat/api/conversations").status_code == 200
    token = {"Authorization": f"Bearer {make_token(demo_app, 'editor')}"}
    assert_rate_limited(chat_list(demo_app.test_client(), token))


def test_a_limit_of_zero_charges_nobody(demo_app: Flask) -> None:
    reconfigure(demo_app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    editor = DemoClient(demo_app, "editor")
    for _ in range(LIMIT * 3):
        assert editor.client.get("/chat/api/conversations").status_code == 200


def test_an_unreachable_store_refuses_with_503_on_every_channel(database_url: str) -> None:
    # Port 1 on this machine: nothing listens, the connection is refused at once.
    app = create_host_app(database_url, CHATMEM_RATELIMIT_STORAGE_URI="redis://127.0.0.1:1")
    from tests.conftest import dispose

    try:
        token = _host_token(app)
        client = app.test_client()
        auth = {"Authorization": f"Bearer {token}"}
        rest = client.get(REST, headers=auth)
        assert rest.status_code == 503, rest.get_data(as_text=True)
        assert rest.json["error"]["code"] == "unavailable"
        assert int(rest.headers["Retry-After"]) >= 1
        mcp = mcp_list(client, auth)
        assert mcp.status_code == 503, mcp.get_data(as_text=True)
        assert mcp.json["error"]["data"]["code"] == "unavailable"
    finally:
        dispose(app)


def test_a_sign_in_with_the_store_unreachable_is_503_and_signs_nobody_in(
    database_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The sign-in throttle counts in the same store: down, it refuses like chatmem's budgets."""
    from chatmem.demo import create_app
    from tests.conftest import reset_demo_database

    monkeypatch.delenv("DATABASE_URL", raising=False)
    reset_demo_database(database_url)
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": database_url,
            "TESTING": True,
            "CHATMEM_PROVIDER": "none",
            "CHATMEM_RATELIMIT_STORAGE_URI": "redis://127.0.0.1:1",
        },
        instance_path=str(tmp_path / "instance"),
    )
    try:
        client = app.test_client()
        refused = sign_in(client, "editor", "editor")
        assert refused.status_code == 503, refused.get_data(as_text=True)
        assert int(refused.headers["Retry-After"]) >= 1
        assert "cannot be reached" in refused.get_data(as_text=True)
        assert "Traceback" not in refused.get_data(as_text=True)
        assert 'name="username"' in refused.get_data(as_text=True)  # the form, to try again
        # The operator's log: one line that names the store's error, no trace.
        logged = [r for r in caplog.records if "rate-limit store unreachable" in r.getMessage()]
        assert logged and "127.0.0.1:1" in logged[-1].getMessage()
        assert logged[-1].exc_info is None
        # Nobody was signed in: the chat page still sends the browser to the login page.
        assert client.get("/chat").status_code == 302
    finally:
        with app.app_context():
            app.extensions["sqlalchemy"].engine.dispose()


def test_a_store_chatmem_cannot_use_stops_start_up(database_url: str) -> None:
    with pytest.raises(ValueError, match="CHATMEM_RATELIMIT_STORAGE_URI .*'nosuch://here'"):
        create_host_app(database_url, CHATMEM_RATELIMIT_STORAGE_URI="nosuch://here")
    with pytest.raises(ValueError) as caught:  # the message never shows a password
        create_host_app(database_url, CHATMEM_RATELIMIT_STORAGE_URI="nosuch://:pw@here:1")
    assert "pw" not in str(caught.value) and "nosuch://***@here:1" in str(caught.value)
    with pytest.raises(ConfigError, match="CHATMEM_RATELIMIT_STORAGE_URI must be a storage URI"):
        from chatmem.settings import from_environ

        from_environ({"CHATMEM_RATELIMIT_STORAGE_URI": "localhost:6379"})


def _host_token(app: Flask) -> str:
    from chatmem.auth import tokens
    from tests.hostapp import USERS

    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        return tokens.issue(memory, USERS["editor"], name="store")[1]


def test_a_second_token_is_not_a_second_budget(demo_app: Flask) -> None:
    """The budget is the user's: N tokens of one user share it, on every channel."""
    client, first = limited(demo_app)
    second = {"Authorization": f"Bearer {make_token(demo_app, 'editor')}"}
    third = {"Authorization": f"Bearer {make_token(demo_app, 'editor')}"}
    assert client.get(REST, headers=first).status_code == 200
    assert chat_list(client, second).status_code == 200
    assert mcp_list(client, third).status_code == 200
    for auth in (first, second, third):
        assert_rate_limited(client.get(REST, headers=auth))
    assert "for this user" in client.get(REST, headers=third).json["error"]["message"]
    # The signed-in page is the same user: its budget is spent too.
    assert_rate_limited(DemoClient(demo_app, "editor").client.get("/chat/api/conversations"))
    other = {"Authorization": f"Bearer {make_token(demo_app, 'admin')}"}
    assert client.get(REST, headers=other).status_code == 200


def test_a_per_token_budget_inside_the_users(demo_app: Flask) -> None:
    reconfigure(
        demo_app, CHATMEM_RATE_LIMIT_PER_MINUTE=5, CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE=2
    )
    client = demo_app.test_client()
    busy, calm, late = (
        {"Authorization": f"Bearer {make_token(demo_app, 'editor')}"} for _ in range(3)
    )
    assert [client.get(REST, headers=busy).status_code for _ in range(3)] == [200, 200, 429]
    assert "for this token: at most 2" in client.get(REST, headers=busy).json["error"]["message"]
    # The busy token's refused calls were not spent from the user's budget: 2 of 5 used.
    assert [client.get(REST, headers=calm).status_code for _ in range(2)] == [200, 200]
    assert client.get(REST, headers=late).status_code == 200  # 5 of 5
    refused = client.get(REST, headers=late)
    assert_rate_limited(refused)
    assert "for this user: at most 5" in refused.json["error"]["message"]


def test_the_per_token_budget_is_off_with_the_users(demo_app: Flask) -> None:
    reconfigure(
        demo_app, CHATMEM_RATE_LIMIT_PER_MINUTE=0, CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE=1
    )
    auth = {"Authorization": f"Bearer {make_token(demo_app, 'editor')}"}
    client = demo_app.test_client()
    assert {client.get(REST, headers=auth).status_code for _ in range(4)} == {200}
