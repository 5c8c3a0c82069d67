"""Retention (`CHATMEM_RETENTION_DAYS`): what the sweep deletes, and what it keeps.

Two sessions are lived through the real tool path: one is then moved 40 days
into the past (every row it left, as a clock moved back would have written
them), the other stays today's. The sweep, with 30 days kept, takes the old
one's records and leaves today's, the site's guidance and its audit trail.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, func, select, update

from chatmem.memory import guidance, retention
from chatmem.memory.models import (
    BlockUse,
    Guidance,
    GuidanceEvent,
    HeldCall,
    LedgerEntry,
    NotifyJob,
    Session,
    SummaryJob,
    utcnow,
)
from chatmem.settings import ConfigError, Settings
from tests.hostapp import USERS, reconfigure
from tests.screen_helpers import SCREEN, login

KEPT_DAYS = 30
PAST = timedelta(days=40)


def live_session(memory: Any, db: Any, title: str) -> str:
    """A session with a write, a proposal, a block injected, a summary, then ended."""
    editor = USERS["editor"]
    guidance.admin_add(db.session(), {"type": "fact", "text": f"About {title}."}, actor_id="1")
    sid = memory.start_session(editor, "rest", block=memory.block())
    memory.call_tool("update-post", {"post_id": 7, "title": title}, user=editor, session_id=sid)
    memory.call_tool(
        "remember", {"type": "fact", "text": f"{title} is the name."}, user=editor, session_id=sid
    )
    memory.call_tool(
        "save-session-summary", {"summary": f"Renamed to {title}."}, user=editor, session_id=sid
    )
    memory.end_session(sid, transcript="user: rename it")
    return sid


def move_back(db: Any, sid: str, by: timedelta = PAST) -> None:
    """Every row the session left, written `by` earlier."""
    s = db.session
    old = utcnow() - by
    s.execute(update(Session).where(Session.id == sid).values(last_seen_at=old, ended_at=old))
    s.execute(update(LedgerEntry).where(LedgerEntry.session_id == sid).values(at=old))
    s.execute(update(BlockUse).where(BlockUse.session_id == sid).values(at=old))
    s.commit()


def held(db: Any, state: str, age: timedelta, expires: timedelta | None = None) -> int:
    """A held call of `state`, held `age` ago; a grant lapsing `expires` after now."""
    now = utcnow()
    row = HeldCall(
        tool="delete-post",
        arguments={"post_id": 7},
        call_hash="h",
        user_id="2",
        user_name="editor",
        channel="rest",
        state=state,
        created_at=now - age,
        expires_at=now + expires if expires is not None else None,
    )
    db.session.add(row)
    db.session.commit()
    return int(row.id)


def notice(db: Any, status: str, age: timedelta) -> int:
    row = NotifyJob(event="proposal", payload={"id": 1}, status=status, created_at=utcnow() - age)
    db.session.add(row)
    db.session.commit()
    return int(row.id)


def count(db: Any, model: Any, *where: Any) -> int:
    return int(db.session.scalar(select(func.count()).select_from(model).where(*where)))


def test_the_old_sessions_records_go_and_todays_stay(memory: Any, db: Any, app: Flask) -> None:
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    old, today = live_session(memory, db, "Old"), live_session(memory, db, "New")
    move_back(db, old)
    proposed_in_old = db.session.scalar(select(Guidance.id).where(Guidance.session_id == old))
    entries, events = count(db, Guidance), count(db, GuidanceEvent)

    report = memory.apply_retention()

    assert report == {
        "chatmem_ledger": 3,  # update-post, remember, save-session-summary
        "chatmem_held_call": 0,
        "chatmem_block_use": 1,
        "chatmem_notify_job": 0,
        "chatmem_session": 1,
    }
    assert db.session.scalars(select(Session.id)).all() == [today]
    assert count(db, LedgerEntry, LedgerEntry.session_id == old) == 0
    assert count(db, LedgerEntry, LedgerEntry.session_id == today) == 3
    assert count(db, BlockUse, BlockUse.session_id == old) == 0
    assert count(db, BlockUse, BlockUse.session_id == today) == 2  # both facts injected
    assert count(db, SummaryJob) == count(db, SummaryJob, SummaryJob.session_id == today)
    # The site's decisions stay: every entry and event; the old proposal loses its link.
    assert (count(db, Guidance), count(db, GuidanceEvent)) == (entries, events)
    assert db.session.get(Guidance, proposed_in_old).session_id is None
    # Recall no longer finds the old session's summary, whatever a cache held.
    found = memory.call_tool("recall", {"topic": "Renamed"}, user=USERS["editor"])
    assert [r["summary"] for r in found["sessions"]] == ["Renamed to New."]


def test_what_is_still_in_use_stays_whatever_its_age(memory: Any, db: Any, app: Flask) -> None:
    """An open session, a held call waiting for a person or holding a live grant,
    and a notice not yet sent are kept; only finished ones go."""
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    open_sid = memory.start_session(USERS["editor"], "rest")
    db.session.execute(
        update(Session).where(Session.id == open_sid).values(last_seen_at=utcnow() - PAST)
    )
    db.session.commit()
    waiting = held(db, "waiting", PAST)
    granted = held(db, "allowed", PAST, expires=timedelta(days=1))
    denied = held(db, "denied", PAST)
    recent = held(db, "denied", timedelta(days=29))
    queued, sent = notice(db, "queued", PAST), notice(db, "done", PAST)

    report = memory.apply_retention()

    assert (report["chatmem_held_call"], report["chatmem_notify_job"]) == (1, 1)
    assert report["chatmem_session"] == 0
    assert db.session.get(Session, open_sid) is not None
    assert sorted(db.session.scalars(select(HeldCall.id))) == sorted([waiting, granted, recent])
    assert denied not in db.session.scalars(select(HeldCall.id)).all()
    assert db.session.scalars(select(NotifyJob.id)).all() == [queued]
    assert sent != queued


def test_off_by_default_nothing_goes_however_late_it_is(memory: Any, db: Any) -> None:
    sid = live_session(memory, db, "Kept")
    move_back(db, sid, timedelta(days=3650))
    notice(db, "done", timedelta(days=3650))
    assert memory.settings.retention_days == 0
    assert memory.apply_retention() == {}
    assert (count(db, Session), count(db, LedgerEntry), count(db, NotifyJob)) == (1, 3, 1)


def test_a_moved_clock_decides_the_cutoff(memory: Any, db: Any, app: Flask) -> None:
    """Today's session is 30 days old 30 days and a minute from now, and goes then."""
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    live_session(memory, db, "Today")
    soon = utcnow() + timedelta(days=KEPT_DAYS) - timedelta(minutes=1)
    assert not any(memory.apply_retention(now=soon).values())
    later = utcnow() + timedelta(days=KEPT_DAYS, minutes=1)
    assert memory.apply_retention(now=later)["chatmem_session"] == 1
    assert count(db, Session) == count(db, LedgerEntry) == 0


