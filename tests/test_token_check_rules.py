"""The token check's per-worker cache at its bound, as the database sees it.

A worker remembers at most `KNOWN_MAX` valid tokens per revision; the next new
token starts the cache over, so the tokens it held are read from their rows
again. The bound is lowered to two here (a real worker's is 10,000), and the
statements each request sends on the token and state tables tell which tokens
were read.
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask

from chatmem.auth import token_check
from tests.hostapp import reconfigure
from tests.test_token_auth import reads_of

TOOLS = "/chatmem/api/tools"
READ_STATE = "SELECT chatmem_state"
READ_TOKEN = "SELECT chatmem_token"


def reads_for(app: Flask, plain: str) -> list[str]:
    """The token and state statements of one request with this token (it must pass)."""
    with reads_of(app) as seen:
        response = app.test_client().get(TOOLS, headers={"Authorization": f"Bearer {plain}"})
        assert response.status_code == 200
    return seen


def test_a_full_cache_starts_over_at_the_next_new_token(
    app: Flask, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two tokens fill a cache of two and are not read again; a third empties it, so the
    first two are read from their rows at their next use, and the third is remembered."""
    monkeypatch.setattr(token_check, "KNOWN_MAX", 2)
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    first, second, third = (
        make_token(u, n) for u, n in (("editor", "a"), ("admin", "b"), ("editor", "c"))
    )
    for plain in (first, second):
        assert READ_TOKEN in reads_for(app, plain)  # read, bound, touched
    assert reads_for(app, first) == [READ_STATE]
    assert reads_for(app, second) == [READ_STATE]

    assert READ_TOKEN in reads_for(app, third)  # the cache was full: it starts over
    assert reads_for(app, third) == [READ_STATE]
    assert reads_for(app, first) == [READ_STATE, READ_TOKEN]
    assert reads_for(app, second) == [READ_STATE, READ_TOKEN]
