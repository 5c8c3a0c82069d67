"""A corpus of malformed input, sent through every channel of the demo app.

Each input must get a clear refusal with a stable code, never a 5xx or a
stack trace, and must change nothing: every row of every table (the demo's
and chatmem's) is the same before and after. Runs on SQLite, and on
PostgreSQL when CHATMEM_TEST_DATABASE_URL names one (NUL and NaN used to
fail only there).

The inputs are JSON fragments placed in a slot of each channel's request
(a tool argument, a chat message, a Memory-screen field), and whole bodies
that are not what the endpoint takes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.demo.extensions import Base as DemoBase
from chatmem.memory.models import Base as ChatmemBase
from tests.channels import Channels
from tests.dbtools import dump_tables
from tests.hostapp import reconfigure


@dataclass(frozen=True)
class Fragment:
    name: str
    json: str
    is_text: bool = False  # decodes to ordinary text: fine as a message, not as an id


DEEP = 1500
FRAGMENTS = [
    Fragment("array nested 1,500 deep", "[" * DEEP + "]" * DEEP),
    Fragment("object nested 1,500 deep", '{"a":' * DEEP + "1" + "}" * DEEP),
    Fragment("array nested 40 deep", "[" * 40 + "1" + "]" * 40),
    Fragment("object nested 40 deep", '{"a":' * 40 + "1" + "}" * 40),
    Fragment("integer of 5,000 digits", "7" * 5000),
    Fragment("negative integer of 5,000 digits", "-" + "7" * 5000),
    Fragment("integer of 41 digits", "1" * 41),
    Fragment("2^63", str(2**63)),
    Fragment("-2^63 - 1", str(-(2**63) - 1)),
    Fragment("2^64", str(2**64)),
    Fragment("10^30", "1" + "0" * 30),
    Fragment("digit string of 5,000 digits", '"' + "9" * 5000 + '"', is_text=True),
    Fragment("digit string 2^63", f'"{2**63}"', is_text=True),
    Fragment("digit string 2^64 padded", f'"  {2**64} "', is_text=True),
    Fragment("digit string of 20 nines", '"' + "9" * 20 + '"', is_text=True),
    Fragment("float of 5,000 digits", "1" * 5000 + ".5"),
    Fragment("1e400", "1e400"),
    Fragment("-1e400", "-1e400"),
    Fragment("1e999999999", "1e999999999"),
    Fragment("1e300 (integer-valued float past 64 bits)", "1e300"),
    Fragment("NaN", "NaN"),
    Fragment("Infinity", "Infinity"),
    Fragment("-Infinity", "-Infinity"),
    Fragment("lone high surrogate", '"\\ud800"'),
    Fragment("lone low surrogate", '"\\udfff"'),
    Fragment("surrogate inside text", '"a\\udc00b"'),
    Fragment("surrogate pair reversed", '"\\ude00\\ud83d"'),
    Fragment("NUL alone", '"\\u0000"'),
    Fragment("NUL inside text", '"abc\\u0000def"'),
    Fragment("NUL in a key", '{"\\u0000": 1}'),
    Fragment("surrogate in a key", '{"\\ud800": 1}'),
    Fragment("NUL in a list", '["\\u0000"]'),
    Fragment("NaN in a list", "[NaN]"),
    Fragment("superscript digit", '"\\u00b2"', is_text=True),
    Fragment("hex text", '"0x10"', is_text=True),
    Fragment("exponent text", '"1e3"', is_text=True),
    Fragment("negative text", '"-5"', is_text=True),
    Fragment("true", "true"),
    Fragment("null", "null"),
    Fragment("empty list", "[]"),
    Fragment("empty object", "{}"),
    Fragment("empty text", '""'),
    Fragment("blank text", '"   "'),
    Fragment("minus one", "-1"),
    Fragment("fraction", "1.5"),
    Fragment("huge text", '"' + "x" * 100_000 + '"', is_text=True),
]

WHOLE_BODIES = [
    ("empty", b""),
    ("not JSON", b"not json"),
    ("cut short", b'{"post_id": 1'),
    ("trailing comma", b'{"post_id": 1,}'),
    ("single quotes", b"{'post_id': 1}"),
    ("not UTF-8", b"\xff\xfe\x00{"),
    ("UTF-8 BOM", b"\xef\xbb\xbf{}"),
    ("a list", b"[1, 2]"),
    ("a string", b'"post_id"'),
    ("null", b"null"),
    ("a number", b"42"),
    ("NaN", b"NaN"),
    ("nested 1,500 deep", b"[" * DEEP + b"]" * DEEP),
    ("objects nested 100,000 deep", b'{"a":' * 100_000 + b"}" * 100_000),
    ("two documents", b'{"post_id": 1}{"post_id": 2}'),
    ("trailing garbage", b'{"post_id": 1} x'),
    ("a NUL byte", b"\x00"),
    ("duplicate key, last one bad", b'{"post_id": 1, "post_id": "\\ud800"}'),
    ("form encoding", b"post_id=1&title=x"),
    ("number of 5,000 digits", b'{"post_id": ' + b"1" * 5000 + b"}"),
    ("whitespace only", b"\t\n  "),
    ("one brace too many", b"{}}"),
    ("unclosed list", b'{"a": [1, 2'),
    ("true", b"true"),
]

# Stable codes a refusal may carry (SPEC §11, JSON-RPC for MCP).
CODES = {"invalid_params", "not_found", "payload_too_large", "forbidden"}
RPC_CODES = {-32700, -32600, -32602}


def test_the_corpus_is_large_enough() -> None:
    assert len(FRAGMENTS) + len(WHOLE_BODIES) >= 60


@pytest.fixture
def channels(demo_app: Flask) -> Iterator[Channels]:
    yield Channels(demo_app)


class Ledger:
    """Every row before, compared after each input: what changed, by table."""

    def __init__(self, channels: Channels, *, ignore: tuple[str, ...] = ()) -> None:
        # One good call first: a token's first use stamps its last_used_at.
        assert channels.http.get("/chatmem/api/tools", headers=channels.auth()).status_code == 200
        app = channels.app
        with app.app_context():
            self.engine = app.extensions["sqlalchemy"].engine
        self.ignore = ignore
        self.before = self.dump()

    def dump(self) -> dict[str, list[tuple[str, ...]]]:
        rows = dump_tables(self.engine, ChatmemBase.metadata, DemoBase.metadata)
        return {t: r for t, r in rows.items() if t not in self.ignore}

    def changed(self) -> list[str]:
        after = self.dump()
        return [t for t in after if after[t] != self.before.get(t)]


def refusal_problem(response: Any) -> str | None:
    """What is wrong with this refusal (None: a clean 4xx with a stable code)."""
    text = response.get_data(as_text=True)
    if response.status_code >= 500 or response.status_code < 400:
        return f"status {response.status_code}: {text[:200]}"
    if "Traceback" in text or 'File "' in text:
        return "a stack trace in the body"
    body = strict_json(text)
    code = (body or {}).get("error", {}).get("code") if isinstance(body, dict) else None
    if code not in CODES:
        return f"no stable error code: {text[:200]}"
    return None


def strict_json(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:
        return None


def check(problems: list[str], label: str, problem: str | None, ledger: Ledger) -> None:
    if problem is not None:
        problems.append(f"{label}: {problem}")
    changed = ledger.changed()
    if changed:
        problems.append(f"{label}: changed {changed}")
        ledger.before = ledger.dump()


def update_post(fragment: str) -> str:
    return '{"post_id": ' + fragment + ', "title": "Renamed"}'


def titled(fragment: str) -> str:
    return '{"post_id": 1, "title": ' + fragment + "}"


def slot_bodies() -> Iterator[tuple[str, bytes]]:
    """Each fragment as a post id, each non-text one as a title too, then the whole bodies."""
    for fragment in FRAGMENTS:
        yield f"post_id = {fragment.name}", update_post(fragment.json).encode()
        if not fragment.is_text:
            yield f"title = {fragment.name}", titled(fragment.json).encode()
    for name, body in WHOLE_BODIES:
        yield f"body: {name}", body


def test_rest_refuses_every_malformed_input(channels: Channels) -> None:
    ledger = Ledger(channels)
    problems: list[str] = []
    count = 0
    for label, body in slot_bodies():
        response = channels.http.post(
            "/chatmem/api/tools/update-post",
            data=body,
            content_type="application/json",
            headers=channels.auth(),
        )
        check(problems, label, refusal_problem(response), ledger)
        count += 1
    assert not problems, "\n".join(problems)
    assert count >= 100


def mcp_problem(response: Any) -> str | None:
    """A JSON-RPC error (-32700/-32600/-32602) or a tool result with isError and a code."""
    text = response.get_data(as_text=True)
    if response.status_code >= 500:
        return f"status {response.status_code}: {text[:200]}"
    if "Traceback" in text or 'File "' in text:
        return "a stack trace in the body"
    body = strict_json(text)
    if not isinstance(body, dict):
        return f"not JSON: {text[:200]}"
    if "error" in body:
        ok = body["error"].get("code") in RPC_CODES and 400 <= response.status_code < 500
        return None if ok else f"JSON-RPC error {body['error']} with {response.status_code}"
    result = body.get("result") or {}
    code = (result.get("structuredContent") or {}).get("error", {}).get("code")
    if result.get("isError") is True and code in CODES:
        return None
    return f"not refused: {text[:200]}"


def test_mcp_refuses_every_malformed_input(channels: Channels) -> None:
    ledger = Ledger(channels)
    problems: list[str] = []
    for label, arguments in slot_bodies():
        if label.startswith("body:"):
            body = arguments  # the whole HTTP body
        else:
            body = (
                b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
                b'"params": {"name": "update-post", "arguments": ' + arguments + b"}}"
            )
        response = channels.http.post(
            "/chatmem/mcp", data=body, content_type="application/json", headers=channels.auth()
        )
        check(problems, label, mcp_problem(response), ledger)
    assert not problems, "\n".join(problems)


def test_mcp_argument_values_are_a_tool_error_the_model_can_read(channels: Channels) -> None:
    """NUL in an argument: a tool result with isError naming the field, not a crash.

    Input validation is a tool execution error in MCP (the model can correct
    itself), like a schema refusal; only a body that is not JSON is -32700.
    """
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", '
        '"params": {"name": "update-post", "arguments": {"post_id": 1, "title": "a\\u0000"}}}'
    )
    response = channels.http.post(
        "/chatmem/mcp", data=body, content_type="application/json", headers=channels.auth()
    )
    assert response.status_code == 200
    assert response.json["id"] == 7
    result = response.json["result"]
    assert result["isError"] is True
    error = result["structuredContent"]["error"]
    assert (error["code"], error["field"], error["reason"]) == (
        "invalid_params",
        "title",
        "nul_character",
    )
    deep = (
        b'{"jsonrpc": "2.0", "id": 8, "method": "ping", "params": ' + b"[" * 50 + b"]" * 50 + b"}"
    )
    response = channels.http.post(
        "/chatmem/mcp", data=deep, content_type="application/json", headers=channels.auth()
    )
    assert response.status_code == 400
    assert response.json["error"]["code"] == -32700


def chat_body(channels: Channels, body: bytes) -> Any:
    return channels.editor.client.post(
        f"/chat/api/conversations/{channels.conversation}/messages",
        data=body,
        content_type="application/json",
        headers={"X-CSRFToken": channels.editor.csrf},
    )


def test_chat_api_refuses_every_malformed_body(channels: Channels) -> None:
    """The message body itself malformed: 400 and not a row written, the message neither."""
    ledger = Ledger(channels)
    problems: list[str] = []
    inputs = [(f"body: {name}", body) for name, body in WHOLE_BODIES] + [
        (f"content = {f.name}", b'{"content": ' + f.json.encode() + b"}")
        for f in FRAGMENTS
        if not f.is_text
    ]
    for label, body in inputs:
        check(problems, label, refusal_problem(chat_body(channels, body)), ledger)
    assert not problems, "\n".join(problems)
    assert len(inputs) >= 60


def test_chat_tool_commands_refuse_every_malformed_argument(channels: Channels) -> None:
    """`/tool update-post {...}` with a bad argument: the chat says why, the post stays.

    The conversation records the turn (that is what a chat is), so its two
    tables are left out of the comparison; every other row must not change.
    """
    ledger = Ledger(channels, ignore=("demo_message", "demo_conversation"))
    problems: list[str] = []
    for fragment in FRAGMENTS:
        content = "/tool update-post " + update_post(fragment.json)
        response = chat_body(channels, json.dumps({"content": content}).encode())
        label = f"/tool post_id = {fragment.name}"
        if response.status_code == 400:  # longer than a message may be
            check(problems, label, refusal_problem(response), ledger)
            continue
        messages = (strict_json(response.get_data(as_text=True)) or {}).get("messages", [])
        last = messages[-1] if messages else {}
        refused = last.get("role") == "notice" or (
            last.get("role") == "tool"
            and last.get("outcome") == "error"
            and last["result"]["error"]["code"] in CODES
        )
        problem = None if response.status_code == 201 and refused else f"not refused: {last}"
        check(problems, label, problem, ledger)
    assert not problems, "\n".join(problems)


@pytest.fixture
def pending_entry(channels: Channels) -> int:
    result = channels.rest(
        "remember", {"type": "convention", "text": "Write dates as 2026-01-31 everywhere."}
    )
    assert result.get("status") == "pending", result
    return int(result["id"])


def screen_post(channels: Channels, path: str, **kwargs: Any) -> Any:
    headers = {
        "X-CSRFToken": channels.admin.csrf,
        "Accept": "application/json",
    }
    return channels.admin.client.post(path, headers=headers, **kwargs)


def test_memory_screen_refuses_every_malformed_field(
    channels: Channels, pending_entry: int
) -> None:
    """JSON and form fields: a version, a text, whole bodies; the entry stays pending."""
    approve = f"/chatmem/memory/guidance/{pending_entry}/approve"
    inputs: list[tuple[str, str, dict[str, Any]]] = []
    for f in FRAGMENTS:
        inputs.append((f"version = {f.name}", approve, {"data": '{"version": ' + f.json + "}"}))
        inputs.append((f"form version = {f.name}", approve, {"data": {"version": f.json}}))
        if not f.is_text:
            body = '{"type": "convention", "text": ' + f.json + "}"
            inputs.append((f"text = {f.name}", "/chatmem/memory/guidance", {"data": body}))
    for raw in ("\x00", "9" * 5000, "\u00b2", "1" * 20, "", " "):
        inputs.append((f"form version = {raw[:20]!r}", approve, {"data": {"version": raw}}))
        inputs.append(
            (
                f"form bulk id = {raw[:20]!r}",
                "/chatmem/memory/bulk",
                {"data": {"action": "approve", "id": raw, f"version-{raw}": "1"}},
            )
        )
    for name, body in WHOLE_BODIES:
        inputs.append((f"body: {name}", "/chatmem/memory/guidance", {"data": body}))
    inputs.append(("entry id 2^63", f"/chatmem/memory/guidance/{2**63}/approve", {"data": "{}"}))
    ledger = Ledger(channels)
    problems: list[str] = []
    for label, path, kwargs in inputs:
        if isinstance(kwargs["data"], str | bytes):
            kwargs = {**kwargs, "content_type": "application/json"}
        check(problems, label, refusal_problem(screen_post(channels, path, **kwargs)), ledger)
    assert not problems, "\n".join(problems)
    assert len(inputs) >= 100


def test_python_channel_refuses_every_malformed_argument(channels: Channels) -> None:
    """memory.call_tool with decoded values (NaN, 2^63, NUL...): invalid_params, no write."""
    from chatmem import ChatmemError
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    decoded: list[tuple[str, Any]] = [
        ("NaN", math.nan),
        ("inf", math.inf),
        ("2^63", 2**63),
        ("-2^63 - 1", -(2**63) - 1),
        ("10^5000", 10**500 * 10**500),
        ("1e300", 1e300),
        ("lone surrogate", "\ud800"),
        ("NUL", "a\x00b"),
        ("digit string of 5,000 digits", "9" * 5000),
    ]
    ledger = Ledger(channels)
    problems: list[str] = []
    with channels.app.app_context():
        user = db.session.scalars(select(User).filter_by(username="editor")).one()
        for name, value in decoded:
            for slot in ("post_id", "title"):
                arguments = {"post_id": 1, "title": "Renamed", slot: value}
                try:
                    memory.call_tool("update-post", arguments, user=user)
                    problems.append(f"{slot} = {name}: accepted")
                except ChatmemError as error:
                    if error.code != "invalid_params":
                        problems.append(f"{slot} = {name}: {error.code}")
                db.session.rollback()
                check(problems, f"{slot} = {name}", None, ledger)
    assert not problems, "\n".join(problems)


def test_a_stored_nan_does_not_hide_the_conversation(channels: Channels) -> None:
    """A NaN written before the input rules (SQLite stores it) still renders every message."""
    from chatmem.demo.extensions import db
    from chatmem.demo.models import ChatMessage

    with channels.app.app_context():
        if db.engine.dialect.name != "sqlite":
            pytest.skip("PostgreSQL never stored a NaN in a JSON column: it refuses the row")
        db.session.add_all(
            [
                ChatMessage(conversation_id=channels.conversation, role="user", content="hi"),
                ChatMessage(
                    conversation_id=channels.conversation,
                    role="tool",
                    tool_call_id="c1",
                    tool_name="get-post",
                    arguments={"post_id": math.nan},
                    result={"error": {"code": "invalid_params", "limit": math.inf}},
                    outcome="error",
                ),
            ]
        )
        db.session.commit()
    shown = channels.editor.client.get(f"/chat/api/conversations/{channels.conversation}")
    body = strict_json(shown.get_data(as_text=True))
    assert body is not None, "the API answer is strict JSON a browser can parse"
    assert [m["role"] for m in body["messages"]] == ["user", "tool"]
    assert body["messages"][1]["arguments"] == {"post_id": None}
    page = channels.editor.client.get(f"/chat/{channels.conversation}").get_data(as_text=True)
    embedded = page.split('<script id="chat-data" type="application/json">', 1)[1]
    data = strict_json(embedded.split("</script>", 1)[0])
    assert data is not None and len(data["messages"]) == 2


def test_sign_in_with_malformed_fields_is_a_plain_refusal(channels: Channels) -> None:
    """NUL (PostgreSQL cannot compare it), 5,000 characters, a surrogate-free odd name: 401."""
    from tests.test_rate_limits import sign_in

    ledger = Ledger(channels)
    for username in ("edi\x00tor", "e" * 5000, "\u00b2", ""):
        response = sign_in(channels.app.test_client(), username, "editor\x00")
        assert response.status_code == 401, username[:20]
        assert "Wrong username or password." in response.get_data(as_text=True)
    assert ledger.changed() == []


def test_a_models_nan_argument_is_refused_and_stored_as_null(
    demo_app: Flask, fake_llm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model (not a client) sends NaN: the call is refused, the turn stored as strict JSON.

    PostgreSQL refuses NaN in a JSON column, so storing the call as sent
    failed the whole turn there; SQLite stored it and the page went blank.
    """
    from tests.demo_client import DemoClient
    from tests.fake_llm import RESPONSES, openai_text, openai_tool_call

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-demo-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    reconfigure(demo_app, CHATMEM_PROVIDER="openai", CHATMEM_PROVIDER_MAX_RETRIES=0)
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    call = openai_tool_call("update-post", {"post_id": math.nan, "title": "Renamed"})
    fake_llm.enqueue(RESPONSES, body=call)
    fake_llm.enqueue(RESPONSES, body=openai_text("That id was not a number."))
    before = dump_tables(
        _engine(demo_app),
        DemoBase.metadata,
    )["demo_post"]
    response = editor.client.post(
        f"/chat/api/conversations/{conversation}/messages",
        json={"content": "Rename post one."},
        headers={"X-CSRFToken": editor.csrf},
    )
    assert response.status_code == 201, response.get_data(as_text=True)
    [card] = [m for m in response.json["messages"] if m["role"] == "tool"]
    assert card["outcome"] == "error"
    assert card["result"]["error"]["reason"] == "not_finite"
    assert card["arguments"] == {"post_id": None, "title": "Renamed"}
    shown = editor.client.get(f"/chat/api/conversations/{conversation}").get_data(as_text=True)
    assert strict_json(shown) is not None
    assert dump_tables(_engine(demo_app), DemoBase.metadata)["demo_post"] == before


