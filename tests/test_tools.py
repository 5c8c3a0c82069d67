"""Tools are data, checked at registration; the registry finds, lists and canonicalises."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from chatmem import ChatmemError
from chatmem.memory.models import LedgerEntry, Session, utcnow

OBJECT: dict[str, Any] = {"type": "object", "properties": {}}


def register(memory: Any, name: str, schema: dict[str, Any] | None = None, **options: Any) -> Any:
    """Register a host tool that returns the arguments it was called with."""

    def echo(**arguments: Any) -> dict[str, Any]:
        return {"got": arguments}

    return memory.tool(name=name, description="Echo.", input_schema=schema or OBJECT, **options)(
        echo
    )


def error_of(memory: Any, user: Any, name: Any, arguments: Any) -> ChatmemError:
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool(name, arguments, user=user)
    return caught.value


# -- registration ---------------------------------------------------------------


@pytest.mark.parametrize("name", ["a", "x" * 64, "Create_user-2"])
def test_names_valid_in_every_channel_are_accepted(memory: Any, editor: Any, name: str) -> None:
    register(memory, name)
    assert memory.call_tool(name, {}, user=editor) == {"got": {}}


@pytest.mark.parametrize(
    "name", ["", "x" * 65, "posts/update", "post.update", "update post", "update-post!", "née"]
)
def test_names_some_client_would_refuse_are_refused(memory: Any, name: str) -> None:
    with pytest.raises(ValueError) as caught:
        register(memory, name)
    assert str(caught.value) == (
        f"Tool name {name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$: MCP clients and the "
        "OpenAI and Anthropic APIs refuse other names."
    )


def test_a_name_with_a_trailing_newline_is_refused(memory: Any) -> None:
    with pytest.raises(ValueError, match="must match"):
        register(memory, "update-post\n")


def test_a_second_tool_of_the_same_name_in_any_case_is_refused(memory: Any) -> None:
    with pytest.raises(ValueError) as caught:
        register(memory, "Update-Post")
    assert str(caught.value) == "A tool named 'Update-Post' is already registered."


def test_the_input_schema_must_be_a_valid_object_schema(memory: Any) -> None:
    with pytest.raises(ValueError) as caught:
        register(memory, "listy", {"type": "array"})
    assert str(caught.value) == "Tool 'listy': input_schema must have type 'object'."
    with pytest.raises(SchemaError):
        register(memory, "broken", {"type": "object", "properties": {"n": {"type": "int"}}})
    assert [t.name for t in memory.registry.tools() if t.name in ("listy", "broken")] == []


def test_defaults_a_host_tool_gets(memory: Any, users: Any) -> None:
    register(memory, "plain")
    registered = memory.registry.find("plain", "chatmem")
    assert (registered.read_only, registered.capability, registered.memory) == (
        False,
        "edit_posts",
        False,
    )
    assert memory.call_tool("plain", {}, user=users["editor"]) == {"got": {}}
    assert error_of(memory, users["viewer"], "plain", {}).code == "forbidden"


def test_annotations_say_what_a_client_may_assume(memory: Any) -> None:
    register(memory, "titled", title="A titled tool", read_only=True)
    register(memory, "untitled")
    find = memory.registry.find
    assert find("recall", "chatmem").annotations() == {
        "readOnlyHint": True,
        "openWorldHint": False,
        "title": "Recall project memory",
    }
    assert find("remember", "chatmem").annotations() == {
        "readOnlyHint": False,
        "openWorldHint": False,
        "title": "Propose guidance",
    }
    assert find("titled", "chatmem").annotations() == {
        "readOnlyHint": True,
        "title": "A titled tool",
    }
    assert find("untitled", "chatmem").annotations() == {"readOnlyHint": False}


# -- lookup and listing ----------------------------------------------------------


def test_memory_tools_are_listed_first_then_the_hosts_by_name(memory: Any) -> None:
    names = [t.name for t in memory.registry.tools()]
    assert names == [
        "recall",
        "remember",
        "save-session-summary",
        "create-user",
        "explode",
        "get-post",
        "update-post",
    ]
    host = [t.name for t in memory.registry.tools(include_memory=False)]
    assert host == ["create-user", "explode", "get-post", "update-post"]


@pytest.mark.parametrize(
    "name", ["update-post", "Update-Post", "chatmem/update-post", "CHATMEM/UPDATE-POST"]
)
def test_a_tool_is_found_by_its_name_or_full_name_in_any_case(
    memory: Any, editor: Any, name: str
) -> None:
    assert memory.call_tool(name, {"post_id": 7, "title": "t"}, user=editor) == {
        "id": 7,
        "title": "t",
    }


@pytest.mark.parametrize("name", ["other/update-post", "update", "chatmem/", 42, None, ["recall"]])
def test_anything_else_is_not_found(memory: Any, db: Any, editor: Any, name: Any) -> None:
    error = error_of(memory, editor, name, {"post_id": 7, "title": "t"})
    assert (error.code, error.message, error.details) == (
        "not_found",
        f"Unknown tool {name!r}.",
        {"tool": name},
    )
    assert db.session.query(LedgerEntry).count() == 0


# -- the dispatcher ----------------------------------------------------------------


def test_a_tool_that_asks_for_the_context_gets_the_caller(memory: Any, editor: Any) -> None:
    seen: list[Any] = []

    @memory.tool(name="whoami", description="Who calls.", input_schema=OBJECT, read_only=True)
    def whoami(context: Any) -> dict[str, Any]:
        seen.append(context)
        return {"user_id": context.user_id, "channel": context.channel}

    assert memory.call_tool("whoami", {}, user=editor, channel="rest") == {
        "user_id": "2",
        "channel": "rest",
    }
    assert (seen[0].user is editor, seen[0].user_name) == (True, "editor")
    # Narrow on purpose: the caller, the channel, the session and the settings;
    # never the ChatMemory, its database or the memory tools' own collaborators.
    assert sorted(vars(seen[0])) == [
        "channel",
        "read_only",
        "session_id",
        "session_key",
        "settings",
        "user",
        "user_id",
        "user_name",
    ]


def test_a_crashing_tool_is_logged_with_its_traceback(
    memory: Any, editor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="chatmem"):
        assert error_of(memory, editor, "explode", {}).code == "tool_error"
    [record] = [r for r in caplog.records if r.name == "chatmem"]
    assert record.getMessage() == "tool explode failed"
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == "secret internal detail"


def test_a_result_that_is_not_an_object_is_wrapped(memory: Any, editor: Any) -> None:
    @memory.tool(name="count", description="Count.", input_schema=OBJECT, read_only=True)
    def count() -> list[int]:
        return [1, 2, 3]

    assert memory.call_tool("count", None, user=editor) == {"result": [1, 2, 3]}


def test_a_reused_context_reads_the_state_again(memory: Any, admin: Any, editor: Any) -> None:
    context = memory.context_for(editor, channel="python")
    assert memory.dispatcher.call("recall", {}, context)["guidance"] == []
    memory.set_setting("memory_enabled", False, actor=admin)
    with pytest.raises(ChatmemError) as caught:
        memory.dispatcher.call("recall", {}, context)
    assert caught.value.code == "memory_disabled"


def test_a_session_is_touched_at_most_every_30_seconds(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    started = db.session.get(Session, sid).last_seen_at
    memory.call_tool("recall", {}, user=editor, session_id=sid)
    memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor, session_id=sid)
    db.session.expire_all()
    assert db.session.get(Session, sid).last_seen_at == started


def test_a_session_in_use_is_not_ended_as_idle(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    db.session.get(Session, sid).last_seen_at = utcnow() - timedelta(minutes=31)
    db.session.commit()
    memory.call_tool("recall", {}, user=editor, session_id=sid)  # a read touches it too
    assert memory.sweep() == 0
    db.session.expire_all()
    assert db.session.get(Session, sid).ended_at is None


def test_a_failing_transcript_loader_still_ends_the_idle_session(
    memory: Any, db: Any, editor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    @memory.transcript_loader
    def broken(session_id: str) -> str:
        raise RuntimeError("the host's store is down")

    sid = memory.start_session(editor, "python")
    memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor, session_id=sid)
    db.session.get(Session, sid).last_seen_at = utcnow() - timedelta(minutes=31)
    db.session.commit()
    with caplog.at_level(logging.ERROR, logger="chatmem"):
        assert memory.sweep() == 1
    assert f"transcript_loader failed for session {sid}" in caplog.text
    db.session.expire_all()
    ended = db.session.get(Session, sid)
    assert ended.ended_at is not None and "update-post" in (ended.digest or "")


def test_no_user_is_unauthorized_and_nothing_is_written(memory: Any, db: Any) -> None:
    error = error_of(memory, None, "update-post", {"post_id": 7, "title": "t"})
    assert (error.code, error.message) == (
        "unauthorized",
        "Sign in or send an API token to call tools.",
    )
    error = error_of(memory, None, "update-post", {"post_id": "x", "title": "t"})
    assert error.code == "invalid_params"  # input is checked before the caller
    assert (db.session.query(Session).count(), db.session.query(LedgerEntry).count()) == (0, 0)


def test_a_missing_capability_is_named(memory: Any, db: Any, users: Any) -> None:
    register(memory, "curate", capability="manage_options")
    error = error_of(memory, users["editor"], "curate", {})
    assert (error.code, error.message, error.details) == (
        "forbidden",
        "Calling curate needs the manage_options capability.",
        {"capability": "manage_options"},
    )
    assert memory.call_tool("curate", {}, user=users["admin"]) == {"got": {}}


# -- canonical arguments ------------------------------------------------------------

COUNTS = {
    "type": "object",
    "properties": {
        "count": {"type": "integer"},
        "maybe": {"type": ["integer", "null"]},
        "label": {"type": "string"},
        "ratio": {"type": "number"},
    },
}


@pytest.mark.parametrize(
    "spelling", [42, "42", "042", " 42", "42 ", " +042 ", "+42", "\t42\n", 42.0]
)
def test_integer_fields_take_every_spelling_of_an_integer(
    memory: Any, editor: Any, spelling: Any
) -> None:
    register(memory, "counts", COUNTS)
    got = memory.call_tool("counts", {"count": spelling, "maybe": spelling}, user=editor)["got"]
    assert got == {"count": 42, "maybe": 42}
    assert type(got["count"]) is int and type(got["maybe"]) is int


@pytest.mark.parametrize("spelling", ["-42", "4 2", "", " ", "42a", "0x2a", "4.2", 42.5, True])
def test_other_values_of_integer_fields_are_refused(
    memory: Any, db: Any, editor: Any, spelling: Any
) -> None:
    register(memory, "counts", COUNTS)
    error = error_of(memory, editor, "counts", {"count": spelling})
    assert (error.code, error.details, error.message) == (
        "invalid_params",
        {"field": "count"},
        "count must be of type integer.",
    )
    assert db.session.query(Session).count() == 0


def test_integer_text_is_converted_up_to_19_digits(memory: Any, editor: Any) -> None:
    """19 digits fit a 64-bit integer; longer text stays text (Python refuses 4,300+ digits)."""
    register(memory, "counts", COUNTS)
    assert memory.call_tool("counts", {"count": "7"}, user=editor)["got"]["count"] == 7  # one digit
    got = memory.call_tool("counts", {"count": "9" * 18, "maybe": "1" * 19}, user=editor)["got"]
    assert got == {"count": int("9" * 18), "maybe": int("1" * 19)}
    for text in ("1" * 20, "9" * 5000):
        error = error_of(memory, editor, "counts", {"count": text})
        assert (error.code, error.details) == ("invalid_params", {"field": "count"})


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("9" * 19, "out_of_range"),
        (2**63, "out_of_range"),
        (-(2**63) - 1, "out_of_range"),
        (1e300, "out_of_range"),
        (float("nan"), "not_finite"),
    ],
)
def test_integers_past_64_bits_and_nan_are_refused_by_name(
    memory: Any, db: Any, editor: Any, value: Any, reason: str
) -> None:
    register(memory, "counts", COUNTS)
    error = error_of(memory, editor, "counts", {"count": value})
    assert (error.code, error.details["field"], error.details["reason"]) == (
        "invalid_params",
        "count",
        reason,
    )
    assert db.session.query(Session).count() == 0


@pytest.mark.parametrize(
    ("text", "reason"), [("a\x00b", "nul_character"), ("a\ud800b", "lone_surrogate")]
)
def test_nul_and_lone_surrogates_are_refused_in_any_text(
    memory: Any, db: Any, editor: Any, text: str, reason: str
) -> None:
    register(memory, "counts", COUNTS)
    for arguments, field in (({"label": text}, "label"), ({"nested": {"k": [text]}}, "nested/k/0")):
        error = error_of(memory, editor, "counts", arguments)
        assert (error.code, error.details["field"], error.details["reason"]) == (
            "invalid_params",
            field,
            reason,
        )
    assert db.session.query(Session).count() == 0 and db.session.query(LedgerEntry).count() == 0


def test_only_integer_fields_are_canonicalised(memory: Any, editor: Any) -> None:
    register(memory, "counts", COUNTS)
    sent = {"label": "2024", "ratio": 42.0, "maybe": None, "other": "042"}
    assert memory.call_tool("counts", sent, user=editor) == {"got": sent}
    got = memory.call_tool("counts", {"label": "2024", "ratio": 42.0}, user=editor)["got"]
    assert type(got["label"]) is str and type(got["ratio"]) is float


@pytest.mark.parametrize(
    "arguments",
    [{"title": "2024", "post_id": "042"}, {"post_id": "042", "title": "2024"}],
    ids=["string field first", "integer field first"],
)
def test_canonicalisation_does_not_depend_on_key_order(
    memory: Any, db: Any, editor: Any, arguments: dict[str, Any]
) -> None:
    assert memory.call_tool("update-post", arguments, user=editor) == {"id": 42, "title": "2024"}
    [row] = db.session.query(LedgerEntry).all()
    assert row.arguments == {"post_id": 42, "title": "2024"}


def test_a_schema_without_properties_passes_arguments_through(memory: Any, editor: Any) -> None:
    register(memory, "loose", {"type": "object"})
    assert memory.call_tool("loose", {"n": "042"}, user=editor) == {"got": {"n": "042"}}


# -- what a refused input is told -----------------------------------------------------

TAKEAWAY = {"type": "fact", "text": "x"}
MESSAGES = [
    ("recall", ["not", "an", "object"], "arguments", "Tool arguments must be a JSON object."),
    ("remember", "fact: x", "arguments", "Tool arguments must be a JSON object."),
    ("recall", {"limit": "ten"}, "limit", "limit must be of type integer."),
    (
        "recall",
        {"type": "opinion"},
        "type",
        "type must be one of: guardrail, fact, convention, instruction.",
    ),
    ("recall", {"topic": "x" * 201}, "topic", "topic is longer than 200 characters."),
    ("recall", {"limit": 0}, "limit", "limit must be at least 1."),
    ("recall", {"limit": 101}, "limit", "limit must be at most 100."),
    ("recall", {"type": "opinion", "limit": 0}, "limit", "limit must be at least 1."),
    ("recall", {"colour": "red"}, "colour", "colour is not an accepted field."),
    ("recall", {"limit": 5, "zebra": 1}, "zebra", "zebra is not an accepted field."),
    ("remember", {"text": "x"}, "type", "type is required."),
    ("remember", {"type": "fact", "text": "   "}, "text", "text must not be blank."),
    ("save-session-summary", {"summary": ""}, "summary", "summary must not be empty."),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [TAKEAWAY] * 21},
        "takeaways",
        "takeaways has more than 20 items.",
    ),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": {"type": "fact"}},
        "takeaways",
        "takeaways must be of type array.",
    ),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [TAKEAWAY, {"type": "fact"}]},
        "takeaways/1/text",
        "takeaways/1/text is required.",
    ),
    (
        "save-session-summary",
        {"summary": "ok", "takeaways": [{**TAKEAWAY, "colour": "red"}]},
        "takeaways/0/colour",
        "takeaways/0/colour is not an accepted field.",
    ),
]


RULES = {
    "type": "object",
    "properties": {
        "password": {"type": "string", "minLength": 8},
        "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "slug": {"type": "string", "pattern": "^[a-z-]+$", "description": "lower-case words"},
    },
}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"password": "short"}, "password must be at least 8 characters."),
        ({"code": "ab"}, "code must match the pattern ^[A-Z]{3}$."),
        ({"slug": "Not A Slug"}, "slug must match the pattern ^[a-z-]+$ (lower-case words)."),
    ],
)
def test_a_refused_input_is_told_the_rule_it_broke(
    memory: Any, editor: Any, arguments: dict[str, Any], message: str
) -> None:
    register(memory, "rules", RULES)
    error = error_of(memory, editor, "rules", arguments)
    assert (error.code, error.message) == ("invalid_params", message)


@pytest.mark.parametrize(("tool", "arguments", "field", "message"), MESSAGES)
def test_a_refused_input_is_told_which_field_and_why(
    memory: Any, editor: Any, tool: str, arguments: Any, field: str, message: str
) -> None:
    error = error_of(memory, editor, tool, arguments)
    assert (error.code, error.details, error.message) == (
        "invalid_params",
        {"field": field},
        message,
    )


LIMITS = {
    "type": "object",
    "properties": {
        "n": {"type": "integer", "multipleOf": 5},
        "word": {"const": "y" * 300},
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    },
    "maxProperties": 1,
}


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"n": 7}, "n"), ({"word": "no"}, "word"), ({"a": 1, "b": 2}, "arguments")],
)
def test_other_rules_quote_the_validator_cut_to_200_characters(
    memory: Any, editor: Any, arguments: dict[str, Any], field: str
) -> None:
    register(memory, "limits", LIMITS)
    [expected] = Draft202012Validator(LIMITS).iter_errors(arguments)
    error = error_of(memory, editor, "limits", arguments)
    assert (error.details, error.message) == (
        {"field": field},
        f"{field}: {expected.message[:200]}",
    )


SECRET_FIELDS = {
    "type": "object",
    "properties": {
        "username": {"type": "string"},
        "pin": {"type": "string", "writeOnly": True},
        "keys": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"label": {"type": "string"}, "value": {"writeOnly": True}},
            },
        },
    },
}


def test_write_only_fields_reach_the_tool_and_never_the_ledger(
    memory: Any, db: Any, editor: Any
) -> None:
    register(memory, "sign-up", SECRET_FIELDS)
    sent = {
        "username": "bob",
        "pin": "correct horse battery",
        "keys": [{"label": "ci", "value": "s3cret-value"}],
    }
    assert memory.call_tool("sign-up", sent, user=editor) == {"got": sent}
    [row] = db.session.query(LedgerEntry).all()
    assert row.arguments == {
        "username": "bob",
        "pin": "[hidden]",
        "keys": [{"label": "ci", "value": "[hidden]"}],
    }


def test_a_memory_tools_written_field_passes_the_text_rules(
    memory: Any, db: Any, editor: Any
) -> None:
    from chatmem.memory.models import Guidance

    error = error_of(memory, editor, "remember", {"type": "fact", "text": "Page\u200b 4."})
    assert error.to_dict() == {
        "code": "invalid_params",
        "message": "text holds invisible or control characters: U+200B ZERO WIDTH SPACE. "
        "Remove them: a person reviewing the text could not see them.",
        "field": "text",
        "code_points": ["U+200B"],
    }
    assert db.session.query(Guidance).count() == 0
    memory.call_tool("remember", {"type": "fact", "text": "Cafe\u0301 hours."}, user=editor)
    assert [g.text for g in db.session.query(Guidance)] == ["Café hours."]


# -- the text rules of written fields --------------------------------------------------

SECRET = "sk-ant-abcdefghijklmnopqrstuvwx"


def test_a_secret_in_guidance_text_is_refused_and_nothing_is_proposed(
    memory: Any, db: Any, editor: Any
) -> None:
    from chatmem.memory.models import Guidance

    error = error_of(memory, editor, "remember", {"type": "fact", "text": f"Deploy: {SECRET}"})
    assert error.to_dict() == {
        "code": "invalid_params",
        "message": "text holds what looks like a secret (anthropic_key). Secrets are never "
        "stored: remove it, or describe where the secret lives instead.",
        "field": "text",
        "kinds": ["anthropic_key"],
    }
    assert db.session.query(Guidance).count() == 0


def test_a_secret_in_a_summary_is_stored_redacted(memory: Any, db: Any, editor: Any) -> None:
    sid = memory.start_session(editor, "python")
    summary = {"summary": f"Rotated {SECRET} today."}
    assert memory.call_tool("save-session-summary", summary, user=editor, session_id=sid) == {
        "recorded": True,
        "proposed": 0,
    }
    db.session.expire_all()
    assert db.session.get(Session, sid).summary == "Rotated [redacted:anthropic_key] today."


@pytest.mark.parametrize(
    ("takeaway_text", "message", "extra"),
    [
        (
            "Page\u200b 4.",
            "takeaways/1/text holds invisible or control characters: U+200B ZERO WIDTH SPACE. "
            "Remove them: a person reviewing the text could not see them.",
            {"code_points": ["U+200B"]},
        ),
        (
            f"Deploy with {SECRET}",
            "takeaways/1/text holds what looks like a secret (anthropic_key). Secrets are never "
            "stored: remove it, or describe where the secret lives instead.",
            {"kinds": ["anthropic_key"]},
        ),
    ],
    ids=["invisible", "secret"],
)
def test_each_takeaway_passes_the_text_rules_by_its_own_name(
    memory: Any, db: Any, editor: Any, takeaway_text: str, message: str, extra: dict[str, Any]
) -> None:
    from chatmem.memory.models import Guidance

    sid = memory.start_session(editor, "python")
    takeaways = [TAKEAWAY, {"type": "fact", "text": takeaway_text}]
    with pytest.raises(ChatmemError) as caught:
        memory.call_tool(
            "save-session-summary",
            {"summary": "ok", "takeaways": takeaways},
            user=editor,
            session_id=sid,
        )
    assert caught.value.to_dict() == {
        "code": "invalid_params",
        "message": message,
        "field": "takeaways/1/text",
        **extra,
    }
    db.session.expire_all()
    assert db.session.query(Guidance).count() == 0
    assert db.session.get(Session, sid).summary is None


def test_the_text_rules_leave_the_callers_arguments_as_sent(memory: Any, editor: Any) -> None:
    from chatmem.memory.models import Guidance

    takeaway = {"type": "fact", "text": "Cafe\u0301 hours are 9 to 5."}
    arguments = {"summary": "Cafe\u0301.", "takeaways": [takeaway]}
    memory.call_tool("save-session-summary", arguments, user=editor)
    assert arguments == {
        "summary": "Cafe\u0301.",
        "takeaways": [{"type": "fact", "text": "Cafe\u0301 hours are 9 to 5."}],
    }
    proposed = memory.db.session.query(Guidance).one()
    assert proposed.text == "Café hours are 9 to 5."


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        (
            {"summary": "ok", "takeaways": ["Page\u200b 4."]},
            "takeaways/0",
            "takeaways/0 must be of type object.",
        ),
        (
            {"summary": "ok", "takeaways": "Page\u200b 4."},
            "takeaways",
            "takeaways must be of type array.",
        ),
        (
            {"summary": "ok", "takeaways": [{"type": "fact", "text": ["Page\u200b 4."]}]},
            "takeaways/0/text",
            "takeaways/0/text must be of type string.",
        ),
        (
            {"summary": [{"": "Page\u200b 4."}]},
            "summary",
            "summary must be of type string.",
        ),
    ],
    ids=["item not an object", "list sent as text", "item text a list", "text sent as a list"],
)
def test_a_written_field_of_the_wrong_type_is_told_its_type(
    memory: Any, db: Any, editor: Any, arguments: dict[str, Any], field: str, message: str
) -> None:
    error = error_of(memory, editor, "save-session-summary", arguments)
    assert (error.code, error.details, error.message) == (
        "invalid_params",
        {"field": field},
        message,
    )
    assert (db.session.query(Session).count(), db.session.query(LedgerEntry).count()) == (0, 0)


def test_each_list_field_keeps_its_own_secret_rule(memory: Any, db: Any, editor: Any) -> None:
    """A tool may keep some list items' text with secrets redacted, as summaries are."""
    from chatmem.tools import Tool

    def log_notes(notes: list[dict[str, str]]) -> dict[str, Any]:
        return {"notes": notes}

    schema = {
        "type": "object",
        "properties": {
            "notes": {
                "type": "array",
                "items": {"type": "object", "properties": {"text": {"type": "string"}}},
            }
        },
    }
    memory.registry.register(
        Tool(
            name="log-notes",
            description="Keep notes.",
            input_schema=schema,
            func=log_notes,
            written_text={"notes/*/text": "redact"},
        )
    )
    sent = {"notes": [{"text": "plain"}, {"text": f"key {SECRET}"}]}
    assert memory.call_tool("log-notes", sent, user=editor) == {
        "notes": [{"text": "plain"}, {"text": "key [redacted:anthropic_key]"}]
    }


