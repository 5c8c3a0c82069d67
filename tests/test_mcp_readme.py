"""The docs' "Connect an MCP client" Python snippet works as printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chatmem.memory import guidance

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
