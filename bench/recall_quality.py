"""How well `recall` answers questions: LoCoMo's labelled questions, retrieval only.

    python bench/recall_quality.py [--database-url postgresql+psycopg://...]

LoCoMo (bench/data/locomo/SOURCE.md) is ten long conversations and 1,986
questions, each labelled with the turns that answer it. Each conversation is
loaded on its own as approved facts, one per turn (the speaker the title,
the words the text), and every question is asked as `recall`'s `topic`.
A question scores at k when one of its answering turns is among the first k
entries sent; MRR is over the first 10.

Rows, all on the same entries in the same run:

- the substring rule: `recall` before ranking (the whole question as a
  substring of title or text);
- plain BM25: Lucene's defaults (k1 = 1.2, b = 0.75), PostgreSQL's English
  stop words dropped, no stemming, title and text as one field; computed
  here, the yardstick the issue names;
- the engine's own ranking: SQLite FTS5 `bm25()` with the porter tokenizer,
  or PostgreSQL `ts_rank_cd` over `to_tsvector('english', ...)` (the
  figures behind ranking in Python rather than in the engine);
- chatmem recall, no abstention: the ranked answer with
  CHATMEM_RECALL_MIN_MATCH = 0;
- chatmem recall: the `recall` tool through `memory.call_tool` (the one
  dispatch path every channel takes) with the default settings.

Goal (issue 28): recall at least 5 points of hit@5 and of hit@10 above
plain BM25, on both databases.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from common import ROOT, arguments, engine_name, migrated_app
from sqlalchemy import delete, insert, text

from chatmem.memory import switches
from chatmem.memory.models import Guidance
from chatmem.memory.recall import recall
from chatmem.memory.recall.ranking import words
from chatmem.memory.recall.stopwords import ENGLISH
from tests.hostapp import USERS

DATA = ROOT / "bench" / "data" / "locomo" / "locomo10.zip"
K = (1, 5, 10)
_SESSION = re.compile(r"session_\d+")


@dataclass
class Conversation:
    name: str
    turns: list[tuple[str, str, str]]  # (turn id, speaker, words)
    questions: list[tuple[str, set[str]]]  # (question, ids of the turns that answer it)


def conversations(path: Path = DATA) -> Iterator[Conversation]:
    with zipfile.ZipFile(path) as archive:
        for name in sorted(n for n in archive.namelist() if n.endswith(".json")):
            data = json.loads(archive.read(name))
            turns = [
                (turn["dia_id"], turn["speaker"], turn["text"])
                for key, session in data.items()
                if _SESSION.fullmatch(key)
                for turn in session
            ]
            ids = {turn_id for turn_id, _s, _t in turns}
            questions = [(qa["question"], set(qa.get("evidence") or ()) & ids) for qa in data["qa"]]
            yield Conversation(Path(name).stem, turns, [(q, e) for q, e in questions if e])


@dataclass
class Score:
    """hit@k and MRR of one method over the questions asked so far."""

    asked: int = 0
    hits: Counter[int] = field(default_factory=Counter)
    reciprocal: float = 0.0
    empty: int = 0

    def add(self, sent: list[str], answers: set[str]) -> None:
        self.asked += 1
        self.empty += not sent
        first = next((i for i, turn in enumerate(sent[:10]) if turn in answers), None)
        if first is None:
            return
        self.reciprocal += 1 / (first + 1)
        for k in K:
            self.hits[k] += first < k

    def row(self, name: str) -> str:
        cells = [f"{self.hits[k] / self.asked:.3f}" for k in K]
        mrr = self.reciprocal / self.asked
        return f"| {name} | {' | '.join(cells)} | {mrr:.3f} | {self.empty} |"


class PlainBM25:
    """The yardstick: BM25 with Lucene's defaults, stop words dropped, no stemming."""

    k1, b = 1.2, 0.75

    def __init__(self, docs: list[str]) -> None:
        self.terms = [[w for w in words(d) if w not in ENGLISH] for d in docs]
        self.tf = [Counter(t) for t in self.terms]
        self.df = Counter(w for t in self.terms for w in set(t))
        self.average = sum(map(len, self.terms)) / len(self.terms)

    def top(self, question: str, n: int = 10) -> list[int]:
        scores: dict[int, float] = {}
        total = len(self.terms)
        for word in {w for w in words(question) if w not in ENGLISH}:
            df = self.df.get(word, 0)
            if not df:
                continue
            idf = math.log(1 + (total - df + 0.5) / (df + 0.5))
            for i, tf in enumerate(self.tf):
                f = tf.get(word, 0)
                if f:
                    norm = self.k1 * (1 - self.b + self.b * len(self.terms[i]) / self.average)
                    scores[i] = scores.get(i, 0.0) + idf * f * (self.k1 + 1) / (f + norm)
        return sorted(scores, key=lambda i: (-scores[i], i))[:n]


