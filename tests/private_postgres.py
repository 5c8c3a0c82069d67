"""A PostgreSQL cluster a test owns: made with initdb in a temporary folder,
on a free port of 127.0.0.1, and stopped and started whenever the test says.

The shared test database cannot be stopped under the other tests' feet; this
one can. PostgreSQL refuses to run as root, so as root (CI) the server's
programs run as the `postgres` system user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _bin(program: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{program}"))
    if found:
        return found[-1]
    on_path = shutil.which(program)
    if on_path is None:
        raise RuntimeError(f"{program} not found: install PostgreSQL's server package")
    return on_path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Cluster:
    """One private cluster; `url(name)` for a database, `stop()` and `start()` at will."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.port = _free_port()
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(root, owner.pw_uid, owner.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]

    def _run(self, *command: str) -> None:
        subprocess.run([*self.as_user, *command], check=True, capture_output=True, timeout=120)

    def init(self) -> None:
        self._run(
            _bin("initdb"), "-D", str(self.data), "-U", "postgres", "-A", "trust", "--no-sync"
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.root / "server.log")
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-l", log, "-w", "-o", options, "start")

    def stop(self) -> None:
        """A fast shutdown: open connections are cut, as in a real outage."""
        self._run(_bin("pg_ctl"), "-D", str(self.data), "-w", "-m", "fast", "stop")

    def create_database(self, name: str) -> str:
        self._run(_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{name}"


@contextmanager
def private_cluster() -> Iterator[Cluster]:
    """A running cluster for the block; stopped and deleted afterwards."""
    root = Path(tempfile.mkdtemp(prefix="chatmem-pg-"))
    cluster = Cluster(root)
    try:
        cluster.init()
        cluster.start()
        yield cluster
    finally:
        subprocess.run(
            [*cluster.as_user, _bin("pg_ctl"), "-D", str(cluster.data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def advisory_waiters(app: Any) -> int:
    """How many sessions of `app`'s database wait for an advisory lock right now."""
    from sqlalchemy import text

    from tests.hostapp import work

    def count(memory: Any, db: Any) -> int:
        query = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        return int(db.session.scalar(text(query)))

    return int(work(app, count))


def until(condition: Callable[[], bool], wait: float = 30) -> None:
    """Poll `condition` until it holds; fail after `wait` seconds (a step of milliseconds)."""
    deadline = time.monotonic() + wait
    while not condition():
        assert time.monotonic() < deadline, "neither finished nor waiting"
        time.sleep(0.01)
