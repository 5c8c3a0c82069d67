"""A terminal for documented commands: each runs through bash exactly as written.

Like a person typing them one after another, the commands of a block share
one shell state: what one `export`s or `cd`s into, the next one sees (the
state is saved after each command and handed to the next). A command that
serves for ever (the demo, gunicorn, `flask run`) is started in its own
process group, probed until it answers, handed to a check, then stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import http.client
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

# Shell bookkeeping that must not leak from one command into the next.
_VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})
# Documented servers listen on fixed ports (5000, 8000, 8080): one test at a time.
_PORTS_LOCK = Path(tempfile.gettempdir()) / "chatmem-documented-ports.lock"


@dataclass(frozen=True)
class Ran:
    command: str
    returncode: int
    stdout: str
    stderr: str

    def explain(self) -> str:
        return (
            f"$ {self.command}\n(exit {self.returncode})\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}"
        )


@dataclass
class Server:
    command: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class Shell:
    def __init__(self, cwd: Path, env: dict[str, str], scratch: Path) -> None:
        self.cwd = cwd
        self.env = dict(env)
        self.scratch = scratch
        self._count = 0

    def run(self, command: str, timeout: float = 180) -> Ran:
        """Run one command line; the shell's variables and folder carry over."""
        self._count += 1
        env_file = self.scratch / f"env-{self._count}"
        cwd_file = self.scratch / f"cwd-{self._count}"
        script = (
            f"{command}\n__status=$?\nenv -0 > '{env_file}'; pwd > '{cwd_file}'\nexit $__status\n"
        )
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if env_file.exists():
            pairs = (item.partition("=") for item in env_file.read_text().split("\0") if item)
            self.env = {k: v for k, _, v in pairs if k not in _VOLATILE}
            self.cwd = Path(cwd_file.read_text().strip())
        return Ran(command, done.returncode, done.stdout, done.stderr)

    @contextlib.contextmanager
    def serving(self, command: str, url: str, timeout: float = 60) -> Iterator[Server]:
        """Start a command that serves for ever, wait until `url` answers, stop it after."""
        host, port = _address(url)
        if _answers(host, port):
            raise AssertionError(
                f"{host}:{port} is already in use by another program; "
                f"the documented command `{command}` needs it"
            )
        self._count += 1
        log = self.scratch / f"server-{self._count}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", command],
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop takes it all
            )
        server = Server(command, url, process, log)
        try:
            _wait_until_it_answers(server, host, port, timeout)
            yield server
        finally:
            _stop(process)


@contextlib.contextmanager
def ports_lock() -> Iterator[None]:
    """Documented servers listen on fixed ports: hold this while any may run."""
    with _PORTS_LOCK.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _answers(host: str, port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((host, port)) == 0


def _wait_until_it_answers(server: Server, host: str, port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise AssertionError(
                f"`{server.command}` exited ({server.process.returncode}) before it served:\n"
                + server.output()[-4000:]
            )
        connection = http.client.HTTPConnection(host, port, timeout=5)
        try:
            connection.request("GET", "/")
            if connection.getresponse().status < 500:
                return
        except OSError:
            pass
        finally:
            connection.close()
        time.sleep(0.1)
    raise AssertionError(
        f"`{server.command}` did not answer on {server.url} within {timeout:.0f}s:\n"
        + server.output()[-4000:]
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    # Children of the bash wrapper (a venv's pip, a gunicorn worker) go with the group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
