"""The screen and chat polish of the newcomer issue, as a user sees it over HTTP
against the demo: long entries, `/help`, titles, the memory a conversation
started with, the session page's link to its conversation, the demo's own
layout around the Memory screen.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from flask import Flask

from chatmem.demo.extensions import memory
from tests.demo_client import DemoClient
from tests.demo_story import approve

LONG = "Checkout " + " ".join(f"step{i}" for i in range(60)) + " ends here."


def remember(client: DemoClient, conversation_id: int, text: str) -> int:
    messages = client.say(
        conversation_id, "/tool remember " + json.dumps({"type": "fact", "text": text})
    )
    return int(next(m for m in messages if m["role"] == "tool")["result"]["id"])


def test_a_long_entry_is_a_short_heading_over_its_full_text(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    entry = remember(editor, editor.new_conversation()["id"], LONG)
    admin = DemoClient(demo_app, "admin")
    page = admin.client.get("/chatmem/memory?tab=pending").get_data(as_text=True)
    row = page.split(f'id="entry-{entry}"', 1)[1].split("</li>", 1)[0]
    heading = re.search(r'<h3 class="cm-title">(.*?)</h3>', row, re.S)
    assert heading is not None
    assert heading[1].endswith("…") and len(heading[1]) <= 121
    assert LONG.startswith(heading[1][:-1].rstrip())
    assert f'<p class="cm-text">{LONG}</p>' in row, "the full text, once, under the heading"

    short = remember(editor, editor.new_conversation()["id"], "Checkout is page 4.")
    page = admin.client.get("/chatmem/memory?tab=pending").get_data(as_text=True)
    row = page.split(f'id="entry-{short}"', 1)[1].split("</li>", 1)[0]
    assert '<h3 class="cm-title">Checkout is page 4.</h3>' in row
    assert "cm-text" not in row, "a short text is the heading, not repeated"


def test_help_lists_the_tools_this_user_may_call_with_their_arguments(
    demo_app: Flask,
) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    [notice] = [m for m in editor.say(conversation, "/help") if m["role"] == "notice"]
    text = notice["content"]
    assert text.startswith("## Run a tool\n/tool <name> <json arguments>")
    sections = [line for line in text.splitlines() if line.startswith("## ")]
    assert sections == ["## Run a tool", "## Site tools", "## Project memory tools", "## Commands"]
    site, memory_tools = text.split("## Site tools\n", 1)[1].split("## Project memory tools\n")
    assert "- update-post {" in site and "- remember {" not in site
    assert memory_tools.startswith("- recall {") and "- remember {" in memory_tools
    assert "- update-post {post_id: integer, title?: string, content?: string}: Change" in text
    assert '- remember {type: "guardrail" | "fact" | "convention" | "instruction"' in text
    assert "limit?: integer" in text, "optional arguments are marked"
    assert "create-user" not in text, "only the tools this user may call"
    admin = DemoClient(demo_app, "admin")
    [notice] = [
        m for m in admin.say(admin.new_conversation()["id"], "/help") if m["role"] == "notice"
    ]
    assert "- create-user {" in notice["content"]
    assert editor.client.get(f"/chat/api/conversations/{conversation}").get_json()["title"] == (
        "/help"
    )


def test_a_tool_command_titles_its_conversation_by_the_tool(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    conversation = editor.new_conversation()["id"]
    body = editor.post(
        f"/chat/api/conversations/{conversation}/messages",
        {"content": '/tool get-post {"post_id": 1}'},
        status=201,
    )
    assert body["conversation"]["title"] == "Tool call: get-post"
    body = editor.post(
        f"/chat/api/conversations/{conversation}/messages",
        {"content": "/tool update-post"},
        status=201,
    )
    assert body["conversation"]["title"] == "Tool call: get-post", "the first message titles it"
    page = editor.client.get(f"/chat/{conversation}").get_data(as_text=True)
    assert '<span class="title">Tool call: get-post</span>' in page


def test_everyone_sees_the_memory_their_conversation_started_with(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    entry = remember(editor, editor.new_conversation()["id"], "Checkout is page 4.")
    empty = editor.new_conversation()["id"]
    approve(demo_app, entry)
    conversation = editor.new_conversation()["id"]
    page = editor.client.get(f"/chat/{conversation}").get_data(as_text=True)
    assert "Project memory this conversation started with" in page
    block = page.split("Project memory this conversation started with", 1)[1]
    assert "## Project memory" in block and "Checkout is page 4." in block
    assert "System context" not in page, "the demo's own prompt stays an admin's business"
    page = editor.client.get(f"/chat/{empty}").get_data(as_text=True)
    assert "None: no approved guidance when it began." in page


def test_the_session_page_links_to_its_conversation_for_its_owner(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    own = admin.new_conversation()
    editor = DemoClient(demo_app, "editor")
    theirs = editor.new_conversation()
    with demo_app.app_context():
        from chatmem.demo.extensions import db
        from chatmem.demo.models import Conversation

        sessions = {c.id: c.session_id for c in db.session.query(Conversation)}
    page = admin.client.get(f"/chatmem/memory/sessions/{sessions[own['id']]}")
    assert f'<a href="/chat/{own["id"]}">Open the conversation</a>' in page.get_data(as_text=True)
    assert admin.client.get(f"/chat/{own['id']}").status_code == 200
    # The demo shows a conversation to its owner only: no link that would be a 404.
    page = admin.client.get(f"/chatmem/memory/sessions/{sessions[theirs['id']]}")
    assert "Open the conversation" not in page.get_data(as_text=True)


def test_only_a_safe_conversation_url_becomes_a_link(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    own = admin.new_conversation()
    with demo_app.app_context():
        from chatmem.demo.extensions import db
        from chatmem.demo.models import Conversation

        session_id = db.session.get(Conversation, own["id"]).session_id
    hook = memory._conversation_url
    answers: list[Any] = ["javascript:alert(1)", "//evil.example/x", RuntimeError("down"), None]
    try:
        for answer in answers:

            def url(session: str, answer: Any = answer) -> str | None:
                if isinstance(answer, Exception):
                    raise answer
                return answer  # type: ignore[no-any-return]

            memory._conversation_url = url  # swapped while the app serves: the test's own slot
            with admin.client.get(f"/chatmem/memory/sessions/{session_id}") as response:
                assert response.status_code == 200
                assert "Open the conversation" not in response.get_data(as_text=True), answer
        memory._conversation_url = lambda session: "https://chat.example/c/1?a=1&b=2"
        page = admin.client.get(f"/chatmem/memory/sessions/{session_id}").get_data(as_text=True)
        assert f'href="{html.escape("https://chat.example/c/1?a=1&b=2")}"' in page
    finally:
        memory._conversation_url = hook


def test_the_demo_keeps_its_navigation_around_the_memory_screen(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    page = admin.client.get("/chatmem/memory?tab=active").get_data(as_text=True)
    assert '<nav class="nav" aria-label="Main">' in page
    assert ">MCP &amp; API</a>" in page and "Log out" in page
    assert "/chatmem/memory/static/memory.css" in page and '"/static/demo.css"' in page
    assert "<title>Active guidance · Memory · chatmem demo</title>" in page
