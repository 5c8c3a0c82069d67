"""CPU time per request, by process, for the bare route and MCP `tools/call recall`.

    python bench/http_cpu.py [--database-url postgresql+psycopg://...]

The `http_mcp.py` set-up; for each route in turn, 4 keep-alive clients for
4 s, then the CPU time (user + system, from /proc) the gunicorn workers, the
PostgreSQL backends and this client process spent, divided by the requests
served. On a machine whose cores are all busy, this is what sets the ratio.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from common import arguments, hammer, served_database

from tests.gunicorn_server import Connection, gunicorn

CLIENTS = 4
SECONDS = 4.0
TICK = os.sysconf("SC_CLK_TCK")


def cpu(pid: int) -> float:
    """User + system CPU seconds of one process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().startswith("postgres"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def load(port: int, path: str, headers: dict[str, str], body: str) -> int:
    """Requests served to CLIENTS keep-alive connections in SECONDS."""
    return hammer(port, path, body, headers, clients=CLIENTS, seconds=SECONDS)


def main() -> None:
    args = arguments(__doc__ or "")
    name, url, plain = served_database(args.database_url)
    mcp = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {plain}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"limit": 10}},
        }
    )
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-cpu-"))
    with gunicorn(url, tmp, app_module="bench.http_host:app") as server:
        conn = Connection(server.port)
        conn.http.request(
            "POST",
            "/chatmem/mcp",
            body=json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}),
            headers=mcp,
        )
        response = conn.http.getresponse()
        response.read()
        mcp["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id") or ""
        conn.close()
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        workers = [int(pid) for pid in children.read_text().split()]
        routes = [("/bare", {"Content-Type": "application/json"}), ("/chatmem/mcp", mcp)]
        for attempt, (path, headers) in enumerate(routes * 2):
            backends = postgres_pids()
            before = (
                sum(map(cpu, workers)),
                sum(map(cpu, backends)),
                time.process_time(),
            )
            n = load(server.port, path, headers, body)
            spent = (
                sum(map(cpu, workers)) - before[0],
                sum(map(cpu, backends)) - before[1],
                time.process_time() - before[2],
            )
            if attempt >= len(routes):  # the first pass only warms up
                per = [f"{s / n * 1e6:.0f} µs" for s in spent]
                print(
                    f"http cpu [{name}] {path}: {n / SECONDS:.0f} req/s; per request: "
                    f"workers {per[0]}, postgres {per[1]}, client {per[2]}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
