"""The change ledger: what each call leaves in it, and the digest built from it."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import ChatmemError, NotFound
from chatmem.memory import guidance
from chatmem.memory.models import LedgerEntry, Session
from tests.hostapp import reconfigure

FIELDS = (
    "session_id",
    "user_id",
    "channel",
    "tool",
    "arguments",
    "outcome",
    "error_code",
    "detail",
)


def rows(db: Any) -> list[tuple[Any, ...]]:
    entries = db.session.query(LedgerEntry).order_by(LedgerEntry.id)
    return [tuple(getattr(e, f) for f in FIELDS) for e in entries]


def refused(memory: Any, user: Any, name: str, arguments: Any, **options: Any) -> str:
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool(name, arguments, user=user, **options)
    return caught.value.code


def with_failing_tool(memory: Any, message: str) -> None:
    @memory.tool(
        name="find-page",
        description="Always misses.",
        input_schema={"type": "object", "properties": {"slug": {"type": "string"}}},
    )
    def find_page(slug: str = "") -> dict[str, Any]:
        raise NotFound(message)


# -- the fields of a row -------------------------------------------------------------


def test_a_write_records_every_field(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "rest")
    call = {"title": "Hi", "post_id": "007"}
    memory.call_tool("update-post", call, user=editor, session_id=sid, channel="rest")
    assert rows(db) == [
        (sid, "2", "rest", "update-post", {"post_id": 7, "title": "Hi"}, "ok", None, None)
    ]


def test_a_refusal_records_the_guardrail_id_and_title(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    rule = guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "Never touch checkout",
            "title": "Checkout is frozen",
            "target": "post_id:42",
            "severity": "block",
        },
        actor_id="1",
    )
    sid = memory.start_session(editor, "python")
    call = {"post_id": 42, "title": "x"}
    assert refused(memory, editor, "update-post", call, session_id=sid) == "blocked_by_memory"
    detail = f"guidance #{rule.id}: Checkout is frozen"
    assert rows(db) == [
        (sid, "2", "python", "update-post", call, "blocked", "blocked_by_memory", detail)
    ]


def test_a_failure_records_its_code_and_message(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "chat")
    call = {"post_id": 999, "title": "x"}
    assert refused(memory, editor, "update-post", call, session_id=sid, channel="chat") == (
        "not_found"
    )
    assert refused(memory, editor, "explode", {}, session_id=sid, channel="chat") == "tool_error"
    assert rows(db) == [
        (sid, "2", "chat", "update-post", call, "error", "not_found", "No post 999."),
        (
            sid,
            "2",
            "chat",
            "explode",
            {},
            "error",
            "tool_error",
            "The tool explode failed; the error was logged.",
        ),
    ]


def test_a_long_error_message_is_cut_at_500_characters(memory: Any, db: Any, editor: Any) -> None:
    with_failing_tool(memory, "m" * 600)
    assert refused(memory, editor, "find-page", {}) == "not_found"
    [row] = rows(db)
    assert row[-1] == "m" * 500


def test_long_argument_values_are_cut_at_the_configured_length(
    memory: Any, db: Any, ctx: Any, editor: Any
) -> None:
    reconfigure(ctx, CHATMEM_LEDGER_VALUE_MAX=10)
    memory.call_tool("update-post", {"post_id": 7, "title": "abcdefghijklmnop"}, user=editor)
    [row] = rows(db)
    assert row[4] == {"post_id": 7, "title": "abcdefghij… [+6 chars]"}


@pytest.mark.parametrize("fails", [False, True], ids=["ok", "error"])
def test_a_write_without_a_session_starts_one_for_its_user(
    memory: Any, db: Any, editor: Any, fails: bool
) -> None:
    post_id = 999 if fails else 7
    if fails:
        refused(memory, editor, "update-post", {"post_id": post_id, "title": "x"})
    else:
        memory.call_tool("update-post", {"post_id": post_id, "title": "x"}, user=editor)
    [session] = db.session.query(Session).all()
    assert (session.user_id, session.user_name, session.channel) == ("2", "editor", "python")
    [row] = rows(db)
    assert (row[0], row[5]) == (session.id, "error" if fails else "ok")


def test_failed_read_only_calls_are_not_ledgered(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    assert refused(memory, editor, "get-post", {"post_id": 999}, session_id=sid) == "not_found"
    assert refused(memory, editor, "get-post", {"post_id": 999}) == "not_found"
    assert rows(db) == []
    assert [s.id for s in db.session.query(Session)] == [sid]


def test_with_memory_off_nothing_is_ledgered_and_no_session_starts(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    memory.set_setting("memory_enabled", False, actor=admin)
    assert memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor)
    assert refused(memory, editor, "update-post", {"post_id": 999, "title": "x"}) == "not_found"
    assert refused(memory, editor, "explode", {}) == "tool_error"
    # A session id is not even looked up while capture is off.
    call = {"post_id": 7, "title": "y"}
    assert memory.call_tool("update-post", call, user=editor, session_id="gone") == {
        "id": 7,
        "title": "y",
    }
    assert (rows(db), db.session.query(Session).count()) == ([], 0)


def test_an_unknown_session_is_refused_before_anything_runs(
    memory: Any, db: Any, ctx: Any, editor: Any
) -> None:
    call = {"post_id": 7, "title": "x"}
    assert refused(memory, editor, "update-post", call, session_id="gone") == "not_found"
    assert rows(db) == []
    assert db.session.get(ctx.extensions["test_host"]["Post"], 7).title == "Hello"


# -- the digest ---------------------------------------------------------------------


def digest_line(row: LedgerEntry, rest: str) -> str:
    return f"- {row.at:%H:%M:%S} {row.tool} {rest}"


def test_the_digest_text(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    rule = guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "No header edits",
            "target": "post_id:3",
            "severity": "block",
        },
        actor_id="1",
    )
    with_failing_tool(memory, "")
    sid = memory.start_session(editor, "python")
    memory.call_tool("update-post", {"title": "Café ☕", "post_id": 7}, user=editor, session_id=sid)
    refused(memory, editor, "update-post", {"post_id": 3, "title": "x"}, session_id=sid)
    refused(memory, editor, "update-post", {"post_id": 999, "title": "y"}, session_id=sid)
    refused(memory, editor, "find-page", {"slug": "home"}, session_id=sid)
    memory.call_tool("save-session-summary", {"summary": "Renamed 7."}, user=editor, session_id=sid)
    ledgered = db.session.query(LedgerEntry).order_by(LedgerEntry.id).all()
    assert [r.tool for r in ledgered][-1] == "save-session-summary"  # ledgered, not digested
    ok, blocked, failed, silent = ledgered[:4]
    digest = "\n".join(
        [
            "4 calls: 1 ok, 1 blocked, 2 failed.",
            digest_line(ok, '{"post_id": 7, "title": "Café ☕"} → ok'),
            digest_line(
                blocked,
                '{"post_id": 3, "title": "x"} → blocked '
                f"(blocked_by_memory: guidance #{rule.id}: No header edits)",
            ),
            digest_line(failed, '{"post_id": 999, "title": "y"} → error (not_found: No post 999.)'),
            digest_line(silent, '{"slug": "home"} → error (not_found)'),
        ]
    )
    session = db.session.get(Session, sid)
    assert (session.digest, session.change_count) == (digest, 4)


def test_one_call_is_one_call(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor, session_id=sid)
    memory.end_session(sid)
    session = db.session.get(Session, sid)
    assert session.digest.splitlines()[0] == "1 call: 1 ok, 0 blocked, 0 failed."
    assert session.change_count == 1


def test_a_session_without_changes(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    memory.call_tool("get-post", {"post_id": 7}, user=editor, session_id=sid)
    memory.call_tool("save-session-summary", {"summary": "Looked."}, user=editor, session_id=sid)
    memory.end_session(sid)
    session = db.session.get(Session, sid)
    assert (session.digest, session.change_count) == ("No changes were made.", 0)


def test_a_digest_covers_its_own_session_only(memory: Any, db: Any, editor: Any) -> None:
    first = memory.start_session(editor, "python")
    second = memory.start_session(editor, "python")
    memory.call_tool("update-post", {"post_id": 7, "title": "one"}, user=editor, session_id=first)
    memory.call_tool("update-post", {"post_id": 7, "title": "two"}, user=editor, session_id=second)
    memory.call_tool("create-user", {"username": "u"}, user=editor, session_id=second)
    memory.end_session(first)
    memory.end_session(second)
    digests = {sid: db.session.get(Session, sid).digest.splitlines() for sid in (first, second)}
    assert [line.split(" ", 2)[2] for line in digests[first][1:]] == [
        'update-post {"post_id": 7, "title": "one"} → ok'
    ]
    assert [line.split(" ", 2)[2] for line in digests[second][1:]] == [
        'update-post {"post_id": 7, "title": "two"} → ok',
        'create-user {"username": "u"} → ok',
    ]
