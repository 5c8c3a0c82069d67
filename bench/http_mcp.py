"""HTTP: MCP `tools/call recall` throughput under gunicorn vs a bare Flask
JSON route under the same gunicorn (goal >= 0.5x).

    python bench/http_mcp.py [--database-url postgresql+psycopg://...]

Needs the MCP endpoint (`POST /chatmem/mcp`, SPEC §9a) and API tokens. Both
routes are hit by the same keep-alive client threads for the same time,
alternating, on a 2-worker gthread gunicorn; the figure is the ratio of
requests per second.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from common import ROOT, arguments, hammer, line, served_database

sys.path.insert(0, str(ROOT))
from tests.gunicorn_server import Connection, gunicorn  # noqa: E402

THREADS = 4
SECONDS = 3.0


def rate(port: int, path: str, payload: dict, headers: dict[str, str]) -> float:
    """Requests per second over THREADS keep-alive connections for SECONDS."""
    served = hammer(port, path, json.dumps(payload), headers, clients=THREADS, seconds=SECONDS)
    return served / SECONDS


def main() -> None:
    args = arguments(__doc__ or "")
    name, url, plain = served_database(args.database_url)
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-http-"))
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {plain}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"limit": 10}},
    }
    with gunicorn(url, tmp, app_module="bench.http_host:app") as server:
        conn = Connection(server.port)
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        }
        conn.http.request("POST", "/chatmem/mcp", body=json.dumps(init), headers=headers)
        response = conn.http.getresponse()
        response.read()
        session = response.getheader("Mcp-Session-Id")
        if session:
            headers["Mcp-Session-Id"] = session
        conn.close()
        ratios, mcp_rates, bare_rates = [], [], []
        for _ in range(args.rounds):
            bare = rate(server.port, "/bare", call, {"Content-Type": "application/json"})
            mcp = rate(server.port, "/chatmem/mcp", call, headers)
            ratios.append(mcp / bare)
            mcp_rates.append(mcp)
            bare_rates.append(bare)
    line(
        f"http [{name}]",
        f"{statistics.median(ratios):.2f}x",
        f"MCP tools/call recall {statistics.median(mcp_rates):.0f} req/s vs bare Flask JSON "
        f"route {statistics.median(bare_rates):.0f} req/s; 2 gthread workers, {THREADS} "
        f"keep-alive clients, median of {args.rounds} x {SECONDS:.0f} s",
        ">= 0.5x",
    )


if __name__ == "__main__":
    main()
