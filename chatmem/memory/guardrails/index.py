"""The compiled index of the active guardrails, built once per revision (SPEC §6).

A few dicts keyed by tool slug, post id, post type and label, each rule
under the canonical value its target names (`targets.py`): the matcher
(`matching.py`) looks a call up in them instead of reading every rule.
`revision.py` builds one per revision of the guidance; the dry run builds
a one-rule index, so both judge a call by the same matcher.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..models import ENFORCED_SEVERITIES, Guidance
from .targets import parse_target


@dataclass(frozen=True)
class Rule:
    id: int
    title: str
    target: str
    # `block` refuses a matching call; `ask` holds it for a curator.
    severity: str = "block"


@dataclass
class GuardrailIndex:
    by_tool: dict[str, list[Rule]] = field(default_factory=dict)
    by_post_id: dict[str, list[Rule]] = field(default_factory=dict)
    by_post_type: dict[str, list[Rule]] = field(default_factory=dict)
    by_label: dict[str, list[Rule]] = field(default_factory=dict)
    # Each label rule's place in the build order, so a call with many labels gets the oldest.
    position: dict[Rule, int] = field(default_factory=dict)
    # Counted once at build: __len__ is asked on every write call, and
    # summing the buckets there made dispatch grow with the guardrail count.
    size: int = 0

    @classmethod
    def build(cls, entries: Iterable[Guidance], server_name: str) -> GuardrailIndex:
        """Index the enforceable entries: published, enabled, block or ask, targeted."""
        index = cls()
        enforced = (
            e
            for e in entries
            if e.type == "guardrail"
            and e.status == "publish"
            and e.enabled
            and e.severity in ENFORCED_SEVERITIES
            and e.target
        )
        for entry in sorted(enforced, key=lambda e: (e.approved_at or e.created_at, e.id)):
            rule = Rule(entry.id, entry.title, entry.target or "", entry.severity or "block")
            index.add(rule, server_name)
        return index

    def add(self, rule: Rule, server_name: str) -> bool:
        """Index one rule after those already in; False if its target never matches."""
        parsed = parse_target(rule.target, server_name)
        if parsed.key is None:
            return False
        buckets = {
            "tool": self.by_tool,
            "post_id": self.by_post_id,
            "post_type": self.by_post_type,
            "label": self.by_label,
        }
        buckets[parsed.key].setdefault(parsed.value, []).append(rule)
        if parsed.key == "label":
            self.position.setdefault(rule, self.size)
        self.size += 1
        return True

    def __len__(self) -> int:
        return self.size
