"""Every channel of the demo app, for the trust-model corpus tests.

REST and MCP with an API token, the chat
JSON API and the Memory screen as a logged-in browser (CSRF included), and
Python through `memory.call_tool`. Each answers a tool call the same way: the
result, or `{"error": {...}}`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from flask import Flask
from sqlalchemy import select

from chatmem import ChatmemError
from tests.demo_client import DemoClient, tool_results
from tests.hostapp import reconfigure

MCP = "/chatmem/mcp"
REST = "/chatmem/api/tools"
SCREEN = "/chatmem/memory"


def make_token(app: Flask, username: str) -> str:
    from chatmem.auth import tokens
    from chatmem.demo.extensions import db
    from chatmem.demo.models import User

    with app.app_context():
        user = db.session.scalars(select(User).filter_by(username=username)).one()
        return tokens.create(db.session(), user_id=str(user.id), name="corpus")[1]


class Channels:
    """The demo app reached the way each kind of client reaches it."""

    def __init__(self, app: Flask) -> None:
        reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)  # hundreds of calls in a second
        self.app = app
        self.http = app.test_client()
        self.token = make_token(app, "editor")
        self.editor = DemoClient(app, "editor")
        self.admin = DemoClient(app, "admin")
        self.new_chat()

    def new_chat(self) -> None:
        """The chat's next `/tool` commands go to a new conversation (a new session)."""
        self.conversation = int(self.editor.new_conversation()["id"])

    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def rest(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        response = self.http.post(f"{REST}/{name}", json=arguments, headers=self.auth())
        assert response.status_code in (200, 400), response.get_data(as_text=True)
        return dict(response.json)

    def mcp(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
        response = self.http.post(MCP, json=body, headers=self.auth())
        assert response.status_code == 200, response.get_data(as_text=True)
        return dict(response.json["result"]["structuredContent"])

    def mcp_instructions(self) -> str:
        params = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "corpus", "version": "1"},
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
        response = self.http.post(MCP, json=body, headers=self.auth())
        return str(response.json["result"].get("instructions", ""))

    def chat(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A `/tool` command with the arguments as JSON escapes (ASCII): the tool decides."""
        content = f"/tool {name} {json.dumps(arguments)}"
        [card] = tool_results(self.editor.say(self.conversation, content))
        return dict(card["result"])

    def chat_raw(self, content: str) -> Any:
        """A message as typed, characters and all: the chat API answers."""
        return self.editor.client.post(
            f"/chat/api/conversations/{self.conversation}/messages",
            json={"content": content},
            headers={"X-CSRFToken": self.editor.csrf},
        )

    def python(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        from chatmem.demo.extensions import db, memory
        from chatmem.demo.models import User

        with self.app.app_context():
            user = db.session.scalars(select(User).filter_by(username="editor")).one()
            try:
                return memory.call_tool(name, arguments, user=user)
            except ChatmemError as error:
                return {"error": error.to_dict()}

    def screen_add(self, fields: dict[str, str]) -> dict[str, Any]:
        """The Memory screen's add form, as the admin's browser posts it."""
        response = self.admin.client.post(
            f"{SCREEN}/guidance",
            data={"csrf_token": self.admin.csrf, **fields},
            headers={"Accept": "application/json"},
        )
        assert response.status_code in (201, 400), response.get_data(as_text=True)
        return dict(response.json)

    def tool_channels(self) -> Iterator[tuple[str, Any]]:
        yield from (("rest", self.rest), ("mcp", self.mcp), ("chat", self.chat))
        yield ("python", self.python)
