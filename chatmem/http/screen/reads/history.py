"""An entry's history, for its page on the Memory screen: every version of its
fields, rebuilt from the audit trail, and what each audit event says.

Nothing here is stored: each `edit` event keeps the fields it changed as
`{field: [before, after]}` (guidance.edit), so walking the edits back from
the entry as it is now gives every earlier version. An edit event without
that detail (from an import file that left it out) shows no diff, and the
versions before it are unknown rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher
from typing import Any

from ....memory.fields import EDITABLE, default_title
from ....memory.models import Guidance, GuidanceEvent

# How each action reads in the trail.
ACTION_LABELS = {
    "propose": "Proposed",
    "admin_add": "Added by hand",
    "import": "Imported",
    "approve": "Approved",
    "reject": "Rejected",
    "edit": "Edited",
    "enable": "Switched on",
    "disable": "Switched off",
    "trash": "Moved to the trash",
    "restore": "Restored",
    "review_date": "Review date",
    "target_gone": "Target gone",
    "target_back": "Target resolves again",
    "stale_review": "Back to Pending (target gone)",
    "target_changed": "Target changed",
    "target_still_true": "Still true (target changed)",
    "review_due": "Back to Pending (review date)",
}
STATUS_WORDS = {"publish": "active", "pending": "pending", "rejected": "rejected", "trash": "trash"}
# Words with the spaces after them (and leading space on its own), so a change
# reads "~~old words ~~new words " rather than gluing words together.
_WORDS = re.compile(r"\s+|\S+\s*")
# Below this share of words in common a change is shown as a rewrite, not word by word.
REWRITE = 0.4


@dataclass(frozen=True)
class Change:
    field: str
    before: str | None
    after: str | None

    def diff(self) -> list[tuple[str, str]]:
        """(op, text) pieces, op "same", "del" or "ins", word by word; the page escapes them."""
        old, new = _WORDS.findall(self.before or ""), _WORDS.findall(self.after or "")
        pieces: list[tuple[str, str]] = []
        matcher = SequenceMatcher(a=old, b=new, autojunk=False)
        if matcher.ratio() < REWRITE:  # rewritten: one old block, one new, reads better
            return [p for p in (("del", self.before or ""), ("ins", self.after or "")) if p[1]]
        for op, a1, a2, b1, b2 in matcher.get_opcodes():
            if op == "equal":
                pieces.append(("same", "".join(old[a1:a2])))
                continue
            if a2 > a1:
                pieces.append(("del", "".join(old[a1:a2])))
            if b2 > b1:
                pieces.append(("ins", "".join(new[b1:b2])))
        return [piece for piece in pieces if piece[1]]


@dataclass(frozen=True)
class Version:
    number: int  # 1: as first written
    at: datetime
    actor_id: str | None
    action: str
    fields: dict[str, Any] | None  # every editable field as of this version; None: unknown
    changes: list[Change] | None  # what this version changed; None: not recorded


def versions(entry: Guidance, events: Sequence[GuidanceEvent]) -> list[Version]:
    """Every version of the entry's fields, oldest first (the creation, then each edit)."""
    state: dict[str, Any] | None = {name: getattr(entry, name) for name in EDITABLE}
    edits: list[tuple[GuidanceEvent, dict[str, Any] | None, list[Change] | None]] = []
    for event in reversed([e for e in events if e.action == "edit"]):
        changes = _changes(event.detail)
        edits.append((event, dict(state) if state is not None else None, changes))
        if state is None or changes is None:
            state = None  # an edit that did not record its changes: earlier versions unknown
            continue
        for change in changes:
            state[change.field] = change.before
    edits.reverse()
    created = next((e for e in events if e.action != "edit"), None)
    first = Version(
        1,
        created.at if created else entry.created_at,
        created.actor_id if created else entry.created_by,
        created.action if created else "propose",
        state,
        None,
    )
    return [first] + [
        Version(number, event.at, event.actor_id, "edit", fields, _shown(changes))
        for number, (event, fields, changes) in enumerate(edits, start=2)
    ]


def _shown(changes: list[Change] | None) -> list[Change] | None:
    """The changes worth showing: a title derived from the text only repeats the text's diff."""
    if not changes:
        return changes
    text = next((c for c in changes if c.field == "text"), None)

    def follows_text(change: Change) -> bool:
        return (
            text is not None
            and change.field == "title"
            and change.before == default_title(text.before or "")
            and change.after == default_title(text.after or "")
        )

    return [change for change in changes if not follows_text(change)]


def _changes(detail: Any) -> list[Change] | None:
    if not isinstance(detail, dict):
        return None
    return [
        Change(name, detail[name][0], detail[name][1])
        for name in EDITABLE
        if isinstance(detail.get(name), list) and len(detail[name]) == 2
    ]


def describe(event: GuidanceEvent) -> str:
    """What an audit event's detail says, in words (the page escapes it)."""
    detail = event.detail if isinstance(event.detail, dict) else {}
    parts = []
    if event.action == "edit":
        changed = [name for name in EDITABLE if name in detail]
        parts.append("changed " + ", ".join(changed) if changed else "changed nothing recorded")
    if isinstance(detail.get("reason"), str):
        parts.append(f"reason: {detail['reason']}")
    if isinstance(detail.get("note"), str):
        parts.append(detail["note"])
    parts += _flag_words(detail)
    if event.action in ("propose", "restore", "import") and detail.get("status"):
        status = STATUS_WORDS.get(str(detail["status"]), str(detail["status"]))
        was = detail.get("was")
        parts.append(f"{status} (was {STATUS_WORDS.get(str(was), str(was))})" if was else status)
    parts += _linked_words(detail)
    if event.action == "import":
        parts += _import_words(detail)
    return "; ".join(parts)


def _linked_words(detail: dict[str, Any]) -> list[str]:
    """The other entries a decision names: Replace, and a group's merge or rejection."""
    words = []

    def ids(key: str) -> str:
        return ", ".join(f"#{i}" for i in detail[key])

    if isinstance(detail.get("merged"), list) and detail["merged"]:
        words.append(f"kept; merged {ids('merged')} into it (near-duplicates)")
    if isinstance(detail.get("merged_into"), int):
        words.append(f"merged into #{detail['merged_into']} (a near-duplicate, approved)")
    if isinstance(detail.get("group"), list) and detail["group"]:
        words.append(f"rejected with {ids('group')}")
    if isinstance(detail.get("replaces"), int):
        words.append(f"replaces #{detail['replaces']}")
    if isinstance(detail.get("replaced_by"), int):
        words.append(f"replaced by #{detail['replaced_by']}")
    return words


def _flag_words(detail: dict[str, Any]) -> list[str]:
    if detail.get("anyway"):
        return ["approved anyway despite: " + ", ".join(map(str, detail.get("flags", ())))]
    if detail.get("flags"):
        return ["flagged: " + ", ".join(map(str, detail["flags"]))]
    return []


def _import_words(detail: dict[str, Any]) -> list[str]:
    words = []
    if detail.get("source"):
        words.append(f"from {detail['source']}")
    if isinstance(detail.get("approved_at"), str):
        # The other site's approval, kept as history: it approves nothing here.
        who = detail.get("approver") or detail.get("approved_by") or "someone"
        words.append(f"approved there by {who} on {detail['approved_at'][:10]}")
    return words
