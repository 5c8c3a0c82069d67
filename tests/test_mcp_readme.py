"""The MCP page's Python examples work as printed: connecting, and being told of a change."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from chatmem.auth import tokens
from chatmem.memory import guidance
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app
from tests.servers import serving

README = (Path(__file__).resolve().parent.parent / "docs" / "mcp-and-rest.md").read_text()

pytestmark = pytest.mark.slow


def test_the_mcp_client_example_connects(
    app: Any,
    live_server: str,
    make_token: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        guidance.admin_add(
            db.session(), {"type": "fact", "text": "Checkout is page 42"}, actor_id="1"
        )
    block = README.split("<!-- example: mcp-client", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.setenv("CHATMEM_URL", live_server)
    monkeypatch.setenv("CHATMEM_TOKEN", make_token("editor"))
    exec(compile(code, "docs/mcp-and-rest.md", "exec"), {"__name__": "readme_mcp_example"})
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "## Project memory"
    assert "'recall', 'remember', 'save-session-summary'" in "\n".join(printed)
    assert "Checkout is page 42" in printed[-1]


def test_the_listen_example_prints_the_block_a_curator_changed(
    database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Should the example never be told, its stream still ends after 20 s.
    app = create_host_app(
        database_url, CHATMEM_MCP_NOTIFY_SECONDS=0.1, CHATMEM_MCP_LISTEN_SECONDS=20
    )
    block = README.split("<!-- example: mcp-listen", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    try:
        with serving(app) as url:
            monkeypatch.setenv("CHATMEM_URL", url)
            with app.app_context():
                memory = app.extensions["test_host"]["memory"]
                monkeypatch.setenv("CHATMEM_TOKEN", tokens.issue(memory, USERS["editor"])[1])
            example = threading.Thread(
                target=exec,
                args=(compile(code, "docs/mcp-and-rest.md", "exec"), {}),
                daemon=True,
            )
            example.start()
            time.sleep(2)  # it is listening by then (if not, it misses the change and waits)
            with app.app_context():
                db = app.extensions["test_host"]["db"]
                guidance.admin_add(
                    db.session(), {"type": "fact", "text": "Checkout is page 44"}, actor_id="1"
                )
            example.join(timeout=30)
            assert not example.is_alive(), "the example was never told of the change"
    finally:
        dispose(app)
    printed = capsys.readouterr().out
    assert printed.startswith("## Project memory")
    assert "Checkout is page 44" in printed
