"""Agent-written text is data: every field is escaped wherever the screen shows it.

Payloads go in through the real channels (the `remember` and
`save-session-summary` tools, a host tool's ledgered arguments, the admin's
own add form) and every page that shows them is parsed as a browser would:
no injected element, no event-handler attribute, no `javascript:` URL.
"""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from flask import Flask

from tests.hostapp import USERS
from tests.screen_helpers import SCREEN, add_token_route, login, token

SCRIPT = "<script>alert('xss')</script>"
ATTRIBUTE = '" onmouseover="alert(1)" x="'
SINGLE = "' onfocus='alert(2)' autofocus='"
JS_URL = "javascript:alert(3)"
IMG = "<img src=x onerror=alert(4)>"
PAYLOADS = (SCRIPT, ATTRIBUTE, SINGLE, JS_URL, IMG)


class Audit(HTMLParser):
    """What a browser would build from the page that could run code."""

    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("img", "iframe", "object", "embed", "svg"):
            self.problems.append(f"injected <{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name == "autofocus":
                self.problems.append(f"<{tag} {name}=...>")
            url = (value or "").strip().lower()
            if name in ("href", "src", "action", "formaction") and url.startswith("javascript:"):
                self.problems.append(f"<{tag} {name}={value!r}>")
        if tag == "script" and not dict(attrs).get("src", "").startswith("/chatmem/"):
            self.problems.append("inline or foreign <script>")

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


def audit(html: str) -> Audit:
    parser = Audit()
    parser.feed(html)
    parser.close()
    return parser


@pytest.fixture
def poisoned(app: Flask) -> dict[str, str]:
    """Every agent-writable field carries a payload, in every tab."""
    add_token_route(app)
    editor = USERS["editor"]
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        ids = []
        for n, payload in enumerate(PAYLOADS):
            fields = {
                "title": payload,
                "scope": payload[:64],
                "target": payload,
                "severity": "block",
            }
            for kind in ("guardrail", "fact"):
                result = memory.call_tool(
                    "remember",
                    {"type": kind, "text": f"{payload} #{n}{kind}", **fields},
                    user=editor,
                )
                ids.append(result["id"])
        session_id = memory.start_session(editor, "chat")
        memory.call_tool(
            "update-post",
            {"post_id": 7, "title": SCRIPT + ATTRIBUTE},
            user=editor,
            session_id=session_id,
        )
        memory.call_tool(
            "save-session-summary",
            {"summary": " ".join(PAYLOADS), "takeaways": [{"type": "fact", "text": IMG + JS_URL}]},
            user=editor,
            session_id=session_id,
        )
        from chatmem.memory import guidance

        db = memory.db
        for entry_id in ids[:4]:
            guidance.approve(db.session(), entry_id, actor_id="1")
        for entry_id in ids[4:6]:
            guidance.trash(db.session(), entry_id, actor_id="1")
        db.session.remove()
    return {"session_id": session_id}


def pages(app: Flask, session_id: str) -> dict[str, str]:
    out = {}
    with app.test_client() as client:
        login(client, "admin")
        for tab in ("pending", "active", "history", "trash"):
            with client.get(f"{SCREEN}?tab={tab}") as response:
                assert response.status_code == 200
                out[tab] = response.get_data(as_text=True)
        with client.get(f"{SCREEN}/sessions/{session_id}") as response:
            out["session"] = response.get_data(as_text=True)
    return out


def test_agent_text_is_escaped_on_every_page(app: Flask, poisoned: dict[str, str]) -> None:
    for name, html in pages(app, poisoned["session_id"]).items():
        found = audit(html)
        assert found.problems == [], f"{name}: {found.problems}"
        for raw in (SCRIPT, ATTRIBUTE, IMG):
            assert raw not in html, f"{name} shows {raw!r} unescaped"
        # ...and the admin still reads the payload as text, not as nothing
        assert any(SCRIPT in text for text in found.texts), name


def test_payloads_are_shown_as_text_in_titles_scopes_and_targets(
    app: Flask, poisoned: dict[str, str]
) -> None:
    html = pages(app, poisoned["session_id"])["active"]
    texts = audit(html).texts
    assert SCRIPT in texts  # a title, read back as the exact text the agent sent
    assert ATTRIBUTE in texts  # a target inside <code>
    assert "&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;" in html
    assert "&#34; onmouseover=&#34;alert(1)&#34; x=&#34;" in html


def test_the_admin_add_form_escapes_too(app: Flask) -> None:
    add_token_route(app)
    with app.test_client() as client:
        login(client, "admin")
        for payload in PAYLOADS:
            data = {
                "csrf_token": token(client),
                "type": "guardrail",
                "text": payload + " rule",
                "title": payload,
                "scope": payload[:64],
                "target": payload,
                "severity": "block",
            }
            with client.post(f"{SCREEN}/guidance", data=data) as response:
                assert response.status_code == 303
                next_page = response.headers["Location"]
            with client.get(next_page) as response:
                html = response.get_data(as_text=True)
            assert audit(html).problems == []
            assert "Added “" in html
