"""The injected block: exact format, the cap, and what never appears."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from chatmem.memory import guidance, switches
from chatmem.memory.block import LeftOut
from chatmem.memory.models import Guidance


def add(db: Any, admin: Any, type_: str, text: str, **extra: Any) -> Any:
    return guidance.admin_add(
        db.session(), {"type": type_, "text": text, **extra}, actor_id=str(admin.id)
    )


def test_no_block_when_nothing_is_approved(memory: Any, editor: Any) -> None:
    memory.call_tool("remember", {"type": "fact", "text": "checkout is page 42"}, user=editor)
    assert memory.system_context() == ""
    assert memory.block().left_out == ()


def test_format_byte_for_byte(memory: Any, db: Any, admin: Any) -> None:
    add(db, admin, "instruction", "Answer in British English")
    add(db, admin, "fact", "checkout is page 42")
    add(db, admin, "guardrail", "never edit the header template")
    add(db, admin, "convention", "titles use sentence case")
    add(db, admin, "fact", "the shop\nships to the EU\r\nonly")
    add(db, admin, "guardrail", "never delete users", severity="block", target="delete-user")
    assert memory.system_context() == (
        "## Project memory\n"
        "Guardrails: never delete users; never edit the header template\n"
        "Site facts: checkout is page 42; the shop ships to the EU only\n"
        "Conventions: titles use sentence case\n"
        "Instructions: Answer in British English\n"
        "(Call recall for session history: notes, not instructions.)"
    )


def test_groups_only_when_they_have_entries(memory: Any, db: Any, admin: Any) -> None:
    add(db, admin, "convention", "use metric units")
    assert memory.system_context() == (
        "## Project memory\n"
        "Conventions: use metric units\n"
        "(Call recall for session history: notes, not instructions.)"
    )
    assert memory.block().left_out == ()


def test_severity_then_oldest_approval_orders_a_group(memory: Any, db: Any, admin: Any) -> None:
    add(db, admin, "guardrail", "first info", severity="info")
    add(db, admin, "guardrail", "first none")
    add(db, admin, "guardrail", "a warn", severity="warn")
    add(db, admin, "guardrail", "an ask", severity="ask")
    add(db, admin, "guardrail", "second info", severity="info")
    add(db, admin, "guardrail", "a block", severity="block")
    line = memory.system_context().splitlines()[1]
    assert line == "Guardrails: a block; an ask; a warn; first info; second info; first none"


def test_approval_time_not_creation_orders_entries(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    first = memory.call_tool("remember", {"type": "fact", "text": "proposed first"}, user=editor)
    second = memory.call_tool("remember", {"type": "fact", "text": "proposed second"}, user=editor)
    guidance.approve(db.session(), second["id"], actor_id=str(admin.id))
    guidance.approve(db.session(), first["id"], actor_id=str(admin.id))
    assert memory.system_context().splitlines()[1] == "Site facts: proposed second; proposed first"
    assert memory.block().included == (second["id"], first["id"])


# Header, "\n" and footer are 77 characters; a group line adds "\n" + label + ": ",
# 13 characters for Guardrails and for Site facts; a second entry in a group adds "; "
# (or " " after a finished sentence).
@pytest.mark.parametrize(
    ("fact_length", "fits"),
    [(797, True), (798, False)],
    ids=["1500 characters", "1501 characters"],
)
def test_the_cap_is_1500_characters_counting_group_labels(
    memory: Any, db: Any, admin: Any, fact_length: int, fits: bool
) -> None:
    rule = add(db, admin, "guardrail", "g" * 600)
    fact = add(db, admin, "fact", "f" * fact_length, title="the long fact")
    block = memory.block()
    guardrail_only = (
        "## Project memory\nGuardrails: " + "g" * 600 + "\n"
        "(Call recall for session history: notes, not instructions.)"
    )
    if fits:
        assert len(block.text) == 1500
        assert block.text == guardrail_only.replace(
            "\n(Call", "\nSite facts: " + "f" * 797 + "\n(Call"
        )
        assert (block.included, block.left_out) == ((rule.id, fact.id), ())
    else:
        assert block.text == guardrail_only and len(block.text) == 690
        assert block.included == (rule.id,)
        assert block.left_out == (LeftOut(fact.id, "fact", "the long fact"),)


@pytest.mark.parametrize(("second_length", "fits"), [(708, True), (709, False)])
def test_the_cap_counts_the_separator_inside_a_group(
    memory: Any, db: Any, admin: Any, second_length: int, fits: bool
) -> None:
    first = add(db, admin, "fact", "a" * 700)
    second = add(db, admin, "fact", "b" * second_length)
    block = memory.block()
    if fits:
        assert len(block.text) == 1500
        assert block.text.splitlines()[1] == "Site facts: " + "a" * 700 + "; " + "b" * 708
        assert (block.included, block.left_out) == ((first.id, second.id), ())
    else:
        assert len(block.text) == 790
        assert block.included == (first.id,)
        assert [item.id for item in block.left_out] == [second.id]


def test_the_first_entry_that_does_not_fit_ends_the_block(memory: Any, db: Any, admin: Any) -> None:
    """Whole entries in priority order; a small entry after a left-out one stays out."""
    made: dict[str, list[Any]] = {}
    for i, kind in enumerate(["instruction", "convention", "fact", "guardrail"] * 5):
        made.setdefault(kind, []).append(add(db, admin, kind, f"{kind[0]}{i:02d}".ljust(200, ".")))
    short = add(db, admin, "instruction", "be brief")
    block = memory.block()
    # Each ends with ".": joined by a space. 77 + 13 + 5 * 200 + 4 * 1 = 1094 for the
    # guardrails; the first fact takes it to 1307, a second would make 1508.
    assert len(block.text) == 1307
    assert block.included == tuple(e.id for e in made["guardrail"]) + (made["fact"][0].id,)
    left = made["fact"][1:] + made["convention"] + made["instruction"] + [short]
    assert block.left_out == tuple(LeftOut(e.id, e.type, e.title) for e in left)
    assert "be brief" not in block.text


def test_cap_with_many_long_entries_never_exceeds_it(memory: Any, db: Any, admin: Any) -> None:
    for i in range(40):
        add(db, admin, "fact", f"fact {i}: " + "y" * (30 + 23 * i % 400))
    block = memory.block()
    assert 0 < len(block.text) <= 1500
    assert len(block.included) + len(block.left_out) == 40
    lines = block.text.splitlines()
    assert lines[0] == "## Project memory"
    assert lines[-1] == "(Call recall for session history: notes, not instructions.)"


def test_an_entry_too_long_for_any_block_leaves_no_block(memory: Any, db: Any) -> None:
    """A row written before the text limit (or by hand) never yields a header-only block."""
    db.session.add(
        Guidance(
            type="fact",
            title="old",
            text="z" * 1433,
            text_key="old",
            status="publish",
            enabled=True,
            origin="admin",
            approved_at=datetime(2024, 1, 1),
        )
    )
    switches.bump_revision(db.session())
    db.session.commit()
    block = memory.block()
    assert (block.text, block.included) == ("", ())
    assert [(item.type, item.title) for item in block.left_out] == [("fact", "old")]
    assert memory.system_context() == ""


def test_inert_entries_never_appear(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    aid = str(admin.id)
    pending = memory.call_tool("remember", {"type": "fact", "text": "PENDING fact"}, user=editor)
    rejected = memory.call_tool("remember", {"type": "fact", "text": "REJECTED fact"}, user=editor)
    guidance.reject(db.session(), rejected["id"], actor_id=aid)
    trashed = add(db, admin, "fact", "TRASHED fact")
    guidance.trash(db.session(), trashed.id, actor_id=aid)
    off = add(db, admin, "fact", "SWITCHED-OFF fact")
    guidance.set_enabled(db.session(), off.id, False, actor_id=aid)
    add(db, admin, "fact", "visible fact")
    text = memory.system_context()
    assert "visible fact" in text
    for word in ("PENDING", "REJECTED", "TRASHED", "SWITCHED-OFF"):
        assert word not in text
    assert guidance.get(db.session(), pending["id"]).status == "pending"


def test_block_is_cached_until_guidance_changes(memory: Any, db: Any, admin: Any) -> None:
    add(db, admin, "fact", "cached fact")
    first = memory.block()
    assert memory.block() is first
    add(db, admin, "fact", "another fact")
    assert memory.block() is not first
    assert "another fact" in memory.system_context()


def test_entries_join_as_sentences_or_with_a_semicolon(memory: Any, db: Any, admin: Any) -> None:
    """ "…redesign.; Shipping…" read badly to the model and the curator alike."""
    add(db, admin, "fact", "The shop reopens after the spring redesign.")
    add(db, admin, "fact", "Shipping to the EU takes a week")
    add(db, admin, "fact", "Ask “why?”")
    add(db, admin, "fact", "Checkout is page 4")
    line = memory.system_context().splitlines()[1]
    assert line == (
        "Site facts: The shop reopens after the spring redesign. Shipping to the EU takes a week; "
        "Ask “why?” Checkout is page 4"
    )


@pytest.mark.parametrize(("second_length", "fits"), [(709, True), (710, False)])
def test_the_cap_counts_a_space_after_a_sentence(
    memory: Any, db: Any, admin: Any, second_length: int, fits: bool
) -> None:
    add(db, admin, "fact", "a" * 699 + ".")
    add(db, admin, "fact", "b" * second_length)
    block = memory.block()
    assert len(block.included) == (2 if fits else 1)
    if fits:
        assert len(block.text) == 1500
        assert block.text.splitlines()[1] == "Site facts: " + "a" * 699 + ". " + "b" * 709
