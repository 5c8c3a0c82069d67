"""Memory change notifications over MCP, in both protocol eras, as raw JSON-RPC.

Handshake era: `resources/subscribe` names a resource for the session, and
the session's GET tells it, once, what changed since it was last told.
2026-07-28: `subscriptions/listen` answers with a stream, its acknowledgment
first. A change is told to the subscribers of what it changed, and to no one
else; bad input gets its JSON-RPC error and changes nothing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select

from chatmem.auth import tokens
from chatmem.memory import guidance
from chatmem.memory.models import ApiToken, Subscription
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app

MCP = "/chatmem/mcp"
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
BLOCK = "chatmem://memory/block"


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    app = create_host_app(
        database_url, CHATMEM_MCP_NOTIFY_SECONDS=0.05, CHATMEM_MCP_LISTEN_SECONDS=0.5
    )
    yield app
    dispose(app)


@pytest.fixture
def http(app: Flask) -> FlaskClient:
    return app.test_client()


def in_app(app: Flask, action: Any) -> Any:
    with app.app_context():
        return action(app.extensions["test_host"]["db"].session())


def add_fact(app: Flask, text: str) -> int:
    return in_app(
        app, lambda db: guidance.admin_add(db, {"type": "fact", "text": text}, actor_id="1").id
    )


def edit(app: Flask, entry_id: int, text: str) -> None:
    in_app(app, lambda db: guidance.edit(db, entry_id, {"text": text}, actor_id="1"))


def entry_uri(entry_id: int) -> str:
    return f"chatmem://guidance/{entry_id}"


class Session:
    """A handshake-era client: one token, one `Mcp-Session-Id`."""

    retry_ms = 50  # CHATMEM_MCP_NOTIFY_SECONDS

    def __init__(self, http: FlaskClient, token: str) -> None:
        self.http = http
        self.token = token
        opened = self.post("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}})
        self.id = opened.headers["Mcp-Session-Id"]

    def headers(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "MCP-Protocol-Version": HANDSHAKE} | extra

    def post(self, method: str, params: dict[str, Any], *, session: bool = False) -> Any:
        headers = self.headers(**({"Mcp-Session-Id": self.id} if session else {}))
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return self.http.post(MCP, json=body, headers=headers)

    def rpc(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        response = self.post(method, params, session=True)
        assert response.status_code == 200, response.get_data(as_text=True)
        return dict(response.json)

    def told(self) -> list[str]:
        """One GET of the session's stream: the URIs it is told changed."""
        response = self.http.get(MCP, headers=self.headers(**{"Mcp-Session-Id": self.id}))
        assert response.status_code == 200, response.get_data(as_text=True)
        assert response.mimetype == "text/event-stream"
        text = response.get_data(as_text=True)
        assert text.endswith(f"retry: {self.retry_ms}\n\n")  # come back after the interval
        messages = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]
        assert {m["method"] for m in messages} <= {"notifications/resources/updated"}
        return [m["params"]["uri"] for m in messages]


@pytest.fixture
def session(http: FlaskClient, make_token: Any) -> Session:
    return Session(http, make_token("editor"))


def subscriptions(app: Flask) -> int:
    return in_app(app, lambda db: db.scalar(select(func.count()).select_from(Subscription)))


# -- the handshake era ----------------------------------------------------------------


