"""An entry's life step by step (`chatmem.memory.guidance`): what each step stores,
what it refuses and in which words, what it writes to the audit trail, whether it
commits, and what a curator's `recall` adds (each enforced guardrail's hits).

Runs on SQLite and on PostgreSQL (CHATMEM_TEST_DATABASE_URL).
"""

from __future__ import annotations

from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient

from chatmem import BlockedByMemory, Conflict, InvalidParams, NotFound
from chatmem.memory import guidance, transfer
from chatmem.memory.models import Guidance, GuidanceEvent, iso
from tests.screen_helpers import JSON, SCREEN, token
from tests.test_import_screening import document, row

ADMIN = "1"


def trail(db: Any, entry_id: int) -> list[tuple[str, str | None, Any]]:
    """The entry's audit trail as (action, actor, detail), oldest first."""
    return [(e.action, e.actor_id, e.detail) for e in guidance.events(db.session(), entry_id)]


def revision(memory: Any) -> int:
    return int(memory.snapshot().revision)


def add(db: Any, text: str, **fields: Any) -> Any:
    """An entry a curator wrote by hand: active at once."""
    return guidance.admin_add(
        db.session(), {"type": "fact", "text": text, **fields}, actor_id=ADMIN
    )


def remember(memory: Any, user: Any, text: str, **fields: Any) -> dict[str, Any]:
    return memory.call_tool("remember", {"type": "fact", "text": text, **fields}, user=user)


def stored(db: Any, entry_id: int) -> Any:
    """The entry as the database holds it now (the session's copy read again)."""
    entry = db.session.get(Guidance, entry_id)
    db.session.refresh(entry)
    return entry


def conflict(step: Any) -> dict[str, Any]:
    """What a refused step answers: its error as every channel sends it."""
    with pytest.raises(Conflict) as caught:
        step()
    return caught.value.to_dict()


# -- propose ----------------------------------------------------------------------


def test_a_proposal_keeps_its_fields_author_and_session(memory: Any, db: Any, editor: Any) -> None:
    session_id = memory.start_session(editor, "python")
    result = memory.call_tool(
        "remember",
        {
            "type": "guardrail",
            "text": "  Never edit the checkout page.  ",
            "title": "  Checkout freeze  ",
            "scope": "checkout",
            "target": "post_id:42",
            "severity": "warn",
        },
        user=editor,
        session_id=session_id,
    )
    entry = stored(db, result["id"])
    assert (entry.type, entry.text, entry.title) == (
        "guardrail",
        "Never edit the checkout page.",
        "Checkout freeze",
    )
    assert (entry.scope, entry.target, entry.severity) == ("checkout", "post_id:42", "warn")
    assert (entry.status, entry.enabled, entry.origin) == ("pending", True, "agent")
    assert (entry.session_id, entry.created_by) == (session_id, "2")
    assert (entry.approved_by, entry.approved_at) == (None, None)
    assert entry.updated_at == entry.created_at
    assert trail(db, entry.id) == [("propose", "2", {"status": "pending"})]


