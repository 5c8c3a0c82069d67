"""The text rules every written field passes, and the one redaction step.

- `invisible`: invisible text and lookalike letters (what a person could not see);
- `secret_shapes` and `secret_keys`: what a secret looks like, and the names it sits under;
- `redaction`: the step that replaces secrets by `[redacted:<kind>]` (`redact`, `scan`);
- `rules`: `check_field`, which every written field passes, and `for_agents`.

The modules import in that order, never back: `invisible`, `secret_shapes` and
`secret_keys` import none of the others, `redaction` imports those three, and
`rules` imports `invisible` and `redaction`.
"""

from __future__ import annotations

from .invisible import (
    code_point,
    describe,
    hidden_characters,
    lookalike_characters,
    normalise,
    strip_invisible,
    visible,
)
from .redaction import redact, redact_value, redacted, scan, secret_kinds
from .rules import Secrets, check_field, for_agents, for_agents_record
from .secret_keys import key_kind, secret_key

__all__ = [
    "Secrets",
    "check_field",
    "code_point",
    "describe",
    "for_agents",
    "for_agents_record",
    "hidden_characters",
    "key_kind",
    "lookalike_characters",
    "normalise",
    "redact",
    "redact_value",
    "redacted",
    "scan",
    "secret_key",
    "secret_kinds",
    "strip_invisible",
    "visible",
]
