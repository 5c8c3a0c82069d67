"""The session records' revision, and the answers a worker keeps for it.

The database counts every change a session record can show (triggers on
`chatmem_session`, installed by the migration and by `create_all`); a worker
reads the count with the state row and keeps the records it sent for that
count. These tests pin both halves: every kind of writer is counted, a
live session's touches are not, and a kept answer is never one the query
would no longer give, for another worker, another user, or after erasure.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, insert, select, text, update

from chatmem import migrate
from chatmem.memory.models import RecordsRevision, Session, utcnow
from chatmem.memory.recall import records, records_revision
from tests.dbtools import drop_chatmem
from tests.hostapp import USERS, User
from tests.test_mcp_hot_path import call, statements

TRIGGERS = set(records_revision._TRIGGERS)


@pytest.fixture
def orm(db: Any) -> Any:
    """The app's ORM session (the unit of work chatmem shares with the host)."""
    return db.session()


def revision(orm: Any) -> int | None:
    orm.rollback()  # a fresh look, as another worker's next request has
    return orm.scalar(select(RecordsRevision.revision))


def add_record(orm: Any, session_id: str, summary: str, *, user: str = "editor") -> None:
    """A recorded session written straight into the table, as an import or a host's SQL does."""
    now = utcnow()
    person = USERS[user]
    orm.execute(
        insert(Session).values(
            id=session_id,
            user_id=str(person.id),
            user_name=person.username,
            channel="python",
            started_at=now,
            last_seen_at=now,
            ended_at=now,
            recorded_at=now,
            summary=summary,
        )
    )
    orm.commit()


def summaries(memory: Any, topic: str | None = None, user: str = "editor") -> list[str]:
    arguments = {"topic": topic} if topic else {}
    found = memory.call_tool("recall", arguments, user=USERS[user])
    return [s["summary"] for s in found["sessions"]]


def test_the_database_counts_each_change_a_record_can_show(orm: Any) -> None:
    start = revision(orm)
    assert start == 0
    now = utcnow()
    live = {"user_id": "2", "user_name": "editor", "channel": "mcp"}
    orm.execute(insert(Session).values(id="live", **live, started_at=now, last_seen_at=now))
    orm.commit()
    assert revision(orm) == start  # a live session is not a record
    orm.execute(update(Session).values(last_seen_at=now + timedelta(minutes=1)))
    orm.commit()
    assert revision(orm) == start  # nor are its touches
    orm.execute(update(Session).values(recorded_at=now, summary="Fixed the cart"))
    orm.commit()
    assert revision(orm) == start + 1  # recorded
    orm.execute(update(Session).values(last_seen_at=now + timedelta(minutes=2)))
    orm.commit()
    assert revision(orm) == start + 1  # a record's unshown column
    for change in ({"summary": "Fixed the basket"}, {"digest": "1 call"}, {"user_name": "ed"}):
        orm.execute(update(Session).values(**change))
        orm.commit()
    assert revision(orm) == start + 4
    orm.execute(insert(Session).values(id="live2", **live, started_at=now, last_seen_at=now))
    orm.execute(delete(Session).where(Session.id == "live2"))
    orm.commit()
    assert revision(orm) == start + 4  # a live session come and gone
    orm.execute(delete(Session))
    orm.commit()
    assert revision(orm) == start + 5


def test_a_rolled_back_change_is_not_counted(orm: Any) -> None:
    add_record(orm, "s1", "Fixed the cart")
    before = revision(orm)
    orm.execute(update(Session).values(summary="never kept"))
    orm.rollback()
    assert revision(orm) == before


def test_postgresql_counts_a_transaction_once_at_commit(orm: Any) -> None:
    if orm.get_bind().dialect.name != "postgresql":
        pytest.skip("SQLite counts each row; its writers take the whole file anyway")
    add_record(orm, "s1", "Fixed the cart")
    add_record(orm, "s2", "Fixed the basket")
    before = revision(orm)
    orm.execute(update(Session).where(Session.id == "s1").values(summary="one"))
    orm.execute(update(Session).where(Session.id == "s2").values(summary="two"))
    # Not yet: the bump waits for the commit, so the counter is locked only then.
    assert orm.scalar(select(RecordsRevision.revision)) == before
    orm.commit()
    assert revision(orm) == before + 1


