"""REST tool routes: each SPEC §11 status once, sessions, the OpenAPI document, CSRF."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from chatmem import ChatMemory, Conflict
from chatmem.memory import guidance
from chatmem.memory.models import Guidance, LedgerEntry, Session
from tests.hostapp import reconfigure

TOOLS = "/chatmem/api/tools"


def auth(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


@pytest.fixture
def client(app: Flask) -> Any:
    return app.test_client()


@pytest.fixture
def token(make_token: Any) -> str:
    return str(make_token("editor"))


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.get_data(as_text=True)
    assert response.mimetype == "application/json"
    error = response.json["error"]
    assert error["code"] == code
    assert error["message"]
    return dict(error)


def test_a_call_returns_the_tools_result(client: Any, token: str, ctx: Any) -> None:
    response = client.post(
        f"{TOOLS}/remember", json={"type": "fact", "text": "Page 42"}, headers=auth(token)
    )
    assert response.status_code == 200
    assert response.json["status"] == "pending"
    db = ctx.extensions["test_host"]["db"]
    assert db.session.get(Guidance, response.json["id"]).text == "Page 42"
    ledgered = db.session.query(LedgerEntry).one()
    assert (ledgered.channel, ledgered.tool, ledgered.outcome) == ("rest", "remember", "ok")


def test_400_invalid_params_names_the_field(client: Any, token: str, ctx: Any) -> None:
    error = assert_error(
        client.post(f"{TOOLS}/remember", json={"type": "rumour", "text": "x"}, headers=auth(token)),
        400,
        "invalid_params",
    )
    assert error["field"] == "type"
    for body in (b"{nope", b"[1, 2]", b'"text"', b'{"limit": NaN}'):
        response = client.post(f"{TOOLS}/recall", data=body, headers=auth(token))
        assert assert_error(response, 400, "invalid_params")["field"] == "body"
    db = ctx.extensions["test_host"]["db"]
    assert db.session.query(Guidance).count() == 0


def test_401_without_a_valid_token(client: Any) -> None:
    response = client.post(f"{TOOLS}/recall", json={})
    assert_error(response, 401, "unauthorized")
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert_error(client.get(TOOLS, headers=auth("cm_forged")), 401, "unauthorized")


def test_403_forbidden_blocked_and_memory_disabled(
    client: Any, token: str, make_token: Any, ctx: Any, memory: Any, admin: Any
) -> None:
    viewer = make_token("viewer")
    error = assert_error(
        client.post(f"{TOOLS}/recall", json={}, headers=auth(viewer)), 403, "forbidden"
    )
    assert error["capability"] == "edit_posts"

    db = ctx.extensions["test_host"]["db"]
    entry = guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "Not the header",
            "target": "post_type:header_footer",
            "severity": "block",
        },
        actor_id="1",
    )
    blocked = client.post(
        f"{TOOLS}/update-post", json={"post_id": 3, "title": "x"}, headers=auth(token)
    )
    assert assert_error(blocked, 403, "blocked_by_memory")["guidance_id"] == entry.id
    assert db.session.get(ctx.extensions["test_host"]["Post"], 3).title == "Site header"

    memory.set_setting("memory_enabled", False, actor=admin)
    assert_error(
        client.post(f"{TOOLS}/recall", json={}, headers=auth(token)), 403, "memory_disabled"
    )


def test_404_for_an_unknown_tool(client: Any, token: str) -> None:
    error = assert_error(
        client.post(f"{TOOLS}/no-such-tool", json={}, headers=auth(token)), 404, "not_found"
    )
    assert error["tool"] == "no-such-tool"


def test_409_when_a_tool_reports_a_conflict(client: Any, token: str, memory: Any) -> None:
    @memory.tool(
        name="publish-post",
        description="Publish a post at the version the caller saw.",
        input_schema={"type": "object", "properties": {"version": {"type": "integer"}}},
    )
    def publish_post(version: int = 0) -> dict[str, Any]:
        raise Conflict("The post changed since you read it.", details={"current_version": 3})

    error = assert_error(
        client.post(f"{TOOLS}/publish-post", json={"version": 2}, headers=auth(token)),
        409,
        "conflict",
    )
    assert error["current_version"] == 3


def test_413_for_an_oversized_body(app: Flask, client: Any, token: str) -> None:
    reconfigure(app, CHATMEM_MAX_BODY_BYTES=100)
    response = client.post(f"{TOOLS}/recall", json={"topic": "x" * 150}, headers=auth(token))
    assert assert_error(response, 413, "payload_too_large")["max_bytes"] == 100


def test_429_with_retry_after(app: Flask, client: Any, token: str) -> None:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=2)
    for _ in range(2):
        assert client.post(f"{TOOLS}/recall", json={}, headers=auth(token)).status_code == 200
    response = client.post(f"{TOOLS}/recall", json={}, headers=auth(token))
    assert_error(response, 429, "rate_limited")
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def test_500_never_leaks_a_host_bug(client: Any, token: str) -> None:
    response = client.post(f"{TOOLS}/explode", json={}, headers=auth(token))
    assert_error(response, 500, "tool_error")
    assert "secret internal detail" not in response.get_data(as_text=True)


def test_the_session_header_groups_calls(
    client: Any, token: str, make_token: Any, ctx: Any
) -> None:
    def write(title: str, key: str | None, who: str = token) -> None:
        headers = auth(who, **({"X-Chatmem-Session": key} if key else {}))
        response = client.post(
            f"{TOOLS}/update-post", json={"post_id": 7, "title": title}, headers=headers
        )
        assert response.status_code == 200

    write("a", "task-1")
    write("b", "task-1")
    write("c", "task-2")
    write("d", None)
    write("e", None)
    write("f", "task-1", make_token("admin"))  # another user's key never joins
    db = ctx.extensions["test_host"]["db"]
    ids = [e.session_id for e in db.session.query(LedgerEntry).order_by(LedgerEntry.id)]
    assert ids[0] == ids[1]
    assert len(set(ids)) == 5
    grouped = db.session.get(Session, ids[0])
    assert (grouped.channel, grouped.external_key) == ("rest", "task-1")

    summary = client.post(
        f"{TOOLS}/save-session-summary",
        json={"summary": "Renamed post 7 twice."},
        headers=auth(token, **{"X-Chatmem-Session": "task-1"}),
    )
    assert summary.json == {"recorded": True, "proposed": 0}
    db.session.expire_all()
    assert db.session.get(Session, ids[0]).summary == "Renamed post 7 twice."
    assert db.session.get(Session, ids[0]).change_count == 2

    too_long = client.post(
        f"{TOOLS}/recall", json={}, headers=auth(token, **{"X-Chatmem-Session": "k" * 201})
    )
    assert assert_error(too_long, 400, "invalid_params")["field"] == "X-Chatmem-Session"
    nul = client.post(
        f"{TOOLS}/recall", json={}, headers=auth(token, **{"X-Chatmem-Session": "task\x001"})
    )
    refused = assert_error(nul, 400, "invalid_params")
    assert (refused["field"], refused["reason"]) == ("X-Chatmem-Session", "nul_character")
    assert refused["message"] == "X-Chatmem-Session holds a NUL character (U+0000)."


def test_listing_shows_only_what_the_user_may_call(
    client: Any, token: str, make_token: Any, memory: Any, admin: Any
) -> None:
    listed = client.get(TOOLS, headers=auth(token)).json["tools"]
    names = [tool["name"] for tool in listed]
    assert names[:3] == ["recall", "remember", "save-session-summary"]
    assert "update-post" in names
    recall = listed[0]
    assert recall["read_only"] is True and recall["full_name"] == "chatmem/recall"
    assert recall["input_schema"]["properties"]["limit"]["maximum"] == 100
    assert client.get(TOOLS, headers=auth(make_token("viewer"))).json == {"tools": []}
    memory.set_setting("memory_enabled", False, actor=admin)
    names = [tool["name"] for tool in client.get(TOOLS, headers=auth(token)).json["tools"]]
    assert "recall" not in names and "update-post" in names


def test_the_openapi_document_validates_and_describes_real_answers(client: Any, token: str) -> None:
    response = client.get("/chatmem/api/openapi.json", headers=auth(token))
    assert response.status_code == 200
    document = response.json
    validate(document)
    assert document["openapi"] == "3.1.0"
    paths = document["paths"]
    assert f"{TOOLS}/update-post" in paths and TOOLS in paths
    operation = paths[f"{TOOLS}/recall"]["post"]
    assert set(operation["responses"]) >= {"200", "400", "401", "403", "404", "409", "413", "429"}
    # The documented schemas describe what the routes really send.
    recalled = client.post(f"{TOOLS}/recall", json={}, headers=auth(token)).json
    result_schema = operation["responses"]["200"]["content"]["application/json"]["schema"]
    Draft202012Validator(result_schema).validate(recalled)
    failed = client.post(f"{TOOLS}/recall", json={"limit": 0}, headers=auth(token)).json
    Draft202012Validator(document["components"]["schemas"]["Error"]).validate(failed)
    assert client.get("/chatmem/api/openapi.json").status_code == 401


def test_csrf_protect_set_up_after_chatmem_exempts_only_the_bearer_routes(
    app: Flask, make_token: Any
) -> None:
    CSRFProtect(app)
    client = app.test_client()
    token = make_token("editor")
    assert client.post("/login", data={"username": "admin", "password": "admin"}).status_code == 400
    assert client.post(f"{TOOLS}/recall", json={}, headers=auth(token)).status_code == 200
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert client.post("/chatmem/mcp", json=ping, headers=auth(token)).status_code == 200


def test_csrf_protect_set_up_before_chatmem_exempts_the_bearer_routes(tmp_path: Path) -> None:
    app = Flask("csrf_first")
    app.config.update(SECRET_KEY="x", SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'c.db'}")
    CSRFProtect(app)
    db = SQLAlchemy()
    db.init_app(app)
    ChatMemory(app, db=db)
    with app.app_context():
        app.extensions["chatmem"].memory.create_all()
        client = app.test_client()
        # Reaching the bearer check (401), not the CSRF refusal (400), is the point.
        assert client.post(f"{TOOLS}/recall", json={}).status_code == 401
        assert (
            client.post(
                "/chatmem/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
            ).status_code
            == 401
        )
        db.engine.dispose()


def test_the_body_limit_is_exact_with_and_without_a_content_length(
    app: Flask, client: Any, token: str
) -> None:
    """A body of CHATMEM_MAX_BODY_BYTES passes, one byte more is 413, whether the client
    sends a Content-Length or streams the body (chunked)."""
    reconfigure(app, CHATMEM_MAX_BODY_BYTES=100)
    fits = b'{"topic": "' + b"x" * 87 + b'"}'
    assert len(fits) == 100
    over = fits[:-2] + b'x"}'
    assert client.post(f"{TOOLS}/recall", data=fits, headers=auth(token)).status_code == 200
    assert_error(
        client.post(f"{TOOLS}/recall", data=over, headers=auth(token)), 413, "payload_too_large"
    )

    def streamed(body: bytes) -> Any:
        return client.post(
            f"{TOOLS}/recall",
            input_stream=io.BytesIO(body),
            headers=auth(token, **{"Transfer-Encoding": "chunked"}),
            environ_overrides={"wsgi.input_terminated": True},
        )

    assert streamed(fits).status_code == 200
    assert assert_error(streamed(over), 413, "payload_too_large")["max_bytes"] == 100


def test_a_session_key_of_200_characters_is_taken(client: Any, token: str) -> None:
    headers = auth(token, **{"X-Chatmem-Session": "k" * 200})
    assert client.post(f"{TOOLS}/recall", json={}, headers=headers).status_code == 200


def test_another_extension_named_csrf_is_left_alone(tmp_path: Path) -> None:
    """Only Flask-WTF's CSRFProtect has `exempt`; something else under that name is no reason
    to fail."""
    app = Flask("not_wtf")
    app.config.update(SECRET_KEY="x", SQLALCHEMY_DATABASE_URI=f"sqlite:///{tmp_path / 'c.db'}")
    app.extensions["csrf"] = object()
    db = SQLAlchemy()
    db.init_app(app)
    ChatMemory(app, db=db)
    with app.app_context():
        app.extensions["chatmem"].memory.create_all()
        assert app.test_client().post(f"{TOOLS}/recall", json={}).status_code == 401
        db.engine.dispose()
