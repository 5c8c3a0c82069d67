"""What an entry's fields may hold (`chatmem.memory.fields`): the add and edit
checks a curator's entry and an import pass (which field is named when several
are wrong, and in which words), the text rules on the written fields, a
rejection reason's rules, and what is derived from the text: the folded key
that finds duplicates and the default title.

Runs on SQLite and on PostgreSQL (CHATMEM_TEST_DATABASE_URL).
"""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import InvalidParams
from chatmem.memory import guidance
from chatmem.memory.fields import (
    REASON_MAX,
    TITLE_MAX,
    blank_to_none,
    checked_changes,
    checked_fields,
    checked_reason,
    default_title,
    fold,
    text_key,
)
from chatmem.memory.models import Guidance

ZERO_WIDTH = "\u200b"
SECRET = "AKIAIOSFODNN7EXAMPLE"  # an AWS access key id, as the text rules know it


def refusal(check: Any, *args: Any, **kwargs: Any) -> tuple[str, dict[str, Any]]:
    """The message and details of the InvalidParams `check(*args)` raises."""
    with pytest.raises(InvalidParams) as caught:
        check(*args, **kwargs)
    return caught.value.message, caught.value.details


def field_refused(check: Any, fields: dict[str, Any]) -> str:
    """The field an InvalidParams names."""
    return str(refusal(check, fields)[1]["field"])


# -- what is derived from the text ------------------------------------------------


def test_fold_ignores_case_and_runs_of_white_space() -> None:
    assert fold("  Checkout\tIS\n\n page   42 ") == "checkout is page 42"
    assert fold("Straße") == fold("STRASSE") == "strasse"
    assert fold("") == ""


def test_the_text_key_is_one_per_folded_text() -> None:
    key = text_key("Checkout is page 42")
    assert len(key) == 64 and int(key, 16) >= 0
    assert text_key("  checkout  IS\npage 42") == key
    assert text_key("Checkout is page 43") != key
    assert text_key("Checkoutis page 42") != key, "white space still separates words"


def test_the_default_title_is_the_first_eight_words() -> None:
    assert default_title("one two three four five six seven eight nine") == (
        "one two three four five six seven eight"
    )
    assert default_title("  Checkout \n is\tpage  42  ") == "Checkout is page 42"
    assert default_title("x" * 250) == "x" * TITLE_MAX
    assert default_title("") == ""


def test_blank_to_none_strips_and_keeps_only_some_text() -> None:
    assert blank_to_none("  shop  ") == "shop"
    assert blank_to_none(" \n ") is None
    assert blank_to_none("") is None
    assert blank_to_none(None) is None


# -- a rejection reason -----------------------------------------------------------


def test_a_reason_is_stripped_and_a_blank_one_is_none() -> None:
    assert checked_reason(None) is None
    assert checked_reason("") is None
    assert checked_reason("   ") is None
    assert checked_reason("  Wrong page.\r\n  ") == "Wrong page."
    assert checked_reason("Line one\r\nline two") == "Line one\nline two"
    assert checked_reason("r" * REASON_MAX) == "r" * REASON_MAX
    assert checked_reason(" " + "r" * REASON_MAX + " ") == "r" * REASON_MAX


def test_a_reason_that_is_too_long_hidden_secret_or_not_text_is_refused() -> None:
    assert refusal(checked_reason, "r" * (REASON_MAX + 1)) == (
        "reason is longer than 500 characters.",
        {"field": "reason"},
    )
    assert refusal(checked_reason, 42) == ("reason must be text.", {"field": "reason"})
    assert refusal(checked_reason, ["Wrong page."]) == ("reason must be text.", {"field": "reason"})
    message, details = refusal(checked_reason, f"fine{ZERO_WIDTH}print")
    assert message.startswith("reason holds invisible or control characters")
    assert details == {"field": "reason", "code_points": ["U+200B"]}
    message, details = refusal(checked_reason, f"the key is {SECRET}")
    assert message.startswith("reason holds what looks like a secret (aws_access_key)")
    assert details["field"] == "reason"


def test_a_bad_reason_rejects_nothing(memory: Any, db: Any, editor: Any) -> None:
    eid = memory.call_tool("remember", {"type": "fact", "text": "One."}, user=editor)["id"]
    with pytest.raises(InvalidParams):
        guidance.reject(db.session(), eid, actor_id="1", reason="r" * (REASON_MAX + 1))
    assert guidance.get(db.session(), eid).status == "pending"


# -- a whole entry (the add form, an import) ---------------------------------------


def test_a_whole_entry_needs_a_type_and_a_text() -> None:
    assert refusal(checked_fields, {}) == ("type is required.", {"field": "type"})
    assert refusal(checked_fields, {"text": "x"}) == ("type is required.", {"field": "type"})
    assert refusal(checked_fields, {"type": "", "text": "x"}) == (
        "type is required.",
        {"field": "type"},
    )
    assert refusal(checked_fields, {"type": "fact"}) == ("text is required.", {"field": "text"})
    assert refusal(checked_fields, {"type": "fact", "text": " \n "}) == (
        "text is required.",
        {"field": "text"},
    )
    assert refusal(checked_fields, {"type": "fact", "text": None}) == (
        "text is required.",
        {"field": "text"},
    )


def test_a_whole_entry_is_returned_cleaned() -> None:
    assert checked_fields(
        {
            "type": "guardrail",
            "text": "  Never edit\r\nthe logo.  ",
            "title": " Logo ",
            "scope": "",
            "target": " post_id:9 ",
            "severity": "block",
        }
    ) == {
        "type": "guardrail",
        "text": "Never edit\nthe logo.",
        "title": "Logo",
        "scope": None,
        "target": "post_id:9",
        "severity": "block",
    }
    assert checked_fields({"type": "fact", "text": "Cafe\u0301 opens at 9."}) == {
        "type": "fact",
        "text": "Caf\u00e9 opens at 9.",
    }


