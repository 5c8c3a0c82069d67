"""Guardrail targets and the compiled index that enforces them (SPEC §6).

A target is `key:value` or a bare tool slug. Known keys are `tool`,
`post_id`/`id`, `post_type` and `label` (any label the host's
`target_labels` hook gives a call: `label:author:john`, `label:forum:2`);
anything else never matches, so a typo fails open instead of blocking
everything. Matching runs on the dispatcher's
canonical arguments, and ids are compared in canonical form as well, so `42`,
`"42"`, `" 42"` and `"042"` are one post.

The index is a few dicts keyed by tool slug, post id, post type and label: a
call costs the same few lookups whether 10 or 10,000 guardrails are active.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .models import ENFORCED_SEVERITIES, Guidance

ID_KEYS = ("post_id", "id")
_DIGITS = re.compile(r"[+]?\d+")


@dataclass(frozen=True)
class Target:
    """A parsed target; `key` is None when the target can never match."""

    key: str | None
    value: str = ""


@dataclass(frozen=True)
class Rule:
    id: int
    title: str
    target: str
    # `block` refuses a matching call; `ask` holds it for a curator.
    severity: str = "block"


def canonical_id(value: Any) -> str | None:
    """The one spelling of a post id, whatever JSON type it arrived as."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        text = value.strip()
        return str(int(text)) if _DIGITS.fullmatch(text) else text or None
    return None


#: `(tool name, canonical arguments) -> every label the call touches` (the host's hook).
LabelResolver = Callable[[str, Mapping[str, Any]], Iterable[Any]]


def canonical_label(label: Any) -> str | None:
    """One spelling of a label: lower case, and `kind:042` is `kind:42` as ids are."""
    if isinstance(label, bool) or label is None:
        return None
    text = str(label).strip().lower()
    kind, sep, value = text.partition(":")
    if sep:
        value = canonical_id(value) or ""
        text = f"{kind.strip()}:{value}" if kind.strip() and value else ""
    return text or None


def labels_of(
    resolve: LabelResolver, tool_name: str, arguments: Mapping[str, Any]
) -> frozenset[str]:
    """The host's labels for a call, canonical; a lone string is one label, not its letters."""
    found = resolve(tool_name, arguments)
    if found is None:
        return frozenset()
    if isinstance(found, str):
        found = (found,)
    return frozenset(label for item in found if (label := canonical_label(item)))


def tool_slug(name: str, server_name: str) -> str | None:
    """A tool reference in either form as a lower-case slug; None if foreign."""
    name = name.strip().lower()
    if "/" in name:
        prefix, _, name = name.rpartition("/")
        if prefix != server_name.lower():
            return None
    return name or None


def parse_target(target: str | None, server_name: str) -> Target:
    text = (target or "").strip()
    if not text:
        return Target(None)
    key, sep, value = text.partition(":")
    if not sep:
        key, value = "tool", text
    key, value = key.strip().lower(), value.strip()
    if key == "tool":
        slug = tool_slug(value, server_name)
        return Target("tool", slug) if slug else Target(None)
    if key in ID_KEYS:
        ident = canonical_id(value)
        return Target("post_id", ident) if ident else Target(None)
    if key == "post_type" and value:
        return Target("post_type", value.lower())
    if key == "label":
        label = canonical_label(value)
        return Target("label", label) if label else Target(None)
    return Target(None)


def target_warning(
    target: str | None,
    server_name: str,
    read_only_tools: Iterable[str],
    tool_names: Iterable[str] | None = None,
    *,
    labels_known: bool = True,
) -> str | None:
    """What the Memory screen should say about an enforced (block or ask) guardrail's target.

    With `tool_names` (every registered tool), a slug naming no tool is
    flagged too: `create-users` for `create-user` would otherwise fail open
    without anyone noticing.
    """
    parsed = parse_target(target, server_name)
    if parsed.key is None:
        return "this target never matches"
    if parsed.key == "label" and not labels_known:
        return "this target never matches: the site gives tool calls no labels (target_labels)"
    if parsed.key == "tool" and parsed.value in {t.lower() for t in read_only_tools}:
        return "this tool is read-only: the guardrail never blocks"
    if (
        parsed.key == "tool"
        and tool_names is not None
        and parsed.value not in {t.lower() for t in tool_names}
    ):
        return f"this target never matches: no tool is named {parsed.value}"
    return None


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

    def match(
        self,
        tool_name: str,
        arguments: Mapping[str, Any],
        resolve_post_type: Callable[[Any], str | None] | None,
        resolve_labels: LabelResolver | None = None,
    ) -> Rule | None:
        """The first rule that refuses or holds this call, or None.

        The host's hooks are asked only when a guardrail of their kind is active.
        """
        rules = self.by_tool.get(tool_name.lower())
        if rules:
            return rules[0]
        ids = [i for k in ID_KEYS if k in arguments and (i := canonical_id(arguments[k]))]
        for ident in ids:
            rules = self.by_post_id.get(ident)
            if rules:
                return rules[0]
        if self.by_post_type and resolve_post_type is not None:
            for ident in ids:
                post_type = resolve_post_type(int(ident) if ident.isdigit() else ident)
                rules = self.by_post_type.get((post_type or "").lower())
                if rules:
                    return rules[0]
        if self.by_label and resolve_labels is not None:
            labels = labels_of(resolve_labels, tool_name, arguments)
            # The oldest rule among the call's labels, as one bucket would give it.
            found = [self.by_label[label][0] for label in labels if label in self.by_label]
            if found:
                return min(found, key=self.position.__getitem__)
        return None
