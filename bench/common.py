"""Shared bits of the benchmarks: a migrated host app, timing, ratio lines.

Absolute times on these shared machines are noise; every figure is a ratio
against a baseline measured in the same process, interleaved with the
measured call round by round so drift hits both sides alike.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from flask import Flask  # noqa: E402

from tests.dbtools import drop_chatmem  # noqa: E402
from tests.gunicorn_server import Connection  # noqa: E402
from tests.hostapp import USERS, create_host_app  # noqa: E402


def arguments(
    description: str, extra: Callable[[argparse.ArgumentParser], None] | None = None
) -> argparse.Namespace:
    """The shared flags, plus any a benchmark adds with `extra(parser)`."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument(
        "--database-url",
        help="a PostgreSQL URL to run on (its chatmem tables are dropped); default: a SQLite file",
    )
    parser.add_argument("--rounds", type=int, default=7, help="repeated runs; the median is kept")
    return parser.parse_args()


def migrated_app(database_url: str | None) -> Flask:
    """The test host on a fresh chatmem schema built by the migrations."""
    url = database_url or f"sqlite:///{tempfile.mkdtemp(prefix='chatmem-bench-')}/bench.db"
    app = create_host_app(url, seed=False)
    with app.app_context():
        host = app.extensions["test_host"]
        drop_chatmem(host["db"].engine)
        host["db"].drop_all()
        host["db"].create_all()
        host["memory"].upgrade_db()
    return app


def served_database(
    database_url: str | None, prepare: Callable[[Any], None] | None = None
) -> tuple[str, str, str]:
    """Migrate a fresh database for gunicorn's workers and make the editor an API token.

    `prepare(db)`, if given, seeds it first. Returns (engine name, database
    URL, plain token); the workers also find the database through
    CHATMEM_BENCH_DATABASE_URL (see bench/http_host.py).
    """
    from chatmem.auth import tokens

    app = migrated_app(database_url)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        if prepare is not None:
            prepare(db)
        url = db.engine.url.render_as_string(hide_password=False)
        _token, plain = tokens.create(db.session(), user_id=str(USERS["editor"].id), name="bench")
        db.session.remove()
        db.engine.dispose()
    os.environ["CHATMEM_BENCH_DATABASE_URL"] = url
    return engine_name(app), url, plain


def timed(func: Callable[[], Any], n: int) -> list[float]:
    """Seconds per call for n calls."""
    out = []
    for _ in range(n):
        start = time.perf_counter()
        func()
        out.append(time.perf_counter() - start)
    return out


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def compare(
    measured: Callable[[], Any], baseline: Callable[[], Any], *, rounds: int, per_round: int
) -> tuple[float, float, float]:
    """(median ratio over rounds, median measured s, median baseline s)."""
    ratios, ms, bs = [], [], []
    for _ in range(rounds):
        m_times, b_times = [], []
        for _ in range(per_round):  # alternate call by call: drift hits both alike
            b_times += timed(baseline, 1)
            m_times += timed(measured, 1)
        b, m = statistics.median(b_times), statistics.median(m_times)
        ratios.append(m / b)
        ms.append(m)
        bs.append(b)
    return statistics.median(ratios), statistics.median(ms), statistics.median(bs)


def engine_name(app: Flask) -> str:
    with app.app_context():
        return str(app.extensions["test_host"]["db"].engine.dialect.name)


def line(figure: str, value: str, detail: str, goal: str = "") -> None:
    """One result line: `figure: value (detail) [goal ...]`."""
    print(f"{figure}: {value}  ({detail}){f'  goal {goal}' if goal else ''}", flush=True)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def hammer(
    port: int, path: str, body: str, headers: dict[str, str], *, clients: int, seconds: float
) -> int:
    """Requests served (each a 200) to `clients` keep-alive connections in `seconds`."""
    served = [0] * clients
    stop = time.monotonic() + seconds

    def run(i: int) -> None:
        conn = Connection(port)
        while time.monotonic() < stop:
            conn.http.request("POST", path, body=body, headers=headers)
            response = conn.http.getresponse()
            response.read()
            assert response.status == 200, response.status
            served[i] += 1
        conn.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=seconds + 30)
    return sum(served)


# -- processes a bench starts --------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"{process.args} exited; run it by hand to see why") from None
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"{process.args} did not start")


def rss_mib(pid: int) -> float:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1]) / 1024
    raise RuntimeError("no VmRSS")
