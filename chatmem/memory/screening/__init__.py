"""Screening proposals for signs of poisoning (SPEC §9b, "Proposals are screened").

A flag is advice for the person who reviews a proposal; it never changes the
text. A flagged proposal stays pending even with Require approval off, and
the Memory screen approves it only when the person says "Approve anyway".

Three kinds of check, each flag with a stable code, a reason and a label for
the Memory screen (`LABELS`, in `flags`):

- wording (`poison.find`): `override`, `role_play`, `concealment`,
  `fake_structure`, `markup`, `contact`, `exfiltration`, `hijack`, `evasion`,
  `authority`, in English and the languages of `phrasebook`;
- against active guidance: `near_duplicate` (nearly the same words and the
  same polarity), `contradiction` (the opposite polarity, a different
  number in the same sentence, or the same guardrail target) and
  `retraction` (it names what an active guardrail guards and says it no
  longer holds: `retraction.py`, the flag names the guardrail);
- against history: `rejected_before` (the same text, folded as for
  de-duplication, was rejected once): its reason says when, by whom and why
  ("rejected on 2026-11-30 by admin: ..."), from the rejection's audit event.

Flags are computed, never stored as state: the active guidance changes, so a
flag computed when the proposal was made can go stale. `remember` computes
them for its answer (the proposal's audit event keeps the codes), and the
pending tab and every approval compute them afresh.

This module is the screen's face: `screen`, `screen_entries` and `check` run
the checks, and the history check is here. The parts are submodules: `flags`
(codes, labels, the wording flags), `content` (what two entries are compared
on), `active_index` (the active guidance, compared with a proposal),
`poison` (the wording) and `retraction`.

Cost: comparing with active guidance reads an `ActiveIndex`, built once per
process per revision (the same revision that keys the block cache): an
inverted index from content word to entries narrows the candidates to those
sharing a word with the proposal, skipping words most entries have, and only
those candidates are compared by trigram similarity. The wording checks are
regular expressions over one text; `rejected_before` is one indexed query.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session as OrmSession

from .. import reads
from ..fields import default_title, text_key
from ..guidance import reason_of, rejections
from ..models import Guidance
from .active_index import CANDIDATES, Active, ActiveIndex
from .content import Content
from .flags import CODES, LABELS, Flag, wording

__all__ = [
    "CANDIDATES",
    "CODES",
    "LABELS",
    "Active",
    "ActiveIndex",
    "Content",
    "Flag",
    "NameOf",
    "check",
    "fields_of",
    "screen",
    "screen_entries",
]

NameOf = Callable[[str | None], str]


# Built once: `remember` runs it on every proposal.
_REJECTED_ONE = (
    select(Guidance.id)
    .where(
        Guidance.text_key == bindparam("key"),
        Guidance.status == "rejected",
        Guidance.id != bindparam("exclude"),
    )
    .order_by(Guidance.id.desc())
    .limit(1)
)


def _rejected(db: OrmSession, keys: Iterable[str], exclude: Iterable[int] = ()) -> dict[str, int]:
    """text_key -> the newest rejected entry with that key."""
    wanted = set(keys)
    if not wanted:
        return {}
    query = (
        select(Guidance.text_key, Guidance.id)
        .where(Guidance.text_key.in_(wanted), Guidance.status == "rejected")
        .order_by(Guidance.id)
    )
    skip = set(exclude)
    return {key: entry_id for key, entry_id in db.execute(query) if entry_id not in skip}


def _check(
    fields: Mapping[str, Any], active: ActiveIndex, rejected: Flag | None = None
) -> list[Flag]:
    content = Content.of(str(fields.get("text") or ""), fields.get("target"), active.server_name)
    flags = wording(fields) + active.compare(content)
    retired = active.retracted(fields, content)
    if retired is not None:
        flags.append(retired)
    if rejected is not None:
        flags.append(rejected)
    return flags


def check(fields: Mapping[str, Any], active: ActiveIndex) -> list[Flag]:
    """The flags that need no history (wording, active guidance): what a corpus measures."""
    return _check(fields, active)


def _rejected_flags(db: OrmSession, entry_ids: Iterable[int], name_of: NameOf) -> dict[int, Flag]:
    """rejected_before flags, saying when, by whom and why each entry was rejected."""
    ids = set(entry_ids)
    events = rejections(db, ids)
    found = {}
    for entry_id in ids:
        event = events.get(entry_id)
        if event is None:  # rejected before rejections were audited: say what is known
            reason = f"The same text was rejected before (entry #{entry_id})."
        else:
            why = reason_of(event)
            reason = (
                f"The same text was rejected on {event.at:%Y-%m-%d} by {name_of(event.actor_id)}"
                f"{': ' + why if why else ' (no reason given)'} (entry #{entry_id})."
            )
        found[entry_id] = Flag("rejected_before", reason, entry_id)
    return found


def _anyone(actor_id: str | None) -> str:
    return actor_id or "unknown"


def screen(
    db: OrmSession,
    fields: Mapping[str, Any],
    active: ActiveIndex,
    *,
    entry_id: int | None = None,
    name_of: NameOf = _anyone,
) -> list[Flag]:
    """The flags for one proposal (`fields` as `remember` takes them), in CODES order.

    `entry_id`: the proposal's own entry, when it is stored already.
    `name_of`: an audit actor id -> the name a rejected_before flag gives.
    """
    found = reads.first(
        db,
        _REJECTED_ONE,
        {"key": text_key(str(fields.get("text") or "")), "exclude": entry_id or 0},
    )
    rejected = _rejected_flags(db, [found.id], name_of)[found.id] if found else None
    return _check(fields, active, rejected)


def screen_entries(
    db: OrmSession, entries: Iterable[Guidance], active: ActiveIndex, name_of: NameOf = _anyone
) -> dict[int, list[Flag]]:
    """Flags for stored proposals (a page of the pending tab), with two history queries."""
    entries = list(entries)
    rejected = _rejected(db, (e.text_key for e in entries), exclude=(e.id for e in entries))
    flags = _rejected_flags(db, rejected.values(), name_of)
    return {
        e.id: _check(fields_of(e), active, flags.get(rejected.get(e.text_key, 0))) for e in entries
    }


def fields_of(entry: Guidance, changes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """An entry's written fields, with an edit applied: an edit is screened before it is saved."""
    fields = {name: getattr(entry, name) for name in ("type", "title", "text", "scope", "target")}
    derived = default_title(entry.text)
    for name, value in (changes or {}).items():
        if name in ("title", "scope", "target"):
            fields[name] = value or None  # blank clears it
        elif name in ("type", "text") and value:
            fields[name] = value
    if fields["title"] in (None, derived):
        # A title derived from the text follows an edited text (as `guidance.edit` does).
        fields["title"] = None
    return fields
