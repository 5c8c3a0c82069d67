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


@pytest.mark.slow
def test_chatmem_demo_serves_the_login_page_on_a_fresh_install(tmp_path: Path) -> None:
    port = free_port()
    instance = tmp_path / "instance"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "SECRET_KEY")}
    env["PYTHONPATH"] = str(ROOT)
    process = subprocess.Popen(
        [*demo_command(), "--port", str(port), "--instance-path", str(instance)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        page, deadline = "", time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=2) as r:
                    page = r.read().decode()
                    break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        assert process.poll() is None, process.stdout.read().decode() if process.stdout else ""
        assert "<h1>Log in</h1>" in page and 'name="csrf_token"' in page
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/chat", timeout=2) as r:
            assert r.url.endswith("/login?next=/chat"), "the chat needs a login"
        assert (instance / "chatmem-demo.db").stat().st_size > 0
        assert len((instance / "secret_key").read_text()) == 64
        assert (instance / "secret_key").stat().st_mode & 0o077 == 0, "the key is private"
    finally:
        process.terminate()
        try:
            output = process.communicate(timeout=10)[0].decode()
        except subprocess.TimeoutExpired:
            process.kill()
            output = process.communicate()[0].decode()
    assert "log in as admin/admin" in output
    assert "alembic.runtime.plugins" not in output, "no plugin chatter at start-up"
    assert "Running upgrade" in output, "alembic's own messages still show"


def test_the_console_script_is_declared() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'chatmem-demo = "chatmem.demo.cli:main"' in pyproject


def test_a_busy_port_stops_the_demo_before_it_says_open_and_names_port(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
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
    assert f"Choose another port with --port, e.g. chatmem-demo --port {port + 1}" in done.stderr
    assert not (tmp_path / "i").exists(), "nothing was set up for a server that cannot start"


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
