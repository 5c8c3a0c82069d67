"""Export and import guidance as a versioned JSON document
(`chatmem/schemas/memory-export.v1.json`), with its provenance and audit trail.

Import is all or nothing: the document is checked against the schema and
every entry against the text rules (no hidden text, no secrets: the same
rules as the tools and the Memory screen) before anything is written, and
the error names the entry. An entry whose text, folded as for
de-duplication, is already here (or earlier in the same file) is skipped:
import never overwrites an entry, so a newer local version always stays.
By default imported entries are pending, so imported memory passes the same
gate as an agent's proposal; `keep_status` copies their status as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, cast

from flask_sqlalchemy import SQLAlchemy
from jsonschema import Draft202012Validator
from sqlalchemy import Table, select, update

from ..errors import ChatmemError, InvalidParams
from ..text import check_field
from . import guidance, settings, staleness
from .models import STATUSES, Guidance, GuidanceEvent

FORMAT = "chatmem-memory-export"
VERSION = 1
SCHEMA_FILE = "memory-export.v1.json"
# The largest file the Memory screen's Import takes (the shell reads any size).
UPLOAD_MAX_BYTES = 5 * 1024 * 1024
_WHEN = "%Y-%m-%dT%H:%M:%S.%fZ"


@cache
def schema() -> dict[str, Any]:
    text = resources.files("chatmem").joinpath("schemas", SCHEMA_FILE).read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def export_document(
    db: SQLAlchemy,
    statuses: Iterable[str] = STATUSES,
    *,
    server_name: str,
    name_of: Callable[[str | None], str],
) -> dict[str, Any]:
    """Every entry with one of `statuses`, oldest first, each with its audit trail."""
    wanted = list(statuses)
    entries = list(
        db.session.scalars(
            select(Guidance).where(Guidance.status.in_(wanted)).order_by(Guidance.id)
        )
    )
    trails: dict[int, list[GuidanceEvent]] = {e.id: [] for e in entries}
    if entries:
        query = (
            select(GuidanceEvent)
            .where(GuidanceEvent.guidance_id.in_(list(trails)))
            .order_by(GuidanceEvent.id)
        )
        for event in db.session.scalars(query):
            trails[event.guidance_id or 0].append(event)
    rows = [_entry_json(entry, trails[entry.id]) for entry in entries]
    actors = sorted(
        {a for row in rows for a in _actors_of(row) if a},
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
        "created_at": _when(entry.created_at),
        "approved_by": entry.approved_by,
        "approved_at": _when(entry.approved_at),
        "updated_at": _when(entry.updated_at),
        "review_after": entry.review_after.isoformat() if entry.review_after else None,
        "version": entry.version,
        "events": [
            {"action": e.action, "actor_id": e.actor_id, "at": _when(e.at), "detail": e.detail}
            for e in events
        ],
    }


def _actors_of(row: Mapping[str, Any]) -> list[str | None]:
    return [row["created_by"], row["approved_by"], *(e["actor_id"] for e in row["events"])]


@dataclass
class Result:
    imported: list[int] = field(default_factory=list)  # the new ids, in file order
    skipped: list[dict[str, Any]] = field(default_factory=list)  # {"entry", "id", "existing"}
    status: str = "pending"


def parse(raw: bytes | str) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise InvalidParams(f"The file is not JSON: {error}.", details={"field": "file"}) from None


def import_document(
    db: SQLAlchemy, document: Any, *, actor_id: str, keep_status: bool = False
) -> Result:
    """Check the whole document, then add its new entries in one transaction."""
    _validate(document)
    checked = [_checked_entry(index, row) for index, row in enumerate(document["entries"])]
    seen: dict[str, int] = {
        key: entry_id
        for key, entry_id in db.session.execute(select(Guidance.text_key, Guidance.id))
    }
    result = Result(status="with their status" if keep_status else "pending")
    added: list[Guidance] = []
    publishes = False
    for index, (row, fields) in enumerate(zip(document["entries"], checked, strict=True)):
        key = guidance.text_key(fields["text"])
        if key in seen:
            result.skipped.append({"entry": index + 1, "id": row["id"], "existing": seen[key]})
            continue
        entry = _new(row, fields, keep_status)
        db.session.add(entry)
        db.session.flush()
        # The ORM numbers a new row's version 1: the copy keeps the file's (the
        # entry's own history), set past the version counter.
        table = cast(Table, Guidance.__table__)
        db.session.execute(
            update(table).where(table.c.id == entry.id).values(version=row["version"])
        )
        db.session.expire(entry, ["version"])
        seen[key] = entry.id
        for event in row["events"]:
            db.session.add(
                GuidanceEvent(
                    guidance_id=entry.id,
                    action=event["action"],
                    actor_id=event["actor_id"],
                    at=_parse_when(event["at"]),
                    detail=event["detail"],
                )
            )
        if entry.status != row["status"]:  # the import changed it: audited on the entry
            db.session.add(
                GuidanceEvent(
                    guidance_id=entry.id,
                    action="import",
                    actor_id=actor_id,
                    detail={"status": entry.status, "was": row["status"]},
                )
            )
        publishes = publishes or entry.status == "publish"
        added.append(entry)
    result.imported = [entry.id for entry in added]
    # Who imported what, from where: one site-level audit event per import.
    db.session.add(
        GuidanceEvent(
            guidance_id=None,
            action="import",
            actor_id=actor_id,
            detail={
                "source": document["server_name"],
                "imported": result.imported,
                "skipped": len(result.skipped),
                "keep_status": keep_status,
            },
        )
    )
    if publishes:
        settings.bump_revision(db)
    db.session.commit()
    return result


def _validate(document: Any) -> None:
    errors = sorted(Draft202012Validator(schema()).iter_errors(document), key=_place)
    if not errors:
        return
    error = errors[0]
    path = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "the document"
    if len(path) >= 2 and path[0] == "entries" and isinstance(path[1], int):
        where = f"{_name(document, path[1])}, at {'/'.join(str(p) for p in path[2:]) or 'it'}"
    raise InvalidParams(
        f"Not a chatmem memory export (version {VERSION}): {where}: {error.message}. "
        "Nothing was imported.",
        details={"path": "/".join(str(p) for p in path)},
    )


def _place(error: Any) -> tuple[tuple[int, int, str], ...]:
    """Sort key: the error nearest the top of the file first (list indexes as numbers)."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path)


