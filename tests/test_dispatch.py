"""The one dispatch path: bad input, permissions, the ledger and sessions."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import ChatmemError
from chatmem.memory.models import Guidance, LedgerEntry, Session


def counts(db: Any) -> tuple[int, int, int]:
    return (
        db.session.query(Guidance).count(),
        db.session.query(Session).count(),
        db.session.query(LedgerEntry).count(),
    )


def expect_error(
    memory: Any, user: Any, name: str, arguments: Any, code: str, field: str | None = None
) -> ChatmemError:
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool(name, arguments, user=user)
    assert caught.value.code == code, caught.value.message
    if field is not None:
        assert caught.value.details.get("field") == field, caught.value.message
        assert field.split("/")[-1] in caught.value.message
    return caught.value


BAD_INPUTS = [
    ("recall", {"type": "opinion"}, "type"),
    ("recall", {"limit": 0}, "limit"),
    ("recall", {"limit": 101}, "limit"),
    ("recall", {"limit": "ten"}, "limit"),
    ("recall", {"topic": 5}, "topic"),
    ("recall", {"topic": "x" * 201}, "topic"),
    ("recall", {"colour": "red"}, "colour"),
    ("recall", ["not", "an", "object"], "arguments"),
    ("remember", {"text": "no type"}, "type"),
    ("remember", {"type": "fact"}, "text"),
    ("remember", {"type": "rumour", "text": "x"}, "type"),
    ("remember", {"type": "fact", "text": 42}, "text"),
    ("remember", {"type": "fact", "text": "   "}, "text"),
    ("remember", {"type": "fact", "text": "x" * 1001}, "text"),
    ("remember", {"type": "fact", "text": "x", "severity": "fatal"}, "severity"),
    ("remember", {"type": "fact", "text": "x", "title": "t" * 201}, "title"),
    ("remember", {"type": "fact", "text": "x", "target": ["post_id:1"]}, "target"),
    ("remember", "fact: x", "arguments"),
    ("save-session-summary", {}, "summary"),
    ("save-session-summary", {"summary": ""}, "summary"),
    ("save-session-summary", {"summary": "x" * 4001}, "summary"),
    ("save-session-summary", {"summary": "ok", "takeaways": "be nice"}, "takeaways"),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [{"type": "fact"}]},
        "takeaways/0/text",
    ),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [{"type": "gossip", "text": "x"}]},
        "takeaways/0/type",
    ),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [{"type": "fact", "text": "x"}] * 21},
        "takeaways",
    ),
    ("save-session-summary", 17, "arguments"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), BAD_INPUTS)
def test_bad_input_is_refused_naming_the_field_and_changes_nothing(
    memory: Any, db: Any, editor: Any, tool: str, arguments: Any, field: str
) -> None:
    before = counts(db)
    error = expect_error(memory, editor, tool, arguments, "invalid_params", field)
    assert len(error.message) < 300  # never echoes a huge value back
    assert counts(db) == before


def test_host_tool_input_is_validated_too(memory: Any, db: Any, editor: Any) -> None:
    before = counts(db)
    expect_error(
        memory,
        editor,
        "update-post",
        {"post_id": "forty-two", "title": "x"},
        "invalid_params",
        "post_id",
    )
    expect_error(memory, editor, "update-post", {"post_id": 42}, "invalid_params", "title")
    assert counts(db) == before


def test_unknown_tool_is_not_found(memory: Any, editor: Any) -> None:
    expect_error(memory, editor, "drop-database", {}, "not_found")
    expect_error(memory, editor, "other/recall", {}, "not_found")


def test_capabilities_are_checked_for_every_tool(memory: Any, db: Any, users: Any) -> None:
    viewer = users["viewer"]
    before = counts(db)
    for tool, arguments in [
        ("recall", {}),
        ("remember", {"type": "fact", "text": "x"}),
        ("save-session-summary", {"summary": "x"}),
        ("update-post", {"post_id": 7, "title": "x"}),
    ]:
        expect_error(memory, viewer, tool, arguments, "forbidden")
    expect_error(memory, None, "recall", {}, "unauthorized")
    assert counts(db) == before


def test_a_crashing_host_tool_is_contained_and_ledgered(memory: Any, db: Any, editor: Any) -> None:
    error = expect_error(memory, editor, "explode", {}, "tool_error")
    assert "secret internal detail" not in error.message
    [row] = db.session.query(LedgerEntry).all()
    assert (row.tool, row.outcome, row.error_code) == ("explode", "error", "tool_error")
    assert db.session.get(Session, row.session_id) is not None


def test_a_value_the_database_refuses_is_bad_input_and_ledgered(
    memory: Any, db: Any, editor: Any
) -> None:
    # PostgreSQL refuses an integer past its column (DataError); the caller
    # sent it, so it is invalid_params, not a host bug (tool_error, 500).
    from sqlalchemy.exc import DataError

    @memory.tool(
        name="store-count",
        description="Store a count.",
        input_schema={"type": "object", "properties": {"count": {"type": "integer"}}},
    )
    def store_count(count: int) -> dict[str, Any]:
        raise DataError("UPDATE posts SET count = %(count)s", {"count": count}, Exception("range"))

    error = expect_error(memory, editor, "store-count", {"count": 2**40}, "invalid_params")
    assert error.status == 400
    assert (
        error.message == "A value given to store-count is out of the range the database can store."
    )
    assert error.details == {"field": "arguments", "reason": "out_of_range"}
    [row] = db.session.query(LedgerEntry).all()
    assert (row.tool, row.outcome, row.error_code) == ("store-count", "error", "invalid_params")
    assert row.detail == error.message


def test_a_field_the_schema_allows_but_the_tool_does_not_take_is_refused(
    memory: Any, db: Any, editor: Any
) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    ran: list[dict[str, Any]] = []

    @memory.tool(name="greet", description="Greet.", input_schema=schema, read_only=True)
    def greet(name: str = "you") -> dict[str, Any]:
        ran.append({"name": name})
        return {"hello": name}

    @memory.tool(name="greet-all", description="Greet.", input_schema=schema, read_only=True)
    def greet_all(**fields: Any) -> dict[str, Any]:
        return {"hello": sorted(fields)}

    error = expect_error(
        memory, editor, "greet", {"name": "a", "zzz": 1, "mood": 2}, "invalid_params"
    )
    assert (error.message, error.details) == ("mood is not an accepted field.", {"field": "mood"})
    assert ran == []
    assert memory.call_tool("greet", {"name": "a"}, user=editor) == {"hello": "a"}
    # A tool that takes **kwargs takes whatever its schema allows.
    assert memory.call_tool("greet-all", {"name": "a", "mood": 2}, user=editor) == {
        "hello": ["mood", "name"]
    }


def test_a_failing_tool_rolls_back_its_writes(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    expect_error(memory, editor, "update-post", {"post_id": 999, "title": "x"}, "not_found")
    memory.call_tool("update-post", {"post_id": 7, "title": "ok"}, user=editor, session_id=sid)
    outcomes = [
        (e.tool, e.outcome, e.error_code)
        for e in db.session.query(LedgerEntry).order_by(LedgerEntry.id)
    ]
    assert outcomes == [("update-post", "error", "not_found"), ("update-post", "ok", None)]


def test_read_only_calls_are_not_ledgered(memory: Any, db: Any, editor: Any) -> None:
    memory.call_tool("recall", {}, user=editor)
    memory.call_tool("get-post", {"post_id": 7}, user=editor)
    assert db.session.query(LedgerEntry).count() == 0


def test_secrets_are_redacted_and_long_values_cut(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    memory.call_tool(
        "create-user", {"username": "eve", "password": "hunter2"}, user=editor, session_id=sid
    )
    memory.call_tool(
        "update-post",
        {
            "post_id": 7,
            "title": "key sk-ant-abcdefghijklmnopqrstuvwx and Bearer abcdefghijklmnop",
            "api_key": "sk-123",
        },
        user=editor,
        session_id=sid,
    )
    memory.call_tool("create-user", {"username": "z" * 500}, user=editor, session_id=sid)
    rows = db.session.query(LedgerEntry).order_by(LedgerEntry.id).all()
    assert rows[0].arguments == {"username": "eve", "password": "[redacted:password]"}
    assert rows[1].arguments["api_key"] == "[redacted:api_key]"
    assert (
        "sk-ant" not in rows[1].arguments["title"]
        and "abcdefghijklmnop" not in rows[1].arguments["title"]
    )
    assert rows[2].arguments["username"] == "z" * 200 + "… [+300 chars]"
    result = memory.call_tool(
        "save-session-summary", {"summary": "did things"}, user=editor, session_id=sid
    )
    assert result == {"recorded": True, "proposed": 0}
    digest = db.session.get(Session, sid).digest
    assert "hunter2" not in digest and "sk-ant-abc" not in digest


def test_summary_attaches_the_digest_and_retries_are_harmless(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    from chatmem.memory import guidance

    guidance.admin_add(
        db.session(),
        {"type": "guardrail", "text": "no header", "target": "post_id:3", "severity": "block"},
        actor_id="1",
    )
    sid = memory.start_session(editor, "python")
    memory.call_tool("update-post", {"post_id": 7, "title": "New"}, user=editor, session_id=sid)
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool(
            "update-post", {"post_id": 3, "title": "Evil"}, user=editor, session_id=sid
        )
    assert caught.value.code == "blocked_by_memory"
    args = {
        "summary": "Renamed post 7.",
        "takeaways": [{"type": "fact", "text": "Post 7 is the blog intro"}],
    }
    first = memory.call_tool("save-session-summary", args, user=editor, session_id=sid)
    again = memory.call_tool("save-session-summary", args, user=editor, session_id=sid)
    assert first == {"recorded": True, "proposed": 1}
    assert again == {"recorded": True, "proposed": 0}
    assert db.session.query(Guidance).filter_by(status="pending").count() == 1
    record = memory.call_tool("recall", {"topic": "RENAMED"}, user=editor)["sessions"]
    assert len(record) == 1
    assert record[0]["summary"] == "Renamed post 7."
    assert record[0]["changes"] == 2
    lines = record[0]["digest"].splitlines()
    assert lines[0] == "2 calls: 1 ok, 1 blocked, 0 failed."
    assert "update-post" in lines[1] and '"post_id": 7' in lines[1] and lines[1].endswith("→ ok")
    assert '"post_id": 3' in lines[2] and "→ blocked (blocked_by_memory: guidance #" in lines[2]


def test_sessions_belong_to_their_user(memory: Any, admin: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool("remember", {"type": "fact", "text": "x"}, user=admin, session_id=sid)
    assert caught.value.code == "not_found"
    memory.end_session(sid)
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool("remember", {"type": "fact", "text": "x"}, user=editor, session_id=sid)
    assert caught.value.code == "not_found"


def test_recall_filters(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    from chatmem.memory import guidance

    guidance.admin_add(db.session(), {"type": "fact", "text": "Checkout is page 42"}, actor_id="1")
    guidance.admin_add(
        db.session(), {"type": "convention", "text": "Use 100% metric_units"}, actor_id="1"
    )
    assert [
        g["text"] for g in memory.call_tool("recall", {"type": "fact"}, user=editor)["guidance"]
    ] == ["Checkout is page 42"]
    assert [
        g["type"]
        for g in memory.call_tool("recall", {"topic": "CHECKOUT"}, user=editor)["guidance"]
    ] == ["fact"]
    assert (
        memory.call_tool("recall", {"topic": "100%"}, user=editor)["guidance"][0]["type"]
        == "convention"
    )
    assert (
        memory.call_tool("recall", {"topic": "_"}, user=editor)["guidance"][0]["type"]
        == "convention"
    )
    assert (
        memory.call_tool("recall", {"topic": "%"}, user=editor)["guidance"][0]["origin"] == "admin"
    )
    for i in range(5):
        sid = memory.start_session(editor, "python")
        memory.call_tool(
            "save-session-summary", {"summary": f"session {i}"}, user=editor, session_id=sid
        )
    sessions = memory.call_tool("recall", {"limit": 3}, user=editor)["sessions"]
    assert [s["summary"] for s in sessions] == ["session 4", "session 3", "session 2"]
    assert sessions[0]["user"] == "editor" and sessions[0]["source"] == "python"


def test_a_clients_session_key_names_one_session_a_read_starts_none(
    memory: Any, db: Any, editor: Any
) -> None:
    memory.call_tool("get-post", {"post_id": 7}, user=editor, session_key="desk-a", channel="rest")
    assert db.session.query(Session).count() == 0  # a read alone leaves nothing to record
    for key, title in [("desk-a", "one"), ("desk-b", "two"), ("desk-a", "three")]:
        call = {"post_id": 7, "title": title}
        memory.call_tool("update-post", call, user=editor, session_key=key, channel="rest")
    sessions = {s.external_key: s.id for s in db.session.query(Session)}
    assert sorted(sessions) == ["desk-a", "desk-b"]
    ledgered = [(e.session_id, e.arguments["title"]) for e in db.session.query(LedgerEntry)]
    assert sorted(ledgered) == sorted(
        [(sessions["desk-a"], "one"), (sessions["desk-b"], "two"), (sessions["desk-a"], "three")]
    )


def test_a_failing_ledger_write_leaves_no_session_and_no_change(
    memory: Any, db: Any, ctx: Any, editor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The implicit session, the tool's writes and the ledger line are one transaction:
    when the ledger line cannot be written, none of them is left behind."""
    from chatmem.memory import ledger

    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the ledger table is locked")

    monkeypatch.setattr(ledger, "record", broken)
    with pytest.raises(RuntimeError):
        memory.call_tool("update-post", {"post_id": 7, "title": "lost"}, user=editor)
    db.session.rollback()  # what the end of the request does
    assert counts(db) == (0, 0, 0)
    post = db.session.get(ctx.extensions["test_host"]["Post"], 7)
    assert post.title != "lost"
