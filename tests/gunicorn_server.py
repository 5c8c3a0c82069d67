"""Run the WSGI test host under a real gunicorn, and talk to its workers.

The listening socket is made here (127.0.0.1, port 0) and handed to gunicorn
as `fd://N`, so there is no race for a free port. Every wait has a deadline
and the server is always stopped, whatever the test did.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 30.0
REQUEST_TIMEOUT = 20.0


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    log: Path

    def connection(self) -> Connection:
        return Connection(self.port)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def wait_for_workers(self, count: int, gone: int | None = None) -> list[int]:
        """Wait until the master has `count` workers (and `gone` is not one of them)."""
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            pids = _worker_pids(self.process.pid)
            if len(pids) == count and gone not in pids:
                return pids
            time.sleep(0.05)
        raise AssertionError(f"gunicorn did not get back to {count} workers:\n{self.log_text()}")

    def pinned(self, per_worker: int, workers: int = 2) -> dict[int, list[Connection]]:
        """Keep-alive connections, `per_worker` to each worker (by the pid it answers)."""
        pools: dict[int, list[Connection]] = {}
        spare: list[Connection] = []
        deadline = time.monotonic() + START_TIMEOUT
        while (
            len(pools) < workers or any(len(p) < per_worker for p in pools.values())
        ) and time.monotonic() < deadline:
            conn = self.connection()
            pid = conn.request("GET", "/t/pid")[1]["pid"]
            pool = pools.setdefault(pid, [])
            # A surplus connection stays open until the end, so the worker
            # that already has enough does not get the next one back at once.
            (pool if len(pool) < per_worker else spare).append(conn)
        for conn in spare:
            conn.close()
        assert len(pools) == workers and all(len(p) == per_worker for p in pools.values()), (
            f"could not reach every worker: { ({k: len(v) for k, v in pools.items()}) }"
        )
        return pools


class Connection:
    """One keep-alive HTTP/1.1 connection speaking JSON."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)

    def request(self, method: str, path: str, payload: Any = None) -> tuple[int, dict[str, Any]]:
        body = json.dumps(payload) if payload is not None else None
        headers = {"Content-Type": "application/json"} if body is not None else {}
        self.http.request(method, path, body=body, headers=headers)
        response = self.http.getresponse()
        raw = response.read()
        try:
            data = json.loads(raw)
        except ValueError:
            data = {"raw": raw[:500].decode(errors="replace")}
        return response.status, data

    def close(self) -> None:
        self.http.close()


@contextmanager
def gunicorn(
    database_url: str,
    tmp_path: Path,
    *,
    workers: int = 2,
    env: dict[str, str] | None = None,
    app_module: str = "tests.wsgi_host:app",
    options: tuple[str, ...] = (),
    probe: bool = True,
) -> Iterator[Server]:
    """gunicorn serving `app_module`, with `options` added to its command line.

    Ready when it has its workers and, with `probe`, one has answered
    `GET /t/pid`; without it no request is sent (a worker's first request
    starts things a test may want started otherwise).
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    log = tmp_path / "gunicorn.log"
    command = [
        sys.executable, "-m", "gunicorn",
        "--bind", f"fd://{listener.fileno()}",
        "--workers", str(workers),
        "--worker-class", "gthread", "--threads", "4",
        "--keep-alive", "30", "--timeout", "60", "--graceful-timeout", "3",
        "--chdir", str(ROOT), "--no-control-socket",
        *options,
        app_module,
    ]  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            pass_fds=[listener.fileno()],
            env={**os.environ, "CHATMEM_WSGI_DATABASE_URL": database_url, **(env or {})},
            cwd=ROOT,
        )
    listener.close()
    server = Server(port=port, process=process, log=log)
    try:
        _wait_ready(server, workers, probe)
        yield server
    finally:
        _stop(process)


def _wait_ready(server: Server, workers: int, probe: bool) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(f"gunicorn exited early:\n{server.log_text()}")
        if not probe:
            if len(_worker_pids(server.process.pid)) >= workers:
                return
            time.sleep(0.1)
            continue
        try:
            conn = server.connection()
            status, _data = conn.request("GET", "/t/pid")
            conn.close()
            if status in (200, 404) and len(_worker_pids(server.process.pid)) >= workers:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"gunicorn did not start in {START_TIMEOUT}s:\n{server.log_text()}")


def _worker_pids(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
