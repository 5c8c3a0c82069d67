"""Secrets are never stored or sent (SPEC §9b).

Every shape of tests/secret_corpus.py is planted in every field on every
channel of the demo app: the memory tools' fields (refused, naming the field
and the kind), summaries (stored redacted), a host tool's arguments (ledgered
redacted), chat messages (so they reach the transcript), and the provider's
own replies, with Auto-summarize on and the provider pointed at the local
fake. Then every column of every chatmem table, and every request the fake
received, is searched: no planted secret is anywhere.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import inspect, select, text

from chatmem.memory.models import Session, SummaryJob
from tests.channels import MCP, Channels
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.hostapp import reconfigure
from tests.secret_corpus import SECRETS, planted

FIELDS = ("text", "title", "scope", "target")


def needles() -> list[str]:
    """What must appear nowhere: each secret, and its first 16 characters."""
    return sorted({n for s in SECRETS for n in (s.secret, s.secret[:16])}, key=len)


def found_in(haystack: str) -> list[str]:
    return [needle for needle in needles() if needle in haystack]


def dump_chatmem_tables(app: Flask) -> tuple[list[str], str]:
    """Every column of every `chatmem_*` table (SQLite's FTS tables included), as text."""
    from chatmem.demo.extensions import db

    with app.app_context():
        engine = db.engine
        names = sorted(n for n in inspect(engine).get_table_names() if n.startswith("chatmem"))
        lines = []
        with engine.connect() as connection:
            for name in names:
                for row in connection.execute(text(f'SELECT * FROM "{name}"')):
                    cells = [
                        cell.decode("utf-8", "replace") if isinstance(cell, bytes) else cell
                        for cell in row
                    ]
                    lines.append(f"{name}: {json.dumps(cells, default=str, ensure_ascii=False)}")
    return names, "\n".join(lines)


def python_admin_session(app: Flask) -> None:
    """A host calling chatmem from Python: key-named fields and a transcript."""
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    with app.app_context():
        admin = db.session.scalars(select(User).filter_by(username="admin")).one()
        session_id = memory.start_session(admin, "python")
        for index, entry in enumerate(SECRETS):
            memory.call_tool(
                "create-user",
                {"username": f"user{index}", "password": entry.secret + "-long-enough"},
                user=admin,
                session_id=session_id,
            )
        memory.end_session(session_id, transcript="\n".join(map(planted, SECRETS)))


def mcp_session(channels: Channels) -> None:
    """A handshake-era MCP session: host tool calls, then DELETE ends it."""
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "corpus", "version": "1"},
    }
    opened = channels.http.post(
        MCP,
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params},
        headers=channels.auth(),
    )
    headers = {**channels.auth(), "Mcp-Session-Id": opened.headers["Mcp-Session-Id"]}
    for entry in SECRETS:
        call = {"name": "update-post", "arguments": {"post_id": 2, "title": planted(entry)}}
        body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
        result = channels.http.post(MCP, json=body, headers=headers).json["result"]
        assert result["isError"] is False
    assert channels.http.delete(MCP, headers=headers).status_code in (200, 202, 204)


