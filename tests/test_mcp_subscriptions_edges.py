"""Memory change notifications at their edges, as an MCP client sees them on the wire.

What `tests/test_mcp_subscriptions.py` leaves open: the exact bytes of a frame,
a keep-alive and a stream's headers; the words and data of every refusal; the
bounds (twenty resources, streams per token and per process) at and past the
limit; a GET and a listen stream while Memory is off. A stream is read chunk
by chunk, as the server sends it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from chatmem.http.mcp import subscriptions as listening
from chatmem.memory import guidance
from chatmem.memory import subscriptions as watching
from tests import test_mcp_subscriptions as subscribed
from tests.hostapp import USERS, reconfigure
from tests.test_mcp_subscriptions import (
    BLOCK,
    MCP,
    Session,
    add_fact,
    edit,
    entry_uri,
    in_app,
    listen,
    modern_post,
)

# The same fixtures: a check every 50 ms, a stream of 500 ms, the editor's session.
app, http, session = subscribed.app, subscribed.http, subscribed.session

META = {"io.modelcontextprotocol/subscriptionId": "listen-1"}
KEEP_ALIVE = ":\n\n"


def sse(message: dict[str, Any]) -> str:
    """One server-sent event as chatmem writes it: compact JSON, UTF-8 kept as is."""
    data = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return f"event: message\ndata: {data}\n\n"


def told_frame(uri: str, meta: dict[str, Any] | None = None) -> str:
    params: dict[str, Any] = {"uri": uri} | ({"_meta": meta} if meta else {})
    return sse({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params})


def ack_frame(honored: dict[str, Any]) -> str:
    acknowledged = {"notifications": honored, "_meta": META}
    method = "notifications/subscriptions/acknowledged"
    return sse({"jsonrpc": "2.0", "method": method, "params": acknowledged})


END_FRAME = sse(
    {"jsonrpc": "2.0", "id": "listen-1", "result": {"_meta": META, "resultType": "complete"}}
)


def chunks(response: Any) -> Iterator[str]:
    """What the server writes, one write at a time."""
    for chunk in response.response:
        yield chunk.decode() if isinstance(chunk, bytes) else chunk


def switch_memory(app: Flask, on: bool) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        memory.set_setting("memory_enabled", on, actor=USERS["admin"])


def add_facts(app: Flask, count: int) -> list[int]:
    def add(db: Any) -> list[int]:
        return [
            guidance.admin_add(db, {"type": "fact", "text": f"Fact {n}"}, actor_id="1").id
            for n in range(count)
        ]

    return in_app(app, add)


@pytest.fixture
def streams(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """The process's count of open streams starts at zero, as in a newly started worker;
    the listen responses put here are closed at the end, newest first (each holds a
    request context)."""
    monkeypatch.setattr(listening, "STREAMS", listening._Streams())
    opened: list[Any] = []
    yield opened
    for response in reversed(opened):
        response.close()


# -- the handshake era ----------------------------------------------------------------


def test_a_get_writes_each_change_as_an_event_then_when_to_come_back(
    app: Flask, session: Session, http: FlaskClient
) -> None:
    first, second = add_fact(app, "Checkout is page 42"), add_fact(app, "The shop opens at 9")
    for entry in (second, first):
        session.rpc("resources/subscribe", {"uri": entry_uri(entry)})
    edit(app, first, "Checkout is page 43")
    edit(app, second, "The shop opens at 10")
    response = http.get(MCP, headers=session.headers(**{"Mcp-Session-Id": session.id}))
    # Two events back to back, in the order of their URIs, then the retry hint.
    expected = told_frame(entry_uri(first)) + told_frame(entry_uri(second)) + "retry: 50\n\n"
    assert response.get_data(as_text=True) == expected
    # Never kept by a cache, never held back by a proxy.
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Accel-Buffering"] == "no"


def test_while_memory_is_off_a_session_is_told_nothing_then_what_changed_meanwhile(
    app: Flask, session: Session
) -> None:
    entry = add_fact(app, "Checkout is page 42")
    session.rpc("resources/subscribe", {"uri": entry_uri(entry)})
    switch_memory(app, False)
    edit(app, entry, "Checkout is page 43")
    assert session.told() == []  # it may read nothing now, so it hears nothing
    switch_memory(app, True)
    assert session.told() == [entry_uri(entry)]
    assert session.told() == []


def test_subscribing_without_a_session_says_where_notifications_would_go(
    session: Session,
) -> None:
    for method in ("resources/subscribe", "resources/unsubscribe"):
        refused = session.post(method, {"uri": BLOCK}).json["error"]
        assert refused == {
            "code": -32600,
            "message": "Subscribing needs an Mcp-Session-Id session: "
            "notifications go on its GET stream.",
        }, method


def test_a_session_watching_twenty_resources_is_told_the_bound(
    app: Flask, session: Session
) -> None:
    def fill(db: Any) -> None:
        for n in range(1, 21):
            watching.add(db, session.id, entry_uri(n), "seen")
        db.commit()

    in_app(app, fill)
    over = session.rpc("resources/subscribe", {"uri": BLOCK})["error"]
    message = "A session watches at most 20 resources."
    assert over == {
        "code": -32000,
        "message": message,
        "data": {"code": "rate_limited", "message": message, "limit": 20},
    }
    # Refused, and the session can still unsubscribe and subscribe in its place.
    assert session.rpc("resources/unsubscribe", {"uri": entry_uri(20)})["result"] == {}
    assert session.rpc("resources/subscribe", {"uri": BLOCK})["result"] == {}


# -- 2026-07-28 ---------------------------------------------------------------------


def test_a_listen_stream_writes_its_acknowledgment_keep_alives_and_end_exactly(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    response = listen(http, make_token("editor"), BLOCK)
    streams.append(response)
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["X-Accel-Buffering"] == "no"
    written = list(chunks(response))
    assert written[0] == ack_frame({"resourceSubscriptions": [BLOCK]})
    assert written[-1] == END_FRAME
    # One keep-alive comment per check, a check every 50 ms for 500 ms: not one long
    # wait, not a busy loop.
    keep_alives = written[1:-1]
    assert set(keep_alives) == {KEEP_ALIVE}
    assert 2 <= len(keep_alives) <= 11, len(keep_alives)


def test_a_listen_stream_tells_a_change_as_an_event_tagged_with_its_request(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    response = listen(http, make_token("editor"), BLOCK)
    streams.append(response)
    written = chunks(response)
    next(written)  # the acknowledgment
    add_fact(app, "Checkout is page 42")
    while (chunk := next(written)) == KEEP_ALIVE:
        pass
    assert chunk == told_frame(BLOCK, META)


def test_listening_to_no_resource_is_acknowledged_as_nothing(
    http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    for notifications in ({}, {"resourceSubscriptions": []}, {"resourceSubscriptions": None}):
        params = {"notifications": notifications}
        token = make_token("editor", str(notifications))  # a token holds two streams
        response = modern_post(http, token, "subscriptions/listen", params)
        streams.append(response)
        assert response.status_code == 200, notifications
        written = list(chunks(response))
        assert written[0] == ack_frame({}), notifications
        assert written[-1] == END_FRAME, notifications


NOT_AN_OBJECT = "params.notifications must be an object."
NOT_URIS = "notifications.resourceSubscriptions must be a list of URIs."


def test_listen_says_what_is_wrong_with_its_filter(http: FlaskClient, make_token: Any) -> None:
    token = make_token("editor")
    wrong = [({}, NOT_AN_OBJECT), ({"notifications": [BLOCK]}, NOT_AN_OBJECT)]
    # A URI alone is not a list of one (nor a list of its letters).
    for uris in (BLOCK, {"uri": BLOCK}, [7], [""], [BLOCK, None], [BLOCK, ""]):
        wrong.append(({"notifications": {"resourceSubscriptions": uris}}, NOT_URIS))
    for params, message in wrong:
        refused = modern_post(http, token, "subscriptions/listen", params)
        assert refused.status_code == 400, params
        assert refused.json["error"] == {"code": -32602, "message": message}, params


def test_a_listen_stream_watches_twenty_resources_and_no_more(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    token = make_token("editor")
    twenty = [BLOCK] + [entry_uri(n) for n in add_facts(app, 19)]
    response = listen(http, token, *twenty)
    streams.append(response)
    assert response.status_code == 200
    assert next(chunks(response)) == ack_frame({"resourceSubscriptions": twenty})
    over = listen(http, token, *twenty, "chatmem://guidance/999")
    assert over.status_code == 400
    message = "A stream watches at most 20 resources."
    assert over.json["error"] == {"code": -32602, "message": message}


def test_a_refused_listen_says_why_and_the_limit_it_met(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    message = "Too many subscription streams are open; close one or listen again later."
    reconfigure(app, CHATMEM_MCP_LISTEN_STREAMS=1)
    streams.append(listen(http, make_token("editor"), BLOCK))
    # The process holds one stream: another token's is refused too.
    refused = listen(http, make_token("admin"), BLOCK)
    assert refused.status_code == 429
    assert refused.json["error"] == {
        "code": -32000,
        "message": message,
        "data": {"code": "rate_limited", "message": message, "limit": 1},
    }
    reconfigure(app, CHATMEM_MCP_LISTEN_STREAMS=0)
    off = listen(http, make_token("admin"), BLOCK)
    assert off.json["error"]["data"]["limit"] == 0


def test_each_token_holds_two_streams_of_its_own(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    reconfigure(app, CHATMEM_MCP_LISTEN_STREAMS=4)
    editor, admin = make_token("editor"), make_token("admin")
    for token in (editor, editor, admin, admin):
        streams.append(opened := listen(http, token, BLOCK))
        assert opened.status_code == 200
    refused = listen(http, make_token("editor", "third"), BLOCK)
    assert refused.status_code == 429
    assert refused.json["error"]["data"]["limit"] == 2  # the lower of the two bounds


def test_a_closed_stream_frees_its_place(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    token = make_token("editor")
    first = listen(http, token, BLOCK)
    assert first.status_code == 200
    first.close()
    for _ in range(2):
        streams.append(opened := listen(http, token, BLOCK))
        assert opened.status_code == 200


def test_a_listen_refused_for_a_missing_capability_keeps_its_words(
    http: FlaskClient, make_token: Any
) -> None:
    refused = listen(http, make_token("viewer"), BLOCK)
    assert refused.status_code == 403
    message = "Reading project memory needs the capability of the recall tool."
    assert refused.json["error"]["code"] == -32000
    assert refused.json["error"]["message"] == message
    assert refused.json["error"]["data"]["message"] == message


def test_a_listen_stream_ends_at_its_next_check_once_memory_is_off(
    app: Flask, http: FlaskClient, make_token: Any, streams: list[Any]
) -> None:
    reconfigure(app, CHATMEM_MCP_LISTEN_SECONDS=5.0)
    entry = add_fact(app, "Checkout is page 42")
    response = listen(http, make_token("editor"), BLOCK, entry_uri(entry))
    streams.append(response)
    written = chunks(response)
    next(written)  # the acknowledgment
    switch_memory(app, False)  # both resources now read as gone, but nobody may read them
    started = time.monotonic()
    assert [chunk for chunk in written if chunk != KEEP_ALIVE] == [END_FRAME]
    assert time.monotonic() - started < 2.5  # not at the end of its five seconds
