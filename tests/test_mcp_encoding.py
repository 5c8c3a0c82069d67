"""The MCP endpoint's JSON: every answer is JSON a client can read, whatever it holds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chatmem.http.mcp import encoding

pytestmark = pytest.mark.db_free


@pytest.mark.parametrize(
    "value",
    [
        {"title": "Café — 東京", "score": 0.125, "n": 2**63 - 1, "ok": True, "none": None},
        [1, "two", {"three": [4.5]}],
    ],
)
def test_ordinary_values_round_trip_with_their_text_as_written(value: Any) -> None:
    assert json.loads(encoding.to_bytes(value)) == value
    text = encoding.to_text(value)
    assert json.loads(text) == value
    if "title" in value:
        assert "Café — 東京" in text  # not \\u-escaped: MCP text is read by models


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        ({"a": "\ud800"}, '{"a": "\\ud800"}'),  # a lone surrogate: no UTF-8 for it
        ({"n": 2**64}, '{"n": 18446744073709551616}'),  # beyond 64 bits
        ({1: "x"}, '{"1": "x"}'),  # a key that is no string
    ],
)
def test_what_orjson_refuses_is_encoded_as_the_standard_library_does(value: Any, sent: str) -> None:
    assert encoding.to_bytes(value) == sent.encode()
    assert json.loads(encoding.to_text(value)) == json.loads(sent)
