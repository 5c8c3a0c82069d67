"""WSGI module for bench/http_mcp.py: the test host plus one bare Flask JSON route."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import jsonify  # noqa: E402

from tests.hostapp import create_host_app  # noqa: E402

app = create_host_app(
    os.environ["CHATMEM_BENCH_DATABASE_URL"],
    seed=False,
    CHATMEM_RATE_LIMIT_PER_MINUTE=0,  # measure the endpoint, not the limiter
)


@app.post("/bare")
def bare() -> Any:
    """The baseline: a Flask JSON route doing no work, under the same gunicorn."""
    return jsonify({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}})
