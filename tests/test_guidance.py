"""The approval gate, dedup, stale edits and the audit trail."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import Conflict, InvalidParams
from chatmem.memory import guidance


def test_proposals_wait_for_approval(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    result = memory.call_tool(
        "remember", {"type": "fact", "text": "Checkout is page 42"}, user=editor
    )
    assert result["status"] == "pending"
    assert memory.system_context() == ""
    assert memory.call_tool("recall", {}, user=editor)["guidance"] == []
    entry = guidance.approve(db.session(), result["id"], actor_id=str(admin.id))
    assert (entry.status, entry.approved_by) == ("publish", "1")
    assert "Checkout is page 42" in memory.system_context()
    [found] = memory.call_tool("recall", {}, user=editor)["guidance"]
    assert found["origin"] == "agent" and found["title"] == "Checkout is page 42"


def test_without_require_approval_proposals_publish_at_once(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    memory.set_setting("require_approval", False, actor=admin)
    result = memory.call_tool(
        "remember", {"type": "convention", "text": "Sentence case"}, user=editor
    )
    assert result["status"] == "publish"
    assert "Conventions: Sentence case" in memory.system_context()
    taken = memory.call_tool(
        "save-session-summary",
        {"summary": "s", "takeaways": [{"type": "fact", "text": "A takeaway"}]},
        user=editor,
    )
    assert taken["proposed"] == 1
    assert "A takeaway" in memory.system_context()


def test_identical_proposals_are_one_entry(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    first = memory.call_tool(
        "remember", {"type": "fact", "text": "Checkout is  page 42"}, user=editor
    )
    again = memory.call_tool(
        "remember", {"type": "fact", "text": "  checkout IS page\n42 "}, user=editor
    )
    assert again == first
    guidance.approve(db.session(), first["id"], actor_id="1")
    third = memory.call_tool(
        "remember", {"type": "fact", "text": "CHECKOUT is page 42"}, user=editor
    )
    assert third == {"id": first["id"], "status": "publish", "flags": []}
    guidance.trash(db.session(), first["id"], actor_id="1")
    fourth = memory.call_tool(
        "remember", {"type": "fact", "text": "checkout is page 42"}, user=editor
    )
    assert fourth["id"] != first["id"] and fourth["status"] == "pending"


def test_title_defaults_to_first_eight_words(memory: Any, db: Any, editor: Any) -> None:
    text = "one two three four five six seven eight nine ten"
    result = memory.call_tool("remember", {"type": "fact", "text": text}, user=editor)
    assert (
        guidance.get(db.session(), result["id"]).title == "one two three four five six seven eight"
    )


def test_stale_edit_is_refused_and_nothing_is_overwritten(db: Any, admin: Any) -> None:
    entry = guidance.admin_add(db.session(), {"type": "fact", "text": "original"}, actor_id="1")
    seen = entry.version
    guidance.edit(
        db.session(), entry.id, {"text": "first edit"}, actor_id="1", expected_version=seen
    )
    stale = f"Guidance #{entry.id} changed since you loaded it; reload and review it again."
    with pytest.raises(Conflict) as caught:
        guidance.edit(
            db.session(), entry.id, {"text": "second edit"}, actor_id="1", expected_version=seen
        )
    assert (caught.value.message, caught.value.details) == (
        stale,
        {"id": entry.id, "version": seen + 1},
    )
    with pytest.raises(Conflict) as caught:
        guidance.set_enabled(db.session(), entry.id, False, actor_id="1", expected_version=seen)
    assert caught.value.message == stale
    assert guidance.get(db.session(), entry.id).text == "first edit"


def test_concurrent_edit_loses_cleanly(app: Any, second_worker: Any) -> None:
    """Two workers read an entry at the same version; the second writer gets 409."""
    other = second_worker
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        eid = guidance.admin_add(db.session(), {"type": "fact", "text": "v1"}, actor_id="1").id
        mine = guidance.get(db.session(), eid)  # worker A is mid-request, holding version 1
        assert (mine.text, mine.version) == ("v1", 1)
        with other.app_context():
            other_db = other.extensions["test_host"]["db"]
            guidance.edit(other_db.session(), eid, {"text": "from worker B"}, actor_id="2")
        with pytest.raises(Conflict) as caught:
            guidance.edit(db.session(), eid, {"text": "from worker A"}, actor_id="1")
        assert caught.value.message == (
            f"Guidance #{eid} was changed by someone else at the same time; reload it."
        )
        db.session.expunge_all()
        assert guidance.get(db.session(), eid).text == "from worker B"


def test_lifecycle_transitions_and_audit_trail(memory: Any, db: Any, editor: Any) -> None:
    result = memory.call_tool("remember", {"type": "fact", "text": "x marks the spot"}, user=editor)
    eid = result["id"]
    entry = guidance.edit(
        db.session(), eid, {"text": "y marks the spot", "scope": "maps"}, actor_id="1"
    )
    assert entry.title == "y marks the spot" and entry.scope == "maps"
    guidance.approve(db.session(), eid, actor_id="1")
    with pytest.raises(Conflict) as caught:
        guidance.approve(db.session(), eid, actor_id="1")
    assert caught.value.message == f"Cannot approve guidance #{eid}: it is publish, not pending."
    with pytest.raises(Conflict) as caught:
        guidance.reject(db.session(), eid, actor_id="1")
    assert caught.value.message == f"Cannot reject guidance #{eid}: it is publish, not pending."
    guidance.set_enabled(db.session(), eid, False, actor_id="1")
    guidance.trash(db.session(), eid, actor_id="1")
    with pytest.raises(Conflict) as caught:
        guidance.edit(db.session(), eid, {"text": "z"}, actor_id="1")
    assert caught.value.message == "Restore this entry from the trash before editing it."
    restored = guidance.restore(db.session(), eid, actor_id="1")
    assert (restored.status, restored.enabled) == ("publish", False)
    actions = [(e.action, e.actor_id) for e in guidance.events(db.session(), eid)]
    assert actions == [
        ("propose", "2"),
        ("edit", "1"),
        ("approve", "1"),
        ("disable", "1"),
        ("trash", "1"),
        ("restore", "1"),
    ]
    assert guidance.events(db.session(), eid)[1].detail["text"] == [
        "x marks the spot",
        "y marks the spot",
    ]


def test_admin_add_is_published_by_admin_and_validated(db: Any) -> None:
    entry = guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": "never edit the logo",
            "target": "post_id:9",
            "severity": "block",
        },
        actor_id="1",
    )
    assert (entry.status, entry.origin, entry.approved_by) == ("publish", "admin", "1")
    for bad, field in [
        ({"type": "fact"}, "text"),
        ({"type": "gossip", "text": "x"}, "type"),
        ({"type": "fact", "text": "x", "severity": "fatal"}, "severity"),
        ({"type": "fact", "text": "x" * 1001}, "text"),
        ({"type": "fact", "text": "x", "colour": "red"}, "colour"),
    ]:
        with pytest.raises(InvalidParams) as caught:
            guidance.admin_add(db.session(), bad, actor_id="1")
        assert caught.value.details["field"] == field
    assert db.session.query(guidance.Guidance).count() == 1


def test_pending_count_is_the_badge_number(memory: Any, db: Any, editor: Any) -> None:
    assert memory.pending_count() == 0
    first = memory.call_tool("remember", {"type": "fact", "text": "one"}, user=editor)
    memory.call_tool("remember", {"type": "fact", "text": "two"}, user=editor)
    assert memory.pending_count() == 2
    guidance.approve(db.session(), first["id"], actor_id="1")
    assert memory.pending_count() == 1


def test_titles_follow_the_text_unless_an_admin_chose_one(db: Any) -> None:
    entry = guidance.admin_add(
        db.session(), {"type": "fact", "text": "checkout is page 42"}, actor_id="1"
    )
    entry = guidance.edit(
        db.session(), entry.id, {"text": "checkout moved to page 43"}, actor_id="1"
    )
    assert entry.title == "checkout moved to page 43"  # derived title follows
    entry = guidance.edit(db.session(), entry.id, {"title": "   "}, actor_id="1")
    assert entry.title == "checkout moved to page 43"  # blank never stores NULL
    entry = guidance.edit(db.session(), entry.id, {"title": "Checkout page"}, actor_id="1")
    entry = guidance.edit(db.session(), entry.id, {"text": "checkout is page 44"}, actor_id="1")
    assert entry.title == "Checkout page"  # a chosen title stays
    assert guidance.events(db.session(), entry.id)[-1].detail == {
        "text": ["checkout moved to page 43", "checkout is page 44"]
    }


def test_the_screen_and_the_tool_refuse_a_bad_field_in_the_same_words(
    memory: Any, db: Any, editor: Any
) -> None:
    # One schema (fields.FIELDS_SCHEMA) checks an agent's proposal and a
    # curator's entry: the same rule broken reads the same on both.
    for bad in [
        {"type": "gossip", "text": "x"},
        {"type": "fact", "text": "x", "severity": "fatal"},
        {"type": "fact", "text": "x" * 1001},
        {"type": "fact", "text": "x", "title": "t" * 201},
        {"type": "fact", "text": "x", "scope": "s" * 65},
        {"type": "fact", "text": "x", "target": "tool:" + "t" * 200},
    ]:
        with pytest.raises(InvalidParams) as by_curator:
            guidance.admin_add(db.session(), bad, actor_id="1")
        with pytest.raises(InvalidParams) as by_agent:
            memory.call_tool("remember", bad, user=editor)
        assert by_curator.value.message == by_agent.value.message
        assert by_curator.value.details == by_agent.value.details
    assert db.session.query(guidance.Guidance).count() == 0
