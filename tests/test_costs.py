"""What each conversation started with, what memory costs, and how fast reviews
happen (issue 15, points 8 and 9): the demo chat records its block, the session
page and the entry page show it, the Upkeep page's Cost and Review pace cards
count it; the Pending tab and the demo's badge say how long the oldest item waits.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select, update

from chatmem.memory import guidance
from chatmem.memory.models import BlockUse, Guidance, GuidanceEvent, Session, SummaryJob, utcnow
from tests.demo_client import DemoClient, tool_results
from tests.demo_story import FACT, add_guardrail, approve
from tests.fake_llm import CHAT, FakeLLM, chat_text
from tests.hostapp import USERS, reconfigure, work
from tests.screen_helpers import JSON, SCREEN, token

pytestmark = pytest.mark.usefixtures("provider_env")


def squash(html: str) -> str:
    return re.sub(r"\s+", " ", html)


def demo(app: Flask, step: Any) -> Any:
    from chatmem.demo.extensions import db, memory

    with app.app_context():
        try:
            return step(memory, db)
        finally:
            db.session.remove()


def remember(client: DemoClient, conversation_id: int, text: str) -> int:
    args = json.dumps({"type": "fact", "text": text})
    [card] = tool_results(client.say(conversation_id, f"/tool remember {args}"))
    return int(card["result"]["id"])


# -- what each conversation started with ------------------------------------------------


def test_a_demo_conversation_records_the_block_it_started_with(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    fact_id = remember(editor, editor.new_conversation()["id"], FACT)
    approve(demo_app, fact_id)
    add_guardrail(demo_app)
    block = demo(demo_app, lambda m, db: m.block())
    revision = demo(demo_app, lambda m, db: m.snapshot().revision)
    assert fact_id in block.included and block.revision == revision

    conversation = editor.new_conversation()
    editor.new_conversation()  # a second one, at the same revision

    def started(memory: Any, db: Any) -> tuple[Any, list[int]]:
        from chatmem.demo.models import Conversation

        session_id = db.session.get(Conversation, conversation["id"]).session_id
        record = db.session.get(Session, session_id)
        ids = db.session.scalars(
            select(BlockUse.guidance_id).where(BlockUse.session_id == session_id)
        ).all()
        return record, sorted(ids)

    record, ids = demo(demo_app, started)
    assert (record.block_revision, record.block_chars) == (revision, len(block.text))
    assert ids == sorted(block.included)

    admin = DemoClient(demo_app, "admin")
    page = squash(admin.client.get(f"/chatmem/memory/sessions/{record.id}").get_data(as_text=True))
    assert "Started with" in page
    assert (
        f"Memory revision <strong>{revision}</strong> · this conversation's block: "
        f"{len(block.text)} characters" in page
    )
    assert f"about {-(-len(block.text) // 4)} tokens" in page
    fact = demo(demo_app, lambda m, db: db.session.get(Guidance, fact_id))
    assert f'href="/chatmem/memory/guidance/{fact_id}">{fact.title}</a>' in page
    entry_page = squash(
        admin.client.get(f"/chatmem/memory/guidance/{fact_id}").get_data(as_text=True)
    )
    assert "in the block of 2 conversations (last 7 days)" in entry_page

    # The session of the conversation that proposed the fact started with an empty block.
    first = demo(demo_app, lambda m, db: db.session.get(Guidance, fact_id).session_id)
    empty = squash(admin.client.get(f"/chatmem/memory/sessions/{first}").get_data(as_text=True))
    assert "The block was empty." in empty


def test_a_session_without_a_block_says_so(app: Flask, client: FlaskClient) -> None:
    session_id = work(app, lambda m, db: m.start_session(USERS["editor"], "python"))
    page = squash(client.get(f"{SCREEN}/sessions/{session_id}").get_data(as_text=True))
    assert "Not recorded: this session was not started with the block" in page


def test_the_python_api_records_a_block_and_counts_entries_per_week(
    app: Flask, client: FlaskClient
) -> None:
    entry_id = work(
        app,
        lambda m, db: (
            guidance.admin_add(
                db.session(), {"type": "fact", "text": "Prices include VAT."}, actor_id="1"
            ).id
        ),
    )
    for _ in range(3):
        work(app, lambda m, db: m.start_session(USERS["editor"], "python", block=m.block()))

    def age_one(memory: Any, db: Any) -> None:
        first = db.session.scalars(select(BlockUse).order_by(BlockUse.session_id)).first()
        first.at = utcnow() - timedelta(days=8)
        db.session.commit()

    work(app, age_one)
    page = squash(client.get(f"{SCREEN}/guidance/{entry_id}").get_data(as_text=True))
    assert "in the block of 2 conversations (last 7 days)" in page


# -- cost ------------------------------------------------------------------------------------


def test_the_cost_card_counts_block_summary_tokens_and_calls_saved(
    app: Flask, client: FlaskClient, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor, admin = USERS["editor"], USERS["admin"]
    work(
        app,
        lambda m, db: guidance.admin_add(
            db.session(), {"type": "fact", "text": "The shop ships to the EU only."}, actor_id="1"
        ),
    )
    chars = work(app, lambda m, db: m.block().length)
    work(app, lambda m, db: m.set_setting("auto_summarize", True, actor=admin))

    def session(memory: Any, db: Any) -> str:
        session_id = memory.start_session(editor, "python", block=memory.block())
        memory.call_tool(
            "update-post", {"post_id": 7, "title": "Hi"}, user=editor, session_id=session_id
        )
        memory.end_session(session_id, transcript="editor: retitle post 7")
        return session_id

    # Provider none: the job ends digest only, with no call: one call saved.
    work(app, session)
    assert work(app, lambda m, db: m.run_due_jobs()).skipped == 1
    # A real summary through the OpenAI SDK against the fake: its usage is kept.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PROVIDERKEY-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    reconfigure(
        app, CHATMEM_PROVIDER="openai", CHATMEM_OPENAI_API="chat", CHATMEM_PROVIDER_MAX_RETRIES=0
    )
    work(app, session)
    fake_llm.enqueue(CHAT, 200, chat_text("Post 7 retitled.", input_tokens=321, output_tokens=45))
    assert work(app, lambda m, db: m.run_due_jobs()).done == 1

    jobs = work(
        app,
        lambda m, db: [
            (j.outcome, j.input_tokens, j.output_tokens)
            for j in db.session.scalars(select(SummaryJob).order_by(SummaryJob.id))
        ],
    )
    assert jobs == [("digest_only", None, None), ("summary", 321, 45)]
    cost = client.get(f"{SCREEN}/upkeep", headers=JSON).json["cost"]
    assert cost == {
        "days": 30,
        "conversations": 2,
        "block_tokens_estimate": -(-chars // 4),
        "conversations_with_memory": 2,
        "block_tokens_with_memory_estimate": -(-chars // 4),
        "first_prompt_tokens": None,
        "first_prompt_conversations": 0,
        "summary_jobs": 1,
        "summary_tokens": 366,
        "summary_input_tokens": 321,
        "summary_output_tokens": 45,
        "provider_calls_saved": 1,
        "pre_review_calls": 0,
        "pre_review_tokens": 0,
        "pre_review_input_tokens": 0,
        "pre_review_output_tokens": 0,
    }
    html = squash(client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert f'data-figure="block-tokens">about {-(-chars // 4)} tokens' in html
    assert 'data-figure="summary-tokens">366 <span class="cm-small">(321 in, 45 out' in html
    assert 'data-figure="calls-saved">1 ' in html

    # Jobs older than 30 days no longer count.
    def age(memory: Any, db: Any) -> None:
        db.session.execute(update(SummaryJob).values(finished_at=utcnow() - timedelta(days=31)))
        db.session.commit()

    work(app, age)
    cost = client.get(f"{SCREEN}/upkeep", headers=JSON).json["cost"]
    assert (cost["summary_tokens"], cost["provider_calls_saved"]) == (0, 0)


def test_the_cost_card_names_each_average_and_one_agrees_with_the_session_page(
    demo_app: Flask,
) -> None:
    """Conversations started before any memory have an empty block: they halve the
    average over all conversations, never the one over conversations that had memory."""
    editor = DemoClient(demo_app, "editor")
    fact_id = remember(editor, editor.new_conversation()["id"], FACT)  # started with none
    approve(demo_app, fact_id)
    chars = demo(demo_app, lambda m, db: m.block().length)
    with_memory = editor.new_conversation()["id"]

    def session_of(memory: Any, db: Any) -> str:
        from chatmem.demo.models import Conversation

        return str(db.session.get(Conversation, with_memory).session_id)

    admin = DemoClient(demo_app, "admin")
    cost = admin.client.get(f"{SCREEN}/upkeep", headers=JSON).get_json()["cost"]
    assert (cost["conversations"], cost["conversations_with_memory"]) == (2, 1)
    assert cost["block_tokens_with_memory_estimate"] == -(-chars // 4)
    assert cost["block_tokens_estimate"] == -(-round(chars / 2) // 4)
    card = squash(admin.client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert (
        "<dt>Block per conversation that had memory</dt> "
        f'<dd data-figure="memory-block-tokens">about {-(-chars // 4)} tokens '
        '<span class="cm-small">(estimated from characters, over the 1 conversation '
        "of the last 30 days that started with memory)</span>" in card
    )
    assert (
        "<dt>Block per conversation, all conversations</dt> "
        f'<dd data-figure="block-tokens">about {-(-round(chars / 2) // 4)} tokens '
        '<span class="cm-small">(over all 2 conversations of the last 30 days that '
        "recorded their block, 1 of them with none)</span>" in card
    )
    session = demo(demo_app, session_of)
    page = squash(admin.client.get(f"{SCREEN}/sessions/{session}").get_data(as_text=True))
    assert f"this conversation's block: {chars} characters, about {-(-chars // 4)} tokens" in page


def test_the_demo_chat_keeps_the_providers_count_of_the_first_prompt(
    demo_app: Flask, monkeypatch: pytest.MonkeyPatch, fake_llm: FakeLLM
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-PROVIDERKEY-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    reconfigure(
        demo_app,
        CHATMEM_PROVIDER="openai",
        CHATMEM_OPENAI_API="chat",
        CHATMEM_PROVIDER_MAX_RETRIES=0,
    )
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()
    fake_llm.enqueue(CHAT, 200, chat_text("Hello!", input_tokens=812, output_tokens=3))
    editor.say(conversation["id"], "hi")
    fake_llm.enqueue(CHAT, 200, chat_text("Again.", input_tokens=900, output_tokens=3))
    editor.say(conversation["id"], "and again")

    def kept(memory: Any, db: Any) -> int | None:
        from chatmem.demo.models import Conversation

        session_id = db.session.get(Conversation, conversation["id"]).session_id
        return db.session.get(Session, session_id).prompt_tokens

    assert demo(demo_app, kept) == 812
    admin = DemoClient(demo_app, "admin")
    cost = admin.client.get("/chatmem/memory/upkeep", headers=JSON).json["cost"]
    assert (cost["first_prompt_tokens"], cost["first_prompt_conversations"]) == (812, 1)


# -- how long items wait -------------------------------------------------------------------


TEXTS = (
    "The shop ships to the EU only.",
    "Invoices carry the customer's VAT id.",
    "Returns are free for members.",
    "The blog is written in English.",
)


def test_the_pending_tab_shows_the_oldest_wait_and_the_median_review(
    app: Flask, client: FlaskClient
) -> None:
    editor = USERS["editor"]
    ids = [
        work(
            app,
            lambda m, db, text=text: m.call_tool(
                "remember", {"type": "fact", "text": text}, user=editor
            )["id"],
        )
        for text in TEXTS
    ]
    now = utcnow()

    def backdate(memory: Any, db: Any) -> None:
        # Waited 1 h, 2 h and 4 h before review; the last still waits, for 3 days.
        for entry_id, hours in zip(ids, (1, 2, 4, 72), strict=True):
            then = now - timedelta(hours=hours)
            db.session.execute(
                update(Guidance).where(Guidance.id == entry_id).values(created_at=then)
            )
            db.session.execute(
                update(GuidanceEvent)
                .where(GuidanceEvent.guidance_id == entry_id, GuidanceEvent.action == "propose")
                .values(at=then)
            )
        db.session.commit()

    work(app, backdate)
    empty = client.get(f"{SCREEN}/upkeep", headers=JSON).json
    assert (empty["median_review_seconds"], empty["reviews"]) == (None, 0)
    for entry_id, action in zip(ids[:3], ("approve", "reject", "approve"), strict=True):
        version = work(app, lambda m, db, i=entry_id: db.session.get(Guidance, i).version)
        response = client.post(
            f"{SCREEN}/guidance/{entry_id}/{action}",
            data={"csrf_token": token(client), "version": str(version)},
            headers=JSON,
        )
        assert response.status_code == 200, response.json

    pace = client.get(f"{SCREEN}/upkeep", headers=JSON).json
    assert pace["reviews"] == 3
    assert 2 * 3600 <= pace["median_review_seconds"] < 2 * 3600 + 120
    assert pace["oldest_pending_at"].startswith((now - timedelta(hours=72)).strftime("%Y-%m-%dT%H"))
    pending = squash(client.get(f"{SCREEN}?tab=pending").get_data(as_text=True))
    assert "The oldest item has waited <strong>3 days</strong>." in pending
    assert "Median time to review, last 30 days: <strong>2 h</strong>." in pending
    upkeep = squash(client.get(f"{SCREEN}/upkeep").get_data(as_text=True))
    assert 'data-figure="oldest">3 days' in upkeep
    assert 'data-figure="median">2 h <span class="cm-small">over 3 decisions' in upkeep


def test_the_demo_tells_admins_what_waits_and_for_how_long(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    entry_id = remember(editor, conversation, "Invoices are numbered by year.")

    def backdate(memory: Any, db: Any) -> None:
        db.session.execute(
            update(Guidance)
            .where(Guidance.id == entry_id)
            .values(created_at=utcnow() - timedelta(hours=5))
        )
        db.session.commit()

    demo(demo_app, backdate)
    admin = DemoClient(demo_app, "admin")
    page = squash(admin.client.get("/chat").get_data(as_text=True))
    assert f"New proposal from editor: Proposal #{entry_id} (fact) · <a" in page
    assert "Invoices are numbered" not in page, "the notice carries no agent-written text"
    assert (
        'title="1 waiting for you: proposals to review and calls to approve; '
        'the oldest for 5 h; oldest proposal in Facts and conventions"' in page
    )
    # The editor is not a curator: no notices, no badge.
    assert "New proposal from" not in editor.client.get("/chat").get_data(as_text=True)

    # Reviewed: the queue is empty, the notice goes with it.
    approve(demo_app, entry_id)
    assert "New proposal from" not in admin.client.get("/chat").get_data(as_text=True)
