"""The session records half of `recall`: the newest records, or a topic's best.

A topic is cut into pieces: the topic as written, and each of its words
(stop words dropped) cut to the part it shares with its stem, so "changed"
looks for `chang` and finds change, changes and changing. A record matches
when its summary or digest holds any piece as a case-insensitive substring:
the plain scan's predicate, which SQLite's FTS5 trigram index narrows first
and PostgreSQL's pg_trgm indexes serve (see `search`).

The newest `POOL` matches are then ranked: records holding the topic as
written first, then by BM25 over those matches (the analyzer guidance uses),
then newest first; the first `limit` are sent. A record log's relevance
fades with age, so ranking stays within the recent matches, and a common
word costs a pool, not the whole history.

`user_id` is part of every pass (the scan included): a user's question is
asked of that user's records only.

A worker keeps the answers it sent (`_KEPT`) for the records revision it
read with the state row: the database bumps it on any change a record can
show (`records_revision`), so a kept answer is the one the query would give.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import (
    ColumnElement,
    DateTime,
    Engine,
    Executable,
    Integer,
    Row,
    String,
    bindparam,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session as OrmSession

from .. import reads
from ..models import Session, iso
from . import search
from .ranking import Analyzer, RankedIndex
from .search import ESCAPE, like_pattern

# What recall reads of a session, and how it shows one.
SESSION_RECORD_COLUMNS = (
    Session.id,
    Session.recorded_at,
    Session.started_at,
    Session.user_name,
    Session.channel,
    Session.summary,
    Session.summary_auto,
    Session.digest,
    Session.change_count,
)


def summary_by(session: Any) -> str | None:
    """Who wrote a session's summary: the agent, the provider ("auto"), or nobody.

    Agent-written text was never reviewed by a person, so recall labels it.
    ("admin" is reserved for a summary a person writes; nothing writes one yet.)
    """
    if session.summary is None:
        return None
    return "auto" if session.summary_auto else "agent"


def session_record(session: Any) -> dict[str, Any]:
    """One session record (a Session or a row of SESSION_RECORD_COLUMNS) as recall shows it."""
    return {
        "id": session.id,
        "when": iso(session.recorded_at or session.started_at),
        "user": session.user_name,
        "source": session.channel,
        "summary": session.summary,
        "auto": session.summary_auto,
        "summary_by": summary_by(session),
        "digest": session.digest or "",
        "changes": session.change_count,
    }


_RECORDS = select(*SESSION_RECORD_COLUMNS).where(Session.recorded_at.is_not(None))
_NEWEST = (Session.recorded_at.desc(), Session.id)
NEWEST_RECORDS = _RECORDS.order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
# One user's records: `ix_chatmem_session_user_recorded (user_id, recorded_at)`
# hands them over newest first, so the LIMIT stops the walk on both engines.
_OWN = Session.user_id == bindparam("user_id")
OWN_NEWEST_RECORDS = (
    _RECORDS.where(_OWN).order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
)

# The windows of newest records the first, index-free passes over sessions
# read, smallest first: a topic absent from the first is rare enough for the
# index.
WINDOWS = (100, 1000)
# How many of the newest matches are ranked (at least `limit`).
POOL = 20
# How many questions' counts (`_INDEXED_COUNTS`) a worker keeps per engine, then starts over.
COUNTED_MAX = 4096
# How many records a worker's kept answers (`_KEPT`) may hold per engine, then it
# starts over: at the usual sizes a few MB (a summary holds up to 4,000 characters).
KEPT_MAX = 2000
# A question's pieces beyond this many are left out (the longest are kept).
MAX_PIECES = 8
MIN_PIECE = search.MIN_TOPIC  # a trigram index cannot narrow a shorter piece

_LIMIT = bindparam("limit", type_=Integer)
_SESSION_FTS = "chatmem_session_fts"
_FTS_HITS = select(table(_SESSION_FTS, column("rowid")).c.rowid).where(
    literal_column(_SESSION_FTS).op("MATCH")(bindparam("phrase", type_=String))
)
_ROWID: ColumnElement[int] = literal_column("chatmem_session.rowid")
# SQLite's unary + keeps a term off the indexes: with the plain user term the
# planner walked all of a user's records by (user_id, recorded_at) to skip
# the sort, checking each against the FTS5 candidates (a user with 10,000
# records: 8 ms for an absent topic instead of 0.5 ms).
_OWN_UNINDEXED: ColumnElement[bool] = literal_column("+chatmem_session.user_id") == bindparam(
    "user_id"
)
# Before any session was recorded: a window wider than the history is all of it.
_BEGINNING = literal(datetime(1970, 1, 1), DateTime)


def pieces(topic: str, analyzer: Analyzer) -> list[str]:
    """What a record must hold one of: the topic as written, or one of its words' stems.

    A piece holding another is left out (a record holding it holds the
    other), so "kubernetes" is looked for as `kubernet` alone.
    """
    stems = [os.path.commonprefix([word, term]) for word, term in analyzer.pairs(topic)]
    found = {topic.lower(), *(s for s in stems if len(s) >= MIN_PIECE)}
    kept = [p for p in found if not any(o != p and o in p for o in found)]
    # The longest: the rarest, and the fewest LIKEs. Ties go by the text, so
    # every worker (each with its own string hashes) keeps the same pieces.
    return sorted(kept, key=lambda p: (len(p), p))[-MAX_PIECES:]


def _matches(count: int) -> ColumnElement[bool]:
    """Summary or digest holds one of `count` patterns (bound as pattern0, pattern1, ...)."""
    return or_(
        *(
            func.lower(col).like(bindparam(f"pattern{i}", type_=String), escape=ESCAPE)
            for i in range(count)
            for col in (Session.summary, Session.digest)
        )
    )


@dataclass(frozen=True)
class _TopicStatements:
    window: Executable  # matches among the newest `skip`+1 records, newest first
    scan: Executable  # matches, newest first, by the plain predicate
    fts: Executable  # the same, narrowed by the FTS5 index first (SQLite)
    pg: Executable  # the same, the pg_trgm indexes kept apart from the LIMIT


@cache
def _topic_statements(own: bool, count: int) -> _TopicStatements:
    """The statements of a topic of `count` pieces, built once per shape.

    Building and compiling them on every call cost more than running them.
    """
    matches = _matches(count)
    records = _RECORDS.where(_OWN) if own else _RECORDS
    times = select(Session.recorded_at).where(Session.recorded_at.is_not(None))
    times = times.where(_OWN) if own else times
    # The window is a bound on recorded_at (the `skip`+1-th newest time, an
    # index-only walk), not a LIMITed derived table: SQLite sorted that table
    # whole before keeping `limit`; this walk stops at the `limit`-th match.
    # One statement: on PostgreSQL each round trip costs more than the walk.
    cutoff = (
        times.order_by(Session.recorded_at.desc())
        .offset(bindparam("skip", type_=Integer))
        .limit(1)
        .scalar_subquery()
    )
    # Without LIMIT in sight the planner picks the pg_trgm indexes; with it,
    # it would walk recorded_at hoping for early matches (all rows for a rare
    # topic). MATERIALIZED keeps the two apart. The matches come out whole,
    # not as ids to look up again: fetching each row twice took longer than
    # the search.
    hits = records.where(matches).cte("topic_hits").prefix_with("MATERIALIZED")
    return _TopicStatements(
        window=records.where(matches, Session.recorded_at >= func.coalesce(cutoff, _BEGINNING))
        .order_by(*_NEWEST)
        .limit(_LIMIT),
        scan=records.where(matches).order_by(*_NEWEST).limit(_LIMIT),
        fts=(_RECORDS.where(_OWN_UNINDEXED) if own else _RECORDS)
        .where(_ROWID.in_(_FTS_HITS), matches)
        .order_by(*_NEWEST)
        .limit(_LIMIT),
        pg=select(hits).order_by(hits.c.recorded_at.desc(), hits.c.id).limit(_LIMIT),
    )


def _indexed(
    db: OrmSession, statements: _TopicStatements, parts: list[str], params: dict[str, Any]
) -> Executable:
    """The whole-history pass this engine has for these pieces (adding the FTS query)."""
    connection = db.connection()
    if connection.engine.dialect.name == "postgresql":
        return statements.pg
    shortest = min(parts, key=len)
    if search.fts_table(connection.engine, connection, "chatmem_session", shortest):
        params["phrase"] = " OR ".join(search.match_phrase(p.lower()) for p in parts)
        return statements.fts
    return statements.scan  # a piece too short for a trigram (or this SQLite has none)


#: Per engine, (whose records, which pieces) -> how many records the indexed
#: pass last found for that question. Fewer than a new ask's limit: that was
#: all of them, which no window can find early, so the ask goes to the index
#: at once (and counts again: a question that has grown gets its windows back).
#: It chooses a plan only; the indexed pass is exact on its own.
_INDEXED_COUNTS: WeakKeyDictionary[Engine, dict[tuple[str | None, tuple[str, ...]], int]]
_INDEXED_COUNTS = WeakKeyDictionary()


def newest_matches(
    db: OrmSession, parts: list[str], *, limit: int, scan: bool, user_id: str | None
) -> list[Row[Any]]:
    """The newest `limit` records holding any of the pieces.

    A common topic is best served by walking the newest records and stopping
    at `limit` matches; a rare one by the trigram index. So the first passes
    scan only windows of the newest records (WINDOWS): if one finds `limit`
    matches they are exactly the newest matches overall. One that finds
    none, or the last window falling short, hands over to the indexed pass
    over the whole history. The same on both engines: no probe of the index
    first, which cost a common topic more (1-2 ms on SQLite, listing its
    candidates) than the first window costs a rare one (0.1-0.5 ms). A
    question the index last answered whole (`_INDEXED_COUNTS`) skips the
    windows, which could not have answered it.
    """
    statements = _topic_statements(user_id is not None, len(parts))
    params: dict[str, Any] = {f"pattern{i}": like_pattern(p) for i, p in enumerate(parts)}
    params["limit"] = limit
    if user_id is not None:
        params["user_id"] = user_id
    if scan:
        return reads.rows(db, statements.scan, params)
    indexed = _indexed(db, statements, parts, params)
    counted = _INDEXED_COUNTS.setdefault(db.connection().engine, {})
    question = (user_id, tuple(parts))
    if counted.get(question, limit) >= limit:  # not known to be rare
        # Ties at a window's cutoff all come in, so a window is a prefix of the
        # order: `limit` matches in it are the newest overall.
        for window in WINDOWS:
            found = reads.rows(db, statements.window, {**params, "skip": window - 1})
            if len(found) == limit:
                return found
            if not found:
                break  # not even one among the newest: the index is quicker than a wider window
    found = reads.rows(db, indexed, params)
    if len(counted) >= COUNTED_MAX and question not in counted:
        counted.clear()
    counted[question] = len(found)
    return found


def best(rows: list[Row[Any]], topic: str, analyzer: Analyzer, limit: int) -> list[Row[Any]]:
    """The first `limit` of the rows (newest first): the topic as written, then by BM25."""
    texts = [f"{r.summary or ''}\n{r.digest or ''}" for r in rows]
    scores = RankedIndex.of([("", text) for text in texts], analyzer).search(topic).scores
    whole = topic.lower()
    order = sorted(
        range(len(rows)),
        key=lambda i: (whole not in texts[i].lower(), -scores.get(i, 0.0), i),
    )
    return [rows[i] for i in order[:limit]]


@dataclass
class _Kept:
    revision: int
    answers: dict[tuple[Any, ...], tuple[Row[Any], ...]] = field(default_factory=dict)
    records: int = 0  # in all the answers


#: Per engine, the answers sent at one records revision: (whose records, the
#: question, its analyzer's language, limit) -> the rows. Another revision
#: drops them all, so a deleted or erased record leaves a worker's memory
#: with its next recall, and a count that went back (a restored database) can
#: never meet answers kept under the same number before.
_KEPT: WeakKeyDictionary[Engine, _Kept] = WeakKeyDictionary()


def session_records(
    db: OrmSession,
    *,
    topic: str | None = None,
    limit: int = 10,
    scan: bool = False,
    user_id: str | None = None,
    analyzer: Analyzer | None = None,
    revision: int | None = None,
) -> list[Row[Any]]:
    """The records (rows of SESSION_RECORD_COLUMNS) `recall` sends for this topic.

    `user_id` keeps one user's records only (None: everyone's). Without a
    topic: the newest `limit`. `revision`, the records revision the caller
    read (`switches.Snapshot.records_revision`), lets the answer be kept for
    it and reused; `scan`, the reference pass, is always run.
    """
    analyzer = analyzer or Analyzer()
    if revision is None or scan:
        return _session_records(db, topic, limit, scan, user_id, analyzer)
    engine = db.get_bind().engine
    kept = _KEPT.get(engine)
    if kept is None or kept.revision != revision:
        kept = _KEPT[engine] = _Kept(revision)
    question = (user_id, topic, analyzer.language, limit)
    found = kept.answers.get(question)
    if found is None:
        found = tuple(_session_records(db, topic, limit, scan, user_id, analyzer))
        if kept.records + len(found) > KEPT_MAX:
            kept = _KEPT[engine] = _Kept(revision)
        kept.answers[question] = found
        kept.records += len(found)
    return list(found)  # the caller's own list: the kept one is shared


def _session_records(
    db: OrmSession,
    topic: str | None,
    limit: int,
    scan: bool,
    user_id: str | None,
    analyzer: Analyzer,
) -> list[Row[Any]]:
    if not topic:
        if user_id is not None:
            return reads.rows(db, OWN_NEWEST_RECORDS, {"limit": limit, "user_id": user_id})
        return reads.rows(db, NEWEST_RECORDS, {"limit": limit})
    parts = pieces(topic, analyzer)
    found = newest_matches(db, parts, limit=max(limit, POOL), scan=scan, user_id=user_id)
    return best(found, topic, analyzer, limit)
