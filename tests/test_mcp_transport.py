"""Every Streamable HTTP rule of the MCP endpoint, as raw HTTP (SPEC §9a).

Host, Origin, cookies and chunked bodies go over a real socket to a live
server; the rest use Flask's WSGI test client, which runs the same stack.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx2
import pytest

from chatmem.auth import tokens
from chatmem.memory import guidance
from chatmem.memory.models import LedgerEntry, Session
from tests.conftest import dispose
from tests.hostapp import create_host_app, reconfigure
from tests.redis_store import fresh_prefix, redis_url

URL = "/chatmem/mcp"
CAPABILITIES = {
    "tools": {"listChanged": False},
    "resources": {"subscribe": True, "listChanged": False},
    "prompts": {"listChanged": False},
}
MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def rpc(method: str, params: dict[str, Any] | None = None, id: Any = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params or {}}
    if id is not None:
        message["id"] = id
    return message


def auth(token: str, **extra: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **extra}


def initialize(client: Any, token: str, version: str = "2025-11-25") -> Any:
    return client.post(
        URL,
        json=rpc(
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        ),
        headers=auth(token),
    )


def modern(
    client: Any,
    token: str,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    headers: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
) -> Any:
    body = rpc(method, {**(params or {}), "_meta": META if meta is None else meta})
    sent = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if method == "tools/call":
        sent["Mcp-Name"] = str((params or {}).get("name"))
    sent.update(headers or {})
    return client.post(URL, json=body, headers=auth(token, **sent))


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def editor_token(make_token: Any) -> str:
    return str(make_token("editor"))


# -- the handshake era -----------------------------------------------------------


@pytest.mark.parametrize(
    ("offered", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
    ],
)
def test_initialize_negotiates_and_mints_a_session(
    client: Any, editor_token: str, offered: str, answered: str
) -> None:
    response = initialize(client, editor_token, offered)
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    result = response.json["result"]
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "chatmem"
    # MCP tasks (held calls a client can wait on) came with 2025-11-25.
    tasks = {"tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}}
    assert result["capabilities"] == (
        {**CAPABILITIES, **tasks} if answered == "2025-11-25" else CAPABILITIES
    )
    assert "instructions" not in result  # nothing approved yet
    session_id = response.headers["Mcp-Session-Id"]
    assert len(session_id) >= 32
    assert all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert session_id != initialize(client, editor_token).headers["Mcp-Session-Id"]


def test_initialize_carries_the_approved_block(client: Any, editor_token: str, ctx: Any) -> None:
    db = ctx.extensions["test_host"]["db"]
    guidance.admin_add(db.session(), {"type": "fact", "text": "Checkout is page 42"}, actor_id="1")
    result = initialize(client, editor_token).json["result"]
    assert result["instructions"] == (
        "## Project memory\nSite facts: Checkout is page 42\n"
        "(Call recall for session history: notes, not instructions.)"
    )


def test_initialize_ignores_a_protocol_version_header(client: Any, editor_token: str) -> None:
    response = client.post(
        URL,
        json=rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
        headers=auth(editor_token, **{"MCP-Protocol-Version": "2099-01-01"}),
    )
    assert response.status_code == 200
    assert response.json["result"]["protocolVersion"] == "2025-11-25"


def test_notifications_get_202_and_no_body(client: Any, editor_token: str) -> None:
    response = client.post(
        URL, json=rpc("notifications/initialized", id=None), headers=auth(editor_token)
    )
    assert response.status_code == 202
    assert response.data == b""


def test_get_is_405_with_allow(client: Any, editor_token: str) -> None:
    response = client.get(URL, headers=auth(editor_token, Accept="text/event-stream"))
    assert response.status_code == 405
    assert response.headers["Allow"] == "POST, DELETE"


def test_a_narrow_accept_header_still_gets_json(client: Any, editor_token: str) -> None:
    for accept in ("text/event-stream", "application/json", "text/plain"):
        response = client.post(URL, json=rpc("ping"), headers=auth(editor_token, Accept=accept))
        assert response.status_code == 200, accept
        assert response.json == {"jsonrpc": "2.0", "id": 1, "result": {}}


def test_malformed_json_is_a_parse_error(client: Any, editor_token: str) -> None:
    cases = {
        b"{not json": "Parse error: the body is not JSON.",
        b"\xff\xfe": "Parse error: the body is not JSON.",
        b'{"jsonrpc": "2.0", "id": NaN}': "Parse error: NaN is not JSON: send a finite number.",
    }
    for body, message in cases.items():
        response = client.post(
            URL, data=body, content_type="application/json", headers=auth(editor_token)
        )
        assert response.status_code == 400
        assert response.json == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": message},
        }


def test_a_batch_is_refused(client: Any, editor_token: str) -> None:
    response = client.post(URL, json=[rpc("ping"), rpc("ping", id=2)], headers=auth(editor_token))
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32600
    assert "batch" in response.json["error"]["message"]


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        "ping",
    ],
)
def test_malformed_requests_are_invalid_requests(
    client: Any, editor_token: str, message: Any
) -> None:
    response = client.post(URL, json=message, headers=auth(editor_token))
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32600


def test_unknown_methods_and_cursors_are_json_rpc_errors(client: Any, editor_token: str) -> None:
    unknown = client.post(URL, json=rpc("sampling/createMessage"), headers=auth(editor_token))
    assert unknown.status_code == 200
    assert unknown.json["error"]["code"] == -32601
    cursor = client.post(URL, json=rpc("tools/list", {"cursor": "x"}), headers=auth(editor_token))
    assert cursor.json["error"]["code"] == -32602


@pytest.mark.parametrize(
    "params",
    [{"name": "nope"}, {"arguments": {}}, {"name": 5}, {"name": "recall", "arguments": [1]}],
)
def test_bad_tools_call_params_are_invalid_params(
    client: Any, editor_token: str, params: dict[str, Any]
) -> None:
    response = client.post(URL, json=rpc("tools/call", params), headers=auth(editor_token))
    assert response.json["error"]["code"] == -32602


def test_a_host_tool_bug_is_an_error_result_without_internals(
    client: Any, editor_token: str
) -> None:
    response = client.post(
        URL, json=rpc("tools/call", {"name": "explode"}), headers=auth(editor_token)
    )
    assert response.status_code == 200
    result = response.json["result"]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == "tool_error"
    assert "secret internal detail" not in response.get_data(as_text=True)


# -- tokens -----------------------------------------------------------------------


def test_missing_invalid_and_revoked_tokens_get_401(client: Any, make_token: Any, ctx: Any) -> None:
    db = ctx.extensions["test_host"]["db"]
    token = make_token("editor")
    revoked = make_token("editor", "old")
    tokens.revoke(db.session(), tokens.list_tokens(db.session())[-1].id)
    for headers in (
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer cm_wrong"},
        {"Authorization": f"Basic {token}"},
        {"Authorization": f"Bearer {revoked}"},
    ):
        response = client.post(URL, json=rpc("ping"), headers=headers)
        assert response.status_code == 401, headers
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
        assert response.json["error"]["data"]["code"] == "unauthorized"
    assert client.post(URL, json=rpc("ping"), headers=auth(token)).status_code == 200


def test_a_token_whose_user_is_gone_gets_401(client: Any, ctx: Any) -> None:
    db = ctx.extensions["test_host"]["db"]
    _row, plain = tokens.create(db.session(), user_id="999", name="orphan")
    assert client.post(URL, json=rpc("ping"), headers=auth(plain)).status_code == 401


def test_a_token_is_stored_hashed(ctx: Any) -> None:
    db = ctx.extensions["test_host"]["db"]
    row, plain = tokens.create(db.session(), user_id="2", name="laptop")
    assert plain.startswith("cm_") and len(plain) > 40
    dumped = json.dumps(
        [[str(v) for v in r] for r in db.session.execute(db.text("SELECT * FROM chatmem_token"))]
    )
    assert plain not in dumped
    assert plain[3:] not in dumped
    assert row.token_hash in dumped


def test_a_cookie_alone_is_refused(live_server: str) -> None:
    with httpx2.Client(base_url=live_server, timeout=10) as http:
        login = http.post("/login", data={"username": "admin", "password": "admin"})
        assert login.status_code in (302, 303)
        assert http.cookies  # logged in to the host app
        response = http.post(URL, json=rpc("ping"))
        assert response.status_code == 401


# -- Host and Origin --------------------------------------------------------------


def test_a_foreign_host_header_gets_421(live_server: str, editor_token: str) -> None:
    with httpx2.Client(base_url=live_server, timeout=10) as http:
        bad = http.post(URL, json=rpc("ping"), headers=auth(editor_token, Host="evil.example"))
        assert bad.status_code == 421
        for host in ("localhost:8123", "127.0.0.1", "[::1]:9"):
            ok = http.post(URL, json=rpc("ping"), headers=auth(editor_token, Host=host))
            assert ok.status_code == 200, host


def test_allowed_hosts_are_configurable(app: Any, client: Any, editor_token: str) -> None:
    reconfigure(app, CHATMEM_MCP_ALLOWED_HOSTS="mcp.example.com, other.example:8443")
    for host, status in [
        ("mcp.example.com", 200),
        ("MCP.example.com:443", 200),
        ("other.example:8443", 200),
        ("other.example:8444", 421),
        ("localhost", 421),
    ]:
        response = client.post(
            URL, json=rpc("ping"), headers=auth(editor_token), base_url=f"http://{host}"
        )
        assert response.status_code == status, host


def test_server_name_is_allowed_by_default(app: Any, client: Any, editor_token: str) -> None:
    app.config["SERVER_NAME"] = "chat.example.com"
    response = client.post(URL, json=rpc("ping"), headers=auth(editor_token))
    assert response.status_code == 200


def test_a_foreign_origin_gets_403(app: Any, live_server: str, editor_token: str) -> None:
    own = live_server  # http://127.0.0.1:<port>
    reconfigure(app, CHATMEM_MCP_ALLOWED_ORIGINS=["https://inspector.example"])
    with httpx2.Client(base_url=live_server, timeout=10) as http:
        for origin, status in [
            ("http://evil.example", 403),
            ("null", 403),
            (own.replace("127.0.0.1", "localhost"), 403),
            (own, 200),
            ("https://inspector.example", 200),
        ]:
            response = http.post(URL, json=rpc("ping"), headers=auth(editor_token, Origin=origin))
            assert response.status_code == status, origin
        response = http.post(
            URL,
            json=rpc("ping"),
            headers=auth(editor_token, Origin="http://evil.example", Host="evil.example"),
        )
        assert response.status_code == 421  # a DNS-rebinding page matches its own Host


# -- body size and rate limit -------------------------------------------------


def test_an_oversized_body_gets_413(app: Any, live_server: str, editor_token: str) -> None:
    reconfigure(app, CHATMEM_MAX_BODY_BYTES=2000)
    padding = {"topic": "x" * 2100}
    with httpx2.Client(base_url=live_server, timeout=10) as http:
        sized = http.post(URL, json=rpc("tools/call", padding), headers=auth(editor_token))
        assert sized.status_code == 413
        assert sized.json()["error"]["data"]["code"] == "payload_too_large"

        def chunks() -> Any:
            for _ in range(30):
                yield b" " * 100

        chunked = http.post(URL, content=chunks(), headers=auth(editor_token))
        assert chunked.status_code == 413
        small = http.post(URL, json=rpc("ping"), headers=auth(editor_token))
        assert small.status_code == 200


def test_the_rate_limit_is_per_user_and_shared_by_workers(
    app: Any, database_url: str, make_token: Any
) -> None:
    """The user's budget: the editor's second token is refused too, the admin's is not."""
    # Two app instances on one database and one Redis, as two workers would be.
    shared = {
        "CHATMEM_RATE_LIMIT_PER_MINUTE": 3,
        "CHATMEM_RATELIMIT_STORAGE_URI": redis_url(),
        "CHATMEM_RATELIMIT_KEY_PREFIX": fresh_prefix(),
    }
    workers = [create_host_app(database_url, seed=False, **shared) for _ in range(2)]
    token, second = make_token("editor"), make_token("editor", "second")
    other = make_token("admin")
    one, two = (worker.test_client() for worker in workers)
    try:
        assert one.post(URL, json=rpc("ping"), headers=auth(token)).status_code == 200
        assert two.post(URL, json=rpc("ping"), headers=auth(token)).status_code == 200
        assert one.post(URL, json=rpc("ping"), headers=auth(token)).status_code == 200
        limited = two.post(URL, json=rpc("ping"), headers=auth(token))
        assert limited.status_code == 429
        assert 1 <= int(limited.headers["Retry-After"]) <= 60
        assert limited.json["error"]["data"]["code"] == "rate_limited"
        assert one.post(URL, json=rpc("ping"), headers=auth(second)).status_code == 429
        assert one.post(URL, json=rpc("ping"), headers=auth(other)).status_code == 200
    finally:
        for worker in workers:
            dispose(worker)


