"""Ranked recall: `topic` as keywords or a question (issue 28).

The regression set (tests/recall_questions.py) is asked through the tool
path, REST, MCP and the demo's chat; the public benchmark is LoCoMo
(bench/recall_quality.py). Runs on SQLite and, with
CHATMEM_TEST_DATABASE_URL, on PostgreSQL.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import insert

from chatmem.memory import fields, guidance, switches
from chatmem.memory import recall as recall_queries
from chatmem.memory.models import Guidance, Session
from tests.demo_client import DemoClient, tool_results
from tests.demo_story import approve
from tests.hostapp import USERS, reconfigure
from tests.recall_questions import ABSENT, ENTRIES, QUESTIONS
from tests.test_mcp_hot_path import call as mcp_call
from tests.test_recall_index import _record

START = datetime(2026, 3, 1, 12, 0, 0)
REST = "/chatmem/api/tools/recall"


def seed(db: Any, entries: list[tuple[str, str, str, str, str | None]] = ENTRIES) -> dict[int, str]:
    """The entries, approved; entry id -> key."""
    rows = [
        {
            "type": type_,
            "title": title,
            "text": text,
            "target": target,
            "severity": "block" if type_ == "guardrail" else None,
            "text_key": fields.text_key(text),
            "status": "publish",
            "enabled": True,
            "origin": "admin",
            "created_at": START,
            "approved_at": START + timedelta(minutes=i),
            "updated_at": START,
            "version": 1,
        }
        for i, (_key, type_, title, text, target) in enumerate(entries)
    ]
    db.session.execute(insert(Guidance), rows)
    switches.bump_revision(db.session())
    db.session.commit()
    key_of = {text: key for key, _t, _title, text, _g in entries}
    return {e.id: key_of[e.text] for e in db.session.query(Guidance)}


def ask(memory: Any, topic: str, **more: Any) -> dict[str, Any]:
    return dict(memory.call_tool("recall", {"topic": topic, **more}, user=USERS["editor"]))


def test_questions_in_words_find_the_entry_that_answers_them(memory: Any, db: Any) -> None:
    keys = seed(db)
    ranks = {}
    for question, wanted in QUESTIONS:
        found = [keys[g["id"]] for g in ask(memory, question)["guidance"]]
        ranks[question] = found.index(wanted) + 1 if wanted in found else None
    at_1 = sum(rank == 1 for rank in ranks.values())
    at_5 = sum(rank is not None and rank <= 5 for rank in ranks.values())
    # Measured: 27 of 28 first, 28 of 28 in the first five (see the README).
    assert at_5 >= 27, ranks
    assert at_1 >= 25, ranks


def test_questions_about_what_memory_does_not_hold_get_no_guidance(
    app: Flask, memory: Any, db: Any
) -> None:
    seed(db)
    silent = [q for q in ABSENT if ask(memory, q)["guidance_total"] == 0]
    # Measured at the default (0.15): 7 of the 10; the other three share one
    # rarer word with an entry ("site", "customers", "boxes").
    assert len(silent) >= 7, silent
    assert all(ask(memory, q)["guidance_total"] > 0 for q, _key in QUESTIONS)
    answer = ask(memory, "what is the wifi password of the office?")
    assert answer == {"guidance": [], "guidance_total": 0, "cursor": None, "sessions": []}

    reconfigure(app, CHATMEM_RECALL_MIN_MATCH=0)  # never abstain: any shared word is a match
    loose = ask(memory, "how do I rotate the SSL certificate of the site?")
    assert loose["guidance_total"] > 0
    assert loose["guidance"][0]["match"]["terms"] == ["site"]
    # Every word of the question in one entry, or nothing (then the rest follow it).
    reconfigure(app, CHATMEM_RECALL_MIN_MATCH=1)
    strict = ask(memory, "when is shipping free?")
    assert strict["guidance"][0]["title"] == "Free shipping threshold"
    assert ask(memory, "did anyone change the header recently?")["guidance_total"] == 0


def test_a_guardrail_on_what_the_question_names_comes_first(memory: Any, db: Any) -> None:
    keys = seed(db)
    for question, wanted in (
        ("may I edit post 2?", "no-home-edit"),
        ("I want to publish this post now", "ask-publish"),
        ("update_price for the scarf", "prices"),
        ("delete post", "no-delete-posts"),
    ):
        first = ask(memory, question)["guidance"][0]
        assert (keys[first["id"]], first["match"]["why"]) == (wanted, "target"), question
    # Words of a target, but not all of them: no guardrail is named.
    others = ask(memory, "which post is on the home page?")["guidance"]
    assert all(g["match"]["why"] != "target" for g in others)


def test_the_phrase_as_written_comes_before_entries_by_relevance(memory: Any, db: Any) -> None:
    keys = seed(db)
    answer = ask(memory, "checkout page")
    first, *rest = answer["guidance"]
    assert keys[first["id"]] == "checkout-css"
    assert first["match"] == {
        "rank": 1,
        "why": "phrase",
        "score": first["match"]["score"],
        "terms": ["checkout", "page"],
    }
    assert first["match"]["score"] > 0
    assert [g["match"]["why"] for g in rest] == ["terms"] * len(rest)
    assert [g["match"]["rank"] for g in answer["guidance"]] == list(
        range(1, len(answer["guidance"]) + 1)
    )
    scores = [g["match"]["score"] for g in rest]
    assert scores == sorted(scores, reverse=True)
    # The words the entry holds, as the question spelled them (not their stems).
    [taxed] = [g for g in ask(memory, "taxes added at checkouts")["guidance"][:1]]
    assert keys[taxed["id"]] == "checkout-tax"
    assert taxed["match"]["terms"] == ["taxes", "added", "checkouts"]


def test_type_and_paging_work_over_the_ranked_list(memory: Any, db: Any) -> None:
    many = [
        (
            f"k{i}",
            ("fact", "convention")[i % 2],
            f"note {i}",
            f"shipping note {i} " * (1 + i % 5),
            None,
        )
        for i in range(40)
    ]
    seed(db, many)
    whole = ask(memory, "shipping notes", guidance_limit=100)
    assert whole["guidance_total"] == 40 and whole["cursor"] is None
    pages, cursor = [], None
    while True:
        more = {"cursor": cursor} if cursor else {}
        page = ask(memory, "shipping notes", guidance_limit=7, **more)
        assert page["guidance_total"] == 40
        pages += [g["id"] for g in page["guidance"]]
        cursor = page["cursor"]
        if cursor is None:
            break
    assert pages == [g["id"] for g in whole["guidance"]]  # no repeat, no miss, same order
    facts = ask(memory, "shipping notes", type="fact", guidance_limit=100)
    assert facts["guidance_total"] == 20
    assert {g["type"] for g in facts["guidance"]} == {"fact"}
    assert [g["id"] for g in facts["guidance"]] == [
        g["id"] for g in whole["guidance"] if g["type"] == "fact"
    ]
    first = ask(memory, "shipping notes", guidance_limit=7)
    for other in ({"topic": "shipping"}, {"topic": "shipping notes", "type": "fact"}, {}):
        with pytest.raises(Exception) as refused:
            memory.call_tool("recall", {**other, "cursor": first["cursor"]}, user=USERS["editor"])
        assert getattr(refused.value, "code", None) == "invalid_params"


def test_a_newly_approved_entry_is_found_by_a_question_on_another_worker(
    app: Flask, second_worker: Flask
) -> None:
    def ask_b(question: str) -> dict[str, Any]:
        with second_worker.app_context():
            return ask(second_worker.extensions["test_host"]["memory"], question)

    assert ask_b("when does the warehouse close?")["guidance_total"] == 0
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        text = "The warehouse closes from 24 December to 2 January."
        entry, _created = guidance.propose(
            memory.db.session(), {"type": "fact", "text": text}, session_id=None, actor_id="1"
        )
        memory.db.session.commit()
        guidance.approve(memory.db.session(), entry.id, actor_id="1")
        memory.db.session.remove()
    [found] = ask_b("when does the warehouse close?")["guidance"]
    assert found["text"] == text


def test_stemming_follows_the_search_language(app: Flask, memory: Any, db: Any) -> None:
    seed(db, [*ENTRIES, ("fr", "fact", "Colis", "Les colis sont envoyés chaque lundi.", None)])
    question = "quand envoyer un colis ?"
    [english] = ask(memory, question)["guidance"]  # "colis" alone: the English stems differ
    assert english["match"]["terms"] == ["colis"]
    reconfigure(app, CHATMEM_SEARCH_LANGUAGE="french")
    [french] = ask(memory, question)["guidance"]
    assert french["match"]["terms"] == ["envoyer", "colis"]
    assert french["match"]["score"] > english["match"]["score"]


def test_han_text_is_searched_character_by_character(memory: Any, db: Any) -> None:
    seed(db, [("zh", "fact", "结账页面", "结账页面使用自己的样式表。", None)])
    [phrase] = ask(memory, "结账页面")["guidance"]
    assert phrase["match"]["why"] == "phrase"
    [terms] = ask(memory, "页面的样式是什么")["guidance"]
    assert terms["match"]["why"] == "terms"


def test_compatibility_ideographs_nfkc_keeps_are_terms_of_their_own(memory: Any, db: Any) -> None:
    # U+FA0E and U+FA0F are unified ideographs in the compatibility block:
    # NFKC leaves them as they are, and they take no spaces either.
    seed(db, [("compat", "fact", "Note", "\ufa0e\ufa0f\ufa11", None)])
    [found] = ask(memory, "\ufa0f")["guidance"]
    assert found["match"]["terms"] == ["\ufa0f"]


def test_the_score_is_okapi_bm25_with_the_title_counted_twice(memory: Any, db: Any) -> None:
    seed(
        db,
        [
            ("a", "fact", "Zebra", "zebra lion", None),  # zebra: 2 (title) + 1; length 2 + 2
            ("b", "fact", "Lion", "zebra tiger tiger", None),  # zebra: 1; length 2 + 3
            ("c", "fact", "Tiger", "cat", None),  # length 2 + 1
        ],
    )
    k1, b, average, idf = 0.9, 0.4, (4 + 5 + 3) / 3, math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def bm25(tf: float, length: float) -> float:
        return round(idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average)), 3)

    answer = ask(memory, "which zebra?")["guidance"]
    assert [(g["title"], g["match"]["score"]) for g in answer] == [
        ("Zebra", bm25(3, 4)),
        ("Lion", bm25(1, 5)),
    ]


BAD_TOPICS = [
    "the of and",  # stop words only
    'NEAR("checkout" "page")',
    '"',
    '"checkout',
    "check*",
    "title:checkout",
    "-checkout",
    "(checkout OR header) AND NOT page",
    "   ",
    "结账 صفحة الدفع чекаут 🛒",
    "%_/\\",
    "checkout " * 22,  # 198 characters: the most the schema takes
]


@pytest.mark.parametrize("topic", BAD_TOPICS)
def test_odd_questions_get_an_answer_or_a_clear_refusal_on_every_channel(
    app: Flask, make_token: Any, topic: str
) -> None:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    with app.app_context():
        seed(app.extensions["test_host"]["db"])
    client = app.test_client()
    token = make_token("editor")
    rest = client.post(REST, json={"topic": topic}, headers={"Authorization": f"Bearer {token}"})
    assert rest.status_code == 200, rest.get_data(as_text=True)
    assert set(rest.json) == {"guidance", "guidance_total", "cursor", "sessions"}
    mcp = mcp_call(client, token, None, "recall", {"topic": topic})
    assert mcp.status_code == 200
    assert mcp.json["result"]["isError"] is False
    assert mcp.json["result"]["structuredContent"] == rest.json


def test_invisible_characters_in_a_question_are_dropped_not_searched(memory: Any, db: Any) -> None:
    ids = seed(db)
    plain = ask(memory, "checkout stylesheet")
    split = ask(memory, "check\u200bout style\u2063sheet\u202e")
    assert ids[split["guidance"][0]["id"]] == "checkout-css"
    assert split == plain
    assert ask(memory, "\u200b\u200b")["guidance_total"] == len(ENTRIES)  # no topic left


@pytest.mark.parametrize("topic", ["", "word " * 200, "checkout\x00page", "\x00"])
def test_what_the_schema_refuses_is_invalid_params(app: Flask, make_token: Any, topic: str) -> None:
    client = app.test_client()
    token = make_token("editor")
    rest = client.post(REST, json={"topic": topic}, headers={"Authorization": f"Bearer {token}"})
    mcp = mcp_call(client, token, None, "recall", {"topic": topic})
    if topic:  # too long, or a NUL (refused in every written field)
        assert rest.status_code == 400
        assert rest.json["error"]["code"] == "invalid_params"
        assert mcp.json["result"]["isError"] is True
        assert mcp.json["result"]["structuredContent"] == rest.json
    else:  # an empty topic is no topic: the whole page, as before
        assert rest.status_code == 200
        assert mcp.json["result"]["structuredContent"] == rest.json


def test_the_chat_finds_a_fact_by_a_question(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    chat = editor.new_conversation()
    fact = "Orders over 50 euros ship free within the EU."
    [card] = tool_results(
        editor.say(chat["id"], "/tool remember " + json.dumps({"type": "fact", "text": fact}))
    )
    approve(demo_app, card["result"]["id"])
    later = editor.new_conversation()
    question = {"topic": "when is shipping free?"}
    [answer] = tool_results(editor.say(later["id"], "/tool recall " + json.dumps(question)))
    [found] = answer["result"]["guidance"]
    assert found["text"] == fact
    assert found["match"]["terms"] == ["shipping", "free"]


def test_session_records_answer_a_question_best_first_and_stay_private(
    memory: Any, db: Any, admin: Any
) -> None:
    editor = ("2", "editor")
    _record(db, 1, "Changed the header logo to the new SVG.", user=editor)
    _record(db, 2, "Moved the search box into the header menu.", user=editor)
    _record(db, 3, "Fixed a typo in the footer.", user=editor)
    _record(db, 4, "Changed the header colours for the sale.", user=("1", "admin"))
    _record(db, 5, "Header changes: none today, only a changed footer link.", user=editor)
    db.session.commit()
    question = {"topic": "did anyone change the header?", "limit": 10}
    mine = memory.call_tool("recall", question, user=USERS["editor"])["sessions"]
    # Both words first (the newer of equal scores first), then one of them; never the footer.
    assert [s["id"] for s in mine] == ["w0005", "w0001", "w0002"]
    everyone = memory.call_tool("recall", question, user=admin)["sessions"]
    assert {s["id"] for s in everyone} == {"w0001", "w0002", "w0004", "w0005"}
    # The topic as written comes first, however the words score.
    [written, *_rest] = memory.call_tool("recall", {"topic": "the new SVG"}, user=USERS["editor"])[
        "sessions"
    ]
    assert written["id"] == "w0001"


def test_a_short_stem_finds_the_other_forms_of_its_word(memory: Any, db: Any) -> None:
    # "cats" is looked for as `cat`, three letters: the shortest piece a trigram index takes.
    _record(db, 1, "Fed the cat before the deploy.")
    _record(db, 2, "Fixed the footer.")
    db.session.commit()
    found = memory.call_tool("recall", {"topic": "cats"}, user=USERS["editor"])["sessions"]
    assert [s["id"] for s in found] == ["w0001"]


def test_rest_and_mcp_find_a_fact_by_a_question(app: Flask, make_token: Any) -> None:
    with app.app_context():
        keys = seed(app.extensions["test_host"]["db"])
    client = app.test_client()
    token = make_token("editor")
    question = {"topic": "which days may I deploy to production?", "guidance_limit": 3}
    rest = client.post(REST, json=question, headers={"Authorization": f"Bearer {token}"})
    mcp = mcp_call(client, token, None, "recall", question)
    for answer in (rest.json, mcp.json["result"]["structuredContent"]):
        first = answer["guidance"][0]
        assert keys[first["id"]] == "deploys"
        assert first["match"]["terms"] == ["deploy", "production"]


@pytest.mark.parametrize("missing", ["summary", "digest"])
def test_a_record_is_ranked_on_the_text_it_has(db: Any, missing: str) -> None:
    """A record without a summary (or digest) is ranked on the other alone:
    the newer, shorter record holding the word comes first, as BM25 says."""
    _record(db, 2, "pad")
    _record(db, 1, "")
    db.session.commit()
    newer, older = db.session.get(Session, "w0002"), db.session.get(Session, "w0001")
    newer.digest = "xxxx pad"
    setattr(older, missing, None)
    setattr(older, "digest" if missing == "summary" else "summary", "xxxx pad pad pad")
    db.session.commit()
    found = recall_queries.session_records(db.session(), topic="xxxx")
    assert [r.id for r in found] == ["w0002", "w0001"]


def test_a_record_holding_the_question_as_written_comes_before_better_scores(db: Any) -> None:
    _record(db, 2, "docs docs docs deploy")
    _record(db, 1, "we deploy docs on fridays, with the whole team around to watch it")
    db.session.commit()
    found = recall_queries.session_records(db.session(), topic="Deploy docs")
    assert [r.id for r in found] == ["w0001", "w0002"]


def test_records_are_scored_on_their_text_alone(db: Any) -> None:
    """BM25's length normalisation over the records' own text (they have no
    title): one mention in a one-word record beats two in eleven words."""
    _record(db, 2, "deploy")
    _record(db, 1, "deploy deploy " + "pad " * 9)
    db.session.commit()
    found = recall_queries.session_records(db.session(), topic="deploy")
    assert [r.id for r in found] == ["w0002", "w0001"]


def test_a_record_holding_the_word_only_inside_another_comes_last(db: Any) -> None:
    """ "redeployed" holds "deploy" as written, but not the word: it has no
    score, and comes after every record that has one."""
    _record(db, 3, "redeployed it")
    _record(db, 2, "deploy notes, deploy checks, deploy docs and more deploy talk " + "pad " * 30)
    _record(db, 1, "deploy")
    db.session.commit()
    found = recall_queries.session_records(db.session(), topic="deploy")
    assert [r.id for r in found] == ["w0002", "w0001", "w0003"]
