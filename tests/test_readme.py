"""The README is the front door: its example runs and its settings table is complete."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chatmem import ChatmemError
from chatmem.config import DEFAULTS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    documented = set(re.findall(r"^\| `(CHATMEM_[A-Z_]+)` \|", README, re.MULTILINE))
    assert set(DEFAULTS) - documented == set(), "settings missing from the README table"
    assert documented - set(DEFAULTS) == set(), "README documents settings that do not exist"


def test_the_plug_in_example_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    block = README.split("<!-- example: plug-in", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    app = namespace["create_app"]()
    assert app.config["SQLALCHEMY_DATABASE_URI"] == "sqlite:///chatmem-example.db"
    assert (Path(app.instance_path) / "chatmem-example.db").is_file()  # migrated there
    memory = namespace["memory"]

    class User:
        id = 5
        username = "writer"
        capabilities = {"edit_posts"}

    with app.app_context():
        memory.set_setting("require_approval", False, actor=User())
        proposed = memory.call_tool(
            "remember",
            {
                "type": "guardrail",
                "text": "Header is off limits",
                "target": "post_type:header_footer",
                "severity": "block",
            },
            user=User(),
        )
        assert "Guardrails: Header is off limits" in memory.system_context()
        assert memory.call_tool("update-post", {"post_id": 7, "title": "t"}, user=User()) == {
            "post_id": 7,
            "title": "t",
        }
        assert proposed["status"] == "publish"
        with pytest.raises(ChatmemError) as caught:
            memory.call_tool("update-post", {"post_id": "3", "title": "t"}, user=User())
        assert caught.value.code == "blocked_by_memory"
        assert caught.value.details["guidance_id"] == proposed["id"]
        namespace["db"].engine.dispose()