def test_the_handshake_offers_subscriptions(session: Session) -> None:
    opened = session.post("initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}})
    assert opened.json["result"]["capabilities"]["resources"]["subscribe"] is True


def test_a_session_is_told_once_of_a_change_to_what_it_watches_and_of_nothing_else(
    app: Flask, session: Session
) -> None:
    watched = add_fact(app, "Checkout is page 42")
    other = add_fact(app, "The shop closes at six")
    assert session.rpc("resources/subscribe", {"uri": entry_uri(watched)})["result"] == {}
    assert session.told() == []

    edit(app, other, "The shop closes at seven")
    assert session.told() == []  # another entry changed: what it reads is the same

    edit(app, watched, "Checkout is page 43")
    assert session.told() == [entry_uri(watched)]
    assert session.told() == []  # told once

    in_app(app, lambda db: guidance.set_enabled(db, watched, False, actor_id="1"))
    assert session.told() == [entry_uri(watched)]  # disabled: it can no longer be read


def test_the_block_is_watched_for_approvals_and_trash(app: Flask, session: Session) -> None:
    session.rpc("resources/subscribe", {"uri": BLOCK})
    entry = add_fact(app, "Checkout is page 42")
    assert session.told() == [BLOCK]
    in_app(app, lambda db: guidance.trash(db, entry, actor_id="1"))
    assert session.told() == [BLOCK]


def test_a_subscription_made_on_one_worker_is_told_of_a_change_made_on_another(
    app: Flask, session: Session, second_worker: Flask
) -> None:
    entry = add_fact(app, "Checkout is page 42")
    session.rpc("resources/subscribe", {"uri": entry_uri(entry)})
    edit(second_worker, entry, "Checkout is page 44")
    # The second worker's own GET, for the session made on the first.
    elsewhere = Session.__new__(Session)
    elsewhere.http, elsewhere.token, elsewhere.id = (
        second_worker.test_client(),
        session.token,
        session.id,
    )
    elsewhere.retry_ms = 5000  # the second worker's default interval
    assert elsewhere.told() == [entry_uri(entry)]
    assert session.told() == []


def test_unsubscribing_stops_the_notifications(app: Flask, session: Session) -> None:
    entry = add_fact(app, "Checkout is page 42")
    session.rpc("resources/subscribe", {"uri": entry_uri(entry)})
    assert session.rpc("resources/unsubscribe", {"uri": entry_uri(entry)})["result"] == {}
    edit(app, entry, "Checkout is page 43")
    assert session.told() == []
    assert subscriptions(app) == 0


def test_subscribing_needs_a_session_a_readable_resource_and_a_bound(
    app: Flask, session: Session, make_token: Any, http: FlaskClient
) -> None:
    entry = add_fact(app, "Checkout is page 42")
    # No Mcp-Session-Id: there is no stream to tell it on.
    unbound = session.post("resources/subscribe", {"uri": BLOCK})
    assert unbound.json["error"]["code"] == -32600
    # An entry that does not exist, or is not approved.
    pending = in_app(
        app,
        lambda db: (
            guidance.propose(
                db, {"type": "fact", "text": "Pending"}, session_id=None, actor_id="2"
            )[0].id
        ),
    )
    for uri in (entry_uri(pending), "chatmem://guidance/999", "https://example.com/x"):
        refused = session.rpc("resources/subscribe", {"uri": uri})
        assert refused["error"]["code"] == -32002, uri
    # No uri at all.
    assert session.rpc("resources/subscribe", {})["error"]["code"] == -32602
    # A user without recall's capability may not watch what it may not read.
    guest = Session(http, make_token("viewer"))
    forbidden = guest.rpc("resources/subscribe", {"uri": BLOCK})
    assert forbidden["error"]["code"] == -32000
    assert forbidden["error"]["data"]["code"] == "forbidden"
    assert subscriptions(app) == 0
    # At most twenty per session; subscribing again to a watched one is not another.
    entries = [add_fact(app, f"Fact number {n}") for n in range(20)]
    for n in entries:
        assert "result" in session.rpc("resources/subscribe", {"uri": entry_uri(n)})
    assert "result" in session.rpc("resources/subscribe", {"uri": entry_uri(entries[0])})
    over = session.rpc("resources/subscribe", {"uri": entry_uri(entry)})
    assert over["error"]["data"]["code"] == "rate_limited"
    assert subscriptions(app) == 20


def test_a_session_stream_is_its_users_alone(
    app: Flask, session: Session, make_token: Any, http: FlaskClient
) -> None:
    other_token = make_token("admin")
    stolen = http.get(
        MCP,
        headers={
            "Authorization": f"Bearer {other_token}",
            "Mcp-Session-Id": session.id,
            "MCP-Protocol-Version": HANDSHAKE,
        },
    )
    assert stolen.status_code == 404
    assert http.get(MCP, headers=session.headers()).status_code == 405  # no session
    modern = http.get(
        MCP,
        headers=session.headers(**{"Mcp-Session-Id": session.id})
        | {"MCP-Protocol-Version": MODERN},
    )
    assert modern.status_code == 405
    no_token = http.get(MCP, headers={"Mcp-Session-Id": session.id})
    assert no_token.status_code == 401


def test_each_era_refuses_the_other_eras_method(session: Session, http: FlaskClient) -> None:
    assert session.rpc("subscriptions/listen", {"notifications": {}})["error"]["code"] == -32601
    refused = modern_post(http, session.token, "resources/subscribe", {"uri": BLOCK})
    assert refused.status_code == 404
    assert refused.json["error"]["code"] == -32601


# -- 2026-07-28 ---------------------------------------------------------------------


def modern_post(http: FlaskClient, token: str, method: str, params: dict[str, Any]) -> Any:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "method": method,
        "params": {**params, "_meta": meta},
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }
    return http.post(MCP, json=body, headers=headers, buffered=False)


def listen(http: FlaskClient, token: str, *uris: str) -> Any:
    return modern_post(
        http,
        token,
        "subscriptions/listen",
        {"notifications": {"resourceSubscriptions": list(uris)}},
    )


def frames(response: Any) -> Iterator[dict[str, Any]]:
    """The stream's messages, one at a time, as the client reads them."""
    buffered = ""
    for chunk in response.response:
        buffered += chunk.decode() if isinstance(chunk, bytes) else chunk
        while "\n\n" in buffered:
            event, buffered = buffered.split("\n\n", 1)
            data = [line[6:] for line in event.splitlines() if line.startswith("data: ")]
            if data:
                yield json.loads("".join(data))


