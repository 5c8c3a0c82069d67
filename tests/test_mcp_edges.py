"""Two edges of the MCP transport's 2026-07-28 rules.

- A request that declares revision 2026-07-28 and calls a method that
  revision removed (`initialize`, `ping`) is not served as the handshake era:
  HTTP 404 with JSON-RPC -32601, as for any method the revision lacks.
- Whitespace around a header's value is not part of the value (RFC 9110
  §5.5): `Mcp-Name`, `Mcp-Method`, `MCP-Protocol-Version` and `Mcp-Session-Id`
  are compared trimmed, so a client that pads one is not told they mismatch.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_mcp_transport import META, MODERN, URL, auth, initialize, modern, rpc


@pytest.fixture
def client(app: Any) -> Any:
    return app.test_client()


@pytest.fixture
def editor_token(make_token: Any) -> str:
    return str(make_token("editor"))


HANDSHAKE_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"},
}


@pytest.mark.parametrize("method", ["initialize", "ping"])
@pytest.mark.parametrize("envelope", [True, False], ids=["with-meta", "bare"])
def test_a_method_2026_07_28_removed_is_not_found(
    client: Any, editor_token: str, method: str, envelope: bool
) -> None:
    params: dict[str, Any] = dict(HANDSHAKE_PARAMS) if method == "initialize" else {}
    if envelope:
        params["_meta"] = META
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    response = client.post(URL, json=rpc(method, params), headers=auth(editor_token, **headers))
    assert response.status_code == 404
    assert response.mimetype == "application/json"
    error = response.json["error"]
    assert error["code"] == -32601
    assert method in error["message"] and MODERN in error["message"]
    assert response.json["id"] == 1 and "result" not in response.json
    assert "Mcp-Session-Id" not in response.headers  # no handshake happened


def test_the_handshake_era_still_has_initialize_and_ping(client: Any, editor_token: str) -> None:
    started = initialize(client, editor_token)
    assert started.status_code == 200 and "Mcp-Session-Id" in started.headers
    headers = {"MCP-Protocol-Version": "2025-11-25"}
    pinged = client.post(URL, json=rpc("ping"), headers=auth(editor_token, **headers))
    assert (pinged.status_code, pinged.json["result"]) == (200, {})


def test_an_unknown_version_on_initialize_is_still_ignored(client: Any, editor_token: str) -> None:
    # Only a declared 2026-07-28 moves initialize out of the handshake era.
    headers = {"MCP-Protocol-Version": "2099-01-01"}
    response = client.post(
        URL, json=rpc("initialize", HANDSHAKE_PARAMS), headers=auth(editor_token, **headers)
    )
    assert response.status_code == 200
    assert response.json["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("pad", [" ", "\t", "  \t "], ids=["space", "tab", "mixed"])
def test_mcp_header_values_are_trimmed(client: Any, editor_token: str, pad: str) -> None:
    padded = {
        "MCP-Protocol-Version": f"{pad}{MODERN}{pad}",
        "Mcp-Method": f"{pad}tools/call{pad}",
        "Mcp-Name": f"{pad}recall{pad}",
    }
    response = modern(client, editor_token, "tools/call", {"name": "recall"}, headers=padded)
    assert response.status_code == 200, response.json
    assert response.json["result"]["isError"] is False


def test_a_padded_base64_mcp_name_is_trimmed_then_decoded(client: Any, editor_token: str) -> None:
    wrapped = {"Mcp-Name": " =?base64?cmVjYWxs?= "}  # "recall"
    response = modern(client, editor_token, "tools/call", {"name": "recall"}, headers=wrapped)
    assert response.status_code == 200, response.json
    assert response.json["result"]["isError"] is False


def test_trimming_does_not_hide_a_real_mismatch(client: Any, editor_token: str) -> None:
    inner = {"Mcp-Name": " re call "}  # whitespace inside the value is the value's
    response = modern(client, editor_token, "tools/call", {"name": "recall"}, headers=inner)
    assert (response.status_code, response.json["error"]["code"]) == (400, -32020)


def test_a_padded_session_id_finds_its_session(client: Any, editor_token: str) -> None:
    session_id = initialize(client, editor_token).headers["Mcp-Session-Id"]
    headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": f" {session_id}\t"}
    listed = client.post(URL, json=rpc("tools/list"), headers=auth(editor_token, **headers))
    assert listed.status_code == 200 and "tools" in listed.json["result"]
    ended = client.delete(URL, headers=auth(editor_token, **headers))
    assert ended.status_code == 204
    gone = client.post(URL, json=rpc("tools/list"), headers=auth(editor_token, **headers))
    assert gone.status_code == 404
