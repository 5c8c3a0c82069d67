"""Guardrails on the host's own labels (`label:author:john`), from its `target_labels` hook.

The test host's posts have an author, a forum and a topic, as a forum's
would: one call touches all three, and a guardrail on any one of them
refuses it. Enforcement, the dry run, hit counts and upkeep's "target gone"
all read the same hook; the demo app checks every channel.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import select

from chatmem import ApprovalRequired, BlockedByMemory
from chatmem.memory import guidance
from chatmem.memory.guardrails.targets import canonical_label, parse_target, target_warning
from chatmem.memory.models import Guidance, LedgerEntry
from tests.channels import MCP, REST, Channels
from tests.screen_helpers import SCREEN, propose
from tests.test_upkeep import squash

# post id -> (author, forum, topic) in the test host.
POSTS = {7: ("john", 2, 14), 42: ("mary", 2, 15), 3: ("john", 5, 16)}


def labels_of_posts(tool: str, arguments: dict[str, Any]) -> list[str]:
    if "post_id" not in arguments:
        return []
    author, forum, topic = POSTS[int(arguments["post_id"])]
    return [f"author:{author}", f"forum:{forum}", f"Topic:{topic:03d}"]


@pytest.fixture
def labelled(memory: Any) -> Any:
    memory.target_labels(labels_of_posts)
    return memory


def guard(db: Any, target: str, severity: str = "block") -> Guidance:
    values = {"type": "guardrail", "text": f"Guard {target}.", "target": target}
    return guidance.admin_add(db.session(), {**values, "severity": severity}, actor_id="1")


def edit(memory: Any, editor: Any, post_id: int) -> dict[str, Any]:
    """The call's result, or the refusal's details under `refused`."""
    try:
        arguments = {"post_id": post_id, "title": "x"}
        return dict(memory.call_tool("update-post", arguments, user=editor))
    except BlockedByMemory as error:
        return {"refused": error.details}


def test_labels_are_read_in_one_spelling() -> None:
    assert canonical_label(" Topic:014 ") == "topic:14"
    assert canonical_label("author:John") == "author:john"
    # Only the first colon splits: the id rule reads what follows it whole.
    assert canonical_label("forum:eu:042") == "forum:eu:042"
    assert [canonical_label(v) for v in ("", ":", "topic:", True, None)] == [None] * 5
    assert parse_target("label:Forum:02", "chatmem").value == "forum:2"
    assert parse_target("label:", "chatmem").key is None


def test_a_lone_string_from_the_hook_is_one_label(memory: Any, db: Any, editor: Any) -> None:
    memory.target_labels(lambda tool, arguments: "author:jane")
    guard(db, "label:author:john")
    assert edit(memory, editor, 7) == {"id": 7, "title": "x"}
    jane = guard(db, "label:author:jane")
    assert edit(memory, editor, 7)["refused"]["guidance_id"] == jane.id


def test_a_guardrail_on_any_label_of_a_call_refuses_it(labelled: Any, db: Any, editor: Any) -> None:
    author = guard(db, "label:author:john")
    topic = guard(db, "label:topic:15")
    assert edit(labelled, editor, 7)["refused"]["guidance_id"] == author.id
    assert edit(labelled, editor, 3)["refused"]["target"] == "label:author:john"
    assert edit(labelled, editor, 42)["refused"]["guidance_id"] == topic.id
    forum = guard(db, "label:forum:5")
    # Two rules match post 3: the older one answers, as with every other target.
    assert edit(labelled, editor, 3)["refused"]["guidance_id"] == author.id
    assert forum.id > author.id


def test_label_targets_sit_beside_post_targets(labelled: Any, db: Any, editor: Any) -> None:
    by_post = guard(db, "post_id:42")
    by_label = guard(db, "label:forum:5")
    assert edit(labelled, editor, 42)["refused"]["guidance_id"] == by_post.id
    assert edit(labelled, editor, 3)["refused"]["guidance_id"] == by_label.id
    assert edit(labelled, editor, 7) == {"id": 7, "title": "x"}


def test_a_hook_that_fails_refuses_the_call_and_is_not_asked_without_label_rules(
    ctx: Flask, memory: Any, db: Any, editor: Any
) -> None:
    asked = []

    @memory.target_labels
    def broken(tool: str, arguments: dict[str, Any]) -> list[str]:
        asked.append(tool)
        raise RuntimeError("the forum database is down")

    guard(db, "post_id:999")
    assert edit(memory, editor, 7) == {"id": 7, "title": "x"}
    assert asked == []
    guard(db, "label:author:john")
    assert edit(memory, editor, 7)["refused"] == {
        "guidance_id": None,
        "title": "target labels check failed",
    }
    assert db.session.get(ctx.extensions["test_host"]["Post"], 7).title == "x"  # the first edit
    outcomes = list(db.session.scalars(select(LedgerEntry.outcome).order_by(LedgerEntry.id)))
    assert outcomes == ["ok", "blocked"]


def test_a_failing_hook_is_logged_naming_the_refused_tool_with_its_error(
    memory: Any, db: Any, editor: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The caller is told why; the operator's log says which call, with the hook's own error."""

    @memory.target_labels
    def broken(tool: str, arguments: dict[str, Any]) -> list[str]:
        raise RuntimeError("the forum database is down")

    guard(db, "label:author:john")
    with caplog.at_level("ERROR", logger="chatmem"), pytest.raises(BlockedByMemory) as refused:
        memory.call_tool("update-post", {"post_id": 7, "title": "x"}, user=editor)
    assert refused.value.message == (
        "update-post was refused: its target labels could not be checked against the "
        "site's guardrails."
    )
    [record] = [r for r in caplog.records if "target_labels" in r.getMessage()]
    assert record.getMessage() == "target_labels failed; refusing update-post"
    assert record.exc_info is not None
    assert "the forum database is down" in caplog.text


