"""Enforcement of approved block guardrails (SPEC §6), through the dispatcher."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import BlockedByMemory
from chatmem.memory import guidance
from chatmem.memory.guardrails import canonical_id, parse_target, target_warning
from chatmem.memory.models import LedgerEntry


def guard(db: Any, admin: Any, target: str, severity: str = "block") -> Any:
    return guidance.admin_add(
        db,
        {"type": "guardrail", "text": f"guard {target}", "target": target, "severity": severity},
        actor_id=str(admin.id),
    )


def title_of(db: Any, app: Any, post_id: int) -> str:
    return db.session.get(app.extensions["test_host"]["Post"], post_id).title


def ledger(db: Any) -> list[tuple[str, str]]:
    return [(e.tool, e.outcome) for e in db.session.query(LedgerEntry).order_by(LedgerEntry.id)]


@pytest.mark.parametrize("spelling", ["42", 42, " 42", "042", "+42", 42.0])
def test_every_spelling_of_a_post_id_is_blocked(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any, spelling: Any
) -> None:
    entry = guard(db, admin, "post_id:42")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", {"post_id": spelling, "title": "x"}, user=editor)
    assert caught.value.code == "blocked_by_memory"
    assert caught.value.details["guidance_id"] == entry.id
    assert title_of(db, ctx, 42) == "Checkout"
    assert ledger(db) == [("update-post", "blocked")]


@pytest.mark.parametrize(
    "target",
    [
        "create-user",
        "tool:create-user",
        "chatmem/create-user",
        "tool:chatmem/create-user",
        "CREATE-USER",
        "Tool:Create-User",
        "  create-user  ",
    ],
)
def test_tool_targets_in_every_form(
    memory: Any, db: Any, admin: Any, editor: Any, target: str
) -> None:
    guard(db, admin, target)
    with pytest.raises(BlockedByMemory):
        memory.call_tool("create-user", {"username": "eve"}, user=editor)
    # The full name of the tool is refused the same way.
    with pytest.raises(BlockedByMemory):
        memory.call_tool("chatmem/create-user", {"username": "eve"}, user=editor)
    assert memory.call_tool("update-post", {"post_id": 7, "title": "ok"}, user=editor)


def test_id_key_and_other_posts(memory: Any, db: Any, ctx: Any, admin: Any, editor: Any) -> None:
    guard(db, admin, "id:42")
    with pytest.raises(BlockedByMemory):
        memory.call_tool("update-post", {"post_id": "42", "title": "x"}, user=editor)
    memory.call_tool("update-post", {"post_id": 7, "title": "fine"}, user=editor)
    assert title_of(db, ctx, 7) == "fine"


def test_post_type_resolves_through_the_host(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_type:Header_Footer")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", {"post_id": "003", "title": "hacked"}, user=editor)
    assert "guard post_type:Header_Footer" in caught.value.message
    assert title_of(db, ctx, 3) == "Site header"
    memory.call_tool("update-post", {"post_id": 42, "title": "New checkout"}, user=editor)
    assert title_of(db, ctx, 42) == "New checkout"
    assert ledger(db) == [("update-post", "blocked"), ("update-post", "ok")]


@pytest.mark.parametrize(
    "target", ["page:42", "post:42", "posttype:page", "post_id:", "other/create-user", "tool:"]
)
def test_unknown_or_empty_targets_never_block(
    memory: Any, db: Any, admin: Any, editor: Any, target: str
) -> None:
    guard(db, admin, target)
    memory.call_tool("update-post", {"post_id": 42, "title": "t"}, user=editor)
    memory.call_tool("create-user", {"username": "u"}, user=editor)
    assert target_warning(target, "chatmem", ["recall"]) == "this target never matches"


def test_inert_guardrails_do_not_block(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    aid = str(admin.id)
    proposed = memory.call_tool(
        "remember",
        {
            "type": "guardrail",
            "text": "no checkout edits",
            "target": "post_id:42",
            "severity": "block",
        },
        user=editor,
    )
    assert proposed["status"] == "pending"
    memory.call_tool("update-post", {"post_id": 42, "title": "a"}, user=editor)  # pending: inert
    guidance.approve(db, proposed["id"], actor_id=aid)
    with pytest.raises(BlockedByMemory):
        memory.call_tool("update-post", {"post_id": 42, "title": "b"}, user=editor)
    guidance.set_enabled(db, proposed["id"], False, actor_id=aid)
    memory.call_tool("update-post", {"post_id": 42, "title": "c"}, user=editor)  # switched off
    guidance.set_enabled(db, proposed["id"], True, actor_id=aid)
    guidance.trash(db, proposed["id"], actor_id=aid)
    memory.call_tool("update-post", {"post_id": 42, "title": "d"}, user=editor)  # trashed


def test_warn_severity_and_other_types_are_advisory(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_id:42", severity="warn")
    guidance.admin_add(
        db, {"type": "fact", "text": "f", "target": "post_id:42", "severity": "block"}, actor_id="1"
    )
    memory.call_tool("update-post", {"post_id": 42, "title": "allowed"}, user=editor)


def test_read_only_tools_are_never_blocked(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    guard(db, admin, "get-post")
    guard(db, admin, "post_id:42")
    assert memory.call_tool("get-post", {"post_id": 42}, user=editor)["id"] == 42
    assert target_warning("get-post", "chatmem", ["get-post", "recall"]) is not None
    assert ledger(db) == []


def test_guardrail_on_a_memory_tool_applies_too(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "remember")
    with pytest.raises(BlockedByMemory):
        memory.call_tool("remember", {"type": "fact", "text": "x"}, user=editor)


def test_parse_and_canonical_helpers() -> None:
    assert parse_target("post_id: 042", "chatmem").value == "42"
    assert parse_target("chatmem/Create-User", "chatmem").value == "create-user"
    assert parse_target("elsewhere/create-user", "chatmem").key is None
    assert canonical_id(True) is None
    assert canonical_id(" 0042 ") == "42"
    assert canonical_id("abc") == "abc"


def test_the_screen_is_told_about_targets_that_name_no_tool() -> None:
    tools = ["create-user", "update-post", "recall"]
    assert target_warning("create-users", "chatmem", ["recall"], tools) == (
        "this target never matches: no tool is named create-users"
    )
    assert target_warning("chatmem/Create-User", "chatmem", ["recall"], tools) is None
    assert target_warning("post_type:page", "chatmem", ["recall"], tools) is None
