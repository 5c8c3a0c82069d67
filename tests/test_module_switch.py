"""Memory off: no capture, no injection, no memory tools, no enforcement."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import ChatmemError
from chatmem.memory import guidance
from chatmem.memory.models import LedgerEntry, Session


def test_memory_off_turns_everything_off(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    guidance.admin_add(db.session(), {"type": "fact", "text": "Checkout is page 42"}, actor_id="1")
    guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "No header edits",
            "target": "post_id:3",
            "severity": "block",
        },
        actor_id="1",
    )
    assert memory.system_context() != ""
    memory.set_setting("memory_enabled", False, actor=admin)
    sessions_before = db.session.query(Session).count()

    assert memory.system_context() == ""  # injection
    for name, args in [
        ("recall", {}),
        ("remember", {"type": "fact", "text": "x"}),
        ("save-session-summary", {"summary": "x"}),
    ]:
        with pytest.raises(ChatmemError) as caught:
            memory.call_tool(name, args, user=editor)
        assert (caught.value.code, caught.value.message) == (
            "memory_disabled",
            "Project memory is switched off on this site.",
        )  # the tools
    assert memory.call_tool(
        "update-post", {"post_id": 3, "title": "ok"}, user=editor
    )  # enforcement
    assert memory.start_session(editor, "chat") == ""
    assert db.session.query(LedgerEntry).count() == 0  # capture
    assert db.session.query(Session).count() == sessions_before
    assert [t.name for t in memory.registry.tools(include_memory=False)][:1] == ["create-user"]

    memory.set_setting("memory_enabled", True, actor=admin)
    assert "Checkout is page 42" in memory.system_context()
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool("update-post", {"post_id": 3, "title": "no"}, user=editor)
    assert caught.value.code == "blocked_by_memory"


def test_settings_are_validated_and_audited(memory: Any, db: Any, admin: Any) -> None:
    with pytest.raises(ChatmemError) as caught:
        memory.set_setting("self_destruct", True, actor=admin)
    assert caught.value.code == "invalid_params"
    with pytest.raises(ChatmemError) as caught:
        memory.set_setting("auto_summarize", "yes", actor=admin)
    assert (caught.value.code, caught.value.details) == ("invalid_params", {"field": "value"})
    snap = memory.set_setting("auto_summarize", True, actor=admin)
    assert (snap.memory_enabled, snap.require_approval, snap.auto_summarize) == (True, True, True)