def test_dry_run_and_hits_count_label_matches(labelled: Any, db: Any, editor: Any) -> None:
    for post_id in (7, 42, 3, 7):
        edit(labelled, editor, post_id)
    run = labelled.dry_run("label:author:john")
    assert (run.count, run.summary()) == (3, "would have refused 3 calls in the last 30 days")
    assert [call.arguments["post_id"] for call in run.calls] == [7, 3, 7]
    assert labelled.dry_run("label:topic:15").count == 1
    assert labelled.dry_run("label:author:nobody").count == 0
    rule = guard(db, "label:author:john")
    edit(labelled, editor, 3)
    db.session.refresh(rule)
    assert rule.hits == 1


def test_without_the_hook_a_label_target_never_matches_and_says_so(
    memory: Any, db: Any, editor: Any
) -> None:
    guard(db, "label:author:john")
    assert edit(memory, editor, 7) == {"id": 7, "title": "x"}
    assert memory.dry_run("label:author:john").summary() == "this target never matches"
    warning = target_warning("label:author:john", "chatmem", [], labels_known=False)
    assert warning == (
        "this target never matches: the site gives tool calls no labels (target_labels)"
    )
    assert target_warning("label:author:john", "chatmem", [], labels_known=True) is None
    assert target_warning("label:author:john", "chatmem", []) is None  # known unless told


def test_upkeep_flags_a_label_whose_object_is_gone(labelled: Any, db: Any) -> None:
    topics = {"topic:14", "topic:15", "topic:16"}
    labelled.label_exists(lambda label: label in topics)
    gone = guard(db, "label:Topic:099")
    live = guard(db, "label:topic:14")
    done = labelled.upkeep()
    assert done.flagged == 1
    db.session.refresh(gone)
    db.session.refresh(live)
    assert gone.target_gone_at is not None and live.target_gone_at is None
    topics.add("topic:99")
    assert labelled.upkeep().cleared == 1


# -- every channel, on the demo app ------------------------------------------------


@pytest.fixture
def channels(demo_app: Flask) -> Iterator[Channels]:
    """The demo with a labels hook: its header belongs to the author "john"."""
    from chatmem.demo.extensions import memory

    before = memory._target_labels
    # The demo's ChatMemory outlives each app, which may have served: set the slot itself.
    memory._target_labels = lambda tool, args: ["author:john"] if tool == "update-post" else []
    try:
        yield Channels(demo_app)
    finally:
        memory._target_labels = before


