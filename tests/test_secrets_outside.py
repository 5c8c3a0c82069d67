"""Secrets on text nobody here wrote: the outside corpus, through the real paths (issue 24).

tests/corpora/secrets holds Kingfisher's own rule examples (a pinned public
wheel) and shapes agents paste that we wrote, with benign look-alikes. The
first tests measure chatmem's redactor on all of it: at least 98% of the true
shapes lose their secret, at most 1% of the benign texts are changed. The
last plants a sample of the outside shapes (the 17 issue 24 found stored
verbatim and the 4 key shapes issue 27 found among them) on every channel of
the demo app and then searches every chatmem table and every provider
request: none is anywhere.
"""

from __future__ import annotations

import json

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem.memory.models import Session, SummaryJob
from chatmem.text import redaction
from tests.channels import Channels
from tests.corpora.secrets import Sample, benign, leaked, ours, outside, true_shapes
from tests.fake_llm import RESPONSES, FakeLLM, openai_text
from tests.hostapp import reconfigure
from tests.test_secrets import dump_chatmem_tables

ISSUE_24 = ours.TRUE[:17]  # the shapes issue 24 found stored verbatim, in its order


@pytest.mark.db_free
def test_the_corpus_is_mostly_from_outside_and_large_enough() -> None:
    kingfisher, skipped = outside()
    assert len(kingfisher) >= 1_500 and len({s.shape for s in kingfisher}) >= 800
    assert len(skipped) <= 20, skipped  # patterns Python's re cannot read, and the like
    assert len(true_shapes()) >= 150 and len(benign()) >= 300
    assert [s.shape for s in ISSUE_24][:3] == [
        "gcp_service_account",
        "azure_storage",
        "twilio_auth_token",
    ]


@pytest.mark.db_free
def test_at_least_98_percent_of_true_shapes_lose_their_secret() -> None:
    shapes = true_shapes()
    missed = [s for s in shapes if leaked(redaction.redact, s)]
    assert len(missed) <= 0.02 * len(shapes), [(s.source, s.text[:80]) for s in missed]


@pytest.mark.db_free
def test_at_most_1_percent_of_benign_look_alikes_are_touched() -> None:
    touched = [s.text for s in benign() if redaction.redact(s.text) != s.text]
    assert len(touched) <= 0.01 * len(benign()), touched


@pytest.mark.db_free
@pytest.mark.parametrize("shape", ISSUE_24, ids=[s.shape for s in ISSUE_24])
def test_every_shape_issue_24_found_is_redacted(shape: ours.Shape) -> None:
    out = redaction.redact(shape.text)
    assert shape.secret not in out and "[redacted:" in out


def sample() -> list[Sample]:
    """32 to plant: the 17 of issue 24, the 7 key shapes of issue 27, and 8 Kingfisher
    examples spread over its rules.

    Only examples whose secret the redactor removes (the rate is measured
    above), long enough to search for without matching ordinary text.
    """
    planted = [Sample("ours", s.shape, s.text, s.secret) for s in (*ISSUE_24, *ours.KEY_EDGES)]
    caught = [
        s
        for s in outside()[0]
        if len(s.secret) >= 16 and "\n" not in s.text and not leaked(redaction.redact, s)
    ]
    planted += caught[:: len(caught) // 8][:8]
    return planted


def needles(samples: list[Sample]) -> list[str]:
    return sorted({n for s in samples for n in (s.secret, s.secret[:16])}, key=len)


@pytest.mark.usefixtures("provider_env")
def test_planted_outside_secrets_are_stored_and_sent_nowhere(
    demo_app: Flask, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    planted = sample()
    assert len(planted) == 32
    look_for = needles(planted)

    def found_in(haystack: str) -> list[str]:
        return [needle for needle in look_for if needle in haystack]

    channels = Channels(demo_app)
    with demo_app.app_context():
        admin = db.session.scalars(select(User).filter_by(username="admin")).one()
        memory.set_setting("auto_summarize", True, actor=admin)

    # Guidance: refused on every channel, naming the field, echoing nothing.
    for entry in planted:
        arguments = {"type": "fact", "text": f"Deploy notes: {entry.text}"}
        answers = [(name, call("remember", arguments)) for name, call in channels.tool_channels()]
        answers.append(("screen", channels.screen_add(arguments)))
        for name, answer in answers:
            assert (answer["error"]["code"], answer["error"]["field"]) == ("invalid_params", "text")
            assert found_in(json.dumps(answer)) == [], (name, entry.source)

    # Summaries (kept, redacted), a host tool's arguments (ledgered) and chat messages
    # (the transcript the provider is sent) on every channel.
    for _name, call in channels.tool_channels():
        summary = " ".join(entry.text for entry in planted)
        assert call("save-session-summary", {"summary": summary})["recorded"] is True
    channels.new_chat()
    for entry in planted:
        for name, call in channels.tool_channels():
            assert "error" not in call("update-post", {"post_id": 1, "content": entry.text}), name
        channels.chat("update-post", {"post_id": 1, "content": json.dumps({"v": entry.text})})
        assert channels.chat_raw(f"note for later: {entry.text}").status_code == 201
    channels.editor.close(channels.conversation)

    _names, dumped = dump_chatmem_tables(demo_app)
    assert "[redacted:api_token]" in dumped and "[redacted:password]" in dumped
    assert found_in(dumped) == []

    # The provider writes the summary; its reply holds outside secrets too.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    reconfigure(demo_app, CHATMEM_PROVIDER="openai", CHATMEM_PROVIDER_MAX_RETRIES=0)
    fake_llm.enqueue(RESPONSES, 200, openai_text(f"Retitled post 1; {planted[5].text}"))
    with demo_app.app_context():
        stats = memory.run_due_jobs()
        assert stats.done == 1
        summaries = db.session.scalars(select(Session.summary).where(Session.summary_auto)).all()
        assert all(job.transcript is None for job in db.session.scalars(select(SummaryJob)))
    assert len(summaries) == 1 and "[redacted:" in summaries[0]
    requests = json.dumps([r.body for r in fake_llm.requests], ensure_ascii=False)
    assert len(fake_llm.requests) == 1 and "[redacted:" in requests
    assert found_in(requests) == []
    assert found_in(dump_chatmem_tables(demo_app)[1]) == []
