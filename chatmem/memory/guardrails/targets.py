"""Guardrail targets: what a target names, in one canonical spelling (SPEC §6).

A target is `key:value` or a bare tool slug. Known keys are `tool`,
`post_id`/`id`, `post_type` and `label` (any label the host's
`target_labels` hook gives a call: `label:author:john`, `label:forum:2`);
anything else never matches, so a typo fails open instead of blocking
everything. Ids are compared in canonical form, so `42`, `"42"`, `" 42"`
and `"042"` are one post.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...tool_names import tool_slug

ID_KEYS = ("post_id", "id")
_DIGITS = re.compile(r"[+]?\d+")


@dataclass(frozen=True)
class Target:
    """A parsed target; `key` is None when the target can never match."""

    key: str | None
    value: str = ""


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