def load(db: Any, conversation: Conversation) -> dict[int, str]:
    """The conversation's turns as approved facts; entry id -> turn id."""
    db.session.execute(delete(Guidance))
    when = datetime(2024, 1, 1)
    rows = [
        {
            "type": "fact",
            "title": speaker,
            "text": words_ or "(no words)",
            "text_key": hashlib.sha256(f"{conversation.name}:{turn}".encode()).hexdigest(),
            "status": "publish",
            "enabled": True,
            "origin": "agent",
            "created_at": when,
            "updated_at": when,
            "approved_at": when,
            "version": 1,
        }
        for turn, speaker, words_ in conversation.turns
    ]
    db.session.execute(insert(Guidance), rows)
    switches.bump_revision(db.session())
    db.session.commit()
    by_key = {
        row["text_key"]: turn for row, (turn, _s, _w) in zip(rows, conversation.turns, strict=True)
    }
    found = db.session.execute(text("SELECT id, text_key FROM chatmem_guidance"))
    return {id: by_key[key] for id, key in found}


def engine_ranking(db: Any, engine: str) -> Callable[[str], list[int]]:
    """The database's own ranking of the loaded entries: ids, best first."""
    if engine == "postgresql":
        query = text(
            "WITH q AS (SELECT replace(plainto_tsquery('english', :q)::text, '&', '|') AS t), "
            "d AS (SELECT id, to_tsvector('english', title || ' ' || text) AS v "
            "FROM chatmem_guidance) "
            "SELECT id FROM d, q WHERE q.t <> '' AND v @@ q.t::tsquery "
            "ORDER BY ts_rank_cd(v, q.t::tsquery) DESC, id LIMIT 10"
        )
        return lambda question: list(db.session.execute(query, {"q": question}).scalars())
    db.session.execute(text("DROP TABLE IF EXISTS temp.bench_fts"))
    db.session.execute(
        text(
            "CREATE VIRTUAL TABLE temp.bench_fts USING fts5(title, text, "
            "tokenize='porter unicode61 remove_diacritics 2')"
        )
    )
    db.session.execute(
        text(
            "INSERT INTO bench_fts(rowid, title, text) SELECT id, title, text FROM chatmem_guidance"
        )
    )
    match = text(
        "SELECT rowid FROM bench_fts WHERE bench_fts MATCH :q "
        "ORDER BY bm25(bench_fts, 2.0, 1.0), rowid LIMIT 10"
    )

    def ranked(question: str) -> list[int]:
        terms = [f'"{w}"' for w in words(question) if w not in ENGLISH]
        if not terms:
            return []
        return list(db.session.execute(match, {"q": " OR ".join(terms)}).scalars())

    return ranked


def main() -> None:
    args = arguments(__doc__ or "")
    app = migrated_app(args.database_url)
    engine = engine_name(app)
    editor = USERS["editor"]
    names = {
        "substring": "the substring rule (recall before ranking)",
        "bm25": "plain BM25 (Lucene defaults, stop words, no stemming)",
        "engine": "SQLite FTS5 bm25(), porter"
        if engine == "sqlite"
        else "PostgreSQL ts_rank_cd, english",
        "ranked": "chatmem recall, no abstention",
        "recall": "chatmem recall (the tool, default settings)",
    }
    scores = {key: Score() for key in names}
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        memory = app.extensions["test_host"]["memory"]
        for conversation in conversations():
            turn_of = load(db, conversation)
            ids = list(turn_of)
            plain = PlainBM25([f"{s} {w}" for _t, s, w in conversation.turns])
            place_turn = [turn for turn, _s, _w in conversation.turns]
            by_engine = engine_ranking(db, engine)
            snapshot = memory.snapshot()
            approved = memory.approved_guidance(snapshot)
            ranked = memory.ranked_guidance(snapshot)
            assert len(approved.items) == len(ids)

            def sent(found: dict[str, Any], turn_of: dict[int, str] = turn_of) -> list[str]:
                return [turn_of[g["id"]] for g in found["guidance"]]

            for question, answers in conversation.questions:
                topic = question[:200]
                substring = recall(db.session(), approved=approved, topic=topic, guidance_limit=10)
                scores["substring"].add(sent(substring), answers)
                scores["bm25"].add([place_turn[i] for i in plain.top(topic)], answers)
                scores["engine"].add([turn_of[i] for i in by_engine(topic)], answers)
                unabstained = recall(
                    db.session(), ranked=ranked, topic=topic, guidance_limit=10, min_match=0
                )
                scores["ranked"].add(sent(unabstained), answers)
                tool = memory.call_tool(
                    "recall", {"topic": topic, "guidance_limit": 10, "limit": 1}, user=editor
                )
                scores["recall"].add(sent(tool), answers)
            db.session.rollback()
        questions = scores["recall"].asked
        print(f"LoCoMo, {questions:,} questions with answering turns, on {engine}\n")
        print("| method | hit@1 | hit@5 | hit@10 | MRR | no guidance sent |")
        print("|---|---|---|---|---|---|")
        for key, name in names.items():
            print(scores[key].row(name))
        gain = {k: (scores["recall"].hits[k] - scores["bm25"].hits[k]) / questions for k in K}
        print(
            f"\nrecall - plain BM25: hit@5 {gain[5] * 100:+.1f} points, "
            f"hit@10 {gain[10] * 100:+.1f} points (goal: +5 on both)"
        )
        db.session.remove()
        db.engine.dispose()


if __name__ == "__main__":
    main()