def test_a_kept_answer_is_reused_until_any_writer_changes_a_record(
    app: Flask, memory: Any, orm: Any
) -> None:
    add_record(orm, "s1", "Moved the checkout button")
    assert summaries(memory, "checkout") == ["Moved the checkout button"]
    with statements(app, whole=True) as seen:
        assert summaries(memory, "checkout") == ["Moved the checkout button"]
    # The state row only (outside a request, read again by the tool): the
    # records were kept for the revision it holds.
    assert seen and not [s for s in seen if "FROM chatmem_session" in s], seen
    orm.execute(text("UPDATE chatmem_session SET summary = 'Moved the checkout link'"))
    orm.commit()  # a host's own SQL: no chatmem code knows
    assert summaries(memory, "checkout") == ["Moved the checkout link"]
    add_record(orm, "s2", "Checkout tests added")
    both = ["Checkout tests added", "Moved the checkout link"]
    assert sorted(summaries(memory, "checkout")) == both
    orm.execute(text("DELETE FROM chatmem_session WHERE id = 's1'"))
    orm.commit()
    assert summaries(memory, "checkout") == ["Checkout tests added"]
    assert summaries(memory) == ["Checkout tests added"]  # the newest, without a topic


def test_erasure_takes_a_users_records_out_of_kept_answers(memory: Any, orm: Any) -> None:
    add_record(orm, "s1", "Dana asked for the invoice export")
    assert summaries(memory, "invoice") == ["Dana asked for the invoice export"]
    memory.erase_user(USERS["editor"])
    assert summaries(memory, "invoice") == []
    kept = records._KEPT[orm.get_bind().engine]
    assert all(not rows for rows in kept.answers.values()), kept.answers


