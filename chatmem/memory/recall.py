"""The queries behind the `recall` tool.

`topic` is a case-insensitive substring over guidance title and text and over
session summaries and digests. Guidance is returned one bounded page at a
time in recall's order (see `recall_page`), sessions newest first.

The predicate is always the plain scan's (`lower(column) LIKE '%topic%'`); on
SQLite an FTS5 trigram index first narrows the rows it is applied to, and on
PostgreSQL a pg_trgm index serves the predicate itself (see `search`). Either
way the answer is the scan's answer, only sooner.
"""

from __future__ import annotations

from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import (
    ColumnElement,
    Integer,
    Row,
    and_,
    bindparam,
    column,
    func,
    literal_column,
    or_,
    select,
    table,
)

from . import reads, search
from .models import (
    GUIDANCE_RECORD_COLUMNS,
    SESSION_RECORD_COLUMNS,
    Guidance,
    Session,
    guidance_record,
    session_record,
)
from .recall_page import DEFAULT_LIMIT, Ordered, page

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


# The statements every plain `recall` runs, built once (building them cost
# more than running them on a small site).
_ACTIVE_GUIDANCE = select(*GUIDANCE_RECORD_COLUMNS).where(
    Guidance.status == "publish", Guidance.enabled.is_(True)
)
_RECORDS = select(*SESSION_RECORD_COLUMNS).where(Session.recorded_at.is_not(None))
_NEWEST = (Session.recorded_at.desc(), Session.id)
_NEWEST_RECORDS = _RECORDS.order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
# One user's records: `ix_chatmem_session_user_recorded (user_id, recorded_at)`
# hands them over newest first, so the LIMIT stops the walk on both engines.
_OWN = Session.user_id == bindparam("user_id")
_OWN_NEWEST_RECORDS = (
    _RECORDS.where(_OWN).order_by(*_NEWEST).limit(bindparam("limit", type_=Integer))
)


def guidance(
    db: SQLAlchemy, *, type: str | None = None, topic: str | None = None, scan: bool = False
) -> Ordered[dict[str, Any]]:
    """Approved, enabled entries matching the filters, as records in recall's order."""
    query = _ACTIVE_GUIDANCE
    if type:
        query = query.where(Guidance.type == type)
    if topic:
        columns = (Guidance.title, Guidance.text)
        query = query.where(
            topic_filter(db, "chatmem_guidance", Guidance.id, columns, topic, scan=scan)
        )
    return Ordered.of(list(db.session.execute(query)), guidance_record)


# How many of the newest records the first, index-free pass reads.
RECENT = 1000


def session_records(
    db: SQLAlchemy,
    *,
    topic: str | None = None,
    limit: int = 10,
    scan: bool = False,
    user_id: str | None = None,
) -> list[Row[Any]]:
    """The newest records (rows of SESSION_RECORD_COLUMNS) matching `topic`.

    `user_id` keeps one user's records only (None: everyone's). It is part
    of every pass, the scan included, so the reference path answers the same.

    Two passes when there is a topic.

    A common topic is best served by walking the newest records and stopping
    at `limit` matches; a rare one by the trigram index. So the first pass
    scans only the newest RECENT records: if it finds `limit` matches they
    are exactly the newest matches overall. Only otherwise does the second,
    indexed pass run over the whole history.
    """
    own = user_id is not None
    if not topic:
        if own:
            return reads.rows(db, _OWN_NEWEST_RECORDS, {"limit": limit, "user_id": user_id})
        return reads.rows(db, _NEWEST_RECORDS, {"limit": limit})
    records = _RECORDS.where(Session.user_id == user_id) if own else _RECORDS
    query = records
    columns = (Session.summary, Session.digest)
    predicate = topic_filter(db, "chatmem_session", None, columns, topic, scan=True)
    if not scan:
        # A derived table, not `id IN (...)`: both engines stream it in order
        # and stop at `limit` matches.
        recent = records.order_by(*_NEWEST).limit(RECENT).subquery("recent")
        among = topic_filter(db, "", None, (recent.c.summary, recent.c.digest), topic, scan=True)
        found = list(
            db.session.execute(
                select(recent)
                .where(among)
                .order_by(recent.c.recorded_at.desc(), recent.c.id)
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
    return list(db.session.execute(query.order_by(*_NEWEST).limit(limit)))


def recall(
    db: SQLAlchemy,
    *,
    type: str | None = None,
    topic: str | None = None,
    limit: int = 10,
    guidance_limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
    scan: bool = False,
    approved: Ordered[dict[str, Any]] | None = None,
    user_id: str | None = None,
) -> dict[str, Any]:
    """`scan=True` skips the indexes: the reference the indexed path must equal.

    `user_id` limits the session records to that user's (guidance is the
    site's, approved by a person, and the same for everyone).

    `approved`, when given, is all active guidance already shaped and in
    recall's order (the caller's per-revision cache); without a topic it
    stands in for the guidance query. Only the page is copied out of it.

    Guidance comes a page at a time (`guidance_limit`, `cursor`); sessions
    are the newest `limit` records on every page.
    """
    if approved is not None and not topic:
        found = approved.of_type(type)
    else:
        found = guidance(db, type=type, topic=topic, scan=scan)
    shown = page(found, limit=guidance_limit, cursor=cursor, query=[type, topic or None])
    return {
        "guidance": [dict(g) for g in shown.items],
        "guidance_total": shown.total,
        "cursor": shown.cursor,
        "sessions": [
            session_record(s)
            for s in session_records(db, topic=topic, limit=limit, scan=scan, user_id=user_id)
        ],
    }