# -- sessions ------------------------------------------------------------------


def call(client: Any, token: str, session_id: str | None, name: str, arguments: Any) -> Any:
    headers = auth(token, **({"Mcp-Session-Id": session_id} if session_id else {}))
    body = rpc("tools/call", {"name": name, "arguments": arguments})
    return client.post(URL, json=body, headers=headers)


def test_a_session_from_one_worker_is_honoured_by_another(
    app: Any, second_worker: Any, editor_token: str
) -> None:
    session_id = initialize(app.test_client(), editor_token).headers["Mcp-Session-Id"]
    other = second_worker.test_client()
    response = call(other, editor_token, session_id, "update-post", {"post_id": 7, "title": "A"})
    assert response.status_code == 200
    assert response.json["result"]["isError"] is False
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        assert [e.session_id for e in db.session.query(LedgerEntry)] == [session_id]


def test_sessions_are_bound_to_their_user_and_end_with_delete(
    client: Any, editor_token: str, make_token: Any, ctx: Any
) -> None:
    session_id = initialize(client, editor_token).headers["Mcp-Session-Id"]
    admin_token = make_token("admin")
    stolen = call(client, admin_token, session_id, "recall", {})
    assert stolen.status_code == 404
    assert stolen.json["error"]["code"] == -32001
    made_up = call(client, editor_token, "x" * 32, "recall", {})
    assert made_up.status_code == 404
    assert (
        client.delete(URL, headers=auth(admin_token, **{"Mcp-Session-Id": session_id})).status_code
        == 404
    )
    assert client.delete(URL, headers=auth(editor_token)).status_code == 400
    ended = client.delete(URL, headers=auth(editor_token, **{"Mcp-Session-Id": session_id}))
    assert ended.status_code == 204
    db = ctx.extensions["test_host"]["db"]
    assert db.session.get(Session, session_id).ended_at is not None
    assert call(client, editor_token, session_id, "recall", {}).status_code == 404


