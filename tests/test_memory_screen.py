"""The Memory screen over HTTP: every action allowed for a licensed admin and
refused (with nothing changed) without a CSRF token, the capability, the
licence or a signed-in user; stale approvals; tabs, pages and the badge.

Requests go through Flask's test client against the real host app and
database; no app context is held open across requests, so every request
reads the database the way a fresh worker would.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from flask import Flask, render_template_string
from flask.testing import FlaskClient
from flask_wtf.csrf import CSRFProtect

from chatmem.memory import guidance
from tests.conftest import dispose
from tests.hostapp import USERS, create_host_app, reconfigure
from tests.screen_helpers import (
    JSON,
    SCREEN,
    add_token_route,
    entry,
    login,
    page_token,
    propose,
    state,
    token,
)


@dataclass
class World:
    """Seeded entries: two pending proposals, one active, one in the trash."""

    pending: int
    pending2: int
    active: int
    trashed: int


@pytest.fixture
def world(app: Flask) -> World:
    add_token_route(app)
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        db = memory.db
        pending = propose(memory, "Checkout is page 42.")
        pending2 = propose(memory, "Use sentence case in titles.", type="convention")
        active = guidance.admin_add(
            db.session(),
            {"type": "guardrail", "text": "Never create users.", "target": "create-user"},
            actor_id="1",
        ).id
        trashed = guidance.admin_add(
            db.session(), {"type": "fact", "text": "Old fact."}, actor_id="1"
        ).id
        guidance.trash(db.session(), trashed, actor_id="1")
        db.session.remove()
    return World(pending, pending2, active, trashed)


@pytest.fixture
def client(app: Flask) -> Iterator[FlaskClient]:
    with app.test_client() as client:
        yield client


def post(client: FlaskClient, path: str, data: dict[str, Any], **kwargs: Any) -> Any:
    response = client.post(SCREEN + path, data=data, **kwargs)
    response.close()
    return response


def v(app: Flask, entry_id: int) -> str:
    return str(entry(app, entry_id).version)


# Each action: (path, form data, what the admin sees afterwards). Built per
# test because ids and versions come from the seeded world.
Case = tuple[str, dict[str, Any], Callable[[Flask, World], None]]


def cases(app: Flask, w: World) -> dict[str, Case]:
    def status(
        entry_id: int, expected: str, enabled: bool = True
    ) -> Callable[[Flask, World], None]:
        def check(app: Flask, w: World) -> None:
            found = entry(app, entry_id)
            assert (found.status, found.enabled) == (expected, enabled)

        return check

    def edited(app: Flask, w: World) -> None:
        assert entry(app, w.active).text == "Never create admin users."

    def added(app: Flask, w: World) -> None:
        texts = [row[5] for row in state(app)["entries"]]
        assert "Header is off limits." in texts

    def both_approved(app: Flask, w: World) -> None:
        assert entry(app, w.pending).status == entry(app, w.pending2).status == "publish"

    def setting_off(app: Flask, w: World) -> None:
        assert state(app)["settings"].require_approval is False

    g = "/guidance/"
    return {
        "approve": (
            f"{g}{w.pending}/approve",
            {"version": v(app, w.pending)},
            status(w.pending, "publish"),
        ),
        "reject": (
            f"{g}{w.pending}/reject",
            {"version": v(app, w.pending)},
            status(w.pending, "rejected"),
        ),
        "edit": (
            f"{g}{w.active}/edit",
            {"version": v(app, w.active), "type": "guardrail", "text": "Never create admin users."},
            edited,
        ),
        "disable": (f"{g}{w.active}/disable", {}, status(w.active, "publish", enabled=False)),
        "enable": (
            f"{g}{w.active}/enable",
            {"version": v(app, w.active)},
            status(w.active, "publish"),
        ),
        "trash": (f"{g}{w.active}/trash", {}, status(w.active, "trash")),
        "restore": (f"{g}{w.trashed}/restore", {}, status(w.trashed, "publish")),
        "add": (
            "/guidance",
            {
                "type": "guardrail",
                "text": "Header is off limits.",
                "target": "post_type:header_footer",
                "severity": "block",
            },
            added,
        ),
        "bulk": (
            "/bulk",
            {
                "action": "approve",
                "id": [str(w.pending), str(w.pending2)],
                f"version-{w.pending}": v(app, w.pending),
                f"version-{w.pending2}": v(app, w.pending2),
            },
            both_approved,
        ),
        "settings": ("/settings", {"name": "require_approval", "value": "false"}, setting_off),
    }


ACTIONS = [
    "approve",
    "reject",
    "edit",
    "disable",
    "enable",
    "trash",
    "restore",
    "add",
    "bulk",
    "settings",
]


@pytest.mark.parametrize("action", ACTIONS)
def test_an_admin_with_a_licence_can(
    action: str, app: Flask, world: World, client: FlaskClient
) -> None:
    login(client, "admin")
    path, data, check = cases(app, world)[action]
    before = state(app)
    response = post(client, path, {**data, "csrf_token": token(client)})
    assert response.status_code in (200, 303), response.get_data(as_text=True)
    check(app, world)
    assert state(app) != before


@pytest.mark.parametrize("action", ACTIONS)
def test_refused_without_a_csrf_token(
    action: str, app: Flask, world: World, client: FlaskClient
) -> None:
    login(client, "admin")
    path, data, _check = cases(app, world)[action]
    before = state(app)
    for headers in ({}, JSON):
        response = post(client, path, data, headers=headers)
        assert response.status_code == 403
    assert "CSRF token is missing" in response.get_json()["error"]["message"]
    forged = post(client, path, {**data, "csrf_token": "forged"}, headers=JSON)
    assert forged.status_code == 403
    assert state(app) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_refused_without_the_capability(
    action: str, app: Flask, world: World, client: FlaskClient
) -> None:
    login(client, "editor")  # edit_posts, not manage_options
    path, data, _check = cases(app, world)[action]
    before = state(app)
    response = post(client, path, {**data, "csrf_token": token(client)}, headers=JSON)
    assert response.status_code == 403
    assert response.get_json()["error"]["code"] == "forbidden"
    assert "manage_options" in response.get_json()["error"]["message"]
    assert state(app) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_refused_without_a_licence(
    action: str, app: Flask, world: World, client: FlaskClient
) -> None:
    reconfigure(app, CHATMEM_LICENSE_ACTIVE=False)
    login(client, "admin")
    path, data, _check = cases(app, world)[action]
    before = state(app)
    response = post(client, path, {**data, "csrf_token": token(client)}, headers=JSON)
    assert response.status_code == 403
    assert response.get_json()["error"]["reason"] == "licence"
    assert state(app) == before


@pytest.mark.parametrize("action", ACTIONS)
def test_refused_when_signed_out(
    action: str, app: Flask, world: World, client: FlaskClient
) -> None:
    path, data, _check = cases(app, world)[action]
    before = state(app)
    as_form = post(client, path, {**data, "csrf_token": token(client)})
    assert as_form.status_code == 302
    assert as_form.headers["Location"] == "/login?next=%2Fchatmem%2Fmemory"
    as_json = post(client, path, {**data, "csrf_token": token(client)}, headers=JSON)
    assert as_json.status_code == 401
    assert as_json.get_json()["error"]["code"] == "unauthorized"
    assert state(app) == before


def test_get_changes_nothing(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    before = state(app)
    for path, _data, _check in cases(app, world).values():
        with client.get(SCREEN + path) as response:
            assert response.status_code == 405
    with client.get(f"{SCREEN}/guidance/{world.pending}/approve?version=1") as response:
        assert response.status_code == 405
    assert state(app) == before


def test_a_stale_approval_is_refused(app: Flask, world: World, client: FlaskClient) -> None:
    """The admin reviewed one text; another tab changed it; approving must not
    publish the text nobody reviewed."""
    login(client, "admin")
    with client.get(SCREEN) as response:
        html = response.get_data(as_text=True)
    seen = v(app, world.pending)
    assert f'name="version" value="{seen}"' in html
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        guidance.edit(
            memory.db.session(), world.pending, {"text": "Checkout is page 43."}, actor_id="1"
        )
        memory.db.session.remove()
    response = post(
        client,
        f"/guidance/{world.pending}/approve",
        {"version": seen, "csrf_token": page_token(html)},
    )
    assert response.status_code == 303
    with client.get(response.headers["Location"]) as page:
        shown = page.get_data(as_text=True)
    assert f"Guidance #{world.pending} changed since you loaded it" in shown
    assert entry(app, world.pending).status == "pending"
    as_json = post(
        client,
        f"/guidance/{world.pending}/approve",
        {"version": seen, "csrf_token": page_token(html)},
        headers=JSON,
    )
    assert as_json.status_code == 409
    assert as_json.get_json()["error"]["code"] == "conflict"
    assert entry(app, world.pending).status == "pending"


def test_approval_needs_the_reviewed_version(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    for version in ({}, {"version": "x"}):
        response = post(
            client,
            f"/guidance/{world.pending}/approve",
            {"csrf_token": token(client), **version},
            headers=JSON,
        )
        assert response.status_code == 400
        assert response.get_json()["error"]["field"] == "version"
    assert entry(app, world.pending).status == "pending"


def test_edit_then_approve_in_one_step(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    response = post(
        client,
        f"/guidance/{world.pending}/edit",
        {
            "csrf_token": token(client),
            "version": v(app, world.pending),
            "type": "fact",
            "title": "",
            "text": "Checkout lives on page 42.",
            "then": "approve",
        },
        headers=JSON,
    )
    body = response.get_json()
    assert response.status_code == 200, body
    assert body["entry"]["status"] == "publish"
    assert body["entry"]["text"] == "Checkout lives on page 42."
    assert body["entry"]["title"] == "Checkout lives on page 42."
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        assert "Site facts: Checkout lives on page 42." in memory.system_context()
        actions = [e.action for e in guidance.events(memory.db.session(), world.pending)]
        memory.db.session.remove()
    assert actions == ["propose", "edit", "approve"]


def test_json_answers_carry_the_entry(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    response = post(
        client, f"/guidance/{world.active}/disable", {"csrf_token": token(client)}, headers=JSON
    )
    assert response.get_json()["ok"] is True
    assert response.get_json()["entry"]["enabled"] is False
    missing = post(client, "/guidance/999/trash", {"csrf_token": token(client)}, headers=JSON)
    assert missing.status_code == 404
    assert missing.get_json()["error"]["code"] == "not_found"
    bad = post(client, "/guidance", {"csrf_token": token(client), "type": "rumour", "text": "x"})
    assert bad.status_code == 303
    unknown = post(client, f"/guidance/{world.active}/explode", {"csrf_token": token(client)})
    assert unknown.status_code == 404


def test_a_bulk_approval_skips_stale_rows(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    data = {
        "csrf_token": token(client),
        "action": "approve",
        "id": [str(world.pending), str(world.pending2)],
        f"version-{world.pending}": v(app, world.pending),
        f"version-{world.pending2}": str(int(v(app, world.pending2)) + 5),
    }
    response = post(client, "/bulk", data, headers=JSON)
    body = response.get_json()
    assert body["done"] == [world.pending]
    assert body["failed"][0]["id"] == world.pending2
    assert body["failed"][0]["code"] == "conflict"
    assert entry(app, world.pending2).status == "pending"
    as_form = post(client, "/bulk", {**data, "action": "reject"})
    with client.get(as_form.headers["Location"]) as page:
        assert "changed since you loaded it" in page.get_data(as_text=True)


def test_settings_answer_json_and_persist(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    csrf = {"X-CSRFToken": token(client)}
    for name in ("memory_enabled", "require_approval", "auto_summarize"):
        for value in (False, True):
            response = client.post(
                f"{SCREEN}/settings", json={"name": name, "value": value}, headers=csrf
            )
            assert response.get_json()["settings"][name] is value
            response.close()
            assert getattr(state(app)["settings"], name) is value
    for body, field in (
        ({"name": "nope", "value": True}, "name"),
        ({"name": "auto_summarize", "value": "yes"}, "value"),
    ):
        response = client.post(f"{SCREEN}/settings", json=body, headers=csrf)
        assert response.status_code == 400
        assert response.get_json()["error"]["field"] == field
        response.close()


def test_memory_off_says_what_is_off(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    with client.get(SCREEN) as response:
        assert "data-memory-off hidden" in response.get_data(as_text=True)
    post(
        client,
        "/settings",
        {"csrf_token": token(client), "name": "memory_enabled", "value": "false"},
    )
    with client.get(SCREEN) as response:
        html = response.get_data(as_text=True)
    assert "data-memory-off hidden" not in html
    assert "Memory is off." in html
    assert "guardrails are not enforced" in html
    assert "Memory is off: nothing is injected." in html


def test_signed_out_visitors_go_to_the_hosts_login_and_back(
    app: Flask, world: World, client: FlaskClient
) -> None:
    with client.get(f"{SCREEN}?tab=active") as response:
        assert response.status_code == 302
        target = response.headers["Location"]
    assert target == "/login?next=%2Fchatmem%2Fmemory%3Ftab%3Dactive"
    with client.post(target, data={"username": "admin", "password": "admin"}) as response:
        assert response.headers["Location"] == "/chatmem/memory?tab=active"


def test_without_the_capability_a_403_page(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "editor")
    with client.get(SCREEN) as response:
        assert response.status_code == 403
        html = response.get_data(as_text=True)
    assert "Not allowed" in html and "manage_options" in html
    assert "Checkout is page 42." not in html


def test_without_a_licence_the_locked_screen(app: Flask, world: World, client: FlaskClient) -> None:
    reconfigure(app, CHATMEM_LICENSE_ACTIVE=False)
    reconfigure(app, CHATMEM_UPGRADE_URL="https://vendor.example/pro")
    login(client, "admin")
    with client.get(SCREEN) as response:
        assert response.status_code == 403
        html = response.get_data(as_text=True)
    assert (
        '<a class="cm-button cm-primary" href="https://vendor.example/pro">Upgrade to Pro</a>'
        in html
    )
    assert "Checkout is page 42." not in html
    reconfigure(app, CHATMEM_UPGRADE_URL="javascript:alert(1)")
    with client.get(SCREEN) as response:
        html = response.get_data(as_text=True)
    assert "javascript:" not in html
    assert "Ask the site owner" in html


def test_a_host_license_checker_decides(app: Flask, world: World, client: FlaskClient) -> None:
    memory = app.extensions["test_host"]["memory"]
    memory.license_checker(lambda: False)
    login(client, "admin")
    with client.get(SCREEN) as response:
        assert response.status_code == 403
        assert "Project memory is a Pro feature" in response.get_data(as_text=True)


def test_each_tab_shows_its_rows_and_counts(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    pages = {}
    for tab in ("pending", "active", "history", "trash"):
        with client.get(f"{SCREEN}?tab={tab}") as response:
            assert response.status_code == 200
            pages[tab] = response.get_data(as_text=True)
    assert "Checkout is page 42." in pages["pending"]
    assert "Edit before approving" in pages["pending"]
    assert "Never create users." in pages["active"] and "by admin" in pages["active"]
    assert "Old fact." in pages["trash"] and "Restore" in pages["trash"]
    assert "Recent sessions" in pages["history"]
    # counts in the tab bar: 2 pending, 1 active, 1 in the trash
    assert 'Pending review <span class="cm-count cm-count-hot">2</span>' in pages["active"]
    assert 'Active guidance <span class="cm-count">1</span>' in pages["pending"]
    assert 'Trash <span class="cm-count">1</span>' in pages["pending"]
    with client.get(f"{SCREEN}?tab=bogus") as response:
        assert "Checkout is page 42." in response.get_data(as_text=True)


def test_target_warnings(app: Flask, client: FlaskClient) -> None:
    add_token_route(app)
    with app.app_context():
        db = app.extensions["test_host"]["memory"].db
        for target in ("pots_id:42", "get-post", "post_type:header_footer", "create-users"):
            guidance.admin_add(
                db.session(),
                {
                    "type": "guardrail",
                    "text": f"Rule {target}",
                    "target": target,
                    "severity": "block",
                },
                actor_id="1",
            )
        guidance.admin_add(
            db.session(), {"type": "guardrail", "text": "Careful", "severity": "warn"}, actor_id="1"
        )
        db.session.remove()
    login(client, "admin")
    with client.get(f"{SCREEN}?tab=active") as response:
        html = response.get_data(as_text=True)
    assert html.count("This target never matches") == 2
    assert html.count("This target never matches: no tool is named create-users") == 1
    assert html.count("This tool is read-only: the guardrail never blocks") == 1
    assert html.count("Enforced: matching tool calls are refused") == 1
    assert html.count("Advisory: only a block or ask guardrail acts on tool calls") == 1


def test_history_lists_sessions_and_their_digest(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        editor = USERS["editor"]
        summarized = memory.start_session(editor, "chat")
        memory.call_tool(
            "update-post", {"post_id": 7, "title": "New"}, user=editor, session_id=summarized
        )
        memory.call_tool(
            "save-session-summary",
            {"summary": "Renamed post 7."},
            user=editor,
            session_id=summarized,
        )
        digest_only = memory.start_session(editor, "rest")
        memory.end_session(digest_only)
        memory.db.session.remove()
    login(client, "admin")
    with client.get(f"{SCREEN}?tab=history") as response:
        html = response.get_data(as_text=True)
    assert "Renamed post 7." in html and "Written by the agent" in html
    assert "Digest only" in html
    assert "1 call: 1 ok, 0 blocked, 0 failed." in html
    assert html.index("Digest only") < html.index("Renamed post 7.")  # newest first
    with client.get(f"{SCREEN}/sessions/{summarized}") as response:
        record = response.get_data(as_text=True)
    assert response.status_code == 200
    assert "update-post" in record and "Renamed post 7." in record
    assert "&#34;title&#34;: &#34;New&#34;" in record
    with client.get(f"{SCREEN}/sessions/nope") as response:
        assert response.status_code == 404


def test_long_lists_are_paged(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        for n in range(55):
            propose(memory, f"Proposal number {n:02d}.")
        memory.db.session.remove()
    login(client, "admin")
    with client.get(SCREEN) as response:
        first = response.get_data(as_text=True)
    with client.get(f"{SCREEN}?tab=pending&page=2") as response:
        second = response.get_data(as_text=True)
    assert first.count('class="cm-row"') == 50 and "Page 1 of 2" in first
    assert second.count('class="cm-row"') == 5 and "Proposal number 00." in second
    with client.get(f"{SCREEN}?tab=pending&page=99") as response:
        assert response.get_data(as_text=True).count('class="cm-row"') == 5


def test_the_block_preview(app: Flask, client: FlaskClient) -> None:
    with app.app_context():
        db = app.extensions["test_host"]["memory"].db
        for n in range(3):
            guidance.admin_add(
                db.session(), {"type": "fact", "text": f"Fact {n} " + "x" * 600}, actor_id="1"
            )
        db.session.remove()
    login(client, "admin")
    with client.get(f"{SCREEN}?tab=active") as response:
        html = response.get_data(as_text=True)
    with app.app_context():
        block = app.extensions["test_host"]["memory"].block()
    assert f"<strong>{block.length}</strong> / 1500 characters" in html
    assert block.text in html
    assert "Left out by the 1500-character cap (1)" in html


def test_the_badge_helpers(app: Flask, world: World) -> None:
    with app.test_request_context("/"):
        text = render_template_string(
            "{{ chatmem_pending_count() }} {{ chatmem_memory_url(tab='active') }}"
        )
    assert text == "2 /chatmem/memory?tab=active"


def test_pages_are_not_cached_or_framed(app: Flask, world: World, client: FlaskClient) -> None:
    login(client, "admin")
    with client.get(SCREEN) as response:
        assert response.headers["Cache-Control"] == "no-store"
        assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    with client.get(f"{SCREEN}/static/memory.css") as response:
        assert response.status_code == 200 and "no-store" not in response.headers.get(
            "Cache-Control", ""
        )


def test_it_keeps_working_under_the_hosts_csrf_protect(database_url: str) -> None:
    app = create_host_app(database_url)
    CSRFProtect(app)
    add_token_route(app)
    try:
        with app.app_context():
            pending = propose(app.extensions["test_host"]["memory"], "Checkout is page 42.")
            app.extensions["test_host"]["db"].session.remove()
        with app.test_client() as client:
            with client.post(
                "/login",
                data={"username": "admin", "password": "admin", "csrf_token": token(client)},
            ) as r:
                assert r.status_code == 302
            with client.get(SCREEN) as response:
                csrf = page_token(response.get_data(as_text=True))
            before = state(app)
            refused = post(client, f"/guidance/{pending}/approve", {"version": v(app, pending)})
            # The host's CSRFProtect answers first; the screen words it like its own check.
            assert refused.status_code == 403
            assert state(app) == before
            done = post(
                client,
                f"/guidance/{pending}/approve",
                {"version": v(app, pending), "csrf_token": csrf},
            )
            assert done.status_code == 303
            assert entry(app, pending).status == "publish"
            with client.post(
                f"{SCREEN}/settings",
                json={"name": "auto_summarize", "value": True},
                headers={"X-CSRFToken": csrf},
            ) as r:
                assert r.get_json()["ok"] is True
    finally:
        dispose(app)


def test_a_settings_form_without_javascript_comes_back_to_the_page(
    app: Flask, world: World, client: FlaskClient
) -> None:
    login(client, "admin")
    data = {"csrf_token": token(client), "name": "auto_summarize", "value": ["false", "true"]}
    response = post(
        client, "/settings?tab=active", {**data, "tab": "active"}, headers={"Accept": "text/html"}
    )
    assert response.status_code == 303
    assert response.headers["Location"] == "/chatmem/memory?tab=active"
    assert state(app)["settings"].auto_summarize is True
    with client.get(response.headers["Location"]) as page:
        assert "Auto-summarize sessions is on." in page.get_data(as_text=True)
