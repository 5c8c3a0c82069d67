"""WSGI module for bench/http_mcp.py: the test host plus one bare Flask JSON route."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import jsonify  # noqa: E402

from chatmem.settings import from_environ  # noqa: E402
from tests.hostapp import create_host_app  # noqa: E402

app = create_host_app(
    os.environ["CHATMEM_BENCH_DATABASE_URL"],
    seed=False,
    # The endpoint alone by default; `http_mcp.py --rate-limit N` (and
    # CHATMEM_RATELIMIT_STORAGE_URI) measure it with the limiter on.
    **{"CHATMEM_RATE_LIMIT_PER_MINUTE": 0, **from_environ(os.environ)},
)


@app.post("/bare")
def bare() -> Any:
    """The baseline: a Flask JSON route doing no work, under the same gunicorn."""
    return jsonify({"jsonrpc": "2.0", "id": 1, "result": {"ok": True}})