def test_an_unknown_field_is_named_first_in_alphabetical_order() -> None:
    fields = {"type": "fact", "text": "x", "zeta": "1", "colour": "red", "alpha": 2}
    assert refusal(checked_fields, fields) == ("Unknown field 'alpha'.", {"field": "alpha"})
    assert refusal(checked_changes, {"colour": "red"}) == (
        "Unknown field 'colour'.",
        {"field": "colour"},
    )


def test_a_field_that_is_not_text_is_refused_by_name() -> None:
    for name, value in [("scope", 5), ("type", ["fact"]), ("text", {"a": 1}), ("title", True)]:
        fields = {"type": "fact", "text": "x", name: value}
        assert refusal(checked_fields, fields) == (f"{name} must be text.", {"field": name})
    assert checked_fields({"type": "fact", "text": "x", "scope": None, "title": None}) == {
        "type": "fact",
        "text": "x",
        "scope": None,
        "title": None,
    }


@pytest.mark.parametrize("name", ["title", "text", "scope", "target"])
def test_the_text_rules_apply_to_every_written_field(name: str) -> None:
    fields = {"type": "fact", "text": "Checkout is page 42.", name: f"page{ZERO_WIDTH}42"}
    message, details = refusal(checked_fields, fields)
    assert message.startswith(f"{name} holds invisible or control characters")
    assert details == {"field": name, "code_points": ["U+200B"]}
    fields[name] = f"key {SECRET}"
    message, details = refusal(checked_fields, fields)
    assert message.startswith(f"{name} holds what looks like a secret")
    assert details["field"] == name


def test_type_and_severity_are_checked_against_their_lists_not_the_text_rules() -> None:
    hidden = refusal(checked_fields, {"type": f"fact{ZERO_WIDTH}", "text": "x"})
    assert hidden == (
        "type must be one of: guardrail, fact, convention, instruction.",
        {"field": "type"},
    )
    hidden = refusal(checked_fields, {"type": "fact", "text": "x", "severity": f"warn{ZERO_WIDTH}"})
    assert hidden == ("severity must be one of: info, warn, ask, block.", {"field": "severity"})


def test_of_several_bad_fields_the_first_by_name_is_reported() -> None:
    too_long = {"title": "t" * 201, "scope": "s" * 65, "target": "tool:" + "t" * 200}
    cases = [
        ({"type": "gossip", "severity": "fatal"}, "severity"),
        ({"type": "gossip", **too_long}, "scope"),
        ({"type": "gossip", "title": too_long["title"]}, "title"),
        ({"type": "gossip", "target": too_long["target"]}, "target"),
        ({"severity": "fatal", "scope": too_long["scope"]}, "scope"),
    ]
    for bad, named in cases:
        fields = {"type": "fact", "text": "x", **bad}
        assert field_refused(checked_fields, fields) == named, bad
        assert field_refused(checked_changes, bad) == named, bad
    assert refusal(checked_fields, {"type": "fact", "text": "x", **too_long}) == (
        "scope is longer than 64 characters.",
        {"field": "scope"},
    )


def test_the_limits_are_inclusive() -> None:
    longest = {"title": "t" * 200, "scope": "s" * 64, "target": "t" * 200, "text": "x" * 1000}
    assert checked_fields({"type": "fact", **longest}) == {"type": "fact", **longest}


def test_added_entries_store_what_the_checks_returned(db: Any) -> None:
    entry = guidance.admin_add(
        db.session(),
        {"type": "fact", "text": " Line one\r\nline two ", "title": "  ", "scope": " shop "},
        actor_id="1",
    )
    stored = db.session.get(Guidance, entry.id)
    assert (stored.text, stored.title, stored.scope) == (
        "Line one\nline two",
        "Line one line two",
        "shop",
    )


# -- an edit's changed fields -------------------------------------------------------


def test_an_edit_checks_only_the_fields_it_changes() -> None:
    assert checked_changes({}) == {}
    assert checked_changes({"scope": " shop "}) == {"scope": "shop"}
    assert checked_changes({"title": "", "target": None}) == {"title": None, "target": None}
    assert checked_changes({"severity": "ask"}) == {"severity": "ask"}


def test_an_edit_may_not_empty_the_text_or_the_type() -> None:
    assert refusal(checked_changes, {"text": " \n "}) == (
        "text must not be empty.",
        {"field": "text"},
    )
    assert refusal(checked_changes, {"text": None}) == (
        "text must not be empty.",
        {"field": "text"},
    )
    assert refusal(checked_changes, {"type": ""}) == ("type must not be empty.", {"field": "type"})
    assert refusal(checked_changes, {"type": "", "text": ""}) == (
        "text must not be empty.",
        {"field": "text"},
    )


def test_a_refused_edit_changes_nothing(db: Any) -> None:
    entry = guidance.admin_add(
        db.session(), {"type": "fact", "text": "Checkout is page 42."}, actor_id="1"
    )
    for bad in ({"text": ""}, {"scope": "s" * 65}, {"title": f"x{ZERO_WIDTH}"}, {"colour": "x"}):
        with pytest.raises(InvalidParams):
            guidance.edit(db.session(), entry.id, bad, actor_id="1")
        db.session.rollback()
    stored = guidance.get(db.session(), entry.id)
    assert (stored.text, stored.scope, stored.version) == ("Checkout is page 42.", None, 1)
