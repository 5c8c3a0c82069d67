"""Export and import guidance as a versioned JSON document
(`chatmem/schemas/memory-export.v1.json`), with its provenance and audit trail.

Import is all or nothing: the document is checked against the schema and
every entry against the text rules (no hidden text, no secrets: the same
rules as the tools and the Memory screen) before anything is written, and
the error names the entry. An entry whose text, folded as for
de-duplication, is already here (or earlier in the same file) is skipped:
import never overwrites an entry, so a newer local version always stays.
By default imported entries are pending, so imported memory passes the same
gate as an agent's proposal. `keep_status` copies their status, through
the poisoning screen `remember` runs: an active entry the screen flags waits
in Pending with its flags, one that passes is approved by whoever imported
it, at import time. The file's approver and approval time are only history:
they go into the entry's `import` event, never into its approval columns.

The file is bounded before it is read (size, nesting, numbers, text: see
`inputs.parse_json`), and every date must exist: any malformed file is a
400 naming the place, and nothing is written.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, cast

from jsonschema import Draft202012Validator, validators
from sqlalchemy import Table, select, update
from sqlalchemy.orm import Session as OrmSession

from .. import inputs
from ..errors import ChatmemError, InvalidParams
from ..text import check_field
from . import guidance, staleness, switches
from .fields import EDITABLE, checked_fields, checked_reason, default_title, text_key
from .models import STATUSES, Guidance, GuidanceEvent, utcnow
from .screening import Flag

FORMAT = "chatmem-memory-export"
VERSION = 1
SCHEMA_FILE = "memory-export.v1.json"
# The largest file the Memory screen's Import takes (the shell reads any size).
UPLOAD_MAX_BYTES = 5 * 1024 * 1024
_WHEN = "%Y-%m-%dT%H:%M:%S.%fZ"
# Nesting a file may have: document, entries, entry, events, event, detail,
# and room inside a detail (an edit's [before, after], a list of flags).
MAX_DEPTH = 16
_BODY = "The body"  # how `inputs` names the top of a value: here, "the document"
# An entry's fields (as `remember` takes them) -> the flags `remember` would give.
Screen = Callable[[Mapping[str, Any]], Sequence[Flag]]


@cache
def schema() -> dict[str, Any]:
    text = resources.files("chatmem").joinpath("schemas", SCHEMA_FILE).read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded


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
    # Entries the poisoning screen flagged: {"entry", "id", "new", "flags"} (codes).
    flagged: list[dict[str, Any]] = field(default_factory=list)
    status: str = "pending"


def summary(result: Result) -> str:
    """What an import did, in one line, for the Memory screen and the shell alike."""
    count = len(result.imported)
    message = f"Imported {count} entr{'y' if count == 1 else 'ies'} ({result.status})."
    if result.skipped:
        message += f" Skipped {len(result.skipped)} whose text is already here."
    if result.flagged:
        flagged = len(result.flagged)
        message += (
            f" The poisoning screen flagged {flagged}: "
            f"{'it waits' if flagged == 1 else 'they wait'} in Pending review."
        )
    return message


def parse(raw: bytes | str, *, max_bytes: int | None = None) -> Any:
    """The file, bounded: size (413), nesting, number length, NaN (400).

    The value rules (64-bit numbers, NUL, lone surrogates) are applied by
    `import_document`, which can name the entry they are in.
    """
    # A UTF-8 byte-order mark (Windows Notepad saves one) is no part of the JSON
    # text; RFC 8259 lets a parser ignore it, and an export file should import.
    raw = (
        raw.removeprefix(b"\xef\xbb\xbf") if isinstance(raw, bytes) else raw.removeprefix("\ufeff")
    )
    try:
        return inputs.parse_json(
            raw, field="file", values=False, max_depth=MAX_DEPTH, max_bytes=max_bytes
        )
    except ChatmemError as error:
        if error.details.get("reason") == "not_json":
            error.message = "The file is not JSON (UTF-8)."
        elif error.message.startswith("file "):  # the whole file, not a place in it
            error.message = "The " + error.message
        error.message += " Nothing was imported."
        raise


def import_document(
    db: OrmSession,
    document: Any,
    *,
    actor_id: str,
    keep_status: bool = False,
    screen: Screen | None = None,
) -> Result:
    """Check the whole document, then add its new entries in one transaction.

    `screen`: the poisoning screen `remember` runs (`Memory.screen`); required
    with `keep_status`, as it decides which entries may stay active.
    """
    if keep_status and screen is None:
        raise TypeError("keep_status needs the poisoning screen")
    _validate(document)
    checked = [_checked_entry(index, row) for index, row in enumerate(document["entries"])]
    try:
        result = _add(db, document, checked, actor_id, keep_status, screen)
    except BaseException:
        db.rollback()  # all or nothing, whatever went wrong
        raise
    db.commit()
    return result


def _add(
    db: OrmSession,
    document: Mapping[str, Any],
    checked: list[dict[str, Any]],
    actor_id: str,
    keep_status: bool,
    screen: Screen | None,
) -> Result:
    seen: dict[str, int] = {
        key: entry_id for key, entry_id in db.execute(select(Guidance.text_key, Guidance.id))
    }
    result = Result(status="with their status" if keep_status else "pending")
    publishes = False
    now = utcnow()
    for index, (row, fields) in enumerate(zip(document["entries"], checked, strict=True)):
        key = text_key(fields["text"])
        if key in seen:
            result.skipped.append({"entry": index + 1, "id": row["id"], "existing": seen[key]})
            continue
        flags = [flag.code for flag in screen(fields)] if screen is not None else []
        entry = _new(row, fields, _status(row, keep_status, bool(flags)))
        entry.created_by = _foreign(document, row["created_by"])
        if entry.status == "publish" or entry.status_before_trash == "publish":
            # Approved here, now, by whoever imported it: the file's approval is history.
            entry.approved_by, entry.approved_at = actor_id, now
        db.add(entry)
        db.flush()
        # The ORM numbers a new row's version 1: the copy keeps the file's (the
        # entry's own history), set past the version counter.
        table = cast(Table, Guidance.__table__)
        db.execute(update(table).where(table.c.id == entry.id).values(version=row["version"]))
        db.expire(entry, ["version"])
        seen[key] = entry.id
        for event in row["events"]:
            db.add(
                GuidanceEvent(
                    guidance_id=entry.id,
                    action=event["action"],
                    actor_id=_foreign(document, event["actor_id"]),
                    at=_parse_when(event["at"]),
                    detail=event["detail"],
                )
            )
        db.add(
            GuidanceEvent(
                guidance_id=entry.id,
                action="import",
                actor_id=actor_id,
                at=now,
                detail=_import_detail(document, row, entry, flags),
            )
        )
        if flags:
            result.flagged.append(
                {"entry": index + 1, "id": row["id"], "new": entry.id, "flags": flags}
            )
        publishes = publishes or entry.status == "publish"
        result.imported.append(entry.id)
    # Who imported what, from where: one site-level audit event per import.
    db.add(
        GuidanceEvent(
            guidance_id=None,
            action="import",
            actor_id=actor_id,
            at=now,
            detail={
                "source": document["server_name"],
                "imported": result.imported,
                "skipped": len(result.skipped),
                "flagged": len(result.flagged),
                "keep_status": keep_status,
            },
        )
    )
    if publishes:
        switches.bump_revision(db)
    return result


def _foreign(document: Mapping[str, Any], actor: str | None) -> str | None:
    """An actor of the other site as this one records it: never a local user's id."""
    if actor is None or actor.startswith(
        (guidance.CLI_ACTOR_PREFIX, guidance.IMPORTED_ACTOR_PREFIX)
    ):
        return actor
    name = document["actors"].get(actor) or f"user #{actor}"
    return f"{guidance.IMPORTED_ACTOR_PREFIX}{name}"[:64]


