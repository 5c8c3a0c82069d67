"""JSON out of the MCP endpoint: orjson, and the standard library for what orjson refuses.

A recall answer is encoded twice per call (the result, and its text copy
inside it, which MCP asks servers to send beside `structuredContent`): for a
32 KB page the standard library took 0.41 ms, orjson 0.03 ms
(`bench/mcp_encoding.py`). orjson refuses what is no JSON text
(a lone surrogate, a whole number beyond 64 bits, a key that is no string);
those few answers are encoded by the standard library as before.
"""

from __future__ import annotations

import json
from typing import Any

import orjson


def to_bytes(value: Any) -> bytes:
    """UTF-8 JSON of `value`."""
    try:
        return orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(value).encode()


def to_text(value: Any) -> str:
    """JSON of `value` as text (non-ASCII kept as it is)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False)


def tool_result(payload: dict[str, Any], *, is_error: bool) -> dict[str, Any]:
    """A `tools/call` answer: the payload as `structuredContent` and as its text copy."""
    return {
        "content": [{"type": "text", "text": to_text(payload)}],
        "structuredContent": payload,
        "isError": is_error,
    }
