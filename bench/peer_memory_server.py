"""chatmem `recall` against the MCP reference memory server's `search_nodes`,
side by side, same data, same client (goal: chatmem p50 >= 10x faster).

    python bench/peer_memory_server.py [--database-url postgresql+psycopg://...] [--calls N]

The peer is `@modelcontextprotocol/server-memory` (the memory server MCP
users install first), installed with npm into a temporary folder. Both are
called through the official MCP Python client: chatmem over Streamable HTTP
to `chatmem-demo` (waitress, its default server; rate limit off), the peer
over stdio.

The same data on both sides: 10,000 entries of ten short observations each
(chatmem: approved guidance, title "entry N", the observations as its
text; the peer: entity "entry N" with those ten observations), plus 100,000
session records for chatmem. A rare topic is in one entry, a common one in
5% of them and a very common one in half. Calls alternate chatmem, peer,
chatmem, ... and every answer is checked: chatmem's `guidance_total` and page
size, the peer's entity count.

Each chatmem figure comes with its floor: the same answers replayed with no
work by `bench/mcp_replay.py` (waitress, as chatmem-demo), called through the
same client in the same rounds. Peer p50 over floor p50 is the best ratio any
server could reach behind this client and HTTP hop. Between the two, the
host's Flask: the demo's own app, its hooks run, answering the same replayed
answers (`bench/flask_floor.py`), so chatmem over it is chatmem's own work.

Also prints the chatmem-demo process's RSS (one worker: waitress threads in
one process) before its first call and after, with the 10,000 approved
entries cached and searchable.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from common import ROOT, arguments, free_port, line, ms, percentile, rss_mib, wait_for_port
from sqlalchemy import insert, select, text

sys.path.insert(0, str(ROOT))
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from chatmem.auth import tokens  # noqa: E402
from chatmem.memory import switches  # noqa: E402
from chatmem.memory.models import Guidance, Session  # noqa: E402

PEER = "@modelcontextprotocol/server-memory"
ENTRIES = 10_000
OBSERVATIONS = 10
SESSIONS = 100_000
# topic -> (kind, entries that hold it)
TOPICS = {
    "kubernetes": ("rare", 1),
    "invoice": ("common", ENTRIES // 20),
    "checkout": ("very common", ENTRIES // 2),
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
    "banner",
    "gallery",
    "sidebar",
    "widget",
]
TYPES = ("guardrail", "fact", "convention", "instruction")
PAGE = 50  # recall's default guidance_limit
RECORDS = 10  # recall's default limit


def _words(i: int, count: int) -> str:
    return " ".join(FILLER[(i * 7 + k * 3) % len(FILLER)] for k in range(count))


def _holds(i: int) -> list[str]:
    """The topics entry i holds: every 2nd 'checkout', every 20th 'invoice', one 'kubernetes'."""
    return [t for t, (_kind, n) in TOPICS.items() if i % (ENTRIES // n) == (3 if n == 1 else 0)]


def observations(i: int) -> list[str]:
    said = [f"{_words(i + k, 4)}." for k in range(OBSERVATIONS)]
    said[-1] = f"{_words(i, 3)} {' '.join(_holds(i))}".strip() + "."
    return said


def peer_file(path: Path) -> None:
    """The peer's JSONL knowledge graph: one entity per entry."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(ENTRIES):
            entity = {
                "type": "entity",
                "name": f"entry {i}",
                "entityType": TYPES[i % 4],
                "observations": observations(i),
            }
            out.write(json.dumps(entity) + "\n")


