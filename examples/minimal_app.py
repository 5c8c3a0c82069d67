"""The smallest use of chatmem: on SQLite, one host tool, a few calls, no web server.

From the checkout; it prints the project-memory block, a call a guardrail
refuses and what recall returns::

    .venv/bin/python examples/minimal_app.py
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field

from flask import Flask
from flask_sqlalchemy import SQLAlchemy

from chatmem import ChatmemError, ChatMemory


@dataclass
class User:
    id: int
    username: str
    capabilities: set[str] = field(default_factory=set)


def main() -> None:
    db = SQLAlchemy()
    app = Flask(__name__)
    app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{tempfile.mkdtemp()}/minimal.db"
    db.init_app(app)
    memory = ChatMemory(app, db=db)

    @memory.tool(
        name="update-post",
        description="Change a post's title.",
        input_schema={
            "type": "object",
            "properties": {"post_id": {"type": "integer"}, "title": {"type": "string"}},
            "required": ["post_id", "title"],
        },
    )
    def update_post(post_id: int, title: str) -> dict[str, object]:
        return {"post_id": post_id, "title": title}

    editor = User(2, "editor", {"edit_posts"})
    admin = User(1, "admin", {"edit_posts", "manage_options"})
    with app.app_context():
        memory.create_all()
        memory.set_setting("require_approval", False, actor=admin)
        memory.call_tool(
            "remember",
            {
                "type": "guardrail",
                "text": "Never touch the checkout page",
                "target": "post_id:42",
                "severity": "block",
            },
            user=editor,
        )
        print(memory.system_context(), end="\n\n")
        try:
            memory.call_tool("update-post", {"post_id": "042", "title": "x"}, user=editor)
        except ChatmemError as error:
            print("refused:", error.code, "-", error.message)
        print(json.dumps(memory.call_tool("recall", {}, user=editor), indent=2))


if __name__ == "__main__":
    main()
