"""The recall indexes change how fast `topic` is answered, never the answer."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import event, literal_column, select, text

from chatmem.memory import guidance
from chatmem.memory import recall as recall_queries
from chatmem.memory.fields import text_key
from chatmem.memory.models import Guidance, Session
from chatmem.memory.recall import records
from chatmem.memory.recall.ranking import Analyzer

WORDS = [
    "checkout",
    "Checkout",
    "CHECKOUT",
    "header",
    "footer",
    "page",
    "42",
    "post_type",
    "50%",
    "100%_off",
    "a_b",
    "a/b",
    "x%y",
    '"quoted"',
    "it's",
    "École",
    "école",
    "ÉCOLE",
    "straße",
    "STRASSE",
    "Ünïcödé",
    "日本語",
    "emoji🙂ok",
    "tab\there",
    "new\nline",
    "deploy",
    "migration",
    "Migration",
    "gunicorn",
    "cache",
    "revision",
    "  spaced  ",
    "-",
    "_",
    "%",
]


# Whose sessions: recall shows a caller its own (None: everyone's, as a curator sees them).
AUTHORS = [("1", "admin"), ("2", "editor"), ("4", "author")]
READERS = [None, "1", "2", "4", "99"]


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12)))


def _topics(rng: random.Random, texts: list[str]) -> list[str]:
    topics = [
        "%",
        "_",
        "/",
        "%_",
        "a_b",
        "x%y",
        "50%",
        '"',
        '"quoted"',
        "É",
        "é",
        "ÉCOLE",
        "école",
        "straße",
        "日本",
        "日本語",
        "🙂",
        "zzzz-not-there",
        "ch",
        "Ch",
        "c",
        "checkout page",
        "CHECKOUT PAGE",
        "\t",
        "e\nl",
    ]
    for _ in range(120):
        source = rng.choice(texts)
        if not source:
            continue
        start = rng.randrange(len(source))
        piece = source[start : start + rng.randint(1, 9)]
        if piece.strip():
            choice = rng.random()
            piece = piece.upper() if choice < 0.3 else piece.swapcase() if choice < 0.5 else piece
            topics.append(piece)
    return topics


def _seed(db: Any, rng: random.Random) -> list[str]:
    now = datetime(2026, 1, 1)
    texts: list[str] = []
    for i in range(150):
        body = _sentence(rng)
        title = _sentence(rng)[:200]
        texts += [body, title]
        status = rng.choice(["publish", "publish", "pending", "trash"])
        db.session.add(
            Guidance(
                type=rng.choice(["guardrail", "fact", "convention", "instruction"]),
                title=title,
                text=body,
                text_key=text_key(f"{i} {body}"),
                status=status,
                enabled=rng.random() < 0.8,
                origin="agent",
                approved_at=now if status == "publish" else None,
                created_at=now,
                updated_at=now,
            )
        )
    for i in range(300):
        summary = _sentence(rng) if rng.random() < 0.8 else None
        digest = _sentence(rng) if rng.random() < 0.9 else None
        texts += [summary or "", digest or ""]
        user_id, user_name = rng.choice(AUTHORS)
        db.session.add(
            Session(
                id=f"s{i:04d}",
                user_id=user_id,
                user_name=user_name,
                channel="python",
                started_at=now,
                last_seen_at=now,
                # Ended: a sweep (any sweeper on a shared PostgreSQL database)
                # ends and records idle open sessions, which would change the
                # answer between the indexed call and the scan it is compared to.
                ended_at=now,
                recorded_at=now + timedelta(minutes=rng.randint(0, 50)) if i % 7 else None,
                summary=summary,
                digest=digest,
            )
        )
    db.session.commit()
    return texts


def _assert_same(db: Any, topics: list[str]) -> int:
    """Every topic gives the scan's answer; returns how many found something."""
    found = 0
    for topic in topics:
        for reader in READERS:
            every = {"topic": topic, "limit": 100, "guidance_limit": 500, "user_id": reader}
            indexed = recall_queries.recall(db.session(), **every)
            scanned = recall_queries.recall(db.session(), scan=True, **every)
            assert indexed == scanned, f"topic {topic!r}, reader {reader}"
            if reader is not None:
                names = {name for uid, name in AUTHORS if uid == reader}
                assert {s["user"] for s in scanned["sessions"]} <= names
        found += bool(scanned["guidance"] or scanned["sessions"])
    return found