def seed_chatmem(url: str, instance: Path) -> tuple[str, dict[str, int]]:
    """A fresh demo database with the entries and session records; an API token for the editor.

    Returns the token and, per topic, how many of the editor's records hold it.
    """
    os.environ["DEMO_INSTANCE_PATH"] = str(instance)
    from chatmem.demo import create_app
    from chatmem.demo.extensions import db
    from chatmem.demo.models import User
    from tests.dbtools import drop_chatmem

    if url.startswith("postgresql"):
        app = create_app({"SQLALCHEMY_DATABASE_URI": url, "DEMO_SEED": False})
        with app.app_context():
            drop_chatmem(db.engine)
            db.drop_all()
    app = create_app({"SQLALCHEMY_DATABASE_URI": url})
    with app.app_context():
        editor = str(db.session.scalar(select(User.id).where(User.username == "editor")))
        start = datetime(2025, 1, 1)
        rows = [
            {
                "type": TYPES[i % 4],
                "title": f"entry {i}",
                "text": "\n".join(observations(i)),
                "text_key": f"{i:064d}",
                "status": "publish",
                "enabled": True,
                "origin": "agent",
                "created_at": start,
                "updated_at": start,
                "approved_at": start + timedelta(seconds=i),
                "version": 1,
            }
            for i in range(ENTRIES)
        ]
        db.session.execute(insert(Guidance), rows)
        own = dict.fromkeys(TOPICS, 0)
        batch = []
        for i in range(SESSIONS):
            at = start + timedelta(minutes=i)
            mine = i % 10 == 0  # the editor wrote every tenth record
            held = _holds(i % ENTRIES)
            for topic in held:
                own[topic] += mine
            batch.append(
                {
                    "id": f"s{i:07d}",
                    "user_id": editor if mine else f"u{i % 10}",
                    "user_name": "editor" if mine else f"user{i % 10}",
                    "channel": "mcp",
                    "started_at": at,
                    "last_seen_at": at,
                    "ended_at": at,
                    "recorded_at": at,
                    "summary": f"{_words(i, 20)} {' '.join(held)}",
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
        _token, plain = tokens.create(db.session(), user_id=editor, name="peer bench")
        db.session.remove()
        db.engine.dispose()
    return plain, own


def serving(command: list[str], port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A server started quietly, returned once it listens on `port`."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wait_for_port(process, port)
    return process


def demo_env(instance: Path) -> dict[str, str]:
    """chatmem-demo's settings here: its instance folder, the rate limit off."""
    return {**os.environ, "DEMO_INSTANCE_PATH": str(instance), "CHATMEM_RATE_LIMIT_PER_MINUTE": "0"}


def start_demo(url: str, instance: Path, port: int) -> subprocess.Popen[bytes]:
    demo = Path(sys.executable).with_name("chatmem-demo")
    return serving(
        [str(demo), "--database-url", url, "--port", str(port)], port, demo_env(instance)
    )


def start_replay(upstream: str, port: int) -> subprocess.Popen[bytes]:
    """bench/mcp_replay.py in front of chatmem: its answers, with no work."""
    replay = Path(__file__).with_name("mcp_replay.py")
    command = [sys.executable, str(replay), "--upstream", upstream, "--port", str(port)]
    return serving(command, port, dict(os.environ))


def start_flask_floor(
    url: str, instance: Path, upstream: str, port: int
) -> subprocess.Popen[bytes]:
    """bench/flask_floor.py: the demo's Flask app, its hooks, chatmem's answers replayed."""
    floor = Path(__file__).with_name("flask_floor.py")
    command = [sys.executable, str(floor), "--upstream", upstream, "--port", str(port)]
    command += ["--database-url", url, "--instance-path", str(instance)]
    return serving(command, port, demo_env(instance))


def install_peer(folder: Path) -> Path:
    subprocess.run(
        ["npm", "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(folder), PEER],
        check=True,
    )
    return folder / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"


def check_chatmem(topic: str, answer: dict[str, Any], own: dict[str, int]) -> None:
    expected = TOPICS[topic][1]
    assert answer["guidance_total"] == expected, (topic, answer["guidance_total"])
    assert len(answer["guidance"]) == min(PAGE, expected), topic
    assert all(topic in g["text"] for g in answer["guidance"]), topic
    assert (answer["cursor"] is None) == (expected <= PAGE), topic
    assert len(answer["sessions"]) == min(RECORDS, own[topic]), topic


def check_peer(topic: str, answer: dict[str, Any]) -> None:
    expected = TOPICS[topic][1]
    entities = answer["entities"]
    assert len(entities) == expected, (topic, len(entities))
    assert all(any(topic in o for o in e["observations"]) for e in entities), topic


@dataclass
class Timings:
    chatmem: list[float] = field(default_factory=list)
    peer: list[float] = field(default_factory=list)
    floor: list[float] = field(default_factory=list)
    flask_floor: list[float] = field(default_factory=list)
    chatmem_bytes: int = 0
    peer_bytes: int = 0


async def compare(
    mcp_url: str,
    floor_url: str,
    flask_floor_url: str,
    token: str,
    peer: StdioServerParameters,
    own: dict[str, int],
    calls: int,
) -> dict[str, Timings]:
    results = {}
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=120) as http,
        httpx2.AsyncClient(headers=headers, timeout=120) as http_floor,
        httpx2.AsyncClient(headers=headers, timeout=120) as http_flask,
    ):
        transport = streamable_http_client(mcp_url, http_client=http)
        replayed = streamable_http_client(floor_url, http_client=http_floor)
        in_flask = streamable_http_client(flask_floor_url, http_client=http_flask)
        async with (
            Client(transport, read_timeout_seconds=120) as ours,
            Client(replayed, read_timeout_seconds=120) as floor,
            Client(in_flask, read_timeout_seconds=120) as flask_floor,
            Client(peer, read_timeout_seconds=120) as theirs,
        ):

            async def recall(client: Client, topic: str) -> tuple[float, int]:
                started = time.perf_counter()
                result = await client.call_tool("recall", {"topic": topic})
                took = time.perf_counter() - started
                assert not result.is_error, result
                check_chatmem(topic, result.structured_content, own)
                return took, len(json.dumps(result.structured_content))

            async def chatmem(topic: str) -> tuple[float, int]:
                return await recall(ours, topic)

            async def peer_call(topic: str) -> tuple[float, int]:
                started = time.perf_counter()
                result = await theirs.call_tool("search_nodes", {"query": topic})
                took = time.perf_counter() - started
                assert not result.is_error, result
                check_peer(topic, result.structured_content)
                return took, len(json.dumps(result.structured_content))

            for topic in TOPICS:  # warm-up: caches, connections, the JIT, the replay
                for _ in range(3):
                    await chatmem(topic)
                    await peer_call(topic)
                    await recall(floor, topic)
                    await recall(flask_floor, topic)
            for topic in TOPICS:
                timings = results[topic] = Timings()
                for _ in range(calls):
                    took, timings.chatmem_bytes = await chatmem(topic)
                    timings.chatmem.append(took)
                    took, timings.peer_bytes = await peer_call(topic)
                    timings.peer.append(took)
                    timings.floor.append((await recall(floor, topic))[0])
                    timings.flask_floor.append((await recall(flask_floor, topic))[0])
    return results


def main() -> None:
    args = arguments(
        __doc__ or "",
        lambda parser: parser.add_argument(
            "--calls", type=int, default=30, help="calls per topic and server (interleaved)"
        ),
    )
    if shutil.which("npm") is None:
        raise SystemExit("npm is needed to install the peer server")
    work = Path(tempfile.mkdtemp(prefix="chatmem-peer-"))
    try:
        url = args.database_url or f"sqlite:///{work}/bench.db"
        name = "postgresql" if url.startswith("postgresql") else "sqlite"
        peer_js = install_peer(work / "peer")
        graph = work / "memory.jsonl"
        peer_file(graph)
        token, own = seed_chatmem(url, work / "instance")
        port, floor_port, flask_port = free_port(), free_port(), free_port()
        mcp_url = f"http://127.0.0.1:{port}/chatmem/mcp"
        demo = start_demo(url, work / "instance", port)
        replay = start_replay(mcp_url, floor_port)
        in_flask = start_flask_floor(url, work / "instance", mcp_url, flask_port)
        try:
            idle = rss_mib(demo.pid)
            peer = StdioServerParameters(
                command="node", args=[str(peer_js)], env={"MEMORY_FILE_PATH": str(graph)}
            )
            floor_url = f"http://127.0.0.1:{floor_port}/chatmem/mcp"
            flask_url = f"http://127.0.0.1:{flask_port}/floor/mcp"
            results = asyncio.run(
                compare(mcp_url, floor_url, flask_url, token, peer, own, args.calls)
            )
            cached = rss_mib(demo.pid)
        finally:
            for process in (in_flask, replay, demo):
                process.terminate()
                process.wait(timeout=30)
        for topic, timings in results.items():
            kind, holding = TOPICS[topic]
            ours, theirs = statistics.median(timings.chatmem), statistics.median(timings.peer)
            floor = statistics.median(timings.floor)
            line(
                f"peer {kind} topic={topic!r} [{name}]",
                f"{theirs / ours:.1f}x  (chatmem p50 {ms(ours)}, "
                f"p95 {ms(percentile(timings.chatmem, 95))}; "
                f"peer p50 {ms(theirs)}, p95 {ms(percentile(timings.peer, 95))}; "
                f"floor p50 {ms(floor)}: at most {theirs / floor:.1f}x)",
                f"{holding:,} of {ENTRIES:,} entries hold it; answers: chatmem "
                f"{timings.chatmem_bytes:,} bytes (<= {PAGE} entries + total + cursor, "
                f"{RECORDS} of {SESSIONS:,} session records), peer {timings.peer_bytes:,} bytes "
                f"(every match); floor: chatmem's answers replayed with no work "
                f"(bench/mcp_replay.py); {args.calls} calls each, interleaved",
                ">= 10x",
            )
            in_flask = statistics.median(timings.flask_floor)
            line(
                f"floor {kind} topic={topic!r} [{name}]",
                f"{ours / floor:.2f}x  (chatmem p50 {ms(ours)} over floor p50 {ms(floor)}; "
                f"the host's Flask p50 {ms(in_flask)}: {in_flask / floor:.2f}x the floor, "
                f"chatmem {ours / in_flask:.2f}x the host's Flask)",
                "the host's Flask: the demo's app with its hooks answering the same replayed "
                "answers (bench/flask_floor.py)",
                "<= 1.5x",
            )
        line(
            f"chatmem-demo RSS [{name}]",
            f"{cached:.0f} MiB",
            f"one waitress process after the calls, {ENTRIES:,} approved entries cached and "
            f"indexed; {idle:.0f} MiB before its first request",
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
