"""What one MCP `tools/call recall` costs above a bare request, in one process.

    python bench/mcp_call_cost.py [--database-url postgresql+psycopg://...]

Through Flask's test client (no server, no other process), with the same
set-up as `http_mcp.py` (handshake session, API token, rate limit off):
the SQL statements and commits one steady-state call makes, and the median
time of a call minus that of a request to an unknown route (404), the two
alternated call by call. The same for a stateless call (2026-07-28, no
session id: the token's open session, which a write call made first, is
the one it is grouped in). Then the database's round trip: a `SELECT 1` on
the driver's connection.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from common import arguments, engine_name, line, migrated_app
from sqlalchemy import event

from chatmem.http.mcp.rpc import META_CAPABILITIES, META_VERSION, MODERN_VERSIONS
from tests.hostapp import USERS, reconfigure

CALLS = 900
MODERN = MODERN_VERSIONS[0]


def main() -> None:
    args = arguments(__doc__ or "")
    from chatmem.auth import tokens

    app = migrated_app(args.database_url)
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)  # read at init_app: set it through it
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        _token, plain = tokens.create(db.session(), user_id=str(USERS["editor"].id), name="bench")
        db.session.remove()
        engine = db.engine
    client = app.test_client()
    headers = {"Authorization": f"Bearer {plain}", "MCP-Protocol-Version": "2025-06-18"}
    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}}
    response = client.post(
        "/chatmem/mcp",
        json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        headers=headers,
    )
    headers["Mcp-Session-Id"] = response.headers["Mcp-Session-Id"]
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"limit": 10}},
    }
    measure(app, engine, client, "mcp call cost", headers, call)
    stateless = {
        "Authorization": f"Bearer {plain}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "recall",
    }
    meta = {"_meta": {META_VERSION: MODERN, META_CAPABILITIES: {}}}
    write = {"name": "remember", "arguments": {"type": "fact", "text": "A bench fact"}, **meta}
    opened = client.post(
        "/chatmem/mcp",
        json={**call, "params": write},
        headers={**stateless, "Mcp-Name": "remember"},
    )
    assert opened.json["result"]["isError"] is False, opened.json  # the token's session
    read = {**call, "params": {**call["params"], **meta}}
    measure(app, engine, client, "mcp stateless call cost", stateless, read)
    round_trip(engine)


def measure(
    app: Any, engine: Any, client: Any, name: str, headers: dict[str, str], call: dict[str, Any]
) -> None:
    """One call's statements and commits, then its median time above a 404's."""

    def post(path: str, sent: dict[str, str]) -> float:
        start = time.perf_counter()
        client.post(path, json=call, headers=sent)
        return time.perf_counter() - start

    for _ in range(20):
        post("/chatmem/mcp", headers)  # warm the caches and the statement cache
    seen: list[str] = []
    commits: list[int] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement.split()[0].upper())

    def commit(_conn: Any) -> None:
        commits.append(1)

    event.listen(engine, "before_cursor_execute", record)
    event.listen(engine, "commit", commit)
    post("/chatmem/mcp", headers)
    event.remove(engine, "before_cursor_execute", record)
    event.remove(engine, "commit", commit)
    mcp, bare = [], []
    for _ in range(CALLS):
        bare.append(post("/no-such-route", {}))
        mcp.append(post("/chatmem/mcp", headers))
    extra = statistics.median(mcp) - statistics.median(bare)
    line(
        f"{name} [{engine_name(app)}]",
        f"{extra * 1e6:.0f} µs",
        f"median tools/call recall {statistics.median(mcp) * 1e6:.0f} µs minus a 404 "
        f"{statistics.median(bare) * 1e6:.0f} µs, {CALLS} alternated calls; per call "
        f"{len(seen)} statements ({', '.join(seen)}), {len(commits)} commit(s)",
    )


def round_trip(engine: Any) -> None:
    """One `SELECT 1` on the driver's own connection: what each statement costs at least."""
    connection = engine.raw_connection()
    try:
        cursor = connection.cursor()
        times = []
        for _ in range(CALLS):
            start = time.perf_counter()
            cursor.execute("SELECT 1")
            cursor.fetchall()
            times.append(time.perf_counter() - start)
    finally:
        connection.close()
    line(
        f"round trip [{engine.dialect.name}]",
        f"{statistics.median(times) * 1e6:.0f} µs",
        f"median SELECT 1 on the DBAPI connection, {CALLS} calls"
        + ("; BEGIN and COMMIT are round trips too" if engine.dialect.name != "sqlite" else ""),
    )


if __name__ == "__main__":
    main()
