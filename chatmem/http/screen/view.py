"""What the Memory screen's templates are given: labels and small helpers.

Kept apart from the routes so the views read as request -> domain -> answer.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from flask_wtf.csrf import generate_csrf

from ...core import current_memory
from ...memory.block import GROUP_LABELS, LIMIT
from ...memory.fields import default_title
from ...memory.guardrails.targets import target_warning
from ...memory.models import ENFORCED_SEVERITIES, GUIDANCE_TYPES, SEVERITIES, Guidance, utcnow
from ...text import hidden_characters, lookalike_characters, redaction, strip_invisible
from ...text import visible as _visible

TYPE_LABELS = {
    "guardrail": "Guardrail",
    "fact": "Site fact",
    "convention": "Convention",
    "instruction": "Instruction",
}
SETTING_LABELS = {
    "memory_enabled": "Memory",
    "require_approval": "Require approval",
    "auto_summarize": "Auto-summarize sessions",
}


def helpers() -> dict[str, Any]:
    """Names every chatmem page uses; user names are looked up once per request."""
    mem = current_memory()
    tools = mem.registry.tools()
    read_only = [t.name for t in tools if t.read_only]
    tool_names = {t.name.lower() for t in tools}
    names: dict[str, str] = {}

    def user_name(user_id: str | None) -> str:
        key = user_id or ""
        if key not in names:
            names[key] = mem.permissions.actor_name(user_id)
        return names[key]

    def enforcement(entry: Guidance) -> tuple[str, str] | None:
        """How a guardrail acts on tool calls, or a warning when it never can."""
        if entry.type != "guardrail":
            return None
        if entry.severity not in ENFORCED_SEVERITIES:
            return "advisory", "Advisory: only a block or ask guardrail acts on tool calls"
        warning = target_warning(
            entry.target,
            mem.server_name,
            read_only,
            tool_names,
            labels_known=mem.target_labels_hook is not None,
        )
        if warning:
            return "warning", warning[0].upper() + warning[1:]
        if entry.severity == "ask":
            return "enforced", "Enforced: matching tool calls wait for your approval"
        return "enforced", "Enforced: matching tool calls are refused"

    return {
        "chatmem_csrf": generate_csrf(),
        "type_labels": TYPE_LABELS,
        "group_labels": GROUP_LABELS,
        "guidance_types": GUIDANCE_TYPES,
        "severities": SEVERITIES,
        "setting_labels": SETTING_LABELS,
        "retention_days": mem.settings.retention_days,
        "block_limit": LIMIT,
        "user_name": user_name,
        "enforcement": enforcement,
        "heading_of": _heading_of,
        "title_cut": _title_cut,
        "clamped": clamped,
        "clamp_max": CLAMP_MAX,
        "when": _when,
        "ago": _ago,
        "as_json": _as_json,
        "visible": visible,
        "stripped": stripped,
        "hides_text": hides_text,
    }


def visible(value: str | None) -> str:
    """Stored text as a curator reads it: hidden characters shown as `<U+200B>`,
    secrets redacted (text stored before the text rules may hold either)."""
    return _visible(redaction.redact(value)) if value else ""


def stripped(value: str | None) -> str:
    """An edit form's starting value: saving it drops what the text rules refuse."""
    return strip_invisible(redaction.redact(value)) if value else ""


def hides_text(entry: Guidance) -> bool:
    """Whether an entry (stored before the text rules) holds what they refuse."""
    fields = [f for f in (entry.title, entry.text, entry.scope, entry.target) if f]
    return any(
        hidden_characters(f) or lookalike_characters(f) or redaction.secret_kinds(f) for f in fields
    )


def _has_own_title(entry: Guidance) -> bool:
    return entry.title != default_title(entry.text)


HEADING_MAX = 120
# Text longer than this is shown cut, with "Show all" to read the rest.
CLAMP_MAX = 300


def clamped(value: str, limit: int = CLAMP_MAX) -> str:
    """`value` cut at a word before `limit` characters, with "…" when cut."""
    if len(value) <= limit:
        return value
    cut = value[:limit]
    return (cut.rsplit(" ", 1)[0] if " " in cut.strip() else cut) + "…"


def _heading_of(entry: Guidance) -> str:
    """A row's heading: its own title, else its text, cut at a word when long.

    The text (and a cut title) is then shown below it: a long entry is never
    one giant heading.
    """
    return clamped(entry.title if _has_own_title(entry) else entry.text, HEADING_MAX)


def _title_cut(entry: Guidance) -> bool:
    """Whether the heading shortened the entry's own title (then it is shown in full below)."""
    return _has_own_title(entry) and len(entry.title) > HEADING_MAX


def _as_json(value: Any) -> str:
    """Ledger arguments as readable JSON text; the template escapes it."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M} UTC" if value else "—"


def _ago(value: datetime | None, now: datetime | None = None) -> str:
    """How long ago, in the largest whole unit: "just now", "5 min ago", "2 h ago", "3 days ago"."""
    if value is None:
        return "never"
    seconds = ((now or utcnow()) - value).total_seconds()
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {'day' if unit == 'days' and count == 1 else unit} ago"
    return "just now"
