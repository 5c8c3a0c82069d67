"""The queries behind the `recall` tool.

`topic` is a case-insensitive substring over guidance title and text and over
session summaries and digests. Guidance is returned in block priority order,
sessions newest first.
"""

from __future__ import annotations

from typing import Any

from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import ColumnElement, func, or_, select

from .block import priority
from .models import Guidance, Session


def _contains(column: Any, topic: str) -> ColumnElement[bool]:
    return func.lower(func.coalesce(column, "")).contains(topic.lower(), autoescape=True)


def guidance(
    db: SQLAlchemy, *, type: str | None = None, topic: str | None = None
) -> list[Guidance]:
    query = select(Guidance).where(Guidance.status == "publish", Guidance.enabled.is_(True))
    if type:
        query = query.where(Guidance.type == type)
    if topic:
        query = query.where(or_(_contains(Guidance.title, topic), _contains(Guidance.text, topic)))
    return sorted(db.session.scalars(query), key=priority)


def session_records(db: SQLAlchemy, *, topic: str | None = None, limit: int = 10) -> list[Session]:
    query = select(Session).where(Session.recorded_at.is_not(None))
    if topic:
        query = query.where(
            or_(_contains(Session.summary, topic), _contains(Session.digest, topic))
        )
    query = query.order_by(Session.recorded_at.desc(), Session.id).limit(limit)
    return list(db.session.scalars(query))


def recall(
    db: SQLAlchemy, *, type: str | None = None, topic: str | None = None, limit: int = 10
) -> dict[str, list[dict[str, Any]]]:
    return {
        "guidance": [g.to_dict() for g in guidance(db, type=type, topic=topic)],
        "sessions": [s.to_dict() for s in session_records(db, topic=topic, limit=limit)],
    }
