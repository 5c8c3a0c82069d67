"""MCP calls that name no session (2026-07-28, or a handshake-era call without
`Mcp-Session-Id`) are grouped per token, in an open `mcp` session keyed by it.

The request reads that session with its state row, in one statement, before
the token check; the call uses what was read. These tests pin what the one
statement must still decide: which session a token's calls share, another
token's apart, a session kept open by use and ended by silence.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flask import Flask
from sqlalchemy import delete, select

from chatmem.auth import tokens
from chatmem.memory.models import LedgerEntry, Session, State, utcnow
from tests.hostapp import USERS, reconfigure
from tests.test_mcp_hot_path import call, statements

IDLE = timedelta(minutes=30)  # CHATMEM_SESSION_IDLE_MINUTES' default


def update(client: Any, token: str, title: str) -> None:
    response = call(client, token, None, "update-post", {"post_id": 7, "title": title})
    assert response.status_code == 200 and response.json["result"]["isError"] is False


def sessions_by_title(db: Any) -> dict[str, str]:
    db.session.expire_all()
    return {e.arguments["title"]: e.session_id for e in db.session.scalars(select(LedgerEntry))}


def open_sessions(db: Any) -> list[Session]:
    return list(db.session.scalars(select(Session).where(Session.ended_at.is_(None))))


def test_a_tokens_calls_share_one_session_and_another_tokens_have_their_own(
    app: Flask, make_token: Any, db: Any
) -> None:
    first, second = make_token("editor"), make_token("editor", "second")
    client = app.test_client()
    update(client, first, "one")
    update(client, second, "two")
    update(client, first, "three")
    by_title = sessions_by_title(db)
    assert by_title["one"] == by_title["three"] != by_title["two"]
    keys = {s.id: s.external_key for s in open_sessions(db)}
    ids = {t.name: t.id for t in tokens.list_tokens(db.session())}
    assert keys == {
        by_title["one"]: f"token:{ids['test']}",
        by_title["two"]: f"token:{ids['second']}",
    }


def test_another_users_token_never_lands_in_the_editors_session(
    app: Flask, make_token: Any, db: Any
) -> None:
    editor, admin = make_token("editor"), make_token("admin")
    client = app.test_client()
    update(client, editor, "mine")
    update(client, admin, "theirs")
    by_title = sessions_by_title(db)
    assert by_title["mine"] != by_title["theirs"]
    owners = {s.id: s.user_id for s in open_sessions(db)}
    assert owners[by_title["mine"]] == str(USERS["editor"].id)
    assert owners[by_title["theirs"]] == str(USERS["admin"].id)


def test_a_steady_stateless_recall_reads_its_session_with_the_state(
    app: Flask, make_token: Any, db: Any
) -> None:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    token = make_token("editor")
    client = app.test_client()
    update(client, token, "opens the session")
    call(client, token, None, "recall", {})  # warms this worker's caches
    with statements(app) as seen:
        for _ in range(3):
            response = call(client, token, None, "recall", {})
            assert response.json["result"]["isError"] is False
    # Per call: the state row (with the records revision) and the token's open
    # session; the newest records are this worker's, kept for that revision.
    assert seen == ["SELECT"] * 3, seen


def test_a_session_in_use_stays_open_past_the_idle_window(
    app: Flask, make_token: Any, db: Any
) -> None:
    token = make_token("editor")
    client = app.test_client()
    update(client, token, "first")
    [session] = open_sessions(db)
    started = session.last_seen_at
    for minutes in (20, 40):  # a call every 20 minutes: never 30 minutes of silence
        session.last_seen_at = started - timedelta(minutes=20)
        db.session.commit()
        assert call(client, token, None, "recall", {}).status_code == 200  # a read is use too
        db.session.expire_all()
        assert session.last_seen_at > started - timedelta(minutes=1), minutes
        assert session.ended_at is None
    update(client, token, "later")
    by_title = sessions_by_title(db)
    assert by_title["first"] == by_title["later"]


def test_a_silent_session_is_ended_and_the_next_write_starts_another(
    app: Flask, make_token: Any, db: Any
) -> None:
    token = make_token("editor")
    client = app.test_client()
    update(client, token, "before")
    [session] = open_sessions(db)
    session.last_seen_at = utcnow() - IDLE - timedelta(minutes=1)
    db.session.commit()
    assert call(client, token, None, "recall", {}).status_code == 200
    db.session.expire_all()
    assert session.ended_at is not None  # the read ended it and started nothing
    assert open_sessions(db) == []
    update(client, token, "after")
    by_title = sessions_by_title(db)
    assert by_title["before"] != by_title["after"]
    assert [s.id for s in open_sessions(db)] == [by_title["after"]]


def test_a_session_ended_in_between_is_not_written_to_again(
    app: Flask, make_token: Any, db: Any, memory: Any
) -> None:
    token = make_token("editor")
    client = app.test_client()
    update(client, token, "before")
    [session] = open_sessions(db)
    memory.end_session(session.id)  # ended by the host, moments after its last call
    update(client, token, "after")
    by_title = sessions_by_title(db)
    assert by_title["before"] == session.id != by_title["after"]
    assert [s.id for s in open_sessions(db)] == [by_title["after"]]


def test_a_look_up_kept_for_one_key_is_not_the_answer_for_another(
    memory: Any, db: Any, editor: Any
) -> None:
    from chatmem.memory import sessions

    found = sessions.start(
        db.session(), user_id="2", user_name="editor", channel="mcp", external_key="token:2"
    )
    db.session.scalar(select(Session.id).limit(1))  # the transaction a request would be in
    sessions.remember_open(db.session(), ("2", "mcp", "token:1"), None)
    mine = sessions.find_open(db.session(), user_id="2", channel="mcp", external_key="token:2")
    assert mine is not None and mine.id == found.id
    # Kept for exactly that key, it is the answer once, then read again.
    sessions.remember_open(db.session(), ("2", "mcp", "token:2"), None)
    assert (
        sessions.find_open(db.session(), user_id="2", channel="mcp", external_key="token:2") is None
    )
    again = sessions.find_open(db.session(), user_id="2", channel="mcp", external_key="token:2")
    assert again is not None and again.id == found.id


def test_of_two_open_sessions_for_a_token_the_newest_is_used(
    app: Flask, make_token: Any, db: Any
) -> None:
    """Two calls racing to start the token's session can leave two open: one wins, always."""
    token = make_token("editor")
    client = app.test_client()
    assert call(client, token, None, "recall", {}).status_code == 200  # the token's use noted
    [made] = tokens.list_tokens(db.session())
    now = utcnow()
    for name, age in (("older", 2), ("newer", 1)):
        db.session.add(
            Session(
                id=name,
                user_id=str(USERS["editor"].id),
                user_name="editor",
                channel="mcp",
                external_key=f"token:{made.id}",
                started_at=now - timedelta(minutes=age),
                last_seen_at=now,
            )
        )
    db.session.commit()
    update(client, token, "raced")
    assert sessions_by_title(db) == {"raced": "newer"}