def test_deletion_runs_in_batches_each_committed(
    memory: Any, db: Any, app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five old sessions with a batch of two: each batch its own transaction, all gone."""
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    monkeypatch.setattr(retention, "BATCH", 2)
    for n in range(5):
        move_back(db, live_session(memory, db, f"T{n}"))
    commits: list[int] = []
    event.listen(db.session(), "after_commit", lambda _session: commits.append(1))

    report = memory.apply_retention()

    assert (report["chatmem_session"], report["chatmem_ledger"]) == (5, 15)
    assert count(db, Session) == count(db, LedgerEntry) == 0
    # ledger 8 batches, block uses 3, sessions 3, the revision 1 (and SQLite's index merge)
    merge = db.session.get_bind().dialect.name == "sqlite"
    assert len(commits) == 8 + 3 + 3 + 1 + merge


def test_the_sweep_command_applies_it_and_says_what_went(app: Flask) -> None:
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    with app.app_context():
        memory, db = app.extensions["test_host"]["memory"], app.extensions["test_host"]["db"]
        move_back(db, live_session(memory, db, "Swept"))
    result = app.test_cli_runner().invoke(args=["chatmem", "sweep"])
    assert result.exit_code == 0, result.output
    assert (
        "Retention (30 days): deleted 3 from chatmem_ledger, 1 from chatmem_block_use, "
        "1 from chatmem_session." in result.output
    )
    again = app.test_cli_runner().invoke(args=["chatmem", "sweep"])
    assert "Retention (30 days): deleted nothing." in again.output


@pytest.mark.parametrize("bad", [-1, "30.5", "a month", 1.5])
def test_a_retention_that_is_not_a_whole_number_of_days_stops_the_start(bad: Any) -> None:
    with pytest.raises(ConfigError) as caught:
        Settings.load({"CHATMEM_RETENTION_DAYS": bad})
    assert list(caught.value.errors) == ["CHATMEM_RETENTION_DAYS"]
    assert "a whole number of at least 0" in str(caught.value)


def test_the_settings_card_says_what_the_site_keeps(app: Flask) -> None:
    client = app.test_client()
    login(client, "admin")
    assert "Retention: off." in client.get(SCREEN).get_data(as_text=True)
    reconfigure(app, CHATMEM_RETENTION_DAYS=1)
    page = client.get(SCREEN).get_data(as_text=True)
    assert "deleted after 1 day." in page and "1 days" not in page
    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    assert "deleted after 30 days." in client.get(SCREEN).get_data(as_text=True)


def test_the_in_process_sweeper_applies_it_too(
    app: Flask, caplog: pytest.LogCaptureFixture
) -> None:
    from chatmem.workers.background import BackgroundSweeper

    reconfigure(app, CHATMEM_RETENTION_DAYS=KEPT_DAYS)
    with app.app_context():
        memory, db = app.extensions["test_host"]["memory"], app.extensions["test_host"]["db"]
        move_back(db, live_session(memory, db, "Background"))
        db.session.remove()
    with caplog.at_level("INFO", logger="chatmem.background"):
        BackgroundSweeper(app, 60).sweep_once()
    assert "retention deleted" in caplog.text and "'chatmem_session': 1" in caplog.text
    with app.app_context():
        assert count(app.extensions["test_host"]["db"], Session) == 0
