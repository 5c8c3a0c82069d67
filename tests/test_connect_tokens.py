"""Tokens in the browser: the demo's Connect page makes, lists and revokes a
signed-in user's own API tokens through `chatmem.auth.tokens`, with CSRF, and gives
ready-to-paste MCP client configurations. Real demo app, Flask test client,
SQLite file or PostgreSQL."""

from __future__ import annotations

import json
import re
from html import unescape
from typing import Any

from flask import Flask
from sqlalchemy import select

from chatmem.memory.models import ApiToken, GuidanceEvent
from tests.demo_client import DemoClient

CONNECT = "/connect"
CREATE = "/connect/tokens"
TOOLS = "/chatmem/api/tools"
MCP = "/chatmem/mcp"
_NEW_TOKEN = re.compile(r'<code id="new-token"[^>]*>(cm_[A-Za-z0-9_-]+)</code>')
_CONFIG = re.compile(r'<pre data-lang="json" id="config-([a-z-]+)">(.*?)</pre>', re.DOTALL)
_ALERT = re.compile(r'<p class="alert" role="alert"[^>]*>([^<]+)</p>')


def bearer(plain: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {plain}"}


def rows(app: Flask) -> list[tuple[Any, ...]]:
    """Every token row as the database holds it (id, user, name, revoked?, expiry, scope)."""
    with app.app_context():
        db = app.extensions["sqlalchemy"]
        found = [
            (t.id, t.user_id, t.name, t.revoked_at is not None, t.expires_at, t.read_only)
            for t in db.session.scalars(select(ApiToken).order_by(ApiToken.id))
        ]
        db.session.remove()
        return found


def create(user: DemoClient, status: int = 201, **fields: str) -> str:
    """Post the Connect page's form as the browser does; returns the page."""
    form = {"csrf_token": user.csrf, "name": "laptop", **fields}
    response = user.client.post(CREATE, data=form)
    page = response.get_data(as_text=True)
    assert response.status_code == status, page
    return page


def new_token(page: str) -> str:
    found = _NEW_TOKEN.search(page)
    assert found, "the page shows the new token"
    return found[1]


def mcp_tools(app: Flask, plain: str) -> tuple[int, list[str]]:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = app.test_client().post(MCP, json=body, headers=bearer(plain))
    if response.status_code != 200:
        return response.status_code, []
    return 200, sorted(t["name"] for t in response.json["result"]["tools"])


def rest_tools(app: Flask, plain: str) -> tuple[int, list[str]]:
    response = app.test_client().get(TOOLS, headers=bearer(plain))
    if response.status_code != 200:
        return response.status_code, []
    return 200, sorted(t["name"] for t in response.json["tools"])


def test_a_token_made_on_the_page_is_shown_once_and_works_on_rest_and_mcp(
    demo_app: Flask,
) -> None:
    editor = DemoClient(demo_app, "editor")
    page = create(editor, name="laptop")
    plain = new_token(page)
    assert "cannot be shown again" in page

    status, listed = rest_tools(demo_app, plain)
    assert status == 200 and "update-post" in listed and "recall" in listed
    assert mcp_tools(demo_app, plain) == (200, listed)
    recalled = demo_app.test_client().post(f"{TOOLS}/recall", json={}, headers=bearer(plain))
    assert recalled.status_code == 200, recalled.get_data(as_text=True)

    # Every client configuration carries the URL and the new token, as valid JSON.
    configs = {key: json.loads(unescape(text)) for key, text in _CONFIG.findall(page)}
    assert set(configs) == {"claude-code", "cursor", "claude-desktop"}
    for key in ("claude-code", "cursor"):
        server = configs[key]["mcpServers"]["chatmem"]
        assert server["url"] == "http://localhost/chatmem/mcp"
        assert server["headers"] == {"Authorization": f"Bearer {plain}"}
    desktop = configs["claude-desktop"]["mcpServers"]["chatmem"]
    assert "http://localhost/chatmem/mcp" in desktop["args"]
    assert desktop["env"] == {"CHATMEM_AUTH": f"Bearer {plain}"}

    # Never again: the page lists the token by its prefix only.
    later = editor.client.get(CONNECT)
    assert later.headers["Cache-Control"] == "no-store"
    text = later.get_data(as_text=True)
    assert plain not in text
    assert f"<code>{plain[:10]}…</code>" in text
    assert "&lt;your token&gt;" in text  # the configurations are back to the placeholder
    [(token_id, _user, name, revoked, expires, read_only)] = rows(demo_app)
    assert (name, revoked, expires, read_only) == ("laptop", False, None, False)
    assert f'id="token-{token_id}"' in text


def test_expiry_and_read_only_are_the_cli_options(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    plain = new_token(create(editor, name="reader", expires_days="30", read_only="1"))
    [(_id, _user, _name, _revoked, expires, read_only)] = rows(demo_app)
    assert read_only is True and expires is not None

    status, listed = rest_tools(demo_app, plain)
    assert status == 200 and "get-post" in listed and "update-post" not in listed
    refused = demo_app.test_client().post(
        f"{TOOLS}/update-post", json={"post_id": 1, "title": "x"}, headers=bearer(plain)
    )
    assert refused.status_code == 403
    assert refused.json["error"]["code"] == "forbidden"
    text = editor.client.get(CONNECT).get_data(as_text=True)
    assert "read-only" in text


def test_bad_input_gets_a_clear_error_and_makes_no_token(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    cases = {
        "0": "expires_days must be a whole number of days from 1 to 3650",
        "abc": "expires_days must be a whole number of days from 1 to 3650",
        "-3": "expires_days must be a whole number of days from 1 to 3650",
        "99999999999": "expires_days must be a whole number of days from 1 to 3650",
        "\u00b2": "expires_days must be a whole number of days from 1 to 3650",
        "1.5": "expires_days must be a whole number of days from 1 to 3650",
    }
    for days, message in cases.items():
        page = create(editor, status=400, expires_days=days)
        alert = _ALERT.search(page)
        assert alert and message in unescape(alert[1]), days
        assert not _NEW_TOKEN.search(page)
    page = create(editor, status=400, name="x" * 101)
    assert "A token name is at most 100 characters." in page
    page = create(editor, status=400, name="lap\u200btop")
    alert = _ALERT.search(page)
    assert alert and "name holds invisible or control characters" in alert[1]
    assert rows(demo_app) == []


def test_creating_needs_the_csrf_token_and_a_sign_in(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    refused = editor.client.post(CREATE, data={"name": "laptop"})
    assert refused.status_code == 400
    assert "security token is missing" in refused.get_data(as_text=True)
    stranger = demo_app.test_client()
    to_login = stranger.post(CREATE, data={"name": "laptop", "csrf_token": editor.csrf})
    assert to_login.status_code in (302, 400)
    assert rows(demo_app) == []


def test_a_token_cannot_make_or_revoke_tokens(demo_app: Flask) -> None:
    """The page is a page: a request with an Authorization header is refused,
    even beside a valid sign-in and CSRF token."""
    editor = DemoClient(demo_app, "editor")
    plain = new_token(create(editor))
    before = rows(demo_app)
    for path in (CREATE, f"/connect/tokens/{before[0][0]}/revoke"):
        form = {"name": "more", "csrf_token": editor.csrf}
        answer = editor.client.post(path, data=form, headers=bearer(plain))
        assert answer.status_code == 401, path
    assert rows(demo_app) == before


def test_revoking_your_own_token_stops_it_everywhere(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    plain = new_token(create(editor, name="old laptop"))
    [(token_id, user_id, *_rest)] = rows(demo_app)
    assert rest_tools(demo_app, plain)[0] == 200

    answer = editor.client.post(
        f"/connect/tokens/{token_id}/revoke", data={"csrf_token": editor.csrf}
    )
    assert answer.status_code == 303 and answer.headers["Location"].endswith(CONNECT)
    page = editor.client.get(CONNECT).get_data(as_text=True)
    assert f"Revoked token “old laptop” ({plain[:10]}…): it no longer works." in page
    assert re.search(rf'id="token-{token_id}" class="token-revoked"', page)

    assert rest_tools(demo_app, plain)[0] == 401
    assert mcp_tools(demo_app, plain)[0] == 401
    with demo_app.app_context():
        db = demo_app.extensions["sqlalchemy"]
        [event] = db.session.scalars(
            select(GuidanceEvent).where(GuidanceEvent.action == "token_revoke")
        )
        assert event.actor_id == user_id and event.detail["token_id"] == token_id


def test_nobody_revokes_another_users_token(demo_app: Flask) -> None:
    admin, editor = DemoClient(demo_app, "admin"), DemoClient(demo_app, "editor")
    plain = new_token(create(admin, name="admin's"))
    before = rows(demo_app)
    [(token_id, *_rest)] = before

    # Not the owner (even an admin's token is not the editor's): absent, and untouched.
    answer = editor.client.post(
        f"/connect/tokens/{token_id}/revoke", data={"csrf_token": editor.csrf}
    )
    assert answer.status_code == 404
    assert f"No token #{token_id}." in answer.get_data(as_text=True)
    assert "admin&#39;s" not in editor.client.get(CONNECT).get_data(as_text=True)
    missing = editor.client.post("/connect/tokens/999/revoke", data={"csrf_token": editor.csrf})
    assert missing.status_code == 404
    no_csrf = admin.client.post(f"/connect/tokens/{token_id}/revoke")
    assert no_csrf.status_code == 400
    assert rows(demo_app) == before
    assert rest_tools(demo_app, plain)[0] == 200
