"""How many MCP recalls a second one app host serves with p99 <= 100 ms.

    python bench/capacity.py [--database-url postgresql+psycopg://...] [--workers N]

A bounded, open-loop load test: gunicorn (`--workers` gthread workers of 4
threads, the limiter on at a budget no run reaches) serves the seeded data
of `http_mcp.py` (10,000 approved entries, `--sessions` session records).
Requests go out at a fixed rate, whatever the server's pace, from 32
keep-alive connections, alternating a rare and a common topic over MCP
`tools/call recall` in one session; each is timed from when it was due, so
a server that falls behind shows it in the latency instead of slowing the
load. The rate steps up (`STEPS`, `--seconds` each) until a step's p99 is
over 100 ms or a call fails; the last step that held is the host's capacity.
The load generator runs on the same machine and takes its share of the CPU,
as the peer server does in the other benchmarks.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from common import arguments, line, ms, percentile, served_database
from http_mcp import SESSIONS, TOPICS, check, mcp_headers, open_session, recall_call, seeder

from tests.gunicorn_server import Connection, gunicorn

STEPS = (25, 50, 100, 150, 200, 250, 300, 400, 500, 600)
CONNECTIONS = 32
P99_GOAL = 0.100
ASKED = ("kubernetes", "invoice")  # a rare and a common topic, alternating
SUCCEEDED = re.compile(rb'"isError":\s*false')


def load(
    port: int, rate: float, seconds: float, bodies: list[str], headers: dict[str, str]
) -> tuple[list[float], int]:
    """Latencies (from each request's due time) and failures, at `rate` requests a second."""
    total = int(rate * seconds)
    due_at = time.monotonic() + 0.2
    numbers = itertools.count()
    latencies: list[float] = []
    failed = [0]

    def connection() -> None:
        conn = Connection(port)
        while (i := next(numbers)) < total:
            due = due_at + i / rate
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            try:
                conn.http.request("POST", "/chatmem/mcp", body=bodies[i % 2], headers=headers)
                response = conn.http.getresponse()
                answer = response.read()
                ok = response.status == 200 and SUCCEEDED.search(answer) is not None
            except OSError:
                ok = False
                conn.close()
                conn = Connection(port)
            latencies.append(time.monotonic() - due)
            failed[0] += not ok
        conn.close()

    threads = [threading.Thread(target=connection) for _ in range(CONNECTIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 120)
    return latencies, failed[0]


def main() -> None:
    def flags(parser: Any) -> None:
        parser.add_argument("--sessions", type=int, default=SESSIONS, help="session records")
        parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
        parser.add_argument("--seconds", type=float, default=8.0, help="per step")

    args = arguments(__doc__ or "", flags)
    os.environ["CHATMEM_RATE_LIMIT_PER_MINUTE"] = "1000000000"  # on, never reached
    name, url, plain = served_database(args.database_url, seeder(args.sessions))
    headers = mcp_headers(plain)
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-capacity-"))
    held: tuple[int, list[float]] | None = None
    with gunicorn(url, tmp, workers=args.workers, app_module="bench.http_host:app") as server:
        open_session(server.port, headers)
        bodies = []
        for topic in ASKED:
            call = recall_call({"topic": topic, "limit": 10})
            check(server.port, call, headers, TOPICS[topic][1])
            bodies.append(json.dumps(call))
        load(server.port, 50, 2.0, bodies, headers)  # warm every worker's caches
        for rate in STEPS:
            latencies, failed = load(server.port, rate, args.seconds, bodies, headers)
            p50, p99 = statistics.median(latencies), percentile(latencies, 99)
            line(
                f"capacity step {rate} req/s [{name}]",
                f"p50 {ms(p50)}, p99 {ms(p99)}",
                f"{len(latencies)} calls, {failed} failed",
            )
            if p99 > P99_GOAL or failed:
                break
            held = (rate, latencies)
    if held is None:
        line(f"capacity [{name}]", "below the first step", f"{STEPS[0]} req/s failed the goal")
        return
    rate, latencies = held
    line(
        f"capacity [{name}]",
        f"{rate} req/s",
        f"MCP recall, rare and common topics alternating, p99 {ms(percentile(latencies, 99))} "
        f"<= 100 ms; {args.workers} gthread workers x 4 threads, {CONNECTIONS} connections, "
        f"open loop, {args.seconds:.0f} s a step; {args.sessions:,} session records, "
        "10,000 approved entries",
    )


if __name__ == "__main__":
    main()