def test_a_protocol_version_header_from_no_era_gets_400(client: Any, editor_token: str) -> None:
    response = client.post(
        URL,
        json=rpc("tools/list"),
        headers=auth(editor_token, **{"MCP-Protocol-Version": "1999-01-01"}),
    )
    assert response.status_code == 400
    error = response.json["error"]
    assert error["code"] == -32022
    assert error["data"]["requested"] == "1999-01-01"
    assert "2025-11-25" in error["data"]["supported"]


# -- the stateless era (2026-07-28) -----------------------------------------------


def test_server_discover(client: Any, editor_token: str, ctx: Any) -> None:
    db = ctx.extensions["test_host"]["db"]
    guidance.admin_add(
        db.session(), {"type": "convention", "text": "British spelling"}, actor_id="1"
    )
    response = modern(client, editor_token, "server/discover")
    assert response.status_code == 200
    assert "Mcp-Session-Id" not in response.headers
    result = response.json["result"]
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == MODERN
    # MCP tasks are an extension in 2026-07-28 (tests/test_mcp_tasks_extension.py).
    extensions = {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    assert result["capabilities"] == {**CAPABILITIES, **extensions}
    assert "Conventions: British spelling" in result["instructions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "chatmem"
    # `instructions` is the block, just changed: kept for a tenth of its age (see subscriptions).
    assert result["ttlMs"] < 1000 and result["cacheScope"] == "private"


def test_the_envelope_ladder(client: Any, editor_token: str) -> None:
    no_meta = modern(client, editor_token, "tools/list", meta={})
    assert (no_meta.status_code, no_meta.json["error"]["code"]) == (400, -32602)
    wrong_method = modern(client, editor_token, "tools/list", headers={"Mcp-Method": "ping"})
    assert (wrong_method.status_code, wrong_method.json["error"]["code"]) == (400, -32020)
    wrong_name = modern(
        client, editor_token, "tools/call", {"name": "recall"}, headers={"Mcp-Name": "remember"}
    )
    assert (wrong_name.status_code, wrong_name.json["error"]["code"]) == (400, -32020)
    future = dict(META, **{"io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    unsupported = modern(
        client,
        editor_token,
        "tools/list",
        meta=future,
        headers={"MCP-Protocol-Version": "2099-01-01"},
    )
    assert (unsupported.status_code, unsupported.json["error"]["code"]) == (400, -32022)
    assert unsupported.json["error"]["data"]["supported"][0] == MODERN
    unknown = modern(client, editor_token, "sampling/createMessage")
    assert (unknown.status_code, unknown.json["error"]["code"]) == (404, -32601)
    unknown_tool = modern(client, editor_token, "tools/call", {"name": "nope"})
    assert (unknown_tool.status_code, unknown_tool.json["error"]["code"]) == (400, -32602)


def test_a_base64_wrapped_mcp_name_is_decoded(client: Any, editor_token: str) -> None:
    response = modern(
        client,
        editor_token,
        "tools/call",
        {"name": "recall"},
        headers={"Mcp-Name": "=?base64?cmVjYWxs?="},
    )
    assert response.status_code == 200
    assert response.json["result"]["isError"] is False


def test_stateless_calls_group_per_token_and_idle_window(
    client: Any, editor_token: str, make_token: Any, ctx: Any
) -> None:
    db = ctx.extensions["test_host"]["db"]

    def write(token: str, title: str) -> None:
        params = {"name": "update-post", "arguments": {"post_id": 7, "title": title}}
        response = modern(client, token, "tools/call", params)
        assert response.json["result"]["isError"] is False

    assert modern(client, editor_token, "tools/call", {"name": "recall"}).status_code == 200
    assert db.session.query(Session).count() == 0  # a read alone records nothing
    write(editor_token, "one")
    write(editor_token, "two")
    write(make_token("editor", "second device"), "three")
    rows = db.session.query(LedgerEntry).order_by(LedgerEntry.id).all()
    assert rows[0].session_id == rows[1].session_id != rows[2].session_id
    first = db.session.get(Session, rows[0].session_id)
    first.last_seen_at -= timedelta(minutes=31)
    db.session.commit()
    write(editor_token, "four")
    db.session.expire_all()
    latest = db.session.query(LedgerEntry).order_by(LedgerEntry.id.desc()).first()
    assert latest.session_id not in (rows[0].session_id, rows[2].session_id)
    assert db.session.get(Session, rows[0].session_id).ended_at is not None


def test_modern_notifications_get_202(client: Any, editor_token: str) -> None:
    response = client.post(
        URL,
        json=rpc("notifications/cancelled", {"requestId": 1}, id=None),
        headers=auth(editor_token, **{"MCP-Protocol-Version": MODERN}),
    )
    assert response.status_code == 202
    assert response.data == b""


# -- the module switch ------------------------------------------------------------


def test_memory_off_hides_memory_tools_and_mints_no_session(
    client: Any, editor_token: str, memory: Any, admin: Any
) -> None:
    memory.set_setting("memory_enabled", False, actor=admin)
    response = initialize(client, editor_token)
    assert "Mcp-Session-Id" not in response.headers
    listed = client.post(URL, json=rpc("tools/list"), headers=auth(editor_token)).json["result"]
    names = [tool["name"] for tool in listed["tools"]]
    assert "recall" not in names and "update-post" in names
    refused = call(client, editor_token, None, "recall", {}).json["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "memory_disabled"


def test_a_server_fault_is_a_json_rpc_error_not_a_crash(
    client: Any, editor_token: str, ctx: Any, caplog: pytest.LogCaptureFixture
) -> None:
    db = ctx.extensions["test_host"]["db"]
    db.session.execute(db.text("DROP TABLE chatmem_state"))
    db.session.commit()
    response = client.post(URL, json=rpc("ping"), headers=auth(editor_token))
    assert response.status_code == 200
    assert response.json["error"] == {"code": -32603, "message": "Internal error; it was logged."}
    assert "chatmem_state" not in response.get_data(as_text=True)
    assert "MCP request failed" in caplog.text
    rest = client.get("/chatmem/api/tools", headers=auth(editor_token))
    assert rest.status_code == 500
    assert rest.json["error"]["code"] == "internal_error"
    assert "chatmem_state" not in rest.get_data(as_text=True)
