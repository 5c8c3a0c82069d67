"""The demo story with a real LLM SDK (OpenAI, Anthropic) against the local fake.

The model's tool calls must go through the same path as everyone's: a proposal
waits for approval, a guardrail refuses the header edit before it runs, the
model is shown the refusal, and the session's digest says what really happened.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask

from tests.demo_client import DemoClient, tool_results
from tests.demo_story import (
    FACT,
    FIRST_POST,
    GUARDRAIL,
    HEADER,
    add_guardrail,
    approve,
    assert_digest,
    post_title,
)
from tests.fake_llm import (
    MESSAGES,
    RESPONSES,
    FakeLLM,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_call,
)
from tests.hostapp import reconfigure

pytestmark = pytest.mark.usefixtures("provider_env")


@dataclass(frozen=True)
class Flavour:
    """One vendor's wire format, as the fake sees it."""

    provider: str
    path: str
    text: Callable[..., dict[str, Any]]
    tool_call: Callable[..., dict[str, Any]]
    system_key: str

    def tool_names(self, body: dict[str, Any]) -> set[str]:
        return {tool["name"] for tool in body.get("tools", [])}

    def tool_outputs(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The tool results the model was sent back, decoded."""
        if self.path == RESPONSES:
            items = [i for i in body["input"] if i.get("type") == "function_call_output"]
            return [json.loads(i["output"]) for i in items]
        blocks = [
            block
            for message in body["messages"]
            if isinstance(message["content"], list)
            for block in message["content"]
        ]
        return [json.loads(b["content"]) for b in blocks if b.get("type") == "tool_result"]


OPENAI = Flavour("openai", RESPONSES, openai_text, openai_tool_call, "instructions")
ANTHROPIC = Flavour("anthropic", MESSAGES, anthropic_text, anthropic_tool_use, "system")


@pytest.fixture(params=[OPENAI, ANTHROPIC], ids=lambda f: f.provider)
def flavour(
    request: pytest.FixtureRequest,
    demo_app: Flask,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
) -> Flavour:
    """The demo app talking to the fake through the vendor's own SDK."""
    chosen: Flavour = request.param
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-demo-0123456789")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-demo-0123456789")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    reconfigure(demo_app, CHATMEM_PROVIDER=chosen.provider, CHATMEM_PROVIDER_MAX_RETRIES=0)
    return chosen


def test_the_story_with_an_llm(flavour: Flavour, demo_app: Flask, fake_llm: FakeLLM) -> None:
    editor = DemoClient(demo_app, "editor")
    first = editor.new_conversation()

    # The model proposes guidance; it is pending, so nothing changes yet.
    remember = {"type": "fact", "text": FACT}
    fake_llm.enqueue(flavour.path, body=flavour.tool_call("remember", remember, call_id="c1"))
    fake_llm.enqueue(flavour.path, body=flavour.text("I proposed that for review."))
    added = editor.say(first["id"], "Please remember that checkout is page 4.")
    [card] = tool_results(added)
    assert card["name"] == "remember" and card["outcome"] == "ok"
    assert card["result"]["status"] == "pending"
    assert added[-1] == {**added[-1], "role": "assistant", "content": "I proposed that for review."}

    opening = fake_llm.requests_to(flavour.path)[0].body
    assert opening[flavour.system_key] == first["system_context"]
    offered = flavour.tool_names(opening)
    assert {"recall", "remember", "save-session-summary", "list-posts", "get-post"} <= offered
    assert {"create-post", "update-post", "delete-post"} <= offered
    assert "create-user" not in offered, "an editor is not offered an admin-only tool"
    assert FACT not in opening[flavour.system_key]

    approve(demo_app, card["result"]["id"])
    add_guardrail(demo_app)

    second = editor.new_conversation()
    assert FACT in second["system_context"]
    assert "Never edit the site header" in second["system_context"]
    assert (
        FACT
        not in editor.client.get(f"/chat/api/conversations/{first['id']}").json["system_context"]
    ), "a conversation under way keeps the memory it started with"

    # The model tries the header (refused before it runs), then a normal post.
    fake_llm.enqueue(
        flavour.path,
        body=flavour.tool_call("update-post", {"post_id": HEADER, "title": "Hacked"}, call_id="c2"),
    )
    fake_llm.enqueue(
        flavour.path,
        body=flavour.tool_call(
            "update-post", {"post_id": str(FIRST_POST), "title": "Hello again"}, call_id="c3"
        ),
    )
    fake_llm.enqueue(flavour.path, body=flavour.text("The header is protected; I renamed post 1."))
    before = len(fake_llm.requests_to(flavour.path))
    added = editor.say(second["id"], "Rename the site header and the welcome post.")

    blocked, done = tool_results(added)
    assert blocked["outcome"] == "blocked"
    assert blocked["result"]["error"]["code"] == "blocked_by_memory"
    assert blocked["result"]["error"]["title"] == GUARDRAIL["title"]
    assert done["outcome"] == "ok" and done["result"]["title"] == "Hello again"
    assert post_title(demo_app, HEADER) == "Site header"
    assert post_title(demo_app, FIRST_POST) == "Hello again"

    calls = [r.body for r in fake_llm.requests_to(flavour.path)[before:]]
    assert len(calls) == 3
    assert FACT in calls[0][flavour.system_key]
    seen = flavour.tool_outputs(calls[1])
    assert seen[-1]["error"]["code"] == "blocked_by_memory", "the model is told it was refused"
    assert flavour.tool_outputs(calls[2])[-1]["title"] == "Hello again"

    assert_digest(demo_app, editor.close(second["id"]), second["id"])


def test_a_provider_failure_is_a_reply_not_a_500(
    flavour: Flavour, demo_app: Flask, fake_llm: FakeLLM
) -> None:
    fake_llm.enqueue_error(flavour.path, 500, "upstream exploded")
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()
    added = editor.say(conversation["id"], "Hello?")
    assert [m["role"] for m in added] == ["user", "notice"]
    assert "could not answer" in added[1]["content"]
    assert "sk-test" not in added[1]["content"] and "sk-ant" not in added[1]["content"]


def test_a_connection_error_reads_as_one_sentence(
    flavour: Flavour, demo_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDKs' "Connection error." ended the notice with ".."."""
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    editor = DemoClient(demo_app, "editor")
    [_, notice] = editor.say(editor.new_conversation()["id"], "Hello?")
    text = notice["content"]
    assert text.startswith("The AI model could not answer (connection): ")
    # The SDK's own words change between its releases ("Connection error." in one,
    # "Connection to 127.0.0.1:N failed: ..." in a later one): pin the sentence, not them.
    assert re.search(r"could not connect: \S.*[^.]\. Please try again in a moment\.$", text), text
    assert ".." not in text


def test_the_loop_stops_at_the_step_limit(
    flavour: Flavour, demo_app: Flask, fake_llm: FakeLLM
) -> None:
    demo_app.config["DEMO_MAX_TOOL_STEPS"] = 2
    for n in range(2):
        fake_llm.enqueue(flavour.path, body=flavour.tool_call("list-posts", {}, call_id=f"l{n}"))
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()
    added = editor.say(conversation["id"], "List the posts forever.")
    assert len(tool_results(added)) == 2
    assert added[-1]["role"] == "notice" and "stopped after 2" in added[-1]["content"]
    assert len(fake_llm.requests_to(flavour.path)) == 2
