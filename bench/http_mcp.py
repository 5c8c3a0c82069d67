"""HTTP: MCP `tools/call recall` throughput under gunicorn vs a bare Flask
JSON route under the same gunicorn (goal >= 0.5x).

    python bench/http_mcp.py [--database-url postgresql+psycopg://...] [--sessions N]

Needs the MCP endpoint (`POST /chatmem/mcp`, SPEC §9a) and API tokens. Both
routes are hit by the same keep-alive client threads for the same time,
alternating, on a 2-worker gthread gunicorn; the figure is the ratio of
requests per second.

Two runs. The empty one (no guidance, no sessions) measures the protocol
alone. The seeded one holds 10,000 approved guidance entries and
`--sessions` session records (default 100,000), and recalls a rare topic (one
entry), a common one (5% of entries) and a very common one (50%): p50 and
p95 of one client's calls in a row (what an agent waits), the answer's size,
and the throughput ratio against the bare route. Every answer is checked
(guidance_total, page size).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from common import ROOT, arguments, hammer, line, ms, percentile, served_database
from sqlalchemy import insert, text

sys.path.insert(0, str(ROOT))
from chatmem.memory import switches  # noqa: E402
from chatmem.memory.models import Guidance, Session  # noqa: E402
from tests.gunicorn_server import Connection, gunicorn  # noqa: E402

THREADS = 4
SECONDS = 3.0
GUIDANCE = 10_000
SESSIONS = 100_000
LATENCY_CALLS = 200
# topic -> (what it stands for, entries that hold it, of GUIDANCE)
TOPICS = {
    "kubernetes": ("rare", 1),
    "invoice": ("common", GUIDANCE // 20),
    "checkout": ("very common", GUIDANCE // 2),
}
FILLER = [
    "header",
    "footer",
    "menu",
    "theme",
    "plugin",
    "cache",
    "deploy",
    "staging",
    "price",
    "product",
    "cart",
    "order",
]


def rate(port: int, path: str, payload: dict, headers: dict[str, str]) -> float:
    """Requests per second over THREADS keep-alive connections for SECONDS."""
    served = hammer(port, path, json.dumps(payload), headers, clients=THREADS, seconds=SECONDS)
    return served / SECONDS


def _words(i: int, count: int) -> str:
    return " ".join(FILLER[(i * 7 + k * 3) % len(FILLER)] for k in range(count))


def _holds(i: int) -> list[str]:
    """The topics entry i holds: every 2nd 'checkout', every 20th 'invoice', one 'kubernetes'."""
    return [t for t, (_kind, n) in TOPICS.items() if i % (GUIDANCE // n) == (3 if n == 1 else 0)]


def seeder(sessions: int) -> Any:
    def seed(db: Any) -> None:
        start = datetime(2025, 1, 1)
        rows = []
        for i in range(GUIDANCE):
            body = f"{_words(i, 12)} {' '.join(_holds(i))}".strip()
            rows.append(
                {
                    "type": ("guardrail", "fact", "convention", "instruction")[i % 4],
                    "title": _words(i + 1, 5),
                    "text": body,
                    "text_key": f"{i:064d}",
                    "status": "publish",
                    "enabled": True,
                    "origin": "agent",
                    "created_at": start,
                    "updated_at": start,
                    "approved_at": start + timedelta(seconds=i),
                    "version": 1,
                }
            )
        db.session.execute(insert(Guidance), rows)
        batch = []
        for i in range(sessions):
            at = start + timedelta(minutes=i)
            batch.append(
                {
                    "id": f"s{i:07d}",
                    "user_id": str(2 + i % 10),  # the editor ("2") wrote every tenth
                    "user_name": "editor" if i % 10 == 0 else f"user{2 + i % 10}",
                    "channel": "mcp",
                    "started_at": at,
                    "last_seen_at": at,
                    "ended_at": at,
                    "recorded_at": at,
                    "summary": f"{_words(i, 20)} {' '.join(_holds(i % GUIDANCE))}",
                    "summary_auto": False,
                    "digest": f"3 calls: 3 ok, 0 blocked, 0 failed.\n- update-post {_words(i, 8)}",
                    "change_count": 3,
                }
            )
            if len(batch) == 5000:
                db.session.execute(insert(Session), batch)
                batch = []
        if batch:
            db.session.execute(insert(Session), batch)
        switches.bump_revision(db.session())
        db.session.commit()
        if db.engine.dialect.name == "postgresql":
            db.session.execute(text("ANALYZE chatmem_session"))
            db.session.execute(text("ANALYZE chatmem_guidance"))
            db.session.commit()

    return seed


def mcp_headers(plain: str) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {plain}",
        "MCP-Protocol-Version": "2025-06-18",
    }


def recall_call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": arguments},
    }


def open_session(port: int, headers: dict[str, str]) -> None:
    """Initialize once; later calls carry the session id, as a real client's do."""
    conn = Connection(port)
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


