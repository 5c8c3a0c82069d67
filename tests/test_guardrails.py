"""Enforcement of approved block guardrails (SPEC §6), through the dispatcher."""

from __future__ import annotations

from typing import Any

import pytest

from chatmem import BlockedByMemory
from chatmem.memory import guidance
from chatmem.memory.block import active_entries
from chatmem.memory.guardrails import matching
from chatmem.memory.guardrails.index import GuardrailIndex, Rule
from chatmem.memory.guardrails.targets import canonical_id, parse_target, target_warning
from chatmem.memory.models import Guidance, LedgerEntry


def guard(db: Any, admin: Any, target: str, severity: str = "block", text: str = "") -> Any:
    return guidance.admin_add(
        db.session(),
        {
            "type": "guardrail",
            "text": text or f"guard {target}",
            "target": target,
            "severity": severity,
        },
        actor_id=str(admin.id),
    )


def refusal(memory: Any, user: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The details of the refusal this call gets (it must be refused)."""
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool(name, arguments, user=user)
    assert caught.value.code == "blocked_by_memory"
    return caught.value.details


def refused_by(memory: Any, user: Any, name: str, arguments: dict[str, Any]) -> int:
    """The id of the guardrail that refused this call."""
    return int(refusal(memory, user, name, arguments)["guidance_id"])


def title_of(db: Any, app: Any, post_id: int) -> str:
    return db.session.get(app.extensions["test_host"]["Post"], post_id).title


def ledger(db: Any) -> list[tuple[str, str]]:
    return [(e.tool, e.outcome) for e in db.session.query(LedgerEntry).order_by(LedgerEntry.id)]


def with_link_tool(memory: Any) -> None:
    """A host tool with both id inputs: `post_id` an integer, `id` of any JSON type."""

    @memory.tool(
        name="link-posts",
        description="Link post_id to id.",
        input_schema={
            "type": "object",
            "properties": {"post_id": {"type": "integer"}, "id": {}},
            "required": ["post_id"],
        },
    )
    def link_posts(post_id: int, id: Any = None) -> dict[str, Any]:
        return {"linked": [post_id, id]}


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
    rule = guard(db, admin, target)
    assert refused_by(memory, editor, "create-user", {"username": "eve"}) == rule.id
    # The full name of the tool is refused the same way.
    assert refused_by(memory, editor, "chatmem/create-user", {"username": "eve"}) == rule.id
    assert memory.call_tool("update-post", {"post_id": 7, "title": "ok"}, user=editor) == {
        "id": 7,
        "title": "ok",
    }
    assert ledger(db) == [("create-user", "blocked")] * 2 + [("update-post", "ok")]


@pytest.mark.parametrize("target", ["tool:updatepost", "UpdatePost", "tool:UPDATEPOST"])
def test_a_tool_registered_with_capitals_is_refused_by_its_name_in_any_case(
    memory: Any, db: Any, admin: Any, editor: Any, target: str
) -> None:
    """Targets are case-insensitive (`CREATE-USER` above), and so is the tool they name:
    a host tool registered as `UpdatePost` is refused by `tool:updatepost`."""

    @memory.tool(
        name="UpdatePost",
        description="Rename a post.",
        input_schema={"type": "object", "properties": {"title": {"type": "string"}}},
    )
    def update_post_camel(title: str = "") -> dict[str, Any]:
        return {"title": title}

    rule = guard(db, admin, target)
    assert refused_by(memory, editor, "UpdatePost", {"title": "x"}) == rule.id
    assert refused_by(memory, editor, "chatmem/UpdatePost", {"title": "x"}) == rule.id
    assert ledger(db) == [("UpdatePost", "blocked")] * 2


def test_id_key_and_other_posts(memory: Any, db: Any, ctx: Any, admin: Any, editor: Any) -> None:
    rule = guard(db, admin, "id:42")
    assert refused_by(memory, editor, "update-post", {"post_id": "42", "title": "x"}) == rule.id
    memory.call_tool("update-post", {"post_id": 7, "title": "fine"}, user=editor)
    assert (title_of(db, ctx, 7), title_of(db, ctx, 42)) == ("fine", "Checkout")


def test_post_type_resolves_through_the_host(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
    rule = guard(db, admin, "post_type:Header_Footer")
    with pytest.raises(BlockedByMemory) as caught:
        memory.call_tool("update-post", {"post_id": "003", "title": "hacked"}, user=editor)
    assert caught.value.message == (
        f"update-post was refused by project memory guardrail #{rule.id}: "
        "guard post_type:Header_Footer"
    )
    assert caught.value.details == {
        "guidance_id": rule.id,
        "title": "guard post_type:Header_Footer",
        "target": "post_type:Header_Footer",
    }
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
    assert memory.call_tool("update-post", {"post_id": 42, "title": "t"}, user=editor) == {
        "id": 42,
        "title": "t",
    }
    assert memory.call_tool("create-user", {"username": "u"}, user=editor) == {"created": "u"}
    assert ledger(db) == [("update-post", "ok"), ("create-user", "ok")]
    assert target_warning(target, "chatmem", ["recall"]) == "this target never matches"


def test_inert_guardrails_do_not_block(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
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
    assert title_of(db, ctx, 42) == "a"
    guidance.approve(db.session(), proposed["id"], actor_id=aid)
    assert (
        refused_by(memory, editor, "update-post", {"post_id": 42, "title": "b"}) == proposed["id"]
    )
    assert title_of(db, ctx, 42) == "a"
    guidance.set_enabled(db.session(), proposed["id"], False, actor_id=aid)
    memory.call_tool("update-post", {"post_id": 42, "title": "c"}, user=editor)  # switched off
    assert title_of(db, ctx, 42) == "c"
    guidance.set_enabled(db.session(), proposed["id"], True, actor_id=aid)
    guidance.trash(db.session(), proposed["id"], actor_id=aid)
    memory.call_tool("update-post", {"post_id": 42, "title": "d"}, user=editor)  # trashed
    assert title_of(db, ctx, 42) == "d"
    assert [outcome for _tool, outcome in ledger(db)[1:]] == ["ok", "blocked", "ok", "ok"]


def test_warn_severity_and_other_types_are_advisory(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_id:42", severity="warn")
    guard(db, admin, "post_id:42", severity="info", text="info on 42")
    guidance.admin_add(
        db.session(),
        {"type": "fact", "text": "f", "target": "post_id:42", "severity": "block"},
        actor_id="1",
    )
    memory.call_tool("update-post", {"post_id": 42, "title": "allowed"}, user=editor)
    assert title_of(db, ctx, 42) == "allowed"
    assert ledger(db) == [("update-post", "ok")]


def test_read_only_tools_are_never_blocked(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    guard(db, admin, "get-post")
    guard(db, admin, "post_id:42")
    assert memory.call_tool("get-post", {"post_id": 42}, user=editor)["id"] == 42
    assert target_warning("get-post", "chatmem", ["get-post", "recall"]) == (
        "this tool is read-only: the guardrail never blocks"
    )
    assert ledger(db) == []


def test_guardrail_on_a_memory_tool_applies_too(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    rule = guard(db, admin, "remember")
    assert refused_by(memory, editor, "remember", {"type": "fact", "text": "x"}) == rule.id
    assert db.session.query(Guidance).count() == 1  # only the guardrail itself


def test_parse_and_canonical_helpers() -> None:
    assert parse_target("post_id: 042", "chatmem").value == "42"
    assert parse_target("chatmem/Create-User", "chatmem").value == "create-user"
    assert parse_target("elsewhere/create-user", "chatmem").key is None
    assert parse_target("chatmem/other/create-user", "chatmem").key is None
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


def test_a_refusal_names_tool_rules_then_post_ids_then_post_types(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    by_type = guard(db, admin, "post_type:page")
    by_id = guard(db, admin, "post_id:42")
    by_tool = guard(db, admin, "update-post")  # approved last, named first
    call = {"post_id": 42, "title": "x"}
    assert refused_by(memory, editor, "update-post", call) == by_tool.id
    guidance.set_enabled(db.session(), by_tool.id, False, actor_id=str(admin.id))
    assert refused_by(memory, editor, "update-post", call) == by_id.id
    guidance.set_enabled(db.session(), by_id.id, False, actor_id=str(admin.id))
    assert refused_by(memory, editor, "update-post", call) == by_type.id


def test_within_a_kind_the_oldest_approval_is_named(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    proposals = [
        memory.call_tool(
            "remember",
            {"type": "guardrail", "text": text, "target": target, "severity": "block"},
            user=editor,
        )["id"]
        for text, target in [
            ("checkout id first", "post_id:42"),
            ("checkout id second", "id:042"),
            ("users first", "create-user"),
            ("users second", "tool:chatmem/create-user"),
            ("pages first", "post_type:page"),
            ("pages second", "post_type:PAGE"),
        ]
    ]
    for entry_id in reversed(proposals):  # approved in the reverse of creation order
        guidance.approve(db.session(), entry_id, actor_id=str(admin.id))
    assert refused_by(memory, editor, "update-post", {"post_id": 42, "title": "x"}) == proposals[1]
    assert refused_by(memory, editor, "create-user", {"username": "u"}) == proposals[3]
    guidance.set_enabled(db.session(), proposals[1], False, actor_id=str(admin.id))
    guidance.set_enabled(db.session(), proposals[0], False, actor_id=str(admin.id))
    assert refused_by(memory, editor, "update-post", {"post_id": 42, "title": "x"}) == proposals[5]
    for entry_id in (proposals[5], proposals[3]):
        guidance.set_enabled(db.session(), entry_id, False, actor_id=str(admin.id))
    assert refused_by(memory, editor, "update-post", {"post_id": 42, "title": "x"}) == proposals[4]
    assert refused_by(memory, editor, "create-user", {"username": "u"}) == proposals[2]


def test_post_id_is_checked_before_id(memory: Any, db: Any, admin: Any, editor: Any) -> None:
    with_link_tool(memory)
    older = guard(db, admin, "post_id:42")
    newer = guard(db, admin, "post_id:7")
    assert refused_by(memory, editor, "link-posts", {"post_id": 7, "id": 42}) == newer.id
    assert refused_by(memory, editor, "link-posts", {"post_id": 3, "id": 42}) == older.id
    header = guard(db, admin, "post_type:header_footer")
    guidance.set_enabled(db.session(), older.id, False, actor_id=str(admin.id))
    guidance.set_enabled(db.session(), newer.id, False, actor_id=str(admin.id))
    assert refused_by(memory, editor, "link-posts", {"post_id": 7, "id": 3}) == header.id


@pytest.mark.parametrize("spelling", [42.0, " 42 ", "+42", " +042 ", "042"])
def test_an_id_of_any_type_is_canonicalised_by_the_matcher(
    memory: Any, db: Any, admin: Any, editor: Any, spelling: Any
) -> None:
    """`id` is not integer-typed, so it reaches the matcher as sent."""
    with_link_tool(memory)
    rule = guard(db, admin, "post_id:42")
    assert refused_by(memory, editor, "link-posts", {"post_id": 7, "id": spelling}) == rule.id


@pytest.mark.parametrize("spelling", [42.5, "4 2", "", True, None, [42], "-42"])
def test_what_is_not_post_42_is_not_refused_as_post_42(
    memory: Any, db: Any, admin: Any, editor: Any, spelling: Any
) -> None:
    with_link_tool(memory)
    guard(db, admin, "post_id:42")
    call = {"post_id": 7, "id": spelling}
    assert memory.call_tool("link-posts", call, user=editor) == {"linked": [7, spelling]}


def test_a_resolver_outage_refuses_the_call_naming_no_guardrail(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_type:page")

    def broken(post_id: Any) -> str | None:
        raise RuntimeError("the posts database is down")

    memory.post_type_resolver(broken)
    details = refusal(memory, editor, "update-post", {"post_id": 7, "title": "x"})
    assert details == {"guidance_id": None, "title": "post type check failed"}
    assert title_of(db, ctx, 7) == "Hello"


def test_a_resolver_outage_is_logged_naming_the_refused_tool_with_its_error(
    memory: Any, db: Any, admin: Any, editor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    guard(db, admin, "post_type:page")

    def broken(post_id: Any) -> str | None:
        raise RuntimeError("the posts database is down")

    memory.post_type_resolver(broken)
    with caplog.at_level("ERROR", logger="chatmem"), pytest.raises(BlockedByMemory) as refused:
        memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor)
    assert refused.value.message == (
        "update-post was refused: the post type could not be checked against the site's guardrails."
    )
    [record] = [r for r in caplog.records if "resolver" in r.getMessage()]
    assert record.getMessage() == "post type resolver failed; refusing update-post"
    assert record.exc_info is not None
    assert "the posts database is down" in caplog.text


def test_the_resolver_gets_numeric_ids_as_integers(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_type:page")
    asked: list[Any] = []

    def resolver(post_id: Any) -> str | None:
        asked.append(post_id)
        return "page" if post_id == 42 else None

    memory.post_type_resolver(resolver)
    assert refused_by(memory, editor, "update-post", {"post_id": "042", "title": "x"}) > 0
    with_link_tool(memory)
    assert memory.call_tool("link-posts", {"post_id": 7, "id": "slug"}, user=editor)
    assert asked == [42, 7, "slug"]


@pytest.mark.parametrize("target", [None, "", "  ", "chatmem/other/create-user", "tool:a/b"])
def test_the_screen_warns_about_targets_that_can_never_match(target: str | None) -> None:
    assert target_warning(target, "chatmem", ["recall"]) == "this target never matches"


def test_a_text_id_is_compared_whole_colons_included(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    with_link_tool(memory)
    rule = guard(db, admin, "id:urn:post:42")
    assert refused_by(memory, editor, "link-posts", {"post_id": 7, "id": "urn:post:42"}) == rule.id
    assert memory.call_tool("link-posts", {"post_id": 7, "id": "post:42"}, user=editor)


def test_the_resolver_is_asked_only_when_a_post_type_guardrail_exists(
    memory: Any, db: Any, ctx: Any, admin: Any, editor: Any
) -> None:
    guard(db, admin, "post_id:42")

    def broken(post_id: Any) -> str | None:
        raise RuntimeError("the posts database is down")

    memory.post_type_resolver(broken)
    memory.call_tool("update-post", {"post_id": 7, "title": "fine"}, user=editor)
    assert title_of(db, ctx, 7) == "fine"


def test_a_post_of_no_known_type_matches_no_post_type_guardrail(
    memory: Any, db: Any, admin: Any, editor: Any
) -> None:
    with_link_tool(memory)
    guard(db, admin, "post_type:xxxx")  # what a missing type must never be taken for
    assert memory.call_tool("link-posts", {"post_id": 999}, user=editor) == {"linked": [999, None]}


def test_the_index_counts_the_enforced_guardrails(db: Any, admin: Any, editor: Any) -> None:
    for target in ("create-user", "post_id:42", "post_id:42", "post_type:page"):
        guard(db, admin, target)
    guard(db, admin, "post_id:7", severity="warn")
    guard(db, admin, "nowhere:7")
    index = GuardrailIndex.build(active_entries(db.session()), "chatmem")
    assert len(index) == 4
    assert len(GuardrailIndex.build([], "chatmem")) == 0


def test_the_index_keeps_each_rules_severity(db: Any, admin: Any) -> None:
    held = guard(db, admin, "post_id:3", severity="ask")
    refused = guard(db, admin, "create-user")
    index = GuardrailIndex.build(active_entries(db.session()), "chatmem")
    ask_rule = matching.match(index, "update-post", {"post_id": 3}, None)
    block_rule = matching.match(index, "create-user", {}, None)
    assert ask_rule == Rule(held.id, held.title, "post_id:3", "ask")
    assert block_rule == Rule(refused.id, refused.title, "create-user", "block")


@pytest.mark.parametrize(
    ("target", "indexed"),
    [
        ("post_id:3", True),
        ("create-user", True),
        ("post_type:page", True),
        ("colour:red", False),
        ("", False),
        ("other/create-user", False),
    ],
)
def test_adding_a_rule_says_whether_its_target_can_ever_match(target: str, indexed: bool) -> None:
    index = GuardrailIndex()
    assert index.add(Rule(1, "t", target), "chatmem") is indexed
    assert len(index) == (1 if indexed else 0)
