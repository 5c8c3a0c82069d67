"""Every process sees a guidance change on its very next block and check."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chatmem import BlockedByMemory
from chatmem.memory import guidance
from tests.hostapp import USERS

ROOT = Path(__file__).resolve().parent.parent


def test_a_second_worker_sees_approvals_and_switch_offs_at_once(
    app: Any, second_worker: Any
) -> None:
    worker_b = second_worker
    editor = USERS["editor"]

    def in_b(action: Any) -> Any:
        with worker_b.app_context():
            return action(worker_b.extensions["test_host"]["memory"])

    def b_update(memory: Any) -> str:
        try:
            memory.call_tool("update-post", {"post_id": 42, "title": "t"}, user=editor)
            return "ran"
        except BlockedByMemory:
            return "blocked"

    with app.app_context():
        db = app.extensions["test_host"]["db"]
        memory = app.extensions["test_host"]["memory"]
        fact = memory.call_tool(
            "remember", {"type": "fact", "text": "Checkout is page 42"}, user=editor
        )
        rule = memory.call_tool(
            "remember",
            {
                "type": "guardrail",
                "text": "Leave checkout alone",
                "target": "post_id:42",
                "severity": "block",
            },
            user=editor,
        )
        # Worker B warms its caches while nothing is approved.
        assert in_b(lambda m: m.system_context()) == ""
        assert in_b(b_update) == "ran"

        guidance.approve(db.session(), fact["id"], actor_id="1")
        assert "Checkout is page 42" in in_b(lambda m: m.system_context())
        guidance.approve(db.session(), rule["id"], actor_id="1")
        assert in_b(b_update) == "blocked"

        guidance.set_enabled(db.session(), fact["id"], False, actor_id="1")
        assert "Checkout is page 42" not in in_b(lambda m: m.system_context())
        guidance.set_enabled(db.session(), rule["id"], False, actor_id="1")
        assert in_b(b_update) == "ran"

        memory.set_setting("memory_enabled", False, actor=USERS["admin"])
        guidance.set_enabled(db.session(), fact["id"], True, actor_id="1")
        assert in_b(lambda m: m.system_context()) == ""
        memory.set_setting("memory_enabled", True, actor=USERS["admin"])
        assert "Checkout is page 42" in in_b(lambda m: m.system_context())


SCRIPT = """
import json, sys
from tests.hostapp import USERS, create_host_app
from chatmem import ChatmemError
app = create_host_app(sys.argv[1], seed=False)
with app.app_context():
    memory = app.extensions["test_host"]["memory"]
    try:
        memory.call_tool("update-post", {"post_id": "042", "title": "x"}, user=USERS["editor"])
        outcome = "ran"
    except ChatmemError as error:
        outcome = error.code
    print(json.dumps({"block": memory.system_context(), "update": outcome}))
"""


def run_other_process(database_url: str) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, database_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_another_process_sees_the_change(memory: Any, db: Any, database_url: str) -> None:
    assert run_other_process(database_url) == {"block": "", "update": "ran"}
    guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "Hands off checkout",
            "target": "post_id:42",
            "severity": "block",
        },
        actor_id="1",
    )
    seen = run_other_process(database_url)
    assert seen["update"] == "blocked_by_memory"
    assert "Guardrails: Hands off checkout" in seen["block"]


def test_a_request_reads_the_state_once_and_again_after_its_own_change(
    app: Any, memory: Any, db: Any
) -> None:
    from sqlalchemy import update

    from chatmem.memory import switches
    from chatmem.memory.models import State

    with app.test_request_context():
        first = memory.snapshot()
        # Another worker's change lands mid-request: this request keeps the
        # state it started with, as every check in it must agree.
        with db.engine.begin() as other_worker:
            other_worker.execute(
                update(State).values(auto_summarize=True, revision=State.revision + 1)
            )
        assert memory.snapshot() == first
        # Its own change is seen at once.
        switches.set_setting(db.session(), "memory_enabled", False, actor_id="1")
        assert memory.snapshot().memory_enabled is False
        assert memory.snapshot().auto_summarize is True
    with app.app_context():
        # Outside a request every call reads afresh.
        switches.set_setting(db.session(), "memory_enabled", True, actor_id="1")
        assert memory.snapshot().memory_enabled is True
    with app.test_request_context():
        assert memory.snapshot().memory_enabled is True, "each request reads its own"
