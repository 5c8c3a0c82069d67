"""The README is the front door: its example runs and its settings table is complete."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chatmem import ChatmemError
from chatmem.config import SETTINGS
from chatmem.demo import SETTINGS as DEMO_SETTINGS

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_every_setting_is_documented() -> None:
    documented = set(re.findall(r"^\| `((?:CHATMEM|DEMO)_[A-Z_]+)` \|", README, re.MULTILINE))
    settings = set(SETTINGS) | set(DEMO_SETTINGS)
    assert settings - documented == set(), "settings missing from the README table"
    assert documented - settings == set(), "README documents settings that do not exist"


def test_the_plug_in_example_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    from tests.conftest import reset_demo_database

    block = README.split("<!-- example: plug-in", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    reset_demo_database(database_url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("CHATMEM_SERVER_NAME", "yourapp")
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, "README.md", "exec"), namespace)
    app = namespace["create_app"]()
    assert app.config["CHATMEM_SERVER_NAME"] == "yourapp", "CHATMEM_* come from the environment"
    memory = namespace["memory"]
    editor = namespace["USERS"]["editor"]

    with app.app_context():
        memory.set_setting("require_approval", False, actor=editor)
        proposed = memory.call_tool(
            "remember",
            {
                "type": "guardrail",
                "text": "Header is off limits",
                "target": "post_type:header_footer",
                "severity": "block",
            },
            user=editor,
        )
        assert "Guardrails: Header is off limits" in memory.system_context()
        assert memory.call_tool("update-post", {"post_id": 7, "title": "t"}, user=editor) == {
            "post_id": 7,
            "title": "t",
        }
        assert proposed["status"] == "publish"
        with pytest.raises(ChatmemError) as caught:
            memory.call_tool("update-post", {"post_id": "3", "title": "t"}, user=editor)
        assert caught.value.code == "blocked_by_memory"
        assert caught.value.details["guidance_id"] == proposed["id"]
        namespace["db"].engine.dispose()


@pytest.mark.db_free
def test_every_test_the_trust_model_names_exists() -> None:
    """A rule in the Trust model table is only as good as the test beside it."""
    section = README.split("## Trust model", 1)[1].split("\n## ", 1)[0]
    named = 0
    for row in re.findall(r"^\| .* \| (.*) \|$", section, re.MULTILINE)[2:]:
        module = None
        for ref in re.findall(r"`((?:tests/)?test_\w+\.py)?(?:::(\w+))?`", row):
            path, name = ref
            if path:
                module = path if path.startswith("tests/") else f"tests/{path}"
            assert module, f"{row!r}: a test name before any file"
            source = (Path(__file__).resolve().parent.parent / module).read_text()
            if name:
                assert re.search(rf"^(?:async )?def {name}\(", source, re.MULTILINE), name
                named += 1
    assert named >= 25
