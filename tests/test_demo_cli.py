"""`chatmem-demo --port P` on a fresh install: starts, creates and seeds its
SQLite file and secret key in the instance folder, serves the login page."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def demo_command() -> list[str]:
    """The installed console script next to this Python; else the same entry point.

    CI installs the package (`pip install -e '.[test]'`), so the script is there;
    a shared interpreter without chatmem installed runs `main()` directly.
    """
    script = Path(sys.executable).with_name("chatmem-demo")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from chatmem.demo.cli import main; main()"]


@contextmanager
def running_demo(tmp_path: Path, *flags: str) -> Iterator[tuple[int, list[str]]]:
    """`chatmem-demo --port P ...` serving its login page; after the block, its output."""
    port = free_port()
    instance = tmp_path / "instance"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [*demo_command(), "--port", str(port), "--instance-path", str(instance), *flags],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output: list[str] = []
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
        yield port, output
    finally:
        process.terminate()
        try:
            output.append(process.communicate(timeout=10)[0].decode())
        except subprocess.TimeoutExpired:
            process.kill()
            output.append(process.communicate()[0].decode())


@pytest.mark.db_free  # the demo process on its own SQLite file
@pytest.mark.slow
def test_chatmem_demo_serves_the_login_page_on_a_fresh_install(tmp_path: Path) -> None:
    instance = tmp_path / "instance"
    with running_demo(tmp_path) as (port, output):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as r:
            page = r.read().decode()
            # A production server by default, not Werkzeug's development one.
            assert r.headers["Server"] == "waitress"
        assert "<h1>Log in</h1>" in page and 'name="csrf_token"' in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/chat", timeout=2) as r:
            assert r.url.endswith("/login?next=/chat"), "the chat needs a login"
        assert (instance / "chatmem-demo.db").stat().st_size > 0
        assert len((instance / "secret_key").read_text()) == 64
        assert (instance / "secret_key").stat().st_mode & 0o077 == 0, "the key is private"
    [said] = output
    assert "log in as admin/admin" in said
    assert "server: waitress, 8 threads" in said
    assert "alembic.runtime.plugins" not in said, "no plugin chatter at start-up"
    assert "Running upgrade" in said, "alembic's own messages still show"


@pytest.mark.db_free  # the demo process on its own SQLite file
@pytest.mark.slow
def test_a_slow_client_does_not_stall_the_next_request(tmp_path: Path) -> None:
    """A client that never finishes its request does not stall the next one."""
    with running_demo(tmp_path, "--threads", "2") as (port, output):
        slow = socket.create_connection(("127.0.0.1", port))
        try:
            slow.sendall(b"GET /login HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
            started = time.monotonic()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=5) as r:
                assert r.status == 200
            assert time.monotonic() - started < 3
        finally:
            slow.close()
    assert "server: waitress, 2 threads" in output[0]


@pytest.mark.db_free  # the demo process on its own SQLite file
@pytest.mark.slow
def test_debug_serves_with_the_development_server(tmp_path: Path) -> None:
    with running_demo(tmp_path, "--debug") as (port, output):
        response = urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2)
        with response:
            assert response.headers["Server"].startswith("Werkzeug/")
    assert "server: Werkzeug development server (--debug)" in output[0]
    assert '"GET /login HTTP/1.1" 200' in output[0], "it logs every request"


@pytest.mark.db_free  # the demo process on its own SQLite file
@pytest.mark.parametrize("threads", ["0", "-1", "many", "257"])
def test_a_bad_thread_count_is_refused_before_anything_starts(threads: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*demo_command(), "--threads", threads, "--instance-path", str(tmp_path / "i")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 2
    assert f"--threads: must be a whole number from 1 to 256, not '{threads}'" in done.stderr
    assert not (tmp_path / "i").exists()


@pytest.mark.db_free  # the demo process on its own SQLite file
def test_the_console_script_is_declared() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'chatmem-demo = "chatmem.demo.cli:main"' in pyproject


def two_taken_ports() -> tuple[socket.socket, socket.socket]:
    """Two listening sockets on neighbouring ports: the port asked for, and the next one."""
    for _ in range(50):
        first = socket.socket()
        first.bind(("127.0.0.1", 0))
        second = socket.socket()
        try:
            second.bind(("127.0.0.1", first.getsockname()[1] + 1))
        except OSError:
            first.close()
            second.close()
            continue
        first.listen()
        second.listen()
        return first, second
    raise AssertionError("no two neighbouring free ports")


@pytest.mark.db_free  # the demo process on its own SQLite file
def test_a_busy_port_stops_the_demo_before_it_says_open_and_names_port(tmp_path: Path) -> None:
    taken, neighbour = two_taken_ports()
    with taken, neighbour:
        port = taken.getsockname()[1]
        done = subprocess.run(
            [*demo_command(), "--port", str(port), "--instance-path", str(tmp_path / "i")],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 1
    assert "open http" not in done.stdout + done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    # The next port is taken too: the one suggested was checked.
    suggested = int(done.stderr.split("e.g. chatmem-demo --port ", 1)[1].split()[0])
    assert suggested > port + 1
    assert "(free just now)" in done.stderr
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", suggested))
    assert not (tmp_path / "i").exists(), "nothing was set up for a server that cannot start"


@pytest.mark.db_free  # the demo process on its own SQLite file
def test_a_bad_setting_stops_the_demo_with_a_message_not_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CHATMEM_PROVIDER": "gpt"}
    done = subprocess.run(
        [*demo_command(), "--port", str(free_port()), "--instance-path", str(tmp_path / "i")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "chatmem-demo: CHATMEM_PROVIDER must be one of openai, anthropic, none, not 'gpt'"
    )
    assert "Traceback" not in done.stderr
    flag = subprocess.run(
        [*demo_command(), "--provider", "gpt"], capture_output=True, text=True, timeout=60
    )
    assert flag.returncode == 2 and "invalid choice: 'gpt'" in flag.stderr


def test_tokens_for_demo_users_from_the_flask_cli(demo_app: Any) -> None:
    """`flask --app 'chatmem.demo:create_app()' chatmem token create editor` finds the user."""
    runner = demo_app.test_cli_runner()
    created = runner.invoke(args=["chatmem", "token", "create", "editor", "--name", "laptop"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("cm_")
    listed = runner.invoke(args=["chatmem", "token", "list", "editor"])
    assert listed.exit_code == 0 and "  editor  laptop  cm_" in listed.output
    missing = runner.invoke(args=["chatmem", "token", "create", "nobody"])
    assert missing.exit_code == 1 and "No user named 'nobody'." in missing.output
    answer = demo_app.test_client().get(
        "/chatmem/api/tools", headers={"Authorization": f"Bearer {token}"}
    )
    assert answer.status_code == 200
    names = {tool["name"] for tool in answer.get_json()["tools"]}
    assert "update-post" in names and "create-user" not in names, "the editor's tools"


def test_every_page_has_a_favicon(demo_app: Any) -> None:
    client = demo_app.test_client()
    with client.get("/favicon.ico") as icon:
        assert icon.status_code == 200 and icon.mimetype == "image/svg+xml"
        assert icon.get_data(as_text=True).startswith("<svg")
    page = client.get("/login").get_data(as_text=True)
    assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in page