def throughput(
    port: int, call: dict[str, Any], headers: dict[str, str], rounds: int
) -> tuple[float, float, float]:
    """(median ratio, median MCP req/s, median bare req/s), alternating round by round."""
    ratios, mcp_rates, bare_rates = [], [], []
    for _ in range(rounds):
        bare = rate(port, "/bare", call, {"Content-Type": "application/json"})
        mcp = rate(port, "/chatmem/mcp", call, headers)
        ratios.append(mcp / bare)
        mcp_rates.append(mcp)
        bare_rates.append(bare)
    return statistics.median(ratios), statistics.median(mcp_rates), statistics.median(bare_rates)


def latency(port: int, call: dict[str, Any], headers: dict[str, str]) -> tuple[list[float], int]:
    """Seconds per call for LATENCY_CALLS calls in a row on one connection; answer bytes."""
    conn = Connection(port)
    body = json.dumps(call)
    samples, size = [], 0
    for _ in range(LATENCY_CALLS):
        started = time.perf_counter()
        conn.http.request("POST", "/chatmem/mcp", body=body, headers=headers)
        response = conn.http.getresponse()
        raw = response.read()
        samples.append(time.perf_counter() - started)
        assert response.status == 200, raw[:300]
        size = len(raw)
    conn.close()
    return samples, size


def check(port: int, call: dict[str, Any], headers: dict[str, str], total: int) -> None:
    conn = Connection(port)
    conn.http.request("POST", "/chatmem/mcp", body=json.dumps(call), headers=headers)
    answer = json.loads(conn.http.getresponse().read())["result"]
    conn.close()
    assert not answer["isError"], answer
    found = answer["structuredContent"]
    assert found["guidance_total"] == total, (found["guidance_total"], total)
    assert len(found["guidance"]) == min(total, 50)
    assert (found["cursor"] is None) == (total <= 50)


def empty_run(args: Any) -> None:
    name, url, plain = served_database(args.database_url)
    headers = mcp_headers(plain)
    call = recall_call({"limit": 10})
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-http-"))
    with gunicorn(url, tmp, app_module="bench.http_host:app") as server:
        open_session(server.port, headers)
        ratio, mcp, bare = throughput(server.port, call, headers, args.rounds)
    line(
        f"http [{name}]",
        f"{ratio:.2f}x",
        f"MCP tools/call recall {mcp:.0f} req/s vs bare Flask JSON "
        f"route {bare:.0f} req/s; empty database; 2 gthread workers, {THREADS} "
        f"keep-alive clients, median of {args.rounds} x {SECONDS:.0f} s",
        ">= 0.5x",
    )


def seeded_run(args: Any) -> None:
    name, url, plain = served_database(args.database_url, seeder(args.sessions))
    headers = mcp_headers(plain)
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-http-"))
    size = f"{GUIDANCE:,} guidance, {args.sessions:,} sessions"
    with gunicorn(url, tmp, app_module="bench.http_host:app") as server:
        open_session(server.port, headers)
        for topic, (kind, total) in TOPICS.items():
            call = recall_call({"topic": topic, "limit": 10})
            check(server.port, call, headers, total)
            samples, answer = latency(server.port, call, headers)
            line(
                f"http recall {kind} topic={topic!r} [{name}]",
                f"p50 {ms(statistics.median(samples))}, p95 {ms(percentile(samples, 95))}",
                f"{total:,} of the entries match ({size}); answer {answer:,} bytes "
                "(50 entries at most); "
                f"one client, {LATENCY_CALLS} calls in a row over MCP",
            )
            ratio, mcp, bare = throughput(server.port, call, headers, args.rounds)
            line(
                f"http seeded {kind} [{name}]",
                f"{ratio:.2f}x",
                f"MCP recall topic={topic!r} {mcp:.0f} req/s vs bare route {bare:.0f} req/s; "
                f"{size}; {THREADS} keep-alive clients, median of {args.rounds} x "
                f"{SECONDS:.0f} s",
            )


def main() -> None:
    args = arguments(__doc__ or "", _flags)
    if args.rate_limit:
        # Read by the workers (bench/http_host.py), as any CHATMEM_* setting.
        os.environ["CHATMEM_RATE_LIMIT_PER_MINUTE"] = str(args.rate_limit)
    empty_run(args)
    if not args.empty_only:
        seeded_run(args)


def _flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sessions", type=int, default=SESSIONS, help="session records in the seeded run"
    )
    parser.add_argument(
        "--rate-limit",
        type=int,
        default=0,
        help="CHATMEM_RATE_LIMIT_PER_MINUTE for the workers (default 0: the limiter off); "
        "set it far above what the run makes to time the limiter's own cost",
    )
    parser.add_argument("--empty-only", action="store_true", help="skip the seeded run")


if __name__ == "__main__":
    main()
