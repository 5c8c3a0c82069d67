"""No paid call for nothing: an ended session with no ledgered call and no
transcript gets its digest only, and the provider is never asked."""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from sqlalchemy import func, select

from chatmem.memory import sessions
from chatmem.memory.models import SummaryJob
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.test_summary_jobs import (
    OPENAI,
    SUMMARY,
    TRANSCRIPT,
    auto_summarize,
    busy_session,
    job_of,
    session_of,
)

pytestmark = pytest.mark.usefixtures("provider_env")


def reader_session(memory: Any, user: Any, channel: str = "mcp") -> str:
    """An agent that only looked things up: recall, nothing written."""
    session_id = memory.start_session(user, channel)
    memory.call_tool("recall", {"topic": "checkout"}, user=user, session_id=session_id)
    return session_id


def test_a_session_that_only_recalled_gets_its_digest_and_no_provider_call(
    app: Flask,
    memory: Any,
    db: Any,
    admin: Any,
    editor: Any,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    OPENAI.configure(app, fake_llm, monkeypatch)
    auto_summarize(memory, admin)
    session_id = reader_session(memory, editor)
    memory.end_session(session_id)

    stats = memory.run_due_jobs()

    assert fake_llm.requests == []
    assert stats.claimed == 0
    job = job_of(db, session_id)
    assert (job.status, job.attempts, job.transcript) == (sessions.DIGEST_ONLY, 0, None)
    session = session_of(db, session_id)
    assert (session.summary, session.digest, session.change_count) == (
        None,
        "No changes were made.",
        0,
    )
    record = memory.call_tool("recall", {}, user=editor)["sessions"][0]
    assert (record["id"], record["summary"], record["changes"]) == (session_id, None, 0)
    # The Memory screen's Cost card counts it as a provider call saved.
    from chatmem.memory import costs

    assert costs.cost(db.session()).digest_only == 1


@pytest.mark.parametrize("has_calls", [True, False], ids=["calls", "transcript-only"])
def test_a_session_with_calls_or_a_transcript_is_still_summarised(
    has_calls: bool,
    app: Flask,
    memory: Any,
    db: Any,
    admin: Any,
    editor: Any,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    OPENAI.configure(app, fake_llm, monkeypatch)
    auto_summarize(memory, admin)
    if has_calls:
        session_id = busy_session(memory, editor, channel="rest")
        memory.end_session(session_id)  # the ledger alone is worth summarising
    else:
        session_id = reader_session(memory, editor, channel="chat")
        memory.end_session(session_id, transcript=TRANSCRIPT)
    fake_llm.enqueue(RESPONSES, 200, openai_text(SUMMARY))

    stats = memory.run_due_jobs()

    assert (stats.claimed, stats.done) == (1, 1)
    assert len(fake_llm.requests) == 1
    assert job_of(db, session_id).status == "done"
    assert session_of(db, session_id).summary == SUMMARY


def test_a_realistic_mix_of_100_sessions_asks_the_provider_only_for_those_with_something_to_say(
    app: Flask,
    memory: Any,
    db: Any,
    admin: Any,
    editor: Any,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    OPENAI.configure(app, fake_llm, monkeypatch)
    auto_summarize(memory, admin)
    # Half the sessions only read (agents recalling before they work), as in
    # bench/provider_calls.py; before this change each cost a provider call.
    for i in range(100):
        if i % 2 == 0:
            memory.end_session(reader_session(memory, editor))
        elif i % 10 in (1, 3, 5):
            memory.end_session(busy_session(memory, editor, channel="mcp"))
        else:
            chat = reader_session(memory, editor, channel="chat")
            memory.end_session(chat, transcript=TRANSCRIPT)
    for _ in range(50):
        fake_llm.enqueue(RESPONSES, 200, openai_text(SUMMARY))

    done = 0
    while (stats := memory.run_due_jobs(limit=20)).claimed:
        done += stats.done

    assert (done, len(fake_llm.requests)) == (50, 50)
    by_status = dict(
        db.session.execute(
            select(SummaryJob.status, func.count()).group_by(SummaryJob.status)
        ).all()
    )
    assert by_status == {"done": 50, sessions.DIGEST_ONLY: 50}
