"""Erasure of one person (`flask chatmem erase-user`, `memory.erase_user`).

One user leaves a marker through every channel and feature: chat messages
and the transcript, a proposal, REST and MCP calls, a session summary, a held
call and its webhook notice, a token, a setting, a decision on someone else's
held call. After the erasure no chatmem table, search index or export holds
the marker, the name, or the id in any text column (the tables come from the
metadata, so a table added later is scanned too), while another user's data
is as it was.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import String, Text, delete, func, select, text

from chatmem.demo.extensions import db, memory
from chatmem.demo.models import User
from chatmem.memory import guidance
from chatmem.memory.models import Base, Guidance, HeldCall, LedgerEntry, Session
from tests.channels import MCP, REST, SCREEN, make_token
from tests.demo_client import DemoClient
from tests.demo_story import admin_id, approve
from tests.hostapp import reconfigure
from tests.test_secrets import dump_chatmem_tables

MARK = "Qz7plume"
ERASED = "quillfeather"


def add_user(app: Flask, username: str, capabilities: str) -> str:
    with app.app_context():
        user = User(username=username, capability_names=capabilities)
        user.set_password(username)
        db.session.add(user)
        db.session.commit()
        return str(user.id)


def header_id(app: Flask) -> int:
    with app.app_context():
        from chatmem.demo.models import Post

        return int(db.session.scalars(select(Post.id).filter_by(title="Site header")).one())


def erase(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["chatmem", "erase-user", *args])


def call(app: Flask, token: str, name: str, arguments: dict[str, Any]) -> Any:
    response = app.test_client().post(
        f"{REST}/{name}", json=arguments, headers={"Authorization": f"Bearer {token}"}
    )
    return response.status_code, response.get_json()


def mcp_call(
    app: Flask, token: str, name: str, arguments: dict[str, Any], task: Any = None
) -> dict[str, Any]:
    """A tools/call; with `task`, as a 2025-11-25 client that waits on an MCP task."""
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    headers = {"Authorization": f"Bearer {token}"}
    if task is not None:
        params["task"] = task
        headers["MCP-Protocol-Version"] = "2025-11-25"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = app.test_client().post(MCP, json=body, headers=headers)
    assert response.status_code == 200, response.get_data(as_text=True)
    return dict(response.json["result"])


def allow(client: DemoClient, request_id: int) -> None:
    response = client.client.post(
        f"{SCREEN}/held/{request_id}/allow",
        data={"csrf_token": client.csrf},
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 200, response.get_data(as_text=True)


def counts_of(app: Flask, user_id: str) -> dict[str, int]:
    with app.app_context():
        return {
            "sessions": db.session.scalar(
                select(func.count()).select_from(Session).where(Session.user_id == user_id)
            ),
            "ledger": db.session.scalar(
                select(func.count()).select_from(LedgerEntry).where(LedgerEntry.user_id == user_id)
            ),
            "proposals": db.session.scalar(
                select(func.count()).select_from(Guidance).where(Guidance.created_by == user_id)
            ),
        }


def index_blobs(app: Flask) -> bytes:
    """SQLite's FTS5 index pages: they keep a deleted row's trigrams until a merge."""
    with app.app_context(), db.engine.connect() as connection:
        if connection.dialect.name != "sqlite":
            return b""
        tables = ("chatmem_session_fts_data", "chatmem_guidance_fts_data")
        return b"".join(
            bytes(block)
            for table in tables
            for block in connection.scalars(text(f"SELECT block FROM {table}"))
            if block
        )


TRIGRAMS = [MARK.lower()[i : i + 3].encode() for i in range(len(MARK) - 2)]


def text_cells_equal_to(app: Flask, value: str) -> list[str]:
    """Every string column of every chatmem table (from the metadata) that holds `value`."""
    found = []
    with app.app_context(), db.engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            for column in table.columns:
                if isinstance(column.type, String | Text):
                    hits = connection.scalar(
                        select(func.count()).select_from(table).where(column == value)
                    )
                    if hits:
                        found.append(f"{table.name}.{column.name}")
    return found


@pytest.fixture
def planted(demo_app: Flask) -> dict[str, Any]:
    """The person to erase, a site admin, leaves the marker everywhere chatmem keeps anything."""
    app = demo_app
    reconfigure(
        app, CHATMEM_RATE_LIMIT_PER_MINUTE=0, CHATMEM_NOTIFY_WEBHOOK="http://127.0.0.1:9/hook"
    )
    quill_id = add_user(app, ERASED, "manage_options edit_posts")
    editor_id = _user_id(app, "editor")
    with app.app_context():
        quill = db.session.get(User, int(quill_id))
        memory.set_setting("auto_summarize", True, actor=quill)
        guidance.admin_add(
            db.session(),
            {
                "type": "guardrail",
                "title": "Ask before the header",
                "text": "Ask first.",
                "target": f"post_id:{header_id(app)}",
                "severity": "ask",
            },
            actor_id=admin_id(app),
        )
    token, editor_token = make_token(app, ERASED), make_token(app, "editor")

    # The chat: a proposal, messages, a tool call; closing it queues a summary with the transcript.
    quill_chat = DemoClient(app, ERASED)
    conversation = quill_chat.new_conversation()["id"]
    quill_chat.say(
        conversation, f'/tool remember {{"type": "fact", "text": "Deploy {MARK} notes"}}'
    )
    quill_chat.say(conversation, f"please remember {MARK} for later")
    quill_chat.say(conversation, f'/tool update-post {{"post_id": 1, "content": "{MARK} chat"}}')
    quill_chat.close(conversation)

    # REST and MCP: a proposal the site approves, a ledgered call, a summary, a held call.
    status, kept = call(
        app, token, "remember", {"type": "convention", "text": "Use sentence case."}
    )
    assert status == 200
    approve(app, kept["id"])
    assert call(app, token, "update-post", {"post_id": 2, "content": f"{MARK} rest"})[0] == 200
    summary = mcp_call(app, token, "save-session-summary", {"summary": f"Did {MARK} work."})
    assert summary["structuredContent"]["recorded"] is True
    # An MCP task keeps the call's answer until its ttl: the marker is in it.
    tasked = mcp_call(app, token, "update-post", {"post_id": 2, "content": f"{MARK} task"}, {})
    assert tasked["task"]["status"] == "completed"
    status, held = call(app, token, "update-post", {"post_id": header_id(app), "title": MARK})
    assert held["error"]["code"] == "approval_required"

    # The person, as a curator, allows the editor's held call: their name is in its ledger row.
    status, editors = call(
        app, editor_token, "update-post", {"post_id": header_id(app), "title": "E"}
    )
    allow(DemoClient(app, ERASED), editors["error"]["request_id"])
    assert (
        call(app, editor_token, "update-post", {"post_id": header_id(app), "title": "E"})[0] == 200
    )
    editor_chat = DemoClient(app, "editor")
    theirs = editor_chat.new_conversation()["id"]
    editor_chat.say(theirs, '/tool remember {"type": "fact", "text": "The editor keeps this."}')
    editor_chat.close(theirs)

    _names, dumped = dump_chatmem_tables(app)
    assert MARK in dumped and re.search(rf"\b{ERASED}\b", dumped), "planted everywhere"
    blobs = index_blobs(app)
    assert not blobs or any(trigram in blobs for trigram in TRIGRAMS), "and in the search index"
    return {
        "quill_id": quill_id,
        "editor_id": editor_id,
        "token": token,
        "kept": kept["id"],
        "editor_request": editors["error"]["request_id"],
        "editor_before": counts_of(app, editor_id),
        "quill_before": counts_of(app, quill_id),
    }


def _user_id(app: Flask, username: str) -> str:
    with app.app_context():
        return str(db.session.scalars(select(User.id).filter_by(username=username)).one())


def test_erasing_a_person_leaves_no_marker_name_or_id_and_others_untouched(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    app = demo_app
    result = erase(app, ERASED, "--yes")
    assert result.exit_code == 0, result.output
    sessions = planted["quill_before"]["sessions"]
    assert sessions >= 3  # the chat's, REST's and MCP's
    assert re.search(rf"^chatmem_session\s+{sessions}$", result.output, re.M), result.output
    assert re.search(r"^chatmem_token\s+1$", result.output, re.M)
    assert f"Erased {ERASED}:" in result.output

    _names, dumped = dump_chatmem_tables(app)
    assert MARK not in dumped
    assert re.search(rf"\b{ERASED}\b", dumped) is None
    assert text_cells_equal_to(app, planted["quill_id"]) == []
    assert [t for t in TRIGRAMS if t in index_blobs(app)] == []
    exported = app.test_cli_runner().invoke(args=["chatmem", "export"]).output
    assert MARK not in exported and ERASED not in exported

    # What the site decided stays, without the name.
    with app.app_context():
        kept = db.session.get(Guidance, planted["kept"])
        assert (kept.status, kept.created_by) == ("publish", "erased")
        request = db.session.get(HeldCall, planted["editor_request"])
        assert (request.state, request.decided_by) == ("used", "erased")
        details = db.session.scalars(
            select(LedgerEntry.detail).where(LedgerEntry.user_id == planted["editor_id"])
        ).all()
    assert any("allowed once by erased user" in (detail or "") for detail in details)
    assert counts_of(app, planted["editor_id"]) == planted["editor_before"]
    history = DemoClient(app, "admin").client.get(f"{SCREEN}/guidance/{planted['kept']}")
    assert "erased user" in history.get_data(as_text=True)

    # The token is gone; the person's next call (still a user of the host) starts afresh.
    assert call(app, planted["token"], "recall", {})[0] == 401


def test_erasing_twice_changes_nothing_the_second_time(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    assert erase(demo_app, ERASED, "--yes").exit_code == 0
    again = erase(demo_app, ERASED, "--yes")
    assert again.exit_code == 0
    rows = re.findall(r"^chatmem_\w+\s+(\d+)$", again.output, re.M)
    assert rows and set(rows) == {"0"}
    assert f"Erased {ERASED}: 0 rows removed or anonymised." in again.output


def test_erasure_is_audited_by_who_ran_it_without_the_name(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    assert erase(demo_app, ERASED, "--yes").exit_code == 0
    with demo_app.app_context():
        row = db.session.execute(
            text("SELECT actor_id, detail FROM chatmem_guidance_event WHERE action = 'user_erased'")
        ).one()
    assert row.actor_id.startswith("cli:")
    detail = row.detail if isinstance(row.detail, dict) else json.loads(row.detail)
    sessions = planted["quill_before"]["sessions"]
    assert detail["rows"]["chatmem_session"] == sessions and ERASED not in json.dumps(detail)


def test_a_person_the_host_already_deleted_is_found_by_the_name_chatmem_recorded(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    from chatmem.demo.models import ChatMessage, Conversation

    with demo_app.app_context():  # the host's own erasure first: its conversations, the account
        mine = select(Conversation.id).where(Conversation.user_id == int(planted["quill_id"]))
        db.session.execute(delete(ChatMessage).where(ChatMessage.conversation_id.in_(mine)))
        db.session.execute(delete(Conversation).where(Conversation.id.in_(mine)))
        db.session.delete(db.session.get(User, int(planted["quill_id"])))
        db.session.commit()
    result = erase(demo_app, ERASED, "--yes")
    assert result.exit_code == 0, result.output
    assert text_cells_equal_to(demo_app, planted["quill_id"]) == []


def test_an_unknown_name_is_refused_and_changes_nothing(demo_app: Flask) -> None:
    before = dump_chatmem_tables(demo_app)[1]
    result = erase(demo_app, "nobody-here", "--yes")
    assert result.exit_code == 1
    assert (
        "No user named 'nobody-here' here, and chatmem's records hold no such user."
        in result.output
    )
    assert dump_chatmem_tables(demo_app)[1] == before


def test_without_yes_the_command_asks_and_a_no_changes_nothing(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    before = dump_chatmem_tables(demo_app)[1]
    result = demo_app.test_cli_runner().invoke(args=["chatmem", "erase-user", ERASED], input="n\n")
    assert result.exit_code == 1 and "cannot be undone" in result.output
    assert dump_chatmem_tables(demo_app)[1] == before


def screen_erase(client: DemoClient, fields: dict[str, str], csrf: bool = True) -> Any:
    data = {**fields, **({"csrf_token": client.csrf} if csrf else {})}
    return client.client.post(
        f"{SCREEN}/people/erase", data=data, headers={"Accept": "application/json"}
    )


def test_a_curator_erases_a_person_on_the_screen_typing_the_name_twice(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    admin = DemoClient(demo_app, "admin")
    tab = admin.client.get(f"{SCREEN}?tab=tokens").get_data(as_text=True)
    assert "Erase a person" in tab and 'action="/chatmem/memory/people/erase"' in tab
    response = screen_erase(admin, {"username": ERASED, "confirm": ERASED})
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.json
    assert body["rows"]["chatmem_session"] == planted["quill_before"]["sessions"]
    assert body["message"].startswith(f"Erased {ERASED}: ")
    assert MARK not in dump_chatmem_tables(demo_app)[1]
    with demo_app.app_context():
        erased = db.session.scalars(
            select(text("actor_id"))
            .select_from(text("chatmem_guidance_event"))
            .where(text("action = 'user_erased'"))
        ).one()
    assert erased == admin_id(demo_app)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"username": ERASED, "confirm": "quill"}, "confirm"),
        ({"username": ERASED}, "confirm"),
        ({"username": "  ", "confirm": "  "}, "username"),
        ({"username": "admin", "confirm": "admin"}, "username"),  # the curator themselves
    ],
    ids=["wrong-confirm", "no-confirm", "blank", "self"],
)
def test_a_screen_erasure_without_a_matching_confirmation_or_of_oneself_changes_nothing(
    demo_app: Flask, planted: dict[str, Any], fields: dict[str, str], field: str
) -> None:
    before = dump_chatmem_tables(demo_app)[1]
    response = screen_erase(DemoClient(demo_app, "admin"), fields)
    assert response.status_code == 400
    assert (response.json["error"]["code"], response.json["error"]["field"]) == (
        "invalid_params",
        field,
    )
    assert dump_chatmem_tables(demo_app)[1] == before


def test_an_unknown_person_on_the_screen_is_not_found(demo_app: Flask) -> None:
    response = screen_erase(DemoClient(demo_app, "admin"), {"username": "nob", "confirm": "nob"})
    assert response.status_code == 404 and response.json["error"]["code"] == "not_found"


def test_only_a_signed_in_curator_with_csrf_may_erase(
    demo_app: Flask, planted: dict[str, Any]
) -> None:
    before = dump_chatmem_tables(demo_app)[1]
    fields = {"username": ERASED, "confirm": ERASED}
    assert screen_erase(DemoClient(demo_app, "editor"), fields).status_code == 403
    assert screen_erase(DemoClient(demo_app, "admin"), fields, csrf=False).status_code == 403
    admin_token = make_token(demo_app, "admin")
    by_token = demo_app.test_client().post(
        f"{SCREEN}/people/erase",
        data=fields,
        headers={"Authorization": f"Bearer {admin_token}", "Accept": "application/json"},
    )
    assert by_token.status_code in (401, 403)  # a token never opens the curator's screen
    after = dump_chatmem_tables(demo_app)[1]
    assert MARK in after and after.count(MARK) == before.count(MARK)


def test_erasing_someone_mid_work_ends_their_session_and_held_call(memory: Any, db: Any) -> None:
    """An open session and a call waiting for a person go with the erasure; the session's
    next call is refused as unknown, and a decision on the held call finds nothing."""
    from chatmem import ChatmemError
    from chatmem.memory import held as held_calls
    from tests.test_ask_severity import ADMIN, EDITOR, ask, held_call

    ask(db)
    sid = memory.start_session(EDITOR, "rest")
    request_id = held_call(memory)
    report = memory.erase_user(EDITOR, actor_id=str(ADMIN.id))
    assert report["chatmem_session"] >= 2 and report["chatmem_held_call"] == 1
    with pytest.raises(ChatmemError) as unknown:
        memory.call_tool("update-post", {"post_id": 4, "title": "x"}, user=EDITOR, session_id=sid)
    assert unknown.value.code == "not_found"
    with pytest.raises(ChatmemError) as gone:
        held_calls.decide(
            db.session(),
            request_id,
            "allow",
            actor_id="1",
            actor_name="admin",
            note=None,
            grant_minutes=30,
        )
    assert gone.value.code == "not_found"
    # Work they start afterwards is theirs again, from nothing.
    assert memory.start_session(EDITOR, "rest") != sid
