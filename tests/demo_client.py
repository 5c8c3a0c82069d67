"""Drive the demo app over HTTP as a browser or a script would: log in, read
the CSRF token from a page, call the chat JSON API."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from flask.testing import FlaskClient

_META = re.compile(r'<meta name="csrf-token" content="([^"]+)"')
_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


class DemoClient:
    """One logged-in browser session against the demo app."""

    def __init__(self, app: Flask, username: str) -> None:
        self.client: FlaskClient = app.test_client()
        page = self.client.get("/login").get_data(as_text=True)
        token = _FIELD.search(page)
        assert token, "the login form carries a CSRF token"
        response = self.client.post(
            "/login",
            data={"username": username, "password": username, "csrf_token": token[1]},
        )
        assert response.status_code == 302, f"login as {username} failed"
        self.csrf = self.csrf_from("/chat")

    def csrf_from(self, path: str) -> str:
        page = self.client.get(path).get_data(as_text=True)
        found = _META.search(page)
        assert found, f"{path} has a csrf-token meta tag"
        return found[1]

    def post(self, path: str, body: Any = None, *, status: int | None = None) -> Any:
        response = self.client.post(path, json=body or {}, headers={"X-CSRFToken": self.csrf})
        if status is not None:
            assert response.status_code == status, response.get_data(as_text=True)
        return response.get_json()

    def new_conversation(self) -> dict[str, Any]:
        return self.post("/chat/api/conversations", status=201)

    def say(self, conversation_id: int, content: str) -> list[dict[str, Any]]:
        body = self.post(
            f"/chat/api/conversations/{conversation_id}/messages", {"content": content}, status=201
        )
        return body["messages"]

    def close(self, conversation_id: int) -> dict[str, Any]:
        return self.post(f"/chat/api/conversations/{conversation_id}/close", status=200)


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]