def test_one_users_kept_answer_is_never_anothers(
    memory: Any, orm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(USERS, "author", User(4, "author", {"edit_posts"}))
    add_record(orm, "mine", "Editor fixed the checkout", user="editor")
    add_record(orm, "theirs", "Author broke the checkout", user="author")
    for _ in range(2):  # the second from the kept answers
        assert summaries(memory, "checkout", "editor") == ["Editor fixed the checkout"]
        assert summaries(memory, "checkout", "author") == ["Author broke the checkout"]


def test_a_record_saved_through_one_worker_is_recalled_by_another(
    app: Flask, second_worker: Flask, make_token: Any
) -> None:
    token = make_token("editor")
    one, two = app.test_client(), second_worker.test_client()

    def recalled(client: Any) -> list[str]:
        response = call(client, token, None, "recall", {"topic": "checkout"})
        found = response.json["result"]["structuredContent"]
        return [s["summary"] for s in found["sessions"]]

    assert recalled(one) == recalled(two) == []  # both workers keep the empty answer
    saved = call(one, token, None, "save-session-summary", {"summary": "Checkout moved"})
    assert saved.json["result"]["isError"] is False, saved.json
    assert recalled(two) == ["Checkout moved"]
    assert recalled(one) == ["Checkout moved"]


def test_a_request_recalls_the_record_it_saved_a_call_before(app: Flask, memory: Any) -> None:
    """A chat turn runs several tool calls in one request, each committed: the
    state is read again after a commit, so the records revision is the new one."""
    editor = USERS["editor"]
    with app.test_request_context("/chat"):
        assert summaries(memory, "checkout") == []
        session_id = memory.start_session(editor, "python")
        saved = {"summary": "Checkout moved"}
        memory.call_tool("save-session-summary", saved, user=editor, session_id=session_id)
        assert summaries(memory, "checkout") == ["Checkout moved"]


def test_without_its_row_nothing_is_kept(memory: Any, orm: Any) -> None:
    orm.execute(delete(RecordsRevision))
    orm.commit()
    add_record(orm, "s1", "Moved the checkout button")
    assert summaries(memory, "checkout") == ["Moved the checkout button"]
    orm.execute(update(Session).values(summary="Moved the checkout link"))
    orm.commit()
    assert summaries(memory, "checkout") == ["Moved the checkout link"]
    assert orm.get_bind().engine not in records._KEPT


def test_answers_are_kept_for_the_last_revision_asked_only(orm: Any) -> None:
    add_record(orm, "s1", "Moved the checkout button")
    engine = orm.get_bind().engine

    def ask(at: int) -> list[str]:
        rows = records.session_records(orm, topic="checkout", user_id="2", revision=at)
        return [r.summary for r in rows]

    assert ask(7) == ["Moved the checkout button"]
    assert list(records._KEPT[engine].answers) == [("2", "checkout", "english", 10)]
    orm.execute(update(Session).values(summary="Moved the checkout link"))
    orm.commit()
    assert ask(7) == ["Moved the checkout button"]  # kept for 7
    # A request that read 6 (just before a change, or a database restored to
    # an older count) is answered afresh, and 7's answers are gone with it.
    assert ask(6) == ["Moved the checkout link"]
    orm.execute(update(Session).values(summary="Moved the checkout menu"))
    orm.commit()
    assert ask(7) == ["Moved the checkout menu"]
    assert records._KEPT[engine].revision == 7
    answer = records.session_records(orm, topic="checkout", user_id="2", revision=7)
    answer.clear()  # the caller's own list
    assert ask(7) == ["Moved the checkout menu"]


def test_the_reference_scan_is_always_run(app: Flask, orm: Any) -> None:
    add_record(orm, "s1", "Moved the checkout button")
    kept = records.session_records(orm, topic="checkout", user_id="2", revision=1)
    with statements(app) as seen:
        scanned = records.session_records(orm, topic="checkout", user_id="2", revision=1, scan=True)
    assert seen == ["SELECT"]
    assert scanned == kept


def test_kept_answers_start_over_when_they_hold_too_many_records(
    orm: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(records, "KEPT_MAX", 3)
    add_record(orm, "s1", "Moved the checkout button")
    add_record(orm, "s2", "Moved the checkout menu")
    kept = records._KEPT

    def ask(topic: str) -> None:
        records.session_records(orm, topic=topic, user_id="2", revision=1)

    ask("checkout")  # 2 records
    ask("button")  # 3: still within
    assert [q[1] for q in kept[orm.get_bind().engine].answers] == ["checkout", "button"]
    ask("menu")  # 4: over, so it starts over with this one
    assert [q[1] for q in kept[orm.get_bind().engine].answers] == ["menu"]
    assert kept[orm.get_bind().engine].records == 1
    assert kept[orm.get_bind().engine].revision == 1  # still kept for the count asked


def test_the_migration_and_create_all_install_the_same_triggers(app: Flask) -> None:
    memory = app.extensions["test_host"]["memory"]
    with app.app_context():
        engine = app.extensions["test_host"]["db"].engine
        assert triggers(engine) == TRIGGERS  # made by create_all (the test app)
        drop_chatmem(engine)
        assert triggers(engine) == set()
        memory.upgrade_db()
        assert triggers(engine) == TRIGGERS
        with engine.connect() as connection:
            assert connection.scalar(select(RecordsRevision.revision)) == 0
        migrate.downgrade(engine, "0015")
        assert triggers(engine) == set()
        memory.upgrade_db()
        assert triggers(engine) == TRIGGERS


def test_create_all_on_an_older_database_counts_its_records_too(app: Flask) -> None:
    """Its sessions table is there already, so only the counter's table is made."""
    memory = app.extensions["test_host"]["memory"]
    with app.app_context():
        engine = app.extensions["test_host"]["db"].engine
        with engine.begin() as connection:
            records_revision.uninstall(connection)
            RecordsRevision.__table__.drop(connection)
        memory.create_all()
        assert triggers(engine) == TRIGGERS
        orm = app.extensions["test_host"]["db"].session()
        before = revision(orm)
        add_record(orm, "s1", "Counted")
        assert revision(orm) == before + 1


def triggers(engine: Any) -> set[str]:
    with engine.connect() as connection:
        if engine.dialect.name == "sqlite":
            query = "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        else:
            query = "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal"
        names = connection.exec_driver_sql(query).scalars()
        return {n for n in names if n.startswith("chatmem_records_revision")}
