"""Host hooks are set up before an app serves, as Flask's own setup methods are.

A hook registered after the first request would reach only the workers that
had not answered yet; chatmem refuses it the way Flask refuses a late route.
"""

from __future__ import annotations

import pytest
from flask import Flask
from flask_sqlalchemy import SQLAlchemy

from chatmem import ChatMemory

pytestmark = pytest.mark.db_free  # an in-memory SQLite of its own


def served_app() -> tuple[Flask, ChatMemory]:
    app = Flask(__name__)
    app.config.update(SQLALCHEMY_DATABASE_URI="sqlite://", SECRET_KEY="x", TESTING=True)
    db = SQLAlchemy()
    db.init_app(app)
    memory = ChatMemory(db=db)
    memory.post_types(lambda: ["post"])  # before serving: fine
    memory.init_app(app)
    return app, memory


def test_hooks_register_until_the_app_serves_and_not_after() -> None:
    app, memory = served_app()

    @memory.label_exists
    def exists(label: str) -> bool:  # still before the first request
        return True

    assert memory.label_exists_hook is exists
    app.test_client().get("/chatmem/memory")  # any request ends the setup

    with pytest.raises(AssertionError, match=r"memory\.post_types was called after"):
        memory.post_types(lambda: ["page"])
    with pytest.raises(AssertionError, match=r"memory\.tool was called after"):
        memory.tool(name="late", description="x", input_schema={"type": "object"})
    assert memory.post_types_hook is not None and list(memory.post_types_hook()) == ["post"]
    assert "late" not in [tool.name for tool in memory.registry.tools()]


def test_an_app_that_has_not_served_does_not_close_another_objects_setup() -> None:
    served, _ = served_app()
    served.test_client().get("/chatmem/memory")
    _, fresh = served_app()
    fresh.capability_checker(lambda user, capability: True)  # its own app has not served
