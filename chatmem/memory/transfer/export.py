"""Export: every entry with the statuses asked for, each with its audit trail,
as the document `document` describes, the actors named as this site knows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession

from ..models import STATUSES, Guidance, GuidanceEvent
from .document import FORMAT, VERSION, actors_of, format_when


def export_document(
    db: OrmSession,
    statuses: Iterable[str] = STATUSES,
    *,
    server_name: str,
    name_of: Callable[[str | None], str],
) -> dict[str, Any]:
    """Every entry with one of `statuses`, oldest first, each with its audit trail."""
    wanted = list(statuses)
    entries = list(
        db.scalars(select(Guidance).where(Guidance.status.in_(wanted)).order_by(Guidance.id))
    )
    trails: dict[int, list[GuidanceEvent]] = {e.id: [] for e in entries}
    if entries:
        query = (
            select(GuidanceEvent)
            .where(GuidanceEvent.guidance_id.in_(list(trails)))
            .order_by(GuidanceEvent.id)
        )
        for event in db.scalars(query):
            trails[event.guidance_id or 0].append(event)
    rows = [_entry_json(entry, trails[entry.id]) for entry in entries]
    actors = sorted(
        {a for row in rows for a in actors_of(row) if a},
    )
    return {
        "format": FORMAT,
        "version": VERSION,
        "server_name": server_name,
        "actors": {actor: name_of(actor) for actor in actors},
        "entries": rows,
    }


def _entry_json(entry: Guidance, events: list[GuidanceEvent]) -> dict[str, Any]:
    return {
        "id": entry.id,
        "type": entry.type,
        "title": entry.title,
        "text": entry.text,
        "scope": entry.scope,
        "target": entry.target,
        "severity": entry.severity,
        "status": entry.status,
        "status_before_trash": entry.status_before_trash,
        "enabled": entry.enabled,
        "origin": entry.origin,
        "session_id": entry.session_id,
        "created_by": entry.created_by,
        "created_at": format_when(entry.created_at),
        "approved_by": entry.approved_by,
        "approved_at": format_when(entry.approved_at),
        "updated_at": format_when(entry.updated_at),
        "review_after": entry.review_after.isoformat() if entry.review_after else None,
        "version": entry.version,
        "events": [
            {
                "action": e.action,
                "actor_id": e.actor_id,
                "at": format_when(e.at),
                "detail": e.detail,
                "text_sha256": e.text_sha256,
                "seal": e.seal,
            }
            for e in events
        ],
    }