def test_indexed_recall_equals_the_scan(
    memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(20260707)
    texts = _seed(db, rng)
    topics = _topics(rng, texts)
    assert _assert_same(db, topics) > len(topics) // 2  # the topics do find things
    # Every topic is rare among these entries: counted as common instead,
    # guidance is found by the scan of the active entries too.
    monkeypatch.setattr(recall_queries, "RARE", 0)
    _assert_same(db, topics)
    # The first passes answer alone when they find enough.
    monkeypatch.setattr(records, "WINDOWS", (5, 20))
    for topic in topics:
        for limit, reader in ((1, None), (3, "2"), (10, None), (10, "4")):
            indexed = recall_queries.session_records(
                db.session(), topic=topic, limit=limit, user_id=reader
            )
            scanned = recall_queries.session_records(
                db.session(), topic=topic, limit=limit, scan=True, user_id=reader
            )
            assert [s.id for s in indexed] == [s.id for s in scanned], topic

    # The triggers keep the index in step with updates and deletes.
    sessions = db.session.query(Session).order_by(Session.id).all()
    for session in sessions[::3]:
        session.summary = "rewritten: cache revision École"
    for session in sessions[1::5]:
        session.digest = None
    for session in sessions[2::11]:
        db.session.delete(session)
    for entry in db.session.query(Guidance).order_by(Guidance.id).all()[::4]:
        entry.text = "guidance rewritten about gunicorn"
    db.session.commit()
    _assert_same(db, [*topics, "rewritten", "REWRITTEN: cache", "gunicorn"])
    assert recall_queries.recall(db.session(), topic="rewritten: CACHE")["sessions"]


def test_the_recall_tool_uses_the_index(memory: Any, db: Any, editor: Any, admin: Any) -> None:
    rng = random.Random(7)
    _seed(db, rng)
    result = memory.call_tool("recall", {"topic": "École", "limit": 100}, user=editor)
    scan = recall_queries.recall(db.session(), topic="École", limit=100, scan=True, user_id="2")
    assert result["sessions"] == scan["sessions"]
    # Guidance is ranked (test_recall_ranked.py): every entry holding the
    # topic as written comes before any that merely shares a word with it.
    why = {g["id"]: g["match"]["why"] for g in result["guidance"]}
    assert {g["id"] for g in scan["guidance"]} <= {i for i, w in why.items() if w != "terms"}
    tiers = list(why.values())
    assert tiers == sorted(tiers, key=["target", "phrase", "terms"].index)
    everyone = memory.call_tool("recall", {"topic": "École", "limit": 100}, user=admin)
    assert (
        everyone["sessions"]
        == recall_queries.recall(db.session(), topic="École", limit=100, scan=True)["sessions"]
    )
    assert {s["user"] for s in result["sessions"]} == {"editor"}
    assert {s["user"] for s in everyone["sessions"]} > {"editor"}
    plan = _plan(db, "checkout")
    if db.engine.dialect.name == "sqlite":
        assert "chatmem_session_fts VIRTUAL TABLE INDEX" in plan
    else:
        assert "ix_chatmem_session_summary_trgm" in plan
    # Under three characters there is no trigram: the scan answers alone.
    assert "fts" not in _plan(db, "ch")
    # One user's newest records come straight from (user_id, recorded_at).
    assert "ix_chatmem_session_user_recorded" in _explain(
        db, records.OWN_NEWEST_RECORDS.params(user_id="2", limit=10)
    )


def _plan(db: Any, topic: str) -> str:
    statement = select(Session.id).where(
        recall_queries.topic_filter(
            db.session(),
            "chatmem_session",
            literal_column("chatmem_session.rowid"),
            (Session.summary, Session.digest),
            topic,
            scan=False,
        )
    )
    return _explain(db, statement)


def _explain(db: Any, query: Any) -> str:
    statement = query.compile(db.engine, compile_kwargs={"literal_binds": True})
    if db.engine.dialect.name == "sqlite":
        rows = db.session.execute(text(f"EXPLAIN QUERY PLAN {statement}")).all()
        return "\n".join(str(row[-1]) for row in rows)
    db.session.execute(text("SET LOCAL enable_seqscan = off"))
    rows = db.session.execute(text(f"EXPLAIN {statement}")).all()
    return "\n".join(row[0] for row in rows)


def _record(db: Any, number: int, summary: str, user: tuple[str, str] = ("2", "editor")) -> None:
    """Record `number`, recorded `number` minutes into the day: higher is newer."""
    at = datetime(2026, 2, 1) + timedelta(minutes=number)
    db.session.add(
        Session(
            id=f"w{number:04d}",
            user_id=user[0],
            user_name=user[1],
            channel="python",
            started_at=at,
            last_seen_at=at,
            ended_at=at,
            recorded_at=at,
            summary=summary,
        )
    )


def _statements(db: Any, call: Any) -> list[str]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(db.engine, "before_cursor_execute", record)
    return seen


def _windows(statements: list[str]) -> int:
    """How many window passes (matches among the newest records) ran."""
    return sum("OFFSET" in s and "chatmem_session.recorded_at >=" in s for s in statements)


def _newest(db: Any, topic: str, limit: int, user_id: str | None = None) -> tuple[list[str], int]:
    """The ids `newest_matches` finds (checked against the scan) and its window passes."""
    found: list[Any] = []
    ran = _statements(
        db,
        lambda: found.extend(
            records.newest_matches(db.session(), [topic], limit=limit, scan=False, user_id=user_id)
        ),
    )
    scanned = records.newest_matches(db.session(), [topic], limit=limit, scan=True, user_id=user_id)
    assert [r.id for r in found] == [r.id for r in scanned], topic
    return [r.id for r in found], _windows(ran)


def test_the_windows_stop_early_and_hand_rare_topics_to_the_index(
    memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 40 records, newest last: "plenty" in every one, "sparse" in the 2 newest
    # and 3 old ones, "ancient" in 4 old ones only, "edge" in 2 (see below).
    for number in range(40):
        words = ["plenty"]
        words += ["sparse"] if number in (39, 38, 5, 4, 3) else []
        words += ["ancient"] if number < 4 else []
        words += ["edge"] if number in (39, 34) else []  # the 1st and the 6th newest
        _record(db, number, " ".join(words))
    db.session.commit()
    monkeypatch.setattr(records, "WINDOWS", (5, 20))

    def newest(topic: str, limit: int) -> tuple[list[str], int]:
        return _newest(db, topic, limit)

    # Enough in the first window: it answers alone.
    assert newest("plenty", 3) == (["w0039", "w0038", "w0037"], 1)
    # Some in the first window, too few in both: the index finds the rest.
    assert newest("sparse", 4) == (["w0039", "w0038", "w0005", "w0004"], 2)
    # A window is exactly the newest 5: the 6th newest needs the next one.
    assert newest("edge", 2) == (["w0039", "w0034"], 2)
    # None in the first window: straight to the index, no wider window.
    assert newest("ancient", 3) == (["w0003", "w0002", "w0001"], 1)
    assert newest("absent", 3) == ([], 1)


def test_a_question_the_index_answered_whole_skips_the_windows_until_it_grows(
    memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker counts a question whose indexed pass found fewer than it asked for:
    all its matches, which no window can find early. It is asked of the index at
    once, per user, until it has as many matches as asked (then windows again)."""
    for number in range(40):
        _record(db, number, "rare" if number in (3, 38) else "filler")
    _record(db, 40, "rare", user=("9", "other"))
    db.session.commit()
    monkeypatch.setattr(records, "WINDOWS", (5, 20))

    def newest(user_id: str | None, limit: int = 3) -> tuple[list[str], int]:
        return _newest(db, "rare", limit, user_id)

    assert newest("2") == (["w0038", "w0003"], 2)  # both windows, then the index
    assert newest("2") == (["w0038", "w0003"], 0)  # two of three: the index at once
    assert newest("2", limit=2) == (["w0038", "w0003"], 2)  # two of two: the windows may
    assert newest("9") == (["w0040"], 2)  # another user's question is its own
    assert newest(None) == (["w0040", "w0038", "w0003"], 2)  # everyone's: three of three
    assert newest(None) == (["w0040", "w0038", "w0003"], 2)  # a full answer counts nothing
    for number in (41, 42):
        _record(db, number, "rare")
    db.session.commit()
    assert newest("2") == (["w0042", "w0041", "w0038"], 0)  # counted as rare: the index
    assert newest("2") == (["w0042", "w0041", "w0038"], 1)  # grown: the windows again


def test_a_worker_keeps_a_bounded_number_of_counted_questions(
    memory: Any, db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number, word in enumerate(["alpha", "bravo", "charlie"] + ["filler"] * 10):
        _record(db, number, word)
    db.session.commit()
    monkeypatch.setattr(records, "WINDOWS", (5,))
    monkeypatch.setattr(records, "COUNTED_MAX", 2)

    def windows(word: str) -> int:
        return _newest(db, word, 3, "2")[1]

    assert [windows(w) for w in ("alpha", "bravo", "alpha", "bravo")] == [1, 1, 0, 0]
    assert windows("charlie") == 1  # a third question: the counts start over
    assert [windows(w) for w in ("alpha", "charlie")] == [1, 0]


@pytest.mark.parametrize("rare", [1, 2])
def test_guidance_asks_the_index_only_for_a_topic_in_fewer_than_rare_entries(
    db: Any, monkeypatch: pytest.MonkeyPatch, rare: int
) -> None:
    sqlite = db.engine.dialect.name == "sqlite"
    # A fresh worker's first topic question may be the Memory screen's search:
    # it finds the FTS tables itself, with nothing asked before it.
    assert ("chatmem_session_fts" in _plan(db, "checkout")) is sqlite
    for number, said in enumerate(["zeppelin", "quokka", "quokka", "Straße", "straße"]):
        fields = {"type": "fact", "text": f"a {said} was seen, note {number}"}
        guidance.admin_add(db.session(), fields, actor_id="1")
    db.session.commit()
    monkeypatch.setattr(recall_queries, "RARE", rare)
    # How many entries hold each topic; "straße" counts the trigram index's
    # case folding, which an upper-cased probe ("STRASSE") would not find.
    holding = {"absent": 0, "zeppelin": 1, "quokka": 2, "straße": 2}
    for topic, count in holding.items():
        seen = _statements(db, lambda t=topic: recall_queries.guidance(db.session(), topic=t))
        page = [s for s in seen if not s.startswith("SELECT count(*) FROM (SELECT rowid")]
        indexed = any("chatmem_guidance_fts MATCH" in s for s in page)
        assert indexed is (sqlite and count < rare), (topic, count, rare)
        found = recall_queries.guidance(db.session(), topic=topic)
        assert found.total == count, topic
        assert found == recall_queries.guidance(db.session(), topic=topic, scan=True)


def test_a_question_is_cut_into_its_longest_pieces_the_same_in_every_worker() -> None:
    analyzer = Analyzer()
    # Any case: the pieces are lowered; one holding another is left out.
    assert records.pieces("Kubernetes", analyzer) == ["kubernet"]
    assert records.pieces("Changed KUBERNETES deployments", analyzer) == [
        "chang",
        "deploy",
        "kubernet",
    ]
    # Beyond eight the shortest go; among equal lengths, the first by text.
    topic = "alpha bravo charlie delta echoes foxtrot golfing hotels indiaman julietta kilograms"
    assert records.pieces(topic, analyzer) == [
        "bravo",
        "delta",
        "hotel",
        "charli",
        "foxtrot",
        "indiaman",
        "julietta",
        "kilogram",
    ]


@pytest.mark.parametrize("scan", [False, True])
def test_like_wildcards_in_a_question_are_taken_literally(db: Any, scan: bool) -> None:
    for number, summary in enumerate(["save 50% now", "save 500 now", "a_b test", "axb test"]):
        _record(db, number, summary)
    db.session.commit()
    for topic, expected in (("50%", ["save 50% now"]), ("a_b", ["a_b test"])):
        found = recall_queries.session_records(db.session(), topic=topic, scan=scan)
        assert [r.summary for r in found] == expected, topic


def test_session_records_take_the_engine_s_index_unless_asked_to_scan(
    db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A topic missing from the newest records goes to the whole history by the
    engine's index (SQLite: the FTS5 table, every piece ORed; PostgreSQL: the
    pg_trgm indexes, kept apart from the LIMIT). `scan=True` uses no index."""
    monkeypatch.setattr(records, "WINDOWS", (2,))
    for number in range(12):
        _record(db, number, f"Kubernetes cluster {number}" if number % 2 else f"deploys {number}")
    for number in (12, 13):
        _record(db, number, "nothing about it")
    db.session.commit()
    topic = "Kubernetes deploys"
    assert records.pieces(topic, Analyzer()) == ["deploy", "kubernet"]
    matching = {f"w{n:04d}" for n in range(12)}

    def ask(**more: Any) -> list[str]:
        return [r.id for r in recall_queries.session_records(db.session(), topic=topic, **more)]

    index = "chatmem_session_fts MATCH" if db.engine.dialect.name == "sqlite" else "MATERIALIZED"
    found: list[list[str]] = []
    statements = _statements(db, lambda: found.append(ask()))
    assert len(found[0]) == 10 and set(found[0]) <= matching  # the ten best of twelve
    assert any(index in s for s in statements)
    scanned: list[list[str]] = []
    statements = _statements(db, lambda: scanned.append(ask(scan=True)))
    assert scanned == found and not any(index in s for s in statements)
    assert len(ask(limit=3)) == 3
