"""What the curator sees beside a proposal before deciding (issue 15, point 1).

- Entries like it: active, pending and rejected guidance whose folded title
  and text share enough trigrams with the proposal's, or that name the same
  target. The trigram search index (see `search`) narrows the candidates
  to entries holding one of the proposal's longest words; the score itself
  is computed here, the same way on both engines (pg_trgm's definition:
  words padded with spaces, Jaccard of the trigram sets).
- The proposing session's newest ledger lines: what the agent had just done.

A proposed guardrail's dry run is the screen's existing one (`dry_run`).
No Flask request in here: the screen turns these into a panel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import ColumnElement, column, func, literal_column, or_, select, table
from sqlalchemy.orm import Session as OrmSession

from ....memory.fields import fold
from ....memory.models import Guidance, LedgerEntry
from ....memory.recall import search
from ....memory.recall.search import ESCAPE, like_pattern

SIMILAR_SHOWN = 5
LEDGER_SHOWN = 10
# pg_trgm's default threshold for `%`: below it two texts are not "similar".
THRESHOLD = 0.3
# How many of the proposal's longest words probe the index, and how many
# candidates the score is computed on (newest first): a bounded cost per row.
PROBE_WORDS = 4
PROBE_MIN = 4  # shorter words are in nearly every entry: they narrow nothing
CANDIDATES = 100
COMPARED_STATUSES = ("publish", "pending", "rejected")
_WORD = re.compile(r"\w+")
# Words in so many entries that probing for them narrows nothing.
_COMMON = frozenset(
    _WORD.findall(
        "about after also always before being could every from have into never only other "
        "should site that their them then there these they this those under when where "
        "which while will with without would your"
    )
)


@dataclass(frozen=True)
class Similar:
    entry: Guidance
    score: float  # 0..1, trigram similarity of the folded title and text
    same_target: bool


@dataclass(frozen=True)
class Evidence:
    similar: list[Similar]
    ledger: list[LedgerEntry]  # the session's newest lines, oldest first
    ledger_total: int


def trigrams(text: str) -> frozenset[str]:
    """pg_trgm's trigrams: each word, folded, padded "  word ", cut in threes."""
    padded = [f"  {word} " for word in _WORD.findall(fold(text))]
    return frozenset({p[i : i + 3] for p in padded for i in range(len(p) - 2)})


def similarity(a: str, b: str) -> float:
    left, right = trigrams(a), trigrams(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


def probe_words(text: str, limit: int = PROBE_WORDS) -> list[str]:
    """The longest distinct words: the rarest, so the index narrows the most."""
    words = dict.fromkeys(
        w for w in _WORD.findall(fold(text)) if len(w) >= PROBE_MIN and w not in _COMMON
    )
    return sorted(words, key=lambda w: (-len(w), w))[:limit]


def _holding_any(db: OrmSession, words: list[str]) -> ColumnElement[bool]:
    """Entries whose title or text holds one of `words`, or a few more (the score decides).

    SQLite: one FTS5 trigram query of the words OR'ed; PostgreSQL (or SQLite
    without FTS5 trigram): the substring predicates, which pg_trgm's GIN
    indexes serve as one bitmap OR.
    """
    connection = db.connection()
    fts = search.fts_table(connection.engine, connection, "chatmem_guidance", min(words, key=len))
    if fts is not None:
        query = " OR ".join(search.match_phrase(word) for word in words)
        index = table(fts, column("rowid"))
        return Guidance.id.in_(select(index.c.rowid).where(literal_column(fts).op("MATCH")(query)))
    patterns = [like_pattern(word) for word in words]
    return or_(
        *(
            func.lower(col).like(pattern, escape=ESCAPE)
            for pattern in patterns
            for col in (Guidance.title, Guidance.text)
        )
    )


def _subject(entry: Guidance) -> str:
    return f"{entry.title} {entry.text}"


def _same_target(a: str | None, b: str | None) -> bool:
    return bool(a and b and a.strip().lower() == b.strip().lower())


def similar(
    db: OrmSession,
    entry: Guidance,
    *,
    limit: int = SIMILAR_SHOWN,
    seen: dict[int, frozenset[str]] | None = None,
) -> list[Similar]:
    """Entries like this one, the same target first, then the most similar.

    `seen`: trigram sets by entry id, shared by the proposals of one page
    (their candidates overlap).
    """
    grams = {} if seen is None else seen
    words = probe_words(_subject(entry))
    wanted = [_holding_any(db, words)] if words else []
    if entry.target and entry.target.strip():
        wanted.append(func.lower(func.trim(Guidance.target)) == entry.target.strip().lower())
    if not wanted:
        return []
    query = (
        select(Guidance)
        .where(
            Guidance.id != entry.id,
            Guidance.status.in_(COMPARED_STATUSES),
            or_(*wanted),
        )
        .order_by(Guidance.id.desc())
        .limit(CANDIDATES)
    )
    mine = trigrams(_subject(entry))
    found = []
    for other in db.scalars(query):
        if other.id not in grams:
            grams[other.id] = trigrams(_subject(other))
        theirs = grams[other.id]
        score = len(mine & theirs) / len(mine | theirs) if mine and theirs else 0.0
        same = _same_target(entry.target, other.target)
        if same or score >= THRESHOLD:
            found.append(Similar(other, round(score, 2), same))
    found.sort(key=lambda s: (not s.same_target, -s.score, -s.entry.id))
    return found[:limit]


def session_lines(
    db: OrmSession, session_id: str | None, *, limit: int = LEDGER_SHOWN
) -> tuple[list[LedgerEntry], int]:
    """A session's newest `limit` ledger lines (oldest first) and how many it has."""
    if not session_id:
        return [], 0
    mine = LedgerEntry.session_id == session_id
    total = db.scalar(select(func.count()).select_from(LedgerEntry).where(mine))
    newest = db.scalars(
        select(LedgerEntry).where(mine).order_by(LedgerEntry.id.desc()).limit(limit)
    )
    return list(reversed(list(newest))), int(total or 0)


def for_entries(db: OrmSession, entries: Iterable[Guidance]) -> dict[int, Evidence]:
    """The evidence panel of each proposal on a page (a session's lines read once)."""
    lines: dict[str, tuple[list[LedgerEntry], int]] = {}
    seen: dict[int, frozenset[str]] = {}
    panels = {}
    for entry in entries:
        key = entry.session_id or ""
        if key not in lines:
            lines[key] = session_lines(db, entry.session_id)
        rows, total = lines[key]
        panels[entry.id] = Evidence(similar(db, entry, seen=seen), rows, total)
    return panels