def test_without_require_approval_a_proposal_is_active_from_its_creation(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    memory.set_setting("require_approval", False, actor=admin)
    before = revision(memory)
    result = remember(memory, editor, "Prices include VAT.")
    assert result["status"] == "publish"
    assert revision(memory) == before + 1, "what is injected changed"
    entry = stored(db, result["id"])
    assert entry.approved_at == entry.created_at
    [found] = memory.call_tool("recall", {}, user=editor)["guidance"]
    assert found["approved_at"] == iso(entry.created_at)
    assert trail(db, entry.id) == [("propose", "2", {"status": "publish"})]


def test_a_flagged_proposal_waits_even_without_require_approval(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    first = remember(memory, editor, "Use Comic Sans for headings.")
    guidance.reject(db.session(), first["id"], actor_id=ADMIN)
    memory.set_setting("require_approval", False, actor=admin)
    before = revision(memory)
    again = remember(memory, editor, "use comic sans for headings.")
    assert again["id"] != first["id"]
    assert (again["status"], [f["code"] for f in again["flags"]]) == (
        "pending",
        ["rejected_before"],
    )
    assert revision(memory) == before, "nothing went live"
    assert stored(db, again["id"]).approved_at is None
    assert trail(db, again["id"]) == [
        ("propose", "2", {"status": "pending", "flags": ["rejected_before"]})
    ]


def test_a_takeaway_already_proposed_is_not_counted_again(memory: Any, editor: Any) -> None:
    remember(memory, editor, "Checkout is page 42.")
    taken = memory.call_tool(
        "save-session-summary",
        {
            "summary": "Looked at checkout.",
            "takeaways": [
                {"type": "fact", "text": "checkout is  page 42."},
                {"type": "fact", "text": "The cart is page 7."},
            ],
        },
        user=editor,
    )
    assert taken["proposed"] == 1
    assert memory.pending_count() == 2


def test_a_repeated_proposal_returns_the_oldest_equal_entry(
    memory: Any, db: Any, editor: Any
) -> None:
    """Two entries may hold the same text (curators add by hand without the check).

    SQLite returns equal keys in insertion order even unordered; PostgreSQL,
    unordered, returns the row it rewrote last first, so only there does this
    test tell an unordered lookup from the oldest-first one.
    """
    older = add(db, "Checkout is page 42.").id
    newer = add(db, "Checkout is page 42.").id
    # A new type rewrites the row and its index entries (no in-place update).
    guidance.edit(db.session(), older, {"type": "convention"}, actor_id=ADMIN)
    again = remember(memory, editor, "checkout IS page 42.")
    assert (again["id"], again["status"]) == (older, "publish")
    assert newer > older
    assert [a for a, _, _ in trail(db, older)] == ["admin_add", "edit"], "no second proposal"


# -- admin_add --------------------------------------------------------------------


def test_an_entry_added_by_hand_is_active_and_audited(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        before = revision(memory)
        memory.db.session.remove()
    response = client.post(
        f"{SCREEN}/guidance",
        data={
            "csrf_token": token(client),
            "type": "convention",
            "text": "  Headings use sentence case.  ",
            "title": "",
            "scope": " ",
        },
        headers=JSON,
    )
    assert response.status_code == 201, response.json
    shown = response.json["entry"]
    assert (shown["status"], shown["origin"], shown["enabled"]) == ("publish", "admin", True)
    assert (shown["text"], shown["title"], shown["scope"]) == (
        "Headings use sentence case.",
        "Headings use sentence case.",
        None,
    )
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        db = memory.db
        entry = stored(db, shown["id"])
        assert (entry.created_by, entry.approved_by) == (ADMIN, ADMIN)
        assert entry.approved_at == entry.created_at == entry.updated_at
        assert shown["approved_at"] == iso(entry.created_at)
        assert revision(memory) == before + 1
        assert trail(db, entry.id) == [("admin_add", ADMIN, None)]
        db.session.remove()


# -- approve ----------------------------------------------------------------------


def test_approving_records_who_and_when_and_commits(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    before = revision(memory)
    entry = guidance.approve(db.session(), eid, actor_id=ADMIN, expected_version=1)
    assert (entry.status, entry.enabled, entry.approved_by) == ("publish", True, ADMIN)
    assert entry.approved_at is not None and entry.approved_at >= entry.created_at
    assert entry.updated_at >= entry.approved_at
    db.session.rollback()
    assert stored(db, eid).status == "publish", "committed: a rollback keeps it"
    assert revision(memory) == before + 1
    assert trail(db, eid)[1:] == [("approve", ADMIN, None)]


def test_approving_despite_flags_audits_them_with_the_callers_additions(
    memory: Any, db: Any, editor: Any
) -> None:
    first, second = (remember(memory, editor, t)["id"] for t in ("One.", "Two."))
    guidance.approve(db.session(), first, actor_id=ADMIN, despite=("near_duplicate",))
    guidance.approve(
        db.session(), second, actor_id=ADMIN, despite=["retraction"], extra={"replaces": first}
    )
    assert trail(db, first)[-1] == (
        "approve",
        ADMIN,
        {"anyway": True, "flags": ["near_duplicate"]},
    )
    assert trail(db, second)[-1] == (
        "approve",
        ADMIN,
        {"anyway": True, "flags": ["retraction"], "replaces": first},
    )
    third = remember(memory, editor, "Three.")["id"]
    guidance.approve(db.session(), third, actor_id=ADMIN, extra={"replaces": second})
    assert trail(db, third)[-1] == ("approve", ADMIN, {"replaces": second})


def test_an_uncommitted_approval_is_undone_by_a_rollback(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    before = revision(memory)
    guidance.approve(db.session(), eid, actor_id=ADMIN, commit=False)
    db.session.rollback()
    assert stored(db, eid).status == "pending"
    assert revision(memory) == before
    assert [action for action, _, _ in trail(db, eid)] == ["propose"]


def test_only_a_pending_entry_is_approved(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    guidance.reject(db.session(), eid, actor_id=ADMIN)
    assert conflict(lambda: guidance.approve(db.session(), eid, actor_id=ADMIN)) == {
        "code": "conflict",
        "message": f"Cannot approve guidance #{eid}: it is rejected, not pending.",
        "id": eid,
        "status": "rejected",
    }


# -- reject -----------------------------------------------------------------------


def test_rejecting_keeps_the_reason_and_commits(memory: Any, db: Any, editor: Any) -> None:
    with_reason, without = (remember(memory, editor, t)["id"] for t in ("One.", "Two."))
    before = revision(memory)
    entry = guidance.reject(
        db.session(), with_reason, actor_id=ADMIN, expected_version=1, reason="  Wrong page.  "
    )
    assert entry.status == "rejected"
    guidance.reject(db.session(), without, actor_id=ADMIN, reason="   ")
    db.session.rollback()
    assert (stored(db, with_reason).status, stored(db, without).status) == ("rejected",) * 2
    assert revision(memory) == before + 2
    assert trail(db, with_reason)[-1] == ("reject", ADMIN, {"reason": "Wrong page."})
    assert trail(db, without)[-1] == ("reject", ADMIN, None)


def test_a_stale_or_second_rejection_is_refused(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    guidance.edit(db.session(), eid, {"scope": "shop"}, actor_id=ADMIN)
    stale = conflict(lambda: guidance.reject(db.session(), eid, actor_id=ADMIN, expected_version=1))
    assert stale["id"] == eid and stale["version"] == 2
    assert stored(db, eid).status == "pending"
    guidance.reject(db.session(), eid, actor_id=ADMIN, expected_version=2)
    assert conflict(lambda: guidance.reject(db.session(), eid, actor_id=ADMIN)) == {
        "code": "conflict",
        "message": f"Cannot reject guidance #{eid}: it is rejected, not pending.",
        "id": eid,
        "status": "rejected",
    }


def test_rejections_are_the_reject_event_of_each_entry_asked(
    memory: Any, db: Any, editor: Any
) -> None:
    one, two, kept = (remember(memory, editor, t)["id"] for t in ("One.", "Two.", "Three."))
    guidance.reject(db.session(), one, actor_id=ADMIN, reason="Not one.")
    guidance.reject(db.session(), two, actor_id="5")
    guidance.approve(db.session(), kept, actor_id=ADMIN)
    assert guidance.rejections(db.session(), []) == {}
    found = guidance.rejections(db.session(), iter([one, two, kept]))
    assert sorted(found) == [one, two]
    assert (found[one].action, found[one].actor_id, found[one].detail) == (
        "reject",
        ADMIN,
        {"reason": "Not one."},
    )
    assert (found[two].actor_id, found[two].detail) == ("5", None)
    assert set(guidance.rejections(db.session(), [two])) == {two}


def test_the_reason_of_an_event_is_its_text_only(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "One.")["id"]
    guidance.reject(db.session(), eid, actor_id=ADMIN, reason="Wrong page.")
    propose_event, reject_event = guidance.events(db.session(), eid)
    assert guidance.reason_of(reject_event) == "Wrong page."
    assert guidance.reason_of(propose_event) is None  # a detail without a reason
    assert guidance.reason_of(None) is None
    # An imported trail carries whatever detail the other site wrote.
    for odd in (None, [], "a reason", {"reason": ""}, {"reason": 7}, {"why": "x"}):
        assert guidance.reason_of(GuidanceEvent(action="reject", detail=odd)) is None, odd


# -- edit -------------------------------------------------------------------------


def test_an_edit_records_only_what_changed(db: Any) -> None:
    entry = add(db, "Checkout is page 42.", title="Checkout")
    guidance.edit(
        db.session(),
        entry.id,
        {"type": "fact", "title": "Checkout", "text": "Checkout is page 42.", "scope": "shop"},
        actor_id="5",
    )
    assert trail(db, entry.id)[-1] == ("edit", "5", {"scope": [None, "shop"]})
    guidance.edit(db.session(), entry.id, {"severity": "warn", "scope": "shop"}, actor_id=ADMIN)
    assert trail(db, entry.id)[-1] == ("edit", ADMIN, {"severity": [None, "warn"]})
    db.session.rollback()
    assert (stored(db, entry.id).scope, stored(db, entry.id).severity) == ("shop", "warn")


def test_a_derived_title_follows_the_text_and_the_diff_shows_both(db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    # The edit form sends the title it showed: still the derived one.
    guidance.edit(
        db.session(),
        entry.id,
        {"title": "Checkout is page 42.", "text": "The checkout moved to page 7 in May."},
        actor_id=ADMIN,
    )
    assert stored(db, entry.id).title == "The checkout moved to page 7 in May."
    assert trail(db, entry.id)[-1][2] == {
        "text": ["Checkout is page 42.", "The checkout moved to page 7 in May."],
        "title": ["Checkout is page 42.", "The checkout moved to page 7 in May."],
    }


def test_a_blank_title_goes_back_to_the_derived_one(db: Any) -> None:
    entry = add(db, "Checkout is page 42 of the shop since May.", title="Checkout")
    guidance.edit(db.session(), entry.id, {"title": "  "}, actor_id=ADMIN)
    assert stored(db, entry.id).title == "Checkout is page 42 of the shop since"
    assert trail(db, entry.id)[-1][2] == {
        "title": ["Checkout", "Checkout is page 42 of the shop since"]
    }
    guidance.edit(db.session(), entry.id, {"text": "Cart is page 7."}, actor_id=ADMIN)
    assert stored(db, entry.id).title == "Cart is page 7.", "derived again: it follows"


def test_a_chosen_title_is_kept_when_the_text_changes(db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    guidance.edit(
        db.session(), entry.id, {"title": "Checkout", "text": "Checkout is page 7."}, actor_id=ADMIN
    )
    assert stored(db, entry.id).title == "Checkout"
    assert trail(db, entry.id)[-1][2] == {
        "text": ["Checkout is page 42.", "Checkout is page 7."],
        "title": ["Checkout is page 42.", "Checkout"],
    }


def test_an_edited_text_is_found_by_its_new_words_only(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    guidance.edit(db.session(), eid, {"text": "Checkout is page 7."}, actor_id=ADMIN)
    assert remember(memory, editor, "checkout IS page 7.")["id"] == eid
    assert remember(memory, editor, "Checkout is page 42.")["id"] != eid


def test_an_edit_is_refused_in_the_trash_and_for_a_bad_field(db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    with pytest.raises(InvalidParams) as caught:
        guidance.edit(db.session(), entry.id, {"severity": "fatal"}, actor_id=ADMIN)
    assert caught.value.details == {"field": "severity"}
    guidance.trash(db.session(), entry.id, actor_id=ADMIN)
    assert conflict(
        lambda: guidance.edit(db.session(), entry.id, {"text": "x"}, actor_id=ADMIN)
    ) == {"code": "conflict", "message": "Restore this entry from the trash before editing it."}
    assert [a for a, _, _ in trail(db, entry.id)] == ["admin_add", "trash"]


def test_every_change_moves_updated_at(db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    created = entry.created_at
    guidance.edit(db.session(), entry.id, {"scope": "shop"}, actor_id=ADMIN)
    assert stored(db, entry.id).updated_at > created


# -- switch, trash, restore ----------------------------------------------------------


def test_switching_off_and_on_is_audited_and_committed(memory: Any, db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    before = revision(memory)
    guidance.set_enabled(db.session(), entry.id, False, actor_id="5", expected_version=1)
    db.session.rollback()
    assert stored(db, entry.id).enabled is False
    assert "Checkout is page 42." not in memory.system_context()
    guidance.set_enabled(db.session(), entry.id, 1, actor_id=ADMIN)
    db.session.rollback()
    assert stored(db, entry.id).enabled is True
    assert "Checkout is page 42." in memory.system_context()
    assert revision(memory) == before + 2
    assert trail(db, entry.id)[1:] == [("disable", "5", None), ("enable", ADMIN, None)]


def test_only_an_active_entry_is_switched(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    assert conflict(lambda: guidance.set_enabled(db.session(), eid, False, actor_id=ADMIN)) == {
        "code": "conflict",
        "message": f"Cannot switch guidance #{eid}: it is pending, not publish.",
        "id": eid,
        "status": "pending",
    }


def test_uncommitted_steps_are_undone_by_a_rollback(db: Any) -> None:
    entry = add(db, "Checkout is page 42.")
    eid = entry.id
    guidance.set_enabled(db.session(), eid, False, actor_id=ADMIN, commit=False)
    db.session.rollback()
    assert stored(db, eid).enabled is True
    guidance.trash(db.session(), eid, actor_id=ADMIN, commit=False)
    db.session.rollback()
    assert stored(db, eid).status == "publish"
    guidance.trash(db.session(), eid, actor_id=ADMIN)
    guidance.restore(db.session(), eid, actor_id=ADMIN, commit=False)
    db.session.rollback()
    assert stored(db, eid).status == "trash"
    assert [a for a, _, _ in trail(db, eid)] == ["admin_add", "trash"]


def test_trash_and_restore_bring_back_the_status_it_had(memory: Any, db: Any, editor: Any) -> None:
    rejected, pending = (remember(memory, editor, t)["id"] for t in ("One.", "Two."))
    guidance.reject(db.session(), rejected, actor_id=ADMIN)
    active = add(db, "Three.").id
    guidance.set_enabled(db.session(), active, False, actor_id=ADMIN)
    for eid, status in ((rejected, "rejected"), (pending, "pending"), (active, "publish")):
        guidance.trash(db.session(), eid, actor_id="5", expected_version=stored(db, eid).version)
        db.session.rollback()
        assert (stored(db, eid).status, stored(db, eid).status_before_trash) == ("trash", status)
        guidance.restore(
            db.session(), eid, actor_id=ADMIN, expected_version=stored(db, eid).version
        )
        db.session.rollback()
        assert (stored(db, eid).status, stored(db, eid).status_before_trash) == (status, None)
        assert trail(db, eid)[-2:] == [("trash", "5", None), ("restore", ADMIN, {"status": status})]
    assert stored(db, active).enabled is False, "still switched off"


def test_a_trashed_entry_without_a_former_status_is_restored_to_pending(
    memory: Any, db: Any
) -> None:
    file = document(row(1, "Checkout is page 42.", status="trash", status_before_trash=None))
    result = transfer.import_document(
        db.session(), file, actor_id=ADMIN, keep_status=True, screen=memory.screen
    )
    [eid] = result.imported
    restored = guidance.restore(db.session(), eid, actor_id=ADMIN)
    assert restored.status == "pending"
    assert trail(db, eid)[-1] == ("restore", ADMIN, {"status": "pending"})


def test_trashing_twice_or_restoring_what_is_not_trashed_is_refused(db: Any) -> None:
    eid = add(db, "Checkout is page 42.").id
    assert conflict(lambda: guidance.restore(db.session(), eid, actor_id=ADMIN)) == {
        "code": "conflict",
        "message": f"Cannot restore guidance #{eid}: it is publish, not trash.",
        "id": eid,
        "status": "publish",
    }
    guidance.trash(db.session(), eid, actor_id=ADMIN, extra={"replaced_by": 9})
    assert trail(db, eid)[-1] == ("trash", ADMIN, {"replaced_by": 9})
    assert conflict(lambda: guidance.trash(db.session(), eid, actor_id=ADMIN)) == {
        "code": "conflict",
        "message": f"Guidance #{eid} is already in the trash.",
        "id": eid,
    }


def test_a_stale_version_refuses_every_step(memory: Any, db: Any, editor: Any) -> None:
    eid = remember(memory, editor, "Checkout is page 42.")["id"]
    guidance.edit(db.session(), eid, {"scope": "shop"}, actor_id=ADMIN)
    steps = {
        "approve": lambda: guidance.approve(db.session(), eid, actor_id=ADMIN, expected_version=1),
        "trash": lambda: guidance.trash(db.session(), eid, actor_id=ADMIN, expected_version=1),
        "edit": lambda: guidance.edit(db.session(), eid, {}, actor_id=ADMIN, expected_version=1),
    }
    for name, step in steps.items():
        assert conflict(step) == {
            "code": "conflict",
            "message": f"Guidance #{eid} changed since you loaded it; reload and review it again.",
            "id": eid,
            "version": 2,
        }, name
    guidance.approve(db.session(), eid, actor_id=ADMIN, expected_version=2)
    guidance.set_enabled(db.session(), eid, False, actor_id=ADMIN, expected_version=3)
    assert (
        conflict(lambda: guidance.restore(db.session(), eid, actor_id=ADMIN, expected_version=3))[
            "version"
        ]
        == 4
    )


# -- reading ----------------------------------------------------------------------


def test_an_unknown_entry_is_not_found_on_every_step(
    memory: Any, db: Any, client: FlaskClient
) -> None:
    for step in (guidance.get, guidance.restore):
        kwargs = {} if step is guidance.get else {"actor_id": ADMIN}
        with pytest.raises(NotFound) as caught:
            step(db.session(), 404, **kwargs)
        assert caught.value.to_dict() == {
            "code": "not_found",
            "message": "No guidance entry #404.",
            "id": 404,
        }
    response = client.post(
        f"{SCREEN}/guidance/404/trash", data={"csrf_token": token(client)}, headers=JSON
    )
    assert response.status_code == 404
    assert response.json["error"] == {
        "code": "not_found",
        "message": "No guidance entry #404.",
        "id": 404,
    }


def test_events_are_the_entrys_own_oldest_first(memory: Any, db: Any, editor: Any) -> None:
    one, two = (remember(memory, editor, t)["id"] for t in ("One.", "Two."))
    guidance.approve(db.session(), two, actor_id=ADMIN)
    guidance.reject(db.session(), one, actor_id=ADMIN)
    assert [a for a, _, _ in trail(db, one)] == ["propose", "reject"]
    assert [a for a, _, _ in trail(db, two)] == ["propose", "approve"]
    assert trail(db, 404) == []


def test_a_lost_race_answers_conflict_and_stores_nothing(app: Flask, second_worker: Flask) -> None:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        eid = add(db, "Checkout is page 42.").id
        mine = guidance.get(db.session(), eid)
        assert mine.version == 1
        with second_worker.app_context():
            other = second_worker.extensions["test_host"]["db"]
            guidance.set_enabled(other.session(), eid, False, actor_id="5")
            other.session.remove()
        assert conflict(
            lambda: guidance.trash(db.session(), eid, actor_id=ADMIN, commit=False)
        ) == {
            "code": "conflict",
            "message": f"Guidance #{eid} was changed by someone else at the same time; reload it.",
            "id": eid,
        }
        db.session.expunge_all()
        entry = guidance.get(db.session(), eid)
        assert (entry.status, entry.enabled) == ("publish", False)
        assert [a for a, _, _ in trail(db, eid)] == ["admin_add", "disable"]
        db.session.remove()


# -- a curator's recall: each enforced guardrail with its hits -----------------------


def test_a_curators_recall_counts_hits_of_enforced_guardrails_only(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    blocking = add(
        db, "Never edit the checkout.", type="guardrail", target="post_id:42", severity="block"
    ).id
    asking = add(
        db, "Ask before editing the cart.", type="guardrail", target="post_id:7", severity="ask"
    )
    warning = add(
        db, "Careful with the footer.", type="guardrail", target="post_id:9", severity="warn"
    ).id
    fact = add(db, "The shop sells tea.", severity="block").id
    with pytest.raises(BlockedByMemory):
        memory.call_tool("update-post", {"post_id": 42, "title": "x"}, user=editor)
    hit_at = stored(db, blocking).last_hit_at
    assert hit_at is not None

    by_id = {g["id"]: g for g in memory.call_tool("recall", {}, user=admin)["guidance"]}
    assert (by_id[blocking]["hits"], by_id[blocking]["last_hit_at"]) == (1, iso(hit_at))
    assert (by_id[asking.id]["hits"], by_id[asking.id]["last_hit_at"]) == (0, None)
    for plain in (warning, fact):
        assert "hits" not in by_id[plain] and "last_hit_at" not in by_id[plain]
    assert by_id[blocking]["title"] == "Never edit the checkout."
    # The records are copies: an editor's recall (from the same cache) shows no hits.
    for record in memory.call_tool("recall", {}, user=editor)["guidance"]:
        assert "hits" not in record


def test_a_curators_recall_without_enforced_guardrails_is_unchanged(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    add(db, "The shop sells tea.")
    add(db, "Careful with the footer.", type="guardrail", target="post_id:9", severity="warn")
    as_admin = memory.call_tool("recall", {}, user=admin)["guidance"]
    assert as_admin == memory.call_tool("recall", {}, user=editor)["guidance"]
    assert len(as_admin) == 2
