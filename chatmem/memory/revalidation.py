"""Revalidation: active guidance whose target changed since it was approved. No Flask here.

A successful call changes what it targets: `post_id:4` (its `post_id` or
`id` argument, in canonical form) and every label the host's `target_labels`
hook gives it (`label:topic:14`). Each active (published) entry that targets
one of them, or names one in its text, is then marked "target changed since
approval" with the ledger row of that call; `memory.target_changed(label)`
does the same for a change made outside chatmem (a person editing the post
in the site's admin), with no call to point to.

"Names it in its text" is a token rule, so `post_id:4` never matches
`post_id:42`: the text is split at white space, each piece loses the
punctuation around it (quotes, backticks, brackets, `.,;:!?*`), and a piece
that parses as a `post_id:`/`id:`/`label:` target (`targets.parse_target`)
names that target in its canonical spelling (`id:004` names `post_id:4`).
`post 4` or `post_id: 4` (two pieces) name nothing.

Each process keeps, per revision, which entries watch which target
(`Watched`, built with one query the first time a call needs it), so a call
on a target no entry names costs no query at all. A mark is a conditional
UPDATE (`target_changed_at IS NULL`, `status = 'publish'`) in the call's own
transaction, and its audit event is written only when that UPDATE changed
the row: concurrent calls mark an entry once. Like hits, a mark never bumps
the entry's `version` (an open edit form stays valid).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session as OrmSession

from .. import text as text_rules
from ..errors import Conflict, InvalidParams, NotFound
from . import switches
from .guardrails.matching import LabelResolver, labels_of
from .guardrails.targets import ID_KEYS, canonical_id, parse_target
from .models import Guidance, GuidanceEvent, LedgerEntry, utcnow

if TYPE_CHECKING:
    from .switches import Snapshot

log = logging.getLogger("chatmem.revalidation")

CHANGED_MODES = ("flag", "review")
# What a piece of text may carry around a target it names.
_AROUND = "\"'`()[]{}<>.,;:!?*"
LABEL_MAX = 200


def label_of(target: str | None) -> str | None:
    """The canonical label of a `post_id:`/`id:`/`label:` target, or None (other kinds
    name nothing a call changes: a tool, a post type)."""
    parsed = parse_target(target, "")
    if parsed.key in ("post_id", "label"):
        return f"{parsed.key}:{parsed.value}"
    return None


def named_in(text: str) -> frozenset[str]:
    """The canonical labels a text names as whole pieces (the module's token rule)."""
    found = set()
    for piece in text.split():
        piece = piece.strip(_AROUND)
        key = piece.partition(":")[0].lower()
        if key in ("post_id", "id", "label") and (label := label_of(piece)):
            found.add(label)
    return frozenset(found)


def labels_of_call(
    tool_name: str,
    arguments: Mapping[str, Any],
    resolve_labels: LabelResolver | None,
) -> frozenset[str]:
    """What a call changed: `post_id:<id>` for its ids, `label:<label>` for the host's labels."""
    ids = (canonical_id(arguments[k]) for k in ID_KEYS if k in arguments)
    found = {f"post_id:{i}" for i in ids if i}
    if resolve_labels is not None:
        try:
            found |= {f"label:{label}" for label in labels_of(resolve_labels, tool_name, arguments)}
        except Exception:
            # The call already ran: a mark is advice, so a host bug only loses it (logged).
            log.exception("target_labels failed; %s marks its post ids only", tool_name)
    return frozenset(found)


@dataclass(frozen=True)
class Watched:
    """Which active, unmarked entries watch which canonical label, at one revision."""

    by_label: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def wants_labels(self) -> bool:
        """Whether any entry watches a host label: only then is `target_labels` asked."""
        return any(label.startswith("label:") for label in self.by_label)

    @classmethod
    def load(cls, db: OrmSession) -> Watched:
        """One query: the active entries with a target, or a `:` somewhere in their text."""
        rows = db.execute(
            select(Guidance.id, Guidance.target, Guidance.text).where(
                Guidance.status == "publish",
                Guidance.target_changed_at.is_(None),
                or_(Guidance.target.is_not(None), Guidance.text.contains(":")),
            )
        )
        by_label: dict[str, list[int]] = {}
        for entry_id, target, body in rows:
            labels = set(named_in(body or ""))
            if (own := label_of(target)) is not None:
                labels.add(own)
            for label in labels:
                by_label.setdefault(label, []).append(entry_id)
        return cls({label: tuple(sorted(ids)) for label, ids in by_label.items()})

    def entries_for(self, labels: Iterable[str]) -> dict[int, str]:
        """entry id -> the label it is marked for (the first, in sorted order)."""
        found: dict[int, str] = {}
        for label in sorted(labels):
            for entry_id in self.by_label.get(label, ()):
                found.setdefault(entry_id, label)
        return found


def mark(
    db: OrmSession,
    entries: Mapping[int, str],
    *,
    call: LedgerEntry | None,
    actor_id: str | None,
    now: datetime | None = None,
) -> list[int]:
    """Mark each entry (id -> the label that changed) in the caller's transaction.

    One conditional UPDATE per entry, in id order (two calls lock rows in the
    same order, never in a cycle); the event only where it changed the row.
    The ids it marked. The caller bumps the revision when the block depends on it.
    """
    now = now or utcnow()
    marked = []
    for entry_id in sorted(entries):
        label = entries[entry_id]
        won = db.execute(
            update(Guidance)
            .where(
                Guidance.id == entry_id,
                Guidance.status == "publish",
                Guidance.target_changed_at.is_(None),
            )
            .values(
                target_changed_at=now,
                target_changed_call_id=call.id if call is not None else None,
                target_changed_label=label,
            )
            .execution_options(synchronize_session=False)
        )
        if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
            continue
        if call is not None:
            detail: dict[str, Any] = {
                "label": label,
                "call_id": call.id,
                "tool": call.tool,
                "session_id": call.session_id,
                "note": f"{label} changed by {call.tool} (call #{call.id})",
            }
        else:
            detail = {"label": label, "call_id": None, "note": f"{label} changed outside chatmem"}
        _event(db, entry_id, "target_changed", actor_id, detail)
        marked.append(entry_id)
    return marked


def checked_label(raw: Any) -> str:
    """A label the host says changed, canonical; InvalidParams (field `label`) otherwise."""
    hint = "such as post_id:4 or label:topic:14"
    if not isinstance(raw, str):
        raise InvalidParams(
            f"label must be text {hint}.", details={"field": "label", "reason": "type"}
        )
    value = text_rules.check_field("label", raw, secrets="keep").strip()
    if not value or len(value) > LABEL_MAX:
        raise InvalidParams(
            f"label must be 1 to {LABEL_MAX} characters, {hint}.",
            details={"field": "label", "reason": "length"},
        )
    label = label_of(value)
    if label is None:
        raise InvalidParams(
            f"label {value!r} names nothing a change can reach: give a post_id:<id> or "
            f"label:<kind>:<value> target ({hint}; a host label is written label:topic:14).",
            details={"field": "label", "reason": "unparseable"},
        )
    return label


class Revalidator:
    """The dispatcher's step after a successful call, and the host's `target_changed`.

    `watched` is the per-revision index (the revision cache's); `review`
    (CHATMEM_CHANGED_TARGETS = "review") keeps marked entries out of the
    block, so a mark then bumps the revision in the same transaction.
    """

    def __init__(
        self,
        session: Callable[[], OrmSession],
        watched: Callable[[Snapshot], Watched],
        resolve_labels: Callable[[], LabelResolver | None],
        *,
        review: bool,
    ) -> None:
        self.session = session
        self.watched = watched
        self.resolve_labels = resolve_labels
        self.review = review

    def after_call(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        snapshot: Snapshot,
        row: LedgerEntry,
        *,
        besides: int | None = None,
    ) -> list[int]:
        """Mark what this successful call changed, in its transaction (the caller commits).

        `besides`: the `ask` guardrail whose grant this call used; the curator
        allowed exactly this change under it, so it is not marked.
        """
        watched = self.watched(snapshot)
        if not watched.by_label:
            return []
        resolve = self.resolve_labels() if watched.wants_labels else None
        entries = watched.entries_for(labels_of_call(tool_name, arguments, resolve))
        if besides is not None:
            entries.pop(besides, None)
        if not entries:
            return []
        db = self.session()
        db.flush()  # the ledger row's id, for the mark
        return self._marked(db, mark(db, entries, call=row, actor_id=row.user_id))

    def outside(self, raw: Any, snapshot: Snapshot) -> list[int]:
        """`memory.target_changed(label)`: mark as a call would, with no call; commits."""
        label = checked_label(raw)
        entries = self.watched(snapshot).entries_for((label,))
        if not entries:
            return []
        db = self.session()
        marked = self._marked(db, mark(db, entries, call=None, actor_id=None))
        db.commit()
        return marked

    def _marked(self, db: OrmSession, marked: list[int]) -> list[int]:
        if marked and self.review:
            switches.bump_revision(db)  # the block leaves them out from the next call on
        return marked


def still_true(db: OrmSession, entry_id: int, *, actor_id: str) -> Guidance:
    """A curator's "Still true": the mark goes and the entry is back in the block; commits.

    NotFound for an unknown entry, Conflict for one that is not marked (or
    not active); nothing changes then.
    """
    entry = db.get(Guidance, entry_id)
    if entry is None:
        raise NotFound(f"No guidance entry #{entry_id}.", details={"id": entry_id})
    label = entry.target_changed_label
    won = db.execute(
        update(Guidance)
        .where(
            Guidance.id == entry_id,
            Guidance.status == "publish",
            Guidance.target_changed_at.is_not(None),
        )
        .values(target_changed_at=None, target_changed_call_id=None, target_changed_label=None)
        .execution_options(synchronize_session=False)
    )
    if won.rowcount != 1:  # type: ignore[attr-defined]  # an UPDATE's result has rowcount; execute() is typed as a plain Result
        raise Conflict(
            f"Guidance #{entry_id} is not marked “target changed” (or is not active): "
            "there is nothing to confirm; reload the page.",
            details={"id": entry_id},
        )
    _event(db, entry_id, "target_still_true", actor_id, {"note": f"{label} changed; still true"})
    switches.bump_revision(db)
    db.commit()
    db.refresh(entry)
    return entry


def cleared(entry: Guidance) -> dict[str, Any]:
    """Clear an entry's mark on an edit or approval (the ORM write, version-checked);
    what the audit event adds, or {} when it was not marked."""
    if entry.target_changed_at is None:
        return {}
    label = entry.target_changed_label
    entry.target_changed_at = None
    entry.target_changed_call_id = None
    entry.target_changed_label = None
    return {"note": f"“target changed” ({label}) cleared"}


def changed(db: OrmSession, *, limit: int = 100) -> list[Guidance]:
    """Entries marked "target changed", active or sent back to Pending, newest mark first."""
    return list(
        db.scalars(
            select(Guidance)
            .where(
                Guidance.target_changed_at.is_not(None),
                Guidance.status.in_(("publish", "pending")),
            )
            .order_by(Guidance.target_changed_at.desc(), Guidance.id.desc())
            .limit(limit)
        ).all()
    )


def calls_of(db: OrmSession, entries: Iterable[Guidance]) -> dict[int, LedgerEntry]:
    """The ledger rows the marks point to (one query); a row retention deleted is absent."""
    ids = {e.target_changed_call_id for e in entries if e.target_changed_call_id is not None}
    if not ids:
        return {}
    return {row.id: row for row in db.scalars(select(LedgerEntry).where(LedgerEntry.id.in_(ids)))}


def _event(
    db: OrmSession, entry_id: int, action: str, actor_id: str | None, detail: dict[str, Any]
) -> None:
    db.add(GuidanceEvent(guidance_id=entry_id, action=action, actor_id=actor_id, detail=detail))
