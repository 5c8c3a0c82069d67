"""What the screen tells a reviewer: each flag's code, its reason and its label.

A flag is advice, never state: this module says what one holds (`Flag`), the
codes in the order the screen lists them (`CODES`), the short label the
Memory screen shows first (`LABELS`), and the reason each wording hit gives.
The wording flags are built here from `poison`'s hits on the fields a person
reads (`written`); the flags that compare with active guidance are built in
`active_index`, and `rejected_before` in the package's `__init__`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from . import poison

# Why each wording code was raised; the reason quotes what was read.
_WORDING = {
    "override": "Tells the reader to ignore or override its rules or earlier instructions",
    "role_play": "Role-play or system-prompt talk",
    "concealment": "Asks to hide something from the user or from the site's admins",
    "fake_structure": (
        "Imitates the memory block or chat markup (headings, group labels, role tags)"
    ),
    "markup": "Contains HTML, script or chat-role markup",
    "contact": "Contains a link, e-mail address, phone number or other contact detail",
    "exfiltration": (
        "Asks to reveal or send passwords, keys, tokens or the reader's own instructions"
    ),
    "hijack": "Dictates what the reader must say or output in its answers",
    "evasion": "Advises how to get round a refused or blocked call",
    "authority": "Claims an authority or an emergency the text cannot prove",
}
CODES = (*poison.CODES, "near_duplicate", "contradiction", "retraction", "rejected_before")
# What the Memory screen shows next to each code: a person reads the label first.
LABELS = {
    "override": "Orders to ignore the rules",
    "role_play": "Role-play or system-prompt talk",
    "concealment": "Asks to hide something",
    "fake_structure": "Imitates the memory block",
    "markup": "HTML or script markup",
    "contact": "Link or contact detail",
    "exfiltration": "Asks for secrets or instructions",
    "hijack": "Dictates the agent's answers",
    "evasion": "Advice to get round a refusal",
    "authority": "Claimed authority or urgency",
    "near_duplicate": "Nearly the same as an active entry",
    "contradiction": "Contradicts an active entry",
    "retraction": "Retires an active guardrail",
    "rejected_before": "Rejected before",
}


@dataclass(frozen=True)
class Flag:
    code: str
    reason: str
    entry_id: int | None = None  # the other entry, for near_duplicate, contradiction, ...

    @property
    def label(self) -> str:
        return LABELS.get(self.code, self.code)

    def to_dict(self) -> dict[str, Any]:
        found: dict[str, Any] = {"code": self.code, "reason": self.reason}
        if self.entry_id is not None:
            found["entry_id"] = self.entry_id
        return found


def written(fields: Mapping[str, Any]) -> str:
    """Every field a person will read, for the wording checks."""
    parts = (fields.get(name) for name in ("title", "text", "scope", "target"))
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip())


def wording(fields: Mapping[str, Any]) -> list[Flag]:
    return [
        Flag(hit.code, f"{_WORDING[hit.code]}: “{hit.excerpt}”.")
        for hit in poison.find(written(fields))
    ]
