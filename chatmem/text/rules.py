"""The text rules: what a written field may hold.

Every field an agent or a person writes (guidance text, title, scope,
target; summaries and takeaways) passes `check_field`: NFC, then refusal of
what a person reviewing it could not see (`chatmem.text.invisible`), then
secrets (found by `chatmem.text.redaction`). What a person approves is then
exactly what another agent gets (SPEC §9b).

- **Secrets**: guidance that holds one is refused, naming its kind (never
  the secret); a summary keeps its text with the secret redacted.

Stored text from before these rules is passed through `for_agents` (which
redacts secrets too) where an agent reads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ..errors import InvalidParams
from .invisible import (
    _mark_lookalikes,
    code_point,
    describe,
    hidden_characters,
    lookalike_characters,
    normalise,
    strip_invisible,
)
from .redaction import redact, scan


def for_agents(text: str) -> str:
    """Stored text as an agent (or a provider) may read it: nothing hidden, nothing
    disguised, no secret.

    Secrets are redacted, invisible characters dropped and lookalike letters
    shown as `<U+0430>`. For text no person reviews first (a summary job's
    transcript, the provider's request and reply, digests) and, as defence in
    depth, for guidance stored before the rules on its way into the block,
    MCP `instructions` and `recall`.
    """
    return strip_invisible(_mark_lookalikes(redact(text)))


def for_agents_record(record: dict[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """A copy of one recall entry with `for_agents` applied to its text `fields`."""
    out = dict(record)
    for name in fields:
        if isinstance(out.get(name), str):
            out[name] = for_agents(out[name])
    return out


# -- the rule every written field passes ------------------------------------------

Secrets = Literal["refuse", "redact", "keep"]


def check_field(field: str, value: str, *, secrets: Secrets = "refuse") -> str:
    """A written field, normalised; refused (InvalidParams naming it) when it hides text.

    `secrets`: "refuse" for guidance (a person approves exactly this text),
    "redact" for records kept as written (summaries), "keep" where only the
    invisible-text rule applies (the demo chat's own messages).
    """
    value = normalise(value)
    hidden = hidden_characters(value)
    if hidden:
        raise InvalidParams(
            f"{field} holds invisible or control characters: {describe(hidden)}. "
            "Remove them: a person reviewing the text could not see them.",
            details={"field": field, "code_points": [code_point(c) for c in hidden]},
        )
    lookalikes = lookalike_characters(value)
    if lookalikes:
        raise InvalidParams(
            f"{field} mixes lookalike letters into a word of Latin letters: "
            f"{describe(lookalikes)}. Use plain letters.",
            details={"field": field, "code_points": [code_point(c) for c in lookalikes]},
        )
    if secrets == "keep":
        return value
    cleaned, kinds = scan(value)
    if kinds and secrets == "refuse":
        raise InvalidParams(
            f"{field} holds what looks like a secret ({', '.join(kinds)}). Secrets are never "
            "stored: remove it, or describe where the secret lives instead.",
            details={"field": field, "kinds": kinds},
        )
    return cleaned