def _status(row: Mapping[str, Any], keep_status: bool, flagged: bool) -> tuple[str, str | None]:
    """(status, status_before_trash) of the copy: a flagged entry is not active, nor
    can it become active by a restore from the trash; it waits for a person."""
    if not keep_status:
        return "pending", None
    status, before = row["status"], row.get("status_before_trash")
    if status == "publish" and flagged:
        status = "pending"
    if status != "trash":
        before = None
    elif before == "publish" and flagged:
        before = "pending"
    return status, before


def _import_detail(
    document: Mapping[str, Any], row: Mapping[str, Any], entry: Guidance, flags: list[str]
) -> dict[str, Any]:
    """The entry's `import` event: what it was in the file and what the screen found."""
    detail: dict[str, Any] = {"status": entry.status, "source": document["server_name"]}
    if entry.status != row["status"]:
        detail["was"] = row["status"]
    if flags:
        detail["flags"] = flags
    if row["approved_by"] is not None or row["approved_at"] is not None:
        # Who approved it on the other site (that site's id and name): history only.
        detail["approved_by"] = row["approved_by"]
        detail["approver"] = document["actors"].get(row["approved_by"] or "")
        detail["approved_at"] = row["approved_at"]
    # The ids in the copied trail are the other site's: keep the names it gave them.
    names = {a: document["actors"][a] for a in _actors_of(row) if a in document["actors"]}
    if names:
        detail["actors"] = dict(sorted(names.items()))
    return detail


