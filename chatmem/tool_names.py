"""How a tool is named, and how a guardrail or a client refers to one.

Kept below both the registry (`tools.py`) and the domain's guardrail
targets, which each need it, so neither imports the other for a name.
"""

from __future__ import annotations


def tool_slug(name: str, server_name: str) -> str | None:
    """A tool reference in either form as a lower-case slug; None if foreign."""
    name = name.strip().lower()
    if "/" in name:
        prefix, _, name = name.rpartition("/")
        if prefix != server_name.lower():
            return None
    return name or None
