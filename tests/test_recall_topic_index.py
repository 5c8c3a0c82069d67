"""recall's topic search over the cached approved guidance answers what the scan answers."""

from __future__ import annotations

import random
from typing import Any

import pytest

from chatmem.memory import fields, guidance
from chatmem.memory import recall as recall_queries
from chatmem.memory.models import Guidance
from chatmem.memory.recall import topic_index
from chatmem.memory.recall.ranked import RankedGuidance
from chatmem.memory.recall.ranking import Analyzer
from chatmem.text import for_agents_record
from tests.test_recall_index import _record, _seed, _statements, _topics


def _cached(memory: Any) -> Any:
    return memory.approved_guidance(memory.snapshot())


def _as_agents_see(answer: dict[str, Any]) -> dict[str, Any]:
    """The scan's answer shaped as the tool shapes it (the cache holds shaped entries)."""
    shaped = [for_agents_record(g, fields.WRITTEN) for g in answer["guidance"]]
    return {**answer, "guidance": shaped}


def test_the_cached_search_equals_the_scan_on_every_topic_type_and_page(
    memory: Any, db: Any
) -> None:
    rng = random.Random(20261201)
    topics = _topics(rng, _seed(db, rng))
    approved = _cached(memory)
    found = 0
    for topic in topics:
        for type in (None, "guardrail", "fact", "convention", "instruction"):
            filters = {"topic": topic, "type": type, "limit": 5, "guidance_limit": 3}
            scanned = recall_queries.recall(db.session(), scan=True, **filters)
            cached = recall_queries.recall(db.session(), approved=approved, **filters)
            assert cached == _as_agents_see(scanned), (topic, type)
            # Page on to the end: the same pages, the same cursors.
            while scanned["cursor"] is not None:
                filters["cursor"] = scanned["cursor"]
                scanned = recall_queries.recall(db.session(), scan=True, **filters)
                cached = recall_queries.recall(db.session(), approved=approved, **filters)
                assert cached == _as_agents_see(scanned), (topic, type, filters["cursor"])
            found += scanned["guidance_total"] > 0
    assert found > len(topics)  # the topics do find entries
    assert topic_index.for_cache(db.session(), approved) is topic_index.for_cache(
        db.session(), approved
    )


def test_a_topic_the_index_cannot_hold_goes_to_the_database(memory: Any, db: Any) -> None:
    if db.engine.dialect.name == "postgresql":
        pytest.skip("PostgreSQL text cannot hold NUL (every channel refuses it before recall)")
    _seed(db, random.Random(7))
    # The index holds title and text as one string, NUL between them; the
    # database is the reference for such a topic, whatever it makes of the NUL.
    fields_ = {"type": "fact", "title": "alpha", "text": "gamma"}
    guidance.admin_add(db.session(), fields_, actor_id="1")
    approved = _cached(memory)
    topic = "alpha\x00beta"
    assert not topic_index.searchable(topic)
    cached = recall_queries.recall(db.session(), approved=approved, topic=topic)
    assert cached == recall_queries.recall(db.session(), scan=True, topic=topic)


def test_entries_changed_behind_the_cache_send_the_search_to_the_database(
    memory: Any, db: Any
) -> None:
    _seed(db, random.Random(11))
    approved = _cached(memory)
    # Approved without bumping the revision: the cache no longer holds every active entry.
    pending = db.session.query(Guidance).filter(Guidance.status != "publish").first()
    pending.status, pending.enabled, pending.text = "publish", True, "behind the cache zyx"
    pending.approved_at = pending.created_at
    db.session.commit()

    assert topic_index.for_cache(db.session(), approved) is None
    answer = recall_queries.recall(db.session(), approved=approved, topic="ZYX")
    assert [g["id"] for g in answer["guidance"]] == [pending.id]
    assert answer == recall_queries.recall(db.session(), scan=True, topic="zyx")


def _guidance_reads(db: Any, call: Any) -> list[str]:
    """The statements `call` runs that read guidance rows."""
    return [s for s in _statements(db, call) if "FROM chatmem_guidance" in s]


def test_with_the_cache_at_hand_a_topic_reads_no_guidance_from_the_database(
    memory: Any, db: Any
) -> None:
    _seed(db, random.Random(5))
    approved = _cached(memory)
    topic_index.for_cache(db.session(), approved)  # built once per revision
    ask = {"approved": approved, "topic": "checkout", "type": "fact"}
    answer = recall_queries.recall(db.session(), **ask)
    assert answer["guidance_total"] > 0
    assert _guidance_reads(db, lambda: recall_queries.recall(db.session(), **ask)) == []
    plain = {"approved": approved, "type": "fact"}  # no topic: a page of the cache
    assert _guidance_reads(db, lambda: recall_queries.recall(db.session(), **plain)) == []
    # Asked to scan, it asks the database, whatever it holds, and no index:
    # the reference the indexed paths are held to.
    for topic in ("checkout", "École", "absent zzqx"):
        scan = {**ask, "approved": None, "topic": topic, "scan": True}
        scanned = _statements(db, lambda s=scan: recall_queries.recall(db.session(), **s))
        assert any("FROM chatmem_guidance" in s for s in scanned)
        assert not any("_fts" in s for s in scanned), topic


def test_session_records_are_cut_into_pieces_in_the_search_language(
    memory: Any, db: Any, admin: Any
) -> None:
    """The records' pieces use the ranked index's analyzer: German stems "Katzen" to
    `katz`, which finds "eine Katze"; English would look for `katzen` alone."""
    _record(db, 1, "eine Katze schläft")
    guidance.admin_add(db.session(), {"type": "fact", "text": "Katzen"}, actor_id=str(admin.id))
    db.session.commit()
    german = RankedGuidance.of(_cached(memory), Analyzer("german"))
    answer = recall_queries.recall(db.session(), topic="Katzen", ranked=german)
    assert [s["summary"] for s in answer["sessions"]] == ["eine Katze schläft"]
    english = RankedGuidance.of(_cached(memory), Analyzer())
    assert recall_queries.recall(db.session(), topic="Katzen", ranked=english)["sessions"] == []


def test_a_question_without_a_floor_keeps_every_entry_that_shares_a_word(
    memory: Any, db: Any, admin: Any
) -> None:
    """`min_match` is 0 unless the caller sets one: entries holding part of the question come."""
    for said in ("deploy on fridays", "deploy the docs"):
        guidance.admin_add(db.session(), {"type": "fact", "text": said}, actor_id=str(admin.id))
    db.session.commit()
    ranked = memory.ranked_guidance(memory.snapshot())
    answer = recall_queries.recall(db.session(), topic="deploy zeppelin", ranked=ranked)
    assert sorted(g["text"] for g in answer["guidance"]) == ["deploy on fridays", "deploy the docs"]
    floored = recall_queries.recall(
        db.session(), topic="deploy zeppelin", ranked=ranked, min_match=1
    )
    assert floored["guidance"] == []