def _checked_entry(index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's written fields through the text rules, as the Memory screen's add form."""
    fields = {name: row.get(name) for name in guidance.EDITABLE}
    try:
        checked = guidance.checked_fields(fields)
        checked["review_after"] = staleness.parse_review_after(row.get("review_after"))
        for event in row["events"]:
            _check_detail(event["detail"])
    except ChatmemError as error:
        raise InvalidParams(
            f"{_name_of(index, row)}: {error.message} Nothing was imported.",
            details={"entry": index + 1, "id": row.get("id"), **error.details},
        ) from None
    return checked


def _check_detail(detail: Any) -> None:
    """Audit details are shown on the history page: their text obeys the same rules."""
    if not isinstance(detail, dict):
        return
    guidance.checked_reason(detail.get("reason"))
    for name in guidance.EDITABLE:
        change = detail.get(name)
        for value in change if isinstance(change, list) else ():
            if isinstance(value, str) and value:
                check_field(name, value)


def _name(document: Any, index: int) -> str:
    entries = document.get("entries") if isinstance(document, dict) else None
    row = entries[index] if isinstance(entries, list) and index < len(entries) else {}
    return _name_of(index, row if isinstance(row, dict) else {})


def _name_of(index: int, row: Mapping[str, Any]) -> str:
    """ "entry 3 (#17 “Checkout is page 42”)": its place in the file and its id there."""
    label = f"entry {index + 1}"
    if isinstance(row.get("id"), int):
        label += f" (#{row['id']}"
        title = row.get("title")
        if isinstance(title, str) and title:
            label += f" “{title[:60]}”"
        label += ")"
    return label


def _new(row: Mapping[str, Any], fields: Mapping[str, Any], keep_status: bool) -> Guidance:
    status = row["status"] if keep_status else "pending"
    pending = status == "pending"
    return Guidance(
        type=fields["type"],
        title=fields.get("title") or guidance.default_title(fields["text"]),
        text=fields["text"],
        text_key=guidance.text_key(fields["text"]),
        scope=fields.get("scope"),
        target=fields.get("target"),
        severity=fields.get("severity"),
        status=status,
        status_before_trash=row.get("status_before_trash") if status == "trash" else None,
        enabled=bool(row["enabled"]) or pending,
        origin=row["origin"],
        session_id=row["session_id"],
        created_by=row["created_by"],
        created_at=_parse_when(row["created_at"]),
        # A pending copy is not approved here: its approval stays in its trail.
        approved_by=None if pending else row["approved_by"],
        approved_at=None if pending else _parse_when(row["approved_at"]),
        updated_at=_parse_when(row["updated_at"]),
        review_after=fields["review_after"],
    )


def _when(value: datetime | None) -> str | None:
    return value.strftime(_WHEN) if value else None


def _parse_when(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value.removesuffix("Z"))
