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


def test_the_console_script_is_declared() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'chatmem-demo = "chatmem.demo.cli:main"' in pyproject
