"""The queries behind the `recall` tool.

`topic` is a case-insensitive substring over guidance title and text and over
session summaries and digests. Guidance is returned in block priority order,
sessions newest first.

The predicate is always the plain scan's (`lower(column) LIKE '%topic%'`); on
SQLite an FTS5 trigram index first narrows the rows it is applied to, and on
PostgreSQL a pg_trgm index serves the predicate itself (see `search`). Either
way the answer is the scan's answer, only sooner.
"""

from __future__ import annotations

from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import ColumnElement, and_, column, func, literal_column, or_, select, table
from sqlalchemy.orm import aliased

from . import search
from .block import priority
from .models import Guidance, Session

ESCAPE = "/"


def like_pattern(topic: str) -> str:
    """`%topic%` with LIKE's wildcards taken literally."""
    escaped = topic.lower().replace(ESCAPE, ESCAPE * 2).replace("%", "/%").replace("_", "/_")
    return f"%{escaped}%"


def _contains(col: Any, pattern: str) -> ColumnElement[bool]:
    # No coalesce: NULL never matches a non-empty pattern anyway, and a bare
    # lower(column) is what PostgreSQL's expression indexes are built on.
    return func.lower(col).like(pattern, escape=ESCAPE)


def topic_filter(
    db: SQLAlchemy, target: str, rowid: Any, columns: tuple[Any, ...], topic: str, *, scan: bool
) -> ColumnElement[bool]:
    """The topic predicate for one table, narrowed by its FTS index when there is one."""
    pattern = like_pattern(topic)
    predicate = or_(*(_contains(c, pattern) for c in columns))
    if scan:
        return predicate
    connection = db.session.connection()
    fts = search.fts_table(connection.engine, connection, target, topic)
    if fts is None:
        return predicate
    index = table(fts, column("rowid"))
    candidates = select(index.c.rowid).where(
        literal_column(fts).op("MATCH")(search.match_phrase(topic.lower()))
    )
    # The index finds a superset (it folds Unicode case); the predicate decides.
    return and_(rowid.in_(candidates), predicate)


def guidance(
    db: SQLAlchemy, *, type: str | None = None, topic: str | None = None, scan: bool = False
) -> list[Guidance]:
    query = select(Guidance).where(Guidance.status == "publish", Guidance.enabled.is_(True))
    if type:
        query = query.where(Guidance.type == type)
    if topic:
        columns = (Guidance.title, Guidance.text)
        query = query.where(
            topic_filter(db, "chatmem_guidance", Guidance.id, columns, topic, scan=scan)
        )
    return sorted(db.session.scalars(query), key=priority)


# How many of the newest records the first, index-free pass reads.
RECENT = 1000


def session_records(
    db: SQLAlchemy, *, topic: str | None = None, limit: int = 10, scan: bool = False
) -> list[Session]:
    """The newest records matching `topic`, in two passes when there is a topic.

    A common topic is best served by walking the newest records and stopping
    at `limit` matches; a rare one by the trigram index. So the first pass
    scans only the newest RECENT records: if it finds `limit` matches they
    are exactly the newest matches overall. Only otherwise does the second,
    indexed pass run over the whole history.
    """
    newest = (Session.recorded_at.desc(), Session.id)
    query = select(Session).where(Session.recorded_at.is_not(None))
    if not topic:
        return list(db.session.scalars(query.order_by(*newest).limit(limit)))
    columns = (Session.summary, Session.digest)
    predicate = topic_filter(db, "chatmem_session", None, columns, topic, scan=True)
    if not scan:
        # A derived table, not `id IN (...)`: both engines stream it in order
        # and stop at `limit` matches.
        recent = aliased(
            Session,
            select(Session)
            .where(Session.recorded_at.is_not(None))
            .order_by(*newest)
            .limit(RECENT)
            .subquery("recent"),
        )
        own = topic_filter(db, "", None, (recent.summary, recent.digest), topic, scan=True)
        found = list(
            db.session.scalars(
                select(recent)
                .where(own)
                .order_by(recent.recorded_at.desc(), recent.id)
                .limit(limit)
            )
        )
        if len(found) == limit:
            return found
    if scan or db.engine.dialect.name != "postgresql":
        rowid: Any = literal_column("chatmem_session.rowid")
        query = query.where(topic_filter(db, "chatmem_session", rowid, columns, topic, scan=scan))
    else:
        # Without LIMIT in sight the planner picks the pg_trgm indexes; with
        # it, it would walk recorded_at hoping for early matches (all rows
        # for a rare topic). MATERIALIZED keeps the two apart.
        hits = select(Session.id).where(predicate).cte("topic_hits").prefix_with("MATERIALIZED")
        query = query.where(Session.id.in_(select(hits.c.id)))
    return list(db.session.scalars(query.order_by(*newest).limit(limit)))


def recall(
    db: SQLAlchemy,
    *,
    type: str | None = None,
    topic: str | None = None,
    limit: int = 10,
    scan: bool = False,
) -> dict[str, list[dict[str, Any]]]:
    """`scan=True` skips the indexes: the reference the indexed path must equal."""
    return {
        "guidance": [g.to_dict() for g in guidance(db, type=type, topic=topic, scan=scan)],
        "sessions": [s.to_dict() for s in session_records(db, topic=topic, limit=limit, scan=scan)],
    }
