"""What a reader of redacted text sees: the secret replaced by its kind, or nothing at all."""

from __future__ import annotations

from chatmem.text import redaction


def redacted_as(kind: str, text: str, secret: str) -> None:
    """`text` comes back with `secret` (and nothing else) replaced by its kind."""
    assert secret in text
    assert redaction.scan(text) == (text.replace(secret, f"[redacted:{kind}]"), [kind])


def untouched(text: str) -> None:
    assert redaction.scan(text) == (text, [])