def test_a_guardrail_on_a_host_label_refuses_the_call_on_every_channel(
    channels: Channels,
) -> None:
    added = channels.screen_add(
        {"type": "guardrail", "text": "Not John's posts.", "target": "label:author:john"}
        | {"severity": "block"}
    )
    rule = added["entry"]["id"]
    arguments = {"post_id": 1, "title": "Sale!"}

    def rest() -> dict[str, Any]:
        response = channels.http.post(
            f"{REST}/update-post", json=arguments, headers=channels.auth()
        )
        assert response.status_code == 403
        return dict(response.json)

    def mcp() -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
        body["params"] = {"name": "update-post", "arguments": arguments}
        result = channels.http.post(MCP, json=body, headers=channels.auth()).json["result"]
        assert result["isError"] is True
        return dict(result["structuredContent"])

    answers = {
        "rest": rest(),
        "mcp": mcp(),
        "python": channels.python("update-post", arguments),
        "chat": channels.chat("update-post", arguments),
    }
    for name, answer in answers.items():
        error = answer["error"]
        assert error["code"] == "blocked_by_memory", name
        assert f"#{rule}" in error["message"], name


def test_an_ask_guardrail_on_a_label_holds_the_call(labelled: Any, db: Any, editor: Any) -> None:
    rule = guard(db, "label:forum:5", "ask")
    with pytest.raises(ApprovalRequired) as held:
        labelled.call_tool("update-post", {"post_id": 3, "title": "x"}, user=editor)
    assert held.value.details["guidance_id"] == rule.id
    assert edit(labelled, editor, 7) == {"id": 7, "title": "x"}


@pytest.fixture
def labelled_app(app: Flask) -> Flask:
    """The host app with the labels hook, registered before it serves (before `client`)."""
    app.extensions["test_host"]["memory"].target_labels(labels_of_posts)
    return app


def test_the_screen_dry_runs_a_proposed_label_guardrail_and_warns_without_the_hook(
    labelled_app: Flask, client: Any, editor: Any
) -> None:
    app = labelled_app
    memory = app.extensions["test_host"]["memory"]
    with app.app_context():
        for post_id in (7, 3, 42):
            edit(memory, editor, post_id)
        propose(
            memory,
            "Never edit John's posts.",
            type="guardrail",
            target="label:author:john",
            severity="block",
        )
        propose(
            memory, "Ask about forum 2.", type="guardrail", target="label:forum:2", severity="ask"
        )
        memory.db.session.remove()
    page = squash(client.get(f"{SCREEN}?tab=pending").get_data(as_text=True))
    assert "would have refused 2 calls in the last 30 days" in page
    assert "never matches" not in page
    memory._target_labels = None
    page = squash(client.get(f"{SCREEN}?tab=pending").get_data(as_text=True))
    assert "the site gives tool calls no labels" in page


def test_a_hook_that_says_what_it_reads_gets_only_that_and_is_asked_once_per_value(
    memory: Any, db: Any, editor: Any
) -> None:
    seen: list[dict[str, Any]] = []

    @memory.target_labels(reads=("post_id",))
    def labels(tool: str, arguments: dict[str, Any]) -> list[str]:
        seen.append(dict(arguments))
        return labels_of_posts(tool, arguments)

    for post_id, title in ((7, "a"), (7, "b"), (7, "c"), (42, "d")):
        memory.call_tool("update-post", {"post_id": post_id, "title": title}, user=editor)
    run = memory.dry_run("label:author:john")
    assert run.count == 3
    assert sorted(a["post_id"] for a in seen) == [7, 42]  # two values, not four calls
    assert all(set(a) == {"post_id"} for a in seen)
    guard(db, "label:author:john")
    assert edit(memory, editor, 7)["refused"]["target"] == "label:author:john"
    assert seen[-1] == {"post_id": 7}