def test_a_session_idle_exactly_the_window_is_still_open(
    memory: Any, db: Any, monkeypatch: Any
) -> None:
    """Ended when idle *past* the window: at exactly the window it is still the client's."""
    from chatmem.memory import sessions

    started = sessions.start(
        db.session(), user_id="2", user_name="editor", channel="rest", external_key="desk"
    )

    def read_at(moment: Any) -> str | None:
        monkeypatch.setattr(sessions, "utcnow", lambda: moment)
        return sessions.for_client(
            db.session(),
            user_id="2",
            user_name="editor",
            channel="rest",
            key="desk",
            idle=IDLE,
            write=False,
        )

    now = started.last_seen_at + IDLE
    assert read_at(now) == started.id  # and seen now, so idle from here
    assert read_at(now + IDLE + timedelta(microseconds=1)) is None


def test_a_database_without_its_state_row_yet_still_answers(
    app: Flask, make_token: Any, db: Any
) -> None:
    """The joined read finds no row at all; the call's own reads say what such a database has."""
    token = make_token("editor")
    client = app.test_client()
    update(client, token, "before")
    db.session.execute(delete(State))
    db.session.commit()
    recalled = call(client, token, None, "recall", {})
    assert recalled.status_code == 200 and recalled.json["result"]["isError"] is False
    update(client, token, "after")
    by_title = sessions_by_title(db)
    assert by_title["before"] == by_title["after"]