@pytest.mark.usefixtures("provider_env")
def test_planted_secrets_are_stored_and_sent_nowhere(
    demo_app: Flask, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    assert len({entry.kind for entry in SECRETS}) >= 15
    channels = Channels(demo_app)
    with demo_app.app_context():
        admin = db.session.scalars(select(User).filter_by(username="admin")).one()
        memory.set_setting("auto_summarize", True, actor=admin)

    # The memory tools' fields: refused, naming the field and the kind, echoing nothing.
    for index, entry in enumerate(SECRETS):
        field = FIELDS[index % len(FIELDS)]
        arguments = {"type": "fact", "text": "Checkout is page 4.", field: planted(entry)}
        answers = [(name, call("remember", arguments)) for name, call in channels.tool_channels()]
        answers.append(("screen", channels.screen_add(arguments)))
        takeaway = {"summary": "Done.", "takeaways": [{"type": "fact", "text": planted(entry)}]}
        answers.append(("takeaway", channels.rest("save-session-summary", takeaway)))
        for name, answer in answers:
            error = answer["error"]
            expected_field = "takeaways/0/text" if name == "takeaway" else field
            assert (error["code"], error["field"]) == ("invalid_params", expected_field), name
            assert entry.kind in error["kinds"], (name, entry)
            assert found_in(json.dumps(answer)) == [], (name, entry)

    # Summaries: kept, redacted.
    summary = " ".join(map(planted, SECRETS))
    for _name, call in channels.tool_channels():
        assert call("save-session-summary", {"summary": summary}) == {
            "recorded": True,
            "proposed": 0,
        }

    # A host tool's arguments on every channel, and chat messages typed as such,
    # in a conversation without a summary: its transcript goes to the provider.
    channels.new_chat()
    for entry in SECRETS:
        for name, call in channels.tool_channels():
            result = call("update-post", {"post_id": 1, "title": planted(entry)})
            assert "error" not in result, (name, entry)
        channels.chat("update-post", {"post_id": 1, "content": json.dumps({"v": planted(entry)})})
        assert channels.chat_raw(f"note for later: {planted(entry)}").status_code == 201
    mcp_session(channels)
    python_admin_session(demo_app)
    channels.editor.close(channels.conversation)

    names, dumped = dump_chatmem_tables(demo_app)
    tables = {"chatmem_guidance", "chatmem_ledger", "chatmem_session", "chatmem_summary_job"}
    if "sqlite" in demo_app.config["SQLALCHEMY_DATABASE_URI"]:
        tables |= {"chatmem_session_fts", "chatmem_session_fts_data", "chatmem_guidance_fts_idx"}
    assert tables <= set(names)
    with demo_app.app_context():
        transcripts = db.session.scalars(select(SummaryJob.transcript)).all()
    assert sum(t is not None for t in transcripts) == 2, "the chat's and the host's transcripts"
    assert "[redacted:private_key]" in dumped and "[redacted:url_credentials]" in dumped
    assert found_in(dumped) == []

    # The provider writes the summaries; one request fails with a secret in its error.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    reconfigure(demo_app, CHATMEM_PROVIDER="openai", CHATMEM_PROVIDER_MAX_RETRIES=0)
    fake_llm.enqueue_error(RESPONSES, 400, f"bad request near {planted(SECRETS[0])}")
    for entry in SECRETS[1:3]:
        fake_llm.enqueue(RESPONSES, 200, openai_text(f"Retitled post 1; {planted(entry)}"))
    with demo_app.app_context():
        stats = memory.run_due_jobs()
        assert (stats.done, stats.failed) == (2, 1)
        jobs = db.session.scalars(select(SummaryJob)).all()
        summaries = db.session.scalars(select(Session.summary).where(Session.summary_auto)).all()
    assert all(job.transcript is None for job in jobs), "deleted once the job ended"
    assert len(summaries) == 2 and all("[redacted:" in s for s in summaries)

    requests = json.dumps([r.body for r in fake_llm.requests], ensure_ascii=False)
    assert len(fake_llm.requests) == 3
    assert "[redacted:" in requests and "Retitled post 1" not in requests
    assert found_in(requests) == []
    assert found_in(dump_chatmem_tables(demo_app)[1]) == []
    channels.new_chat()
    recalled = [call("recall", {}) for _name, call in channels.tool_channels()]
    assert found_in(json.dumps(recalled)) == []


def test_a_screen_edit_with_a_secret_is_refused_and_changes_nothing(demo_app: Flask) -> None:
    from chatmem.demo.extensions import db
    from chatmem.memory import guidance

    channels = Channels(demo_app)
    added = channels.screen_add({"type": "fact", "text": "Deploys happen on Tuesdays."})
    entry = added["entry"]
    key = SECRETS[6]
    response = channels.admin.client.post(
        f"/chatmem/memory/guidance/{entry['id']}/edit",
        data={
            "csrf_token": channels.admin.csrf,
            "version": str(entry["version"]),
            "text": f"Deploy with {key.secret}",
        },
        headers={"Accept": "application/json"},
    )
    assert response.status_code == 400
    error: dict[str, Any] = response.json["error"]
    assert (error["code"], error["field"], error["kinds"]) == (
        "invalid_params",
        "text",
        [key.kind],
    )
    assert key.secret not in response.get_data(as_text=True)
    with demo_app.app_context():
        stored = guidance.get(db.session(), entry["id"])
        assert (stored.text, stored.version) == ("Deploys happen on Tuesdays.", entry["version"])