def _validate(document: Any) -> None:
    # The value rules first: a caller may hand a decoded document over, and the
    # schema check recurses into whatever it is given.
    try:
        inputs.check_value(document, max_depth=MAX_DEPTH)
    except InvalidParams as refused:
        path = str(refused.details.get("field", ""))
        what = refused.message.removeprefix(path).removeprefix(_BODY).strip()
        raise InvalidParams(
            f"Not a chatmem memory export (version {VERSION}): {_where(document, path)}: "
            f"{what} Nothing was imported.",
            details={**refused.details, "path": path},
        ) from None
    errors = sorted(_validator().iter_errors(document), key=_place)
    if not errors:
        return
    error = errors[0]
    path = "/".join(str(p) for p in error.absolute_path)
    raise InvalidParams(
        f"Not a chatmem memory export (version {VERSION}): {_where(document, path)}: "
        f"{_message(error)}. Nothing was imported.",
        details={"path": path, "field": path, "reason": f"schema_{error.validator}"},
    )


def _where(document: Any, path: str) -> str:
    """ "entry 3 (#17 “Checkout is page 42”), at events/0/at" for entries/2/events/0/at."""
    parts = path.split("/") if path and path != "body" else []
    if len(parts) >= 2 and parts[0] == "entries" and parts[1].isdigit():
        return f"{_name(document, int(parts[1]))}, at {'/'.join(parts[2:]) or 'it'}"
    return path if parts else "the document"


@cache
def _validator() -> Any:
    """The schema's validator, where an integer is a JSON whole number (not 1.0 or 1e300)."""
    strict = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
    )
    return validators.extend(Draft202012Validator, type_checker=strict)(schema())


# A pattern's regex says nothing to a person: say the form in words.
_FORMS = {
    "date-time": "a UTC date and time such as 2026-01-31T09:30:00Z",
    "review_after": "a day such as 2026-01-31",
}


def _message(error: Any) -> str:
    """jsonschema's message, with the offending value cut short (it may be 100 kB)."""
    if error.validator == "pattern":
        field = str(error.absolute_path[-1]) if error.absolute_path else ""
        form = _FORMS.get(field) or _FORMS.get(str(error.schema.get("format")))
        shown = repr(error.instance)
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        return f"{shown} is not {form or 'in the form this field takes'}"
    text = str(error.message)
    return text if len(text) <= 300 else text[:300] + "…"


def _place(error: Any) -> tuple[tuple[int, int, str], ...]:
    """Sort key: the error nearest the top of the file first (list indexes as numbers)."""
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in error.absolute_path)


def _checked_entry(index: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's written fields through the text rules, as the Memory screen's add form."""
    fields = {name: row.get(name) for name in EDITABLE}
    try:
        checked = checked_fields(fields)
        checked["review_after"] = staleness.parse_review_after(row.get("review_after"))
        for name in ("created_at", "approved_at", "updated_at"):
            _checked_when(name, row[name])
        for number, event in enumerate(row["events"], 1):
            _checked_when(f"events/{number}/at", event["at"])
            _check_detail(event["detail"])
    except ChatmemError as error:
        raise InvalidParams(
            f"{_name_of(index, row)}: {error.message} Nothing was imported.",
            details={"entry": index + 1, "id": row.get("id"), **error.details},
        ) from None
    return checked


def _checked_when(name: str, value: str | None) -> None:
    """The schema checks a date's shape; this, that the day and time exist."""
    try:
        _parse_when(value)
    except ValueError:
        raise InvalidParams(
            f"{name} '{value}' is not a date and time that exists.",
            details={"field": name, "reason": "not_a_date"},
        ) from None


def _check_detail(detail: Any) -> None:
    """Audit details are shown on the history page: their text obeys the same rules."""
    if not isinstance(detail, dict):
        return
    checked_reason(detail.get("reason"))
    for name in EDITABLE:
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


def _new(
    row: Mapping[str, Any], fields: Mapping[str, Any], status: tuple[str, str | None]
) -> Guidance:
    """The copy, not approved here (the caller approves an active one)."""
    return Guidance(
        type=fields["type"],
        title=fields.get("title") or default_title(fields["text"]),
        text=fields["text"],
        text_key=text_key(fields["text"]),
        scope=fields.get("scope"),
        target=fields.get("target"),
        severity=fields.get("severity"),
        status=status[0],
        status_before_trash=status[1],
        enabled=bool(row["enabled"]) or status[0] == "pending",
        origin=row["origin"],
        session_id=row["session_id"],
        created_by=None,  # set by the caller, as the other site's actor
        created_at=_parse_when(row["created_at"]),
        approved_by=None,
        approved_at=None,
        updated_at=_parse_when(row["updated_at"]),
        review_after=fields["review_after"],
    )


def _when(value: datetime | None) -> str | None:
    return value.strftime(_WHEN) if value else None


def _parse_when(value: str | None) -> datetime | None:
    if value is None:
        return None
    return datetime.fromisoformat(value.removesuffix("Z"))