def test_a_listen_stream_acknowledges_tells_changes_and_ends_gracefully(
    app: Flask, http: FlaskClient, make_token: Any
) -> None:
    watched = add_fact(app, "Checkout is page 42")
    other = add_fact(app, "The shop closes at six")
    response = listen(http, make_token("editor"), entry_uri(watched), entry_uri(watched))
    assert response.status_code == 200 and response.mimetype == "text/event-stream"
    stream = frames(response)
    meta = {"io.modelcontextprotocol/subscriptionId": "listen-1"}
    ack = next(stream)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"] == {
        "notifications": {"resourceSubscriptions": [entry_uri(watched)]},
        "_meta": meta,
    }
    edit(app, other, "The shop closes at seven")
    edit(app, watched, "Checkout is page 43")
    told = next(stream)
    assert told == {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": entry_uri(watched), "_meta": meta},
    }
    ended = next(stream)
    assert ended == {
        "jsonrpc": "2.0",
        "id": "listen-1",
        "result": {"_meta": meta, "resultType": "complete"},
    }
    assert list(stream) == []
    response.close()


def test_listen_refuses_bad_filters_unreadable_resources_and_a_flood(
    app: Flask, http: FlaskClient, make_token: Any
) -> None:
    token = make_token("editor")
    for params in ({}, {"notifications": []}, {"notifications": {"resourceSubscriptions": "x"}}):
        refused = modern_post(http, token, "subscriptions/listen", params)
        assert refused.status_code == 400 and refused.json["error"]["code"] == -32602, params
    too_many = [entry_uri(n) for n in range(1, 22)]
    assert listen(http, token, *too_many).json["error"]["code"] == -32602
    gone = listen(http, token, "chatmem://guidance/999")
    assert gone.status_code == 400 and gone.json["error"]["code"] == -32602
    forbidden = listen(http, make_token("viewer"), BLOCK)
    assert forbidden.status_code == 403
    assert forbidden.json["error"]["data"]["code"] == "forbidden"
    # Two open streams per token; the third is refused until one closes.
    first, second = listen(http, token, BLOCK), listen(http, token, BLOCK)
    flood = listen(http, token, BLOCK)
    assert flood.status_code == 429 and flood.json["error"]["data"]["code"] == "rate_limited"
    # (Closed last-opened first: in one test thread, each stream keeps its request context.)
    second.close()
    third = listen(http, token, BLOCK)
    assert third.status_code == 200
    third.close()
    first.close()


def test_listening_can_be_turned_off(database_url: str) -> None:
    app = create_host_app(database_url, CHATMEM_MCP_LISTEN_STREAMS=0)
    try:
        with app.app_context():
            memory = app.extensions["test_host"]["memory"]
            token = tokens.issue(memory, USERS["editor"], name="t")[1]
        refused = listen(app.test_client(), token, BLOCK)
        assert refused.status_code == 429
        assert refused.json["error"]["data"]["code"] == "rate_limited"
    finally:
        dispose(app)


def test_erasing_a_user_takes_their_sessions_subscriptions(app: Flask, session: Session) -> None:
    session.rpc("resources/subscribe", {"uri": BLOCK})
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        report = memory.erase_user(USERS["editor"], actor_id="1")
    assert report["chatmem_subscription"] == 1
    assert subscriptions(app) == 0


def test_modern_answers_say_how_long_to_keep_them_from_how_often_memory_changes(
    app: Flask, http: FlaskClient, make_token: Any
) -> None:
    token = make_token("editor")

    def hints(method: str, params: dict[str, Any]) -> tuple[int, str]:
        result = modern_post(http, token, method, params).json["result"]
        return result["ttlMs"], result["cacheScope"]

    # The lists name what chatmem serves: the same for everyone until a new release.
    for method in ("resources/list", "resources/templates/list", "prompts/list"):
        assert hints(method, {}) == (3_600_000, "public"), method
    # What follows the memory: a tenth of the time since it last changed (RFC 9111's
    # heuristic), at most one notification interval (50 ms here).
    add_fact(app, "Checkout is page 42")
    ttl, scope = hints("resources/read", {"uri": BLOCK})
    assert scope == "private" and ttl < 50
    time.sleep(0.6)
    assert hints("resources/read", {"uri": BLOCK}) == (50, "private")
    assert hints("tools/list", {}) == (50, "private")
    assert hints("server/discover", {}) == (50, "private")


def test_a_listen_stream_ends_at_its_next_check_once_its_token_is_revoked(
    app: Flask, http: FlaskClient, make_token: Any
) -> None:
    token = make_token("editor")
    response = listen(http, token, BLOCK)
    stream = frames(response)
    assert next(stream)["method"] == "notifications/subscriptions/acknowledged"
    with app.app_context():
        db = app.extensions["test_host"]["db"].session()
        token_id = db.scalars(select(ApiToken.id)).one()
        tokens.revoke(db, token_id)
    add_fact(app, "Checkout is page 42")  # the block changes, but the token may no longer hear it
    assert [message.get("id") for message in stream] == ["listen-1"]  # the end, and nothing else
    response.close()
