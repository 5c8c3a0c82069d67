"""The README and the reference in docs/: their examples run, the settings table is complete,
and every test the trust model names exists."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Mapped, mapped_column

from chatmem import ChatmemError
from chatmem.demo import DEMO_SETTINGS
from chatmem.settings import SETTINGS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def test_every_setting_is_documented() -> None:
    table = (DOCS / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `((?:CHATMEM|DEMO)_[A-Z_]+)` \|", table, re.MULTILINE))
    settings = set(SETTINGS) | set(DEMO_SETTINGS)
    assert settings - documented == set(), "settings missing from the docs' table"
    assert documented - settings == set(), "the docs document settings that do not exist"


def test_the_plug_in_example_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str
) -> None:
    from tests.conftest import reset_demo_database

    block = (DOCS / "integrate.md").read_text().split("<!-- example: plug-in", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    reset_demo_database(database_url)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("CHATMEM_SERVER_NAME", "yourapp")
    namespace: dict[str, Any] = {"__name__": "readme_example"}
    exec(compile(code, "docs/integrate.md", "exec"), namespace)
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
    section = (DOCS / "trust-model.md").read_text().split("## Text rules", 1)[0]
    named = 0
    for row in re.findall(r"^\| .* \| (.*) \|$", section, re.MULTILINE)[2:]:
        module = None
        for ref in re.findall(r"`((?:tests/)?test_\w+\.py)?(?:::(\w+))?`", row):
            path, name = ref
            if path:
                module = path if path.startswith("tests/") else f"tests/{path}"
            assert module, f"{row!r}: a test name before any file"
            source = (ROOT / module).read_text()
            if name:
                assert re.search(rf"^(?:async )?def {name}\(", source, re.MULTILINE), name
                named += 1
    assert named >= 25


def test_the_readme_snippet_plugs_a_tool_in(database_url: str) -> None:
    """The README's short plug-in snippet, run as printed in a bare Flask app."""
    from flask import Flask
    from flask_sqlalchemy import SQLAlchemy

    code = README.split("## Plug it into your app", 1)[1].split("```python\n", 1)[1]
    code = code.split("```", 1)[0]
    from chatmem import Forbidden, NotFound

    app = Flask("snippet")
    app.config.update(SQLALCHEMY_DATABASE_URI=database_url, SECRET_KEY="test")
    db = SQLAlchemy(app)

    class Post(db.Model):  # type: ignore[name-defined]
        __tablename__ = "readme_post"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str]
        author_id: Mapped[int]

    namespace: dict[str, Any] = {"__name__": "readme_snippet", "app": app, "db": db, "Post": Post}
    exec(compile(code, "README.md", "exec"), namespace)
    memory = namespace["memory"]

    class Curator:
        capabilities = {"manage_options"}

    class Author:
        def __init__(self, id: int) -> None:
            self.id, self.capabilities = id, {"edit_posts"}

    with app.test_request_context():
        tool = memory.registry.find("update-post", memory.server_name)
        assert tool is not None and tool.capability == "edit_posts"
        assert tool.input_schema["required"] == ["post_id", "title"]
        assert memory.can(Curator(), "manage_options")
        assert not memory.can(Curator(), "edit_posts")
        from chatmem.memory.models import Base as ChatmemBase

        ChatmemBase.metadata.drop_all(db.engine)
        db.drop_all()
        db.create_all()
        memory.create_all()
        db.session.add(Post(id=7, title="Hello", author_id=1))
        db.session.commit()
        # The ownership check through `context`: the author may, another editor may not.
        with pytest.raises(Forbidden):
            memory.call_tool("update-post", {"post_id": 7, "title": "Hers"}, user=Author(2))
        with pytest.raises(NotFound):
            memory.call_tool("update-post", {"post_id": 8, "title": "x"}, user=Author(1))
        done = memory.call_tool("update-post", {"post_id": 7, "title": "Mine"}, user=Author(1))
        assert done == {"post_id": 7, "title": "Mine"}
        db.session.expire_all()
        assert db.session.get(Post, 7).title == "Mine"
        db.session.remove()
        db.engine.dispose()