def _engine(app: Flask) -> Any:
    with app.app_context():
        return app.extensions["sqlalchemy"].engine


def test_token_forms_refuse_malformed_fields(channels: Channels) -> None:
    """The Connect page's token form and both revoke routes: 4xx, no row changed."""
    ledger = Ledger(channels)
    form = {"csrf_token": channels.editor.csrf, "name": "laptop"}
    for days in ("9" * 5000, "1" * 20, "\u00b2", "\u0661", "-1", "1e3", "0", "1.5"):
        response = channels.editor.client.post(
            "/connect/tokens", data={**form, "expires_days": days}
        )
        assert response.status_code == 400, days[:20]
        assert "expires_days must be a whole number" in response.get_data(as_text=True)
    for name in ("a\x00b", "x" * 5000):
        response = channels.editor.client.post("/connect/tokens", data={**form, "name": name})
        assert response.status_code == 400, name[:20]
    big = 2**63
    revoke = channels.editor.client.post(f"/connect/tokens/{big}/revoke", data=form)
    assert revoke.status_code == 404
    screen = screen_post(channels, f"/chatmem/memory/tokens/{big}/revoke", data={})
    assert refusal_problem(screen) is None and screen.status_code == 404
    assert ledger.changed() == []


def test_json_nested_deep_inside_text_is_only_text(channels: Channels) -> None:
    """A summary whose text is 1,999-deep JSON: redaction leaves it as text, no 500."""
    summary = "[" * 1999 + "]" * 1999
    response = channels.http.post(
        "/chatmem/api/tools/save-session-summary",
        json={"summary": summary},
        headers=channels.auth(),
    )
    assert response.status_code == 200, response.get_data(as_text=True)[:300]


def test_a_page_number_of_nineteen_digits_is_read_as_a_number() -> None:
    """Nineteen digits still fit a database integer: the largest is taken, one more is out of
    range, never "not a whole number"."""
    from chatmem import InvalidParams
    from chatmem.inputs import INT_MAX, whole_number

    assert whole_number(str(INT_MAX), field="page") == INT_MAX
    with pytest.raises(InvalidParams) as caught:
        whole_number(str(INT_MAX + 1), field="page")
    assert caught.value.details["reason"] == "out_of_range"


def test_a_number_longer_than_forty_digits_is_refused_naming_the_body() -> None:
    from chatmem.errors import ChatmemError
    from chatmem.inputs import MAX_NUMBER_DIGITS, parse_json

    longest = "9" * MAX_NUMBER_DIGITS
    assert parse_json(f"[{longest}]", values=False) == [int(longest)]
    with pytest.raises(ChatmemError) as caught:
        parse_json(f"[{longest}9]", values=False)
    assert caught.value.details == {"field": "body", "reason": "number_too_long"}
    assert caught.value.message == "A number in the body has more than 40 digits."
