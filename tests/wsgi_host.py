"""The test host app as a WSGI module, for gunicorn with several workers.

    CHATMEM_WSGI_DATABASE_URL=... gunicorn -w 2 tests.wsgi_host:app

The real REST and MCP routes are another part's job; the multi-worker tests
drive chatmem through a few host JSON routes that call the public API
(`memory.system_context()`, `memory.call_tool(...)`) and the guidance
lifecycle, exactly as a host's own admin views would. Each answer carries the
worker's pid so the tests can see which process served it.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from flask import Flask, jsonify, request
from sqlalchemy import event

from chatmem import ChatmemError
from chatmem.memory import guidance
from tests.hostapp import USERS, create_host_app

# What a host running SQLite with several workers sets (see the README):
# wait up to 15 s for the write lock, and take it when the transaction
# starts writing (BEGIN IMMEDIATE), so a read-then-write never fails with
# SQLITE_BUSY on a stale snapshot.
SQLITE_ENGINE_OPTIONS: dict[str, Any] = {
    "connect_args": {"timeout": 15, "isolation_level": "IMMEDIATE"}
}


def sqlite_wal(dbapi_connection: Any, _record: Any) -> None:
    """WAL lets readers run beside the one writer; it is a property of the file."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def build(database_url: str) -> Flask:
    # Extra app config for one test run, e.g. the provider and the job lease.
    options: dict[str, Any] = json.loads(os.environ.get("CHATMEM_WSGI_CONFIG", "{}"))
    if database_url.startswith("sqlite"):
        options["SQLALCHEMY_ENGINE_OPTIONS"] = SQLITE_ENGINE_OPTIONS
    app = create_host_app(database_url, seed=False, **options)
    host = app.extensions["test_host"]
    memory, db, Post = host["memory"], host["db"], host["Post"]
    if database_url.startswith("sqlite"):
        with app.app_context():
            event.listen(db.engine, "connect", sqlite_wal)
    signal_dir = os.environ.get("CHATMEM_WSGI_SIGNAL_DIR")

    @memory.tool(
        name="add-post",
        description="Create a post (hold=true keeps the transaction open: kill tests).",
        input_schema={
            "type": "object",
            "properties": {"title": {"type": "string"}, "hold": {"type": "boolean"}},
            "required": ["title"],
        },
    )
    def add_post(title: str, hold: bool = False) -> dict[str, Any]:
        post = Post(title=title, post_type="post")
        db.session.add(post)
        db.session.flush()  # the row is written, not committed
        if hold and signal_dir:
            Path(signal_dir, f"holding-{os.getpid()}").write_text(title)
            time.sleep(60)  # the test SIGKILLs this worker long before
        return {"id": post.id, "title": title}

    def answer(payload: dict[str, Any], status: int = 200) -> Any:
        return jsonify({"pid": os.getpid(), **payload}), status

    @app.errorhandler(ChatmemError)
    def chatmem_error(error: ChatmemError) -> Any:
        db.session.rollback()
        return answer({"error": error.to_dict()}, error.status)

    def body() -> dict[str, Any]:
        return request.get_json(silent=True) or {}

    @app.get("/t/pid")
    def pid() -> Any:
        return answer({})

    @app.get("/t/context")
    def context() -> Any:
        return answer({"context": memory.system_context()})

    @app.post("/t/call")
    def call() -> Any:
        data = body()
        user = USERS[data.get("user", "editor")]
        result = memory.call_tool(data["tool"], data.get("arguments") or {}, user=user)
        return answer({"result": result})

    @app.post("/t/guidance")
    def add() -> Any:
        entry = guidance.admin_add(db.session(), body(), actor_id="1")
        return answer({"id": entry.id, "version": entry.version})

    @app.post("/t/guidance/<int:entry_id>/<action>")
    def change(entry_id: int, action: str) -> Any:
        data = body()
        version = data.get("version")
        if action == "approve":
            entry = guidance.approve(db.session(), entry_id, actor_id="1", expected_version=version)
        elif action == "edit":
            entry = guidance.edit(
                db.session(),
                entry_id,
                {"text": data["text"]},
                actor_id="1",
                expected_version=version,
            )
        elif action == "enabled":
            entry = guidance.set_enabled(
                db.session(),
                entry_id,
                bool(data["enabled"]),
                actor_id="1",
                expected_version=version,
            )
        else:
            return answer({"error": {"code": "not_found"}}, 404)
        return answer({"id": entry.id, "version": entry.version, "status": entry.status})

    @app.post("/t/sessions")
    def session_with_a_write() -> Any:
        """A conversation that made one change and was closed: a job is queued."""
        user = USERS["editor"]
        session_id = memory.start_session(user, "chat")
        memory.call_tool(
            "update-post", {"post_id": 7, "title": "Hi"}, user=user, session_id=session_id
        )
        memory.end_session(session_id, transcript="user: retitle post 7\nassistant: done")
        return answer({"session_id": session_id})

    @app.post("/t/jobs")
    def jobs() -> Any:
        stats = memory.run_due_jobs(limit=10)
        return answer({"claimed": stats.claimed, "stats": str(stats)})

    @app.post("/t/settings")
    def settings() -> Any:
        data = body()
        snapshot = memory.set_setting(data["name"], data["value"], actor=USERS["admin"])
        return answer({"revision": snapshot.revision})

    return app


app = build(os.environ.get("CHATMEM_WSGI_DATABASE_URL", "sqlite:///chatmem-wsgi.db"))
