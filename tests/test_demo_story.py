"""The demo's whole story, end to end through HTTP, approvals on the Memory screen.

Editor proposes with `/tool remember` -> admin approves on the Memory screen ->
a new conversation carries it, the old one does not -> admin adds a block
guardrail -> the editor's header edit is refused and the post unchanged, a
normal edit succeeds -> closing records a digest of exactly those two calls.
"""

from __future__ import annotations

import json
import re

from flask import Flask

from chatmem.memory import guidance
from tests.demo_client import DemoClient, tool_results
from tests.demo_story import FACT, FIRST_POST, GUARDRAIL, HEADER, assert_digest, post_title


def version_of(app: Flask, entry_id: int) -> int:
    with app.app_context():
        return guidance.get(app.extensions["sqlalchemy"].session(), entry_id).version


def test_the_whole_story_over_http(demo_app: Flask) -> None:
    prefix = demo_app.config["CHATMEM_URL_PREFIX"].rstrip("/")
    editor = DemoClient(demo_app, "editor")
    admin = DemoClient(demo_app, "admin")

    first = editor.new_conversation()
    remember = json.dumps({"type": "fact", "text": FACT})
    [card] = tool_results(editor.say(first["id"], f"/tool remember {remember}"))
    assert card["outcome"] == "ok" and card["result"]["status"] == "pending"
    entry_id = card["result"]["id"]

    chat_page = admin.client.get("/chat").get_data(as_text=True)
    assert re.search(r'class="badge"[^>]*>1<', chat_page), "the admin sees one pending proposal"
    pending = admin.client.get(f"{prefix}/memory?tab=pending")
    assert pending.status_code == 200 and FACT in pending.get_data(as_text=True)

    approved = admin.client.post(
        f"{prefix}/memory/guidance/{entry_id}/approve",
        data={"csrf_token": admin.csrf, "version": version_of(demo_app, entry_id)},
    )
    assert approved.status_code in (200, 302, 303), approved.get_data(as_text=True)
    added = admin.client.post(
        f"{prefix}/memory/guidance",
        data={
            "csrf_token": admin.csrf,
            **{k: GUARDRAIL[k] for k in ("type", "text", "target")},
            "severity": GUARDRAIL["severity"],
        },
    )
    assert added.status_code in (200, 302, 303), added.get_data(as_text=True)
    active = admin.client.get(f"{prefix}/memory?tab=active").get_data(as_text=True)
    assert FACT in active and GUARDRAIL["text"] in active

    second = editor.new_conversation()
    assert FACT in second["system_context"]
    old = editor.client.get(f"/chat/api/conversations/{first['id']}").get_json()
    assert FACT not in old["system_context"]

    header_edit = json.dumps({"post_id": HEADER, "title": "Hacked"})
    [blocked] = tool_results(editor.say(second["id"], f"/tool update-post {header_edit}"))
    assert blocked["outcome"] == "blocked"
    assert blocked["result"]["error"]["code"] == "blocked_by_memory"
    assert post_title(demo_app, HEADER) == "Site header"
    normal_edit = json.dumps({"post_id": FIRST_POST, "title": "Hello again"})
    [done] = tool_results(editor.say(second["id"], f"/tool update-post {normal_edit}"))
    assert done["outcome"] == "ok" and post_title(demo_app, FIRST_POST) == "Hello again"

    assert_digest(demo_app, editor.close(second["id"]), second["id"])