# -- the read-only scope ------------------------------------------------------------------


def test_a_read_only_caller_may_read_and_may_not_write(
    memory: Any, db: Any, ctx: Any, editor: Any
) -> None:
    assert memory.call_tool("get-post", {"post_id": 7}, user=editor, read_only=True)["id"] == 7
    for name, arguments in [
        ("update-post", {"post_id": 7, "title": "changed"}),
        ("remember", {"type": "fact", "text": "x"}),
    ]:
        with pytest.raises(ChatmemError) as caught:
            memory.call_tool(name, arguments, user=editor, read_only=True)
        assert (caught.value.code, caught.value.details, caught.value.message) == (
            "forbidden",
            {"scope": "read-only", "tool": name},
            "This API token has the read-only scope: it may call read-only tools only, "
            f"and {name} changes things.",
        )
    db.session.expire_all()
    assert db.session.get(ctx.extensions["test_host"]["Post"], 7).title == "Hello"
    assert (db.session.query(Session).count(), db.session.query(LedgerEntry).count()) == (0, 0)


def test_a_caller_sees_exactly_the_tools_it_may_call(memory: Any, db: Any, users: Any) -> None:
    def names(user: Any, *, read_only: bool = False) -> list[str]:
        return [t.name for t in memory.visible_tools(user, read_only=read_only)]

    everything = names(users["admin"])
    editor = names(users["editor"])
    assert "recall" in editor and "update-post" in editor
    assert set(editor) <= set(everything)
    # A viewer lacks edit_posts: no tool that needs it is offered, read-only or not.
    assert names(users["viewer"]) == [
        t.name for t in memory.registry.tools() if memory.can(users["viewer"], t.capability)
    ]
    assert "recall" not in names(users["viewer"]) and "get-post" not in names(users["viewer"])
    # A read-only token sees the read-only tools its user may call, and nothing else.
    assert names(users["editor"], read_only=True) == [
        t.name for t in memory.registry.tools() if t.name in editor and t.read_only
    ]
    assert "update-post" not in names(users["editor"], read_only=True)
    assert names(None) == []


def test_a_client_field_named_context_is_refused_not_replaced(memory: Any, editor: Any) -> None:
    # `context` is the dispatcher's argument: a client's field of that name must
    # not reach the tool, nor be silently swapped for the call's context.
    @memory.tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
        read_only=True,
    )
    def echo(context: Any, name: str = "") -> dict[str, Any]:
        return {"name": name, "channel": context.channel}

    assert memory.call_tool("echo", {"name": "a"}, user=editor) == {
        "name": "a",
        "channel": "python",
    }
    error = error_of(memory, editor, "echo", {"name": "a", "context": "mine"})
    assert (error.code, error.details) == ("invalid_params", {"field": "context"})
