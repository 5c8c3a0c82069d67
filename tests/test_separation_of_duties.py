"""Separation of duties (SPEC §9): a token never opens a page where a person curates.

Every Memory-screen route, listed from the app's url_map so a new route is
covered the day it is added, refuses an admin's API token (and junk) with
401, with and without a valid admin cookie and CSRF token beside it, and
changes nothing in any table. The same requests without the header pass the
gate, so the refusal is the token's. It holds on the test host with a
flask-login `request_loader` that turns tokens into logins (the hostile
case) and on the demo app. The demo's chat API judges an `Authorization`
header alone: junk beside a valid cookie is 401, never a cookie request
without CSRF. MCP and REST never take the cookie.
"""

from __future__ import annotations

import io
import itertools
import json
import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pytest
from flask import Flask, Request, url_for
from flask.testing import FlaskClient
from sqlalchemy import MetaData, select
from werkzeug.datastructures import MultiDict

from chatmem import ApprovalRequired, ChatmemError
from chatmem.auth import token_check, tokens
from chatmem.http.screen.actions import ACTIONS
from chatmem.http.screen.group_actions import DECISIONS as GROUP_DECISIONS
from chatmem.memory import guidance
from chatmem.memory.held import DECISIONS
from chatmem.memory.models import Base as ChatmemBase
from chatmem.memory.models import Guidance
from tests.dbtools import dump_tables
from tests.demo_client import DemoClient
from tests.hostapp import USERS
from tests.screen_helpers import add_token_route, login, token

JSON = {"Accept": "application/json"}
SCREEN_BLUEPRINT = "chatmem_memory"


@dataclass
class Site:
    """One app under test, with what the checks need from it."""

    app: Flask
    memory: Any
    admin: Any
    editor: Any
    metadatas: tuple[MetaData, ...]
    # (client, csrf token) for a signed-in admin
    sign_in: Callable[[], tuple[FlaskClient, str]]
    # Statuses a token-only request may get: 401 from chatmem, or 403 when a
    # host's own CSRFProtect refuses a POST without a CSRF token first (the
    # screen answers that failure like its own CSRF check: 403, reason csrf).
    token_only_statuses: frozenset[int] = field(default_factory=lambda: frozenset({401}))

    def dump(self) -> dict[str, list[tuple[str, ...]]]:
        with self.app.app_context():
            return dump_tables(self.memory.db.engine, *self.metadatas)


def _install_token_login(app: Flask, memory: Any) -> None:
    """The hostile host: a request_loader that logs in anyone with a valid token."""

    @app.login_manager.request_loader  # type: ignore[attr-defined]
    def token_login(request: Request) -> Any:
        try:
            return token_check.authenticate(memory, request.headers.get("Authorization")).user
        except ChatmemError:
            return None


@pytest.fixture
def host_site(app: Flask) -> Site:
    memory = app.extensions["test_host"]["memory"]
    _install_token_login(app, memory)
    add_token_route(app)

    def sign_in() -> tuple[FlaskClient, str]:
        client = app.test_client()
        login(client, "admin")
        return client, token(client)

    return Site(
        app,
        memory,
        USERS["admin"],
        USERS["editor"],
        (ChatmemBase.metadata,),
        sign_in,
    )


@pytest.fixture
def demo_site(demo_app: Flask) -> Site:
    from chatmem.demo.extensions import Base as DemoBase
    from chatmem.demo.extensions import db, memory
    from chatmem.demo.models import User

    with demo_app.app_context():
        admin, editor = (
            db.session.scalar(select(User).where(User.username == name))
            for name in ("admin", "editor")
        )
        db.session.expunge_all()

    def sign_in() -> tuple[FlaskClient, str]:
        client = DemoClient(demo_app, "admin")
        return client.client, client.csrf

    return Site(
        demo_app,
        memory,
        admin,
        editor,
        (ChatmemBase.metadata, DemoBase.metadata),
        sign_in,
        frozenset({401, 403}),
    )


@pytest.fixture(params=["host", "demo"])
def site(request: pytest.FixtureRequest) -> Site:
    return request.getfixturevalue(f"{request.param}_site")  # type: ignore[no-any-return]


# -- the seeded world and the requests built from the url_map ---------------------

HELD_DECISIONS = tuple(DECISIONS)


def _seed(site: Site) -> dict[str, Any]:
    """One entry per action, in the state that action needs, and a session record."""
    with site.app.app_context():
        memory, db = site.memory, site.memory.db

        def proposal(text: str) -> int:
            result = memory.call_tool("remember", {"type": "fact", "text": text}, user=site.editor)
            return int(result["id"])

        def active(text: str) -> int:
            return guidance.admin_add(db.session(), {"type": "fact", "text": text}, actor_id="1").id

        ids: dict[str, Any] = {
            "approve": proposal("Checkout is page 42."),
            "reject": proposal("The footer is blue."),
            "edit": proposal("Titles use sentence case."),
            "bulk": [proposal("Posts are in English."), proposal("Pages have no comments.")],
            "disable": active("The shop sells notebooks."),
            "enable": active("The shop ships weekly."),
            "trash": active("The blog posts on Mondays."),
            "restore": active("An old fact."),
            # The review desk: a proposal replacing an active entry, and a bulk switch-off.
            "replace": proposal("The newsletter goes out on Fridays."),
            "replaced": active("The newsletter goes out on Thursdays."),
            "desk_bulk": [active("Orders ship from Leeds."), active("Returns take a week.")],
            # Group cards: two sessions' near-duplicate proposals, each decided whole.
            "group-approve": proposal("Gift wrap is free in December."),
            "group-approve-member": proposal("The gift wrap is free in December."),
            "group-reject": proposal("The café opens at nine."),
            "group-reject-member": proposal("The café opens at nine every day."),
            # Upkeep's Still true: an active entry whose target changed.
            "still_true": active("Post post_id:77 is the landing page."),
        }
        memory.target_changed("post_id:77")
        guidance.set_enabled(db.session(), ids["enable"], False, actor_id="1")
        guidance.trash(db.session(), ids["restore"], actor_id="1")
        ids["session_id"] = memory.start_session(site.admin, "chat")
        # Two calls an `ask` guardrail held: one to allow, one to deny.
        guidance.admin_add(
            db.session(),
            {"type": "guardrail", "text": "Ask first.", "target": "post_id:7", "severity": "ask"},
            actor_id="1",
        )
        for decision in HELD_DECISIONS:
            try:
                memory.call_tool("update-post", {"post_id": 7, "title": decision}, user=site.editor)
            except ApprovalRequired as held:
                ids[f"held-{decision}"] = held.details["request_id"]
        ids["token_id"] = tokens.issue(memory, site.editor, name="laptop")[0].id
        # Someone the host already deleted, known only by chatmem's record: to erase.
        memory.start_session(SimpleNamespace(id="9001", username="departed"), "chat")
        db.session.remove()
    return ids


@dataclass(frozen=True)
class ScreenRequest:
    endpoint: str
    method: str
    path: str
    form: tuple[tuple[str, Any], ...]

    def send(self, client: FlaskClient, headers: dict[str, str], csrf: str | None) -> Any:
        # An upload, (bytes, filename), is a fresh file on every send.
        form = [(k, (io.BytesIO(v[0]), v[1]) if isinstance(v, tuple) else v) for k, v in self.form]
        data = MultiDict([*form, *([("csrf_token", csrf)] if csrf else [])])
        response = client.open(self.path, method=self.method, data=data, headers=headers)
        response.close()
        return response


def _versions(site: Site, *entry_ids: int) -> dict[int, int]:
    with site.app.app_context():
        db = site.memory.db
        rows = db.session.execute(
            select(Guidance.id, Guidance.version).where(Guidance.id.in_(entry_ids))
        )
        found = {row.id: row.version for row in rows}
        db.session.remove()
        return found


def _form(site: Site, ids: dict[str, Any], endpoint: str, values: dict[str, Any]) -> list[Any]:
    """A form that the screen accepts from a signed-in admin (the control proves it)."""
    name = endpoint.split(".", 1)[1]
    if name == "add":
        return [("type", "fact"), ("text", "Added by hand.")]
    if name == "group_decision":
        lead, member = values["entry_id"], ids[f"group-{values['action']}-member"]
        versions = _versions(site, lead, member)
        return [
            ("version", str(versions[lead])),
            ("member", str(member)),
            (f"version-{member}", str(versions[member])),
        ]
    if name in ("act", "still_true"):
        entry_id = values["entry_id"]
        form = [("version", str(_versions(site, entry_id)[entry_id]))]
        if values.get("action") == "edit":
            form += [("type", "fact"), ("text", "Titles use title case.")]
        return form
    if name == "bulk":
        versions = _versions(site, *ids["bulk"])
        form = [("action", "approve")]
        for entry_id in ids["bulk"]:
            form += [("id", str(entry_id)), (f"version-{entry_id}", str(versions[entry_id]))]
        return form
    if name == "replace":
        versions = _versions(site, ids["replace"], ids["replaced"])
        return [
            ("version", str(versions[ids["replace"]])),
            ("old_version", str(versions[ids["replaced"]])),
        ]
    if name == "desk_bulk":
        versions = _versions(site, *ids["desk_bulk"])
        form = [("tab", "active"), ("action", "disable")]
        for entry_id in ids["desk_bulk"]:
            form += [("id", str(entry_id)), (f"version-{entry_id}", str(versions[entry_id]))]
        return form
    if name == "settings":
        return [("name", "require_approval"), ("value", "false")]
    if name == "erase_person":
        return [("username", "departed"), ("confirm", "departed")]
    if name == "import_memory":
        return [("file", (_export_file(), "memory.json"))]
    return []


def _export_file() -> bytes:
    """A memory export with one entry this site does not have."""
    when = "2026-11-30T12:00:00.000000Z"
    entry = {
        "id": 1,
        "type": "fact",
        "title": "Imported fact.",
        "text": "Imported fact.",
        "scope": None,
        "target": None,
        "severity": None,
        "status": "publish",
        "enabled": True,
        "origin": "admin",
        "session_id": None,
        "created_by": "1",
        "created_at": when,
        "approved_by": "1",
        "approved_at": when,
        "updated_at": when,
        "version": 1,
        "events": [],
    }
    document = {
        "format": "chatmem-memory-export",
        "version": 1,
        "server_name": "elsewhere",
        "actors": {"1": "admin"},
        "entries": [entry],
    }
    return json.dumps(document).encode()


def screen_requests(site: Site, ids: dict[str, Any]) -> list[ScreenRequest]:
    """Every route of the Memory screen's blueprint, each method, each action."""

    def values_for(rule: Any, argument: str) -> list[Any]:
        if argument == "action" and rule.endpoint.endswith(".group_decision"):
            return list(GROUP_DECISIONS)
        if argument == "action":
            return list(ACTIONS)
        if argument == "session_id":
            return [ids["session_id"]]
        if argument == "entry_id":
            return ["<per action>"]
        if argument == "token_id":
            return [ids["token_id"]]
        if argument == "decision":
            return list(HELD_DECISIONS)
        if argument == "request_id":
            return ["<per decision>"]
        if argument == "old_id":
            return [ids["replaced"]]
        pytest.fail(f"{rule.rule}: give {argument!r} a value in screen_requests")

    out: list[ScreenRequest] = []
    with site.app.test_request_context():
        for rule in site.app.url_map.iter_rules():
            if rule.endpoint.partition(".")[0] != SCREEN_BLUEPRINT:
                continue
            if rule.endpoint == f"{SCREEN_BLUEPRINT}.static":
                continue
            names = sorted(rule.arguments)
            for combo in itertools.product(*(values_for(rule, n) for n in names)):
                values = dict(zip(names, combo, strict=True))
                if "entry_id" in values:
                    values["entry_id"] = ids.get(values.get("action", ""), ids["approve"])
                if rule.endpoint.endswith(".group_decision"):
                    values["entry_id"] = ids[f"group-{values['action']}"]
                if rule.endpoint.endswith(".still_true"):
                    values["entry_id"] = ids["still_true"]
                if "old_id" in values:
                    values["entry_id"] = ids["replace"]
                if "request_id" in values:
                    values["request_id"] = ids[f"held-{values['decision']}"]
                for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
                    form = _form(site, ids, rule.endpoint, values) if method == "POST" else []
                    query = {"target": "post_id:42"} if rule.endpoint.endswith(".dry_run") else {}
                    path = url_for(rule.endpoint, **values, **query)
                    out.append(ScreenRequest(rule.endpoint, method, path, tuple(form)))
    return out


# -- the screen -------------------------------------------------------------------


def test_no_token_opens_any_memory_screen_route(site: Site) -> None:
    ids = _seed(site)
    requests = screen_requests(site, ids)
    endpoints = {r.endpoint.split(".")[1] for r in requests}
    assert {
        "index",
        "session_record",
        "add",
        "act",
        "bulk",
        "settings",
        "revoke_token",
        "decide",
        "replace",
        "desk_bulk",
        "erase_person",
    } <= endpoints
    assert len([r for r in requests if r.endpoint.endswith(".act")]) == len(ACTIONS)
    with site.app.app_context():
        _row, admin_token = tokens.issue(site.memory, site.admin, name="agent")
    cookie_client, csrf = site.sign_in()
    before = site.dump()

    for request in requests:
        for header in (f"Bearer {admin_token}", "Bearer junk"):
            headers = {"Authorization": header, **JSON}
            fresh = site.app.test_client()
            alone = request.send(fresh, headers, None)
            assert alone.status_code in site.token_only_statuses, (request, header)
            with fresh.session_transaction() as session:
                assert "_user_id" not in session, "a token never becomes a login"
            beside_cookie = request.send(cookie_client, headers, csrf)
            assert beside_cookie.status_code == 401, (request, header)
            error = beside_cookie.get_json()["error"]
            assert (error["code"], error["reason"]) == ("unauthorized", "token")
            assert "never an API token" in error["message"]
    as_page = requests[0].send(cookie_client, {"Authorization": f"Bearer {admin_token}"}, csrf)
    assert as_page.status_code == 401
    assert "never an API token" in as_page.get_data(as_text=True)
    assert site.dump() == before, "a refused request changed a table"

    # The same requests without the header pass the gate: the token was the reason.
    for request in requests:
        response = request.send(cookie_client, JSON, csrf)
        assert response.status_code < 400, (request, response.get_data(as_text=True))
    assert site.dump() != before


def test_the_hostile_host_really_logs_tokens_in(host_site: Site) -> None:
    """The host fixture's request_loader does what the demo's used to: proof the test bites."""
    add_page = host_site.app.test_client()
    with host_site.app.app_context():
        _row, admin_token = tokens.issue(host_site.memory, host_site.admin, name="agent")
    from flask_login import current_user

    @host_site.app.get("/_test/whoami")
    def whoami() -> str:
        return str(getattr(current_user, "username", "anonymous"))

    answer = add_page.get("/_test/whoami", headers={"Authorization": f"Bearer {admin_token}"})
    assert answer.get_data(as_text=True) == "admin"


# -- the demo's chat API: a junk bearer header never skips CSRF -------------------


JUNK = ("Bearer junk", "Bearer cm_" + "x" * 43, "Basic YWRtaW46YWRtaW4=", "<revoked>")
CHAT_WRITES = ("create", "message", "close")


@pytest.fixture
def chat(demo_site: Site) -> Iterator[tuple[DemoClient, int, str]]:
    """An editor signed in with a conversation under way, and a revoked token of theirs."""
    editor = DemoClient(demo_site.app, "editor")
    conversation = editor.new_conversation()["id"]
    with demo_site.app.app_context():
        row, revoked = tokens.issue(demo_site.memory, demo_site.editor, name="old")
        tokens.revoke(demo_site.memory.db.session(), row.id)
    yield editor, conversation, revoked


def _chat_write(kind: str, conversation: int) -> tuple[str, dict[str, Any]]:
    base = "/chat/api/conversations"
    return {
        "create": (base, {}),
        "message": (
            f"{base}/{conversation}/messages",
            {"content": '/tool update-post {"post_id": 1, "title": "Junk got in"}'},
        ),
        "close": (f"{base}/{conversation}/close", {}),
    }[kind]


@pytest.mark.parametrize("junk", JUNK)
@pytest.mark.parametrize("kind", CHAT_WRITES)
def test_a_junk_bearer_beside_a_valid_cookie_is_401_and_changes_nothing(
    demo_site: Site, chat: tuple[DemoClient, int, str], kind: str, junk: str
) -> None:
    editor, conversation, revoked = chat
    header = f"Bearer {revoked}" if junk == "<revoked>" else junk
    path, body = _chat_write(kind, conversation)
    before = demo_site.dump()
    for csrf in ({}, {"X-CSRFToken": editor.csrf}):
        response = editor.client.post(path, json=body, headers={"Authorization": header, **csrf})
        assert response.status_code == 401, response.get_data(as_text=True)
        assert response.get_json()["error"]["code"] == "unauthorized"
    listed = editor.client.get("/chat/api/conversations", headers={"Authorization": header})
    assert listed.status_code == 401
    assert demo_site.dump() == before
    # Without the header the cookie still needs its CSRF token.
    forged = editor.client.post(path, json=body)
    assert forged.status_code == 403 and forged.get_json()["error"]["reason"] == "csrf"
    assert demo_site.dump() == before


def test_a_valid_bearer_is_judged_alone_and_sets_no_session(
    demo_site: Site, chat: tuple[DemoClient, int, str]
) -> None:
    editor, conversation, _revoked = chat
    with demo_site.app.app_context():
        _row, admin_token = tokens.issue(demo_site.memory, demo_site.admin, name="script")
    auth = {"Authorization": f"Bearer {admin_token}"}
    # The editor's cookie rides along; the token's user (admin) is who acts.
    created = editor.client.post("/chat/api/conversations", headers=auth)
    assert created.status_code == 201
    assert "Set-Cookie" not in created.headers
    mine = {
        c["id"] for c in editor.client.get("/chat/api/conversations").get_json()["conversations"]
    }
    theirs = {
        c["id"]
        for c in demo_site.app.test_client()
        .get("/chat/api/conversations", headers=auth)
        .get_json()["conversations"]
    }
    assert created.get_json()["id"] in theirs and created.get_json()["id"] not in mine
    assert conversation in mine
    # The editor's conversation is not the token user's to write to.
    other = editor.client.post(
        f"/chat/api/conversations/{conversation}/messages", json={"content": "hi"}, headers=auth
    )
    assert other.status_code == 404


def test_demo_pages_take_no_token(demo_site: Site) -> None:
    editor = DemoClient(demo_site.app, "editor")
    with demo_site.app.app_context():
        _row, plain = tokens.issue(demo_site.memory, demo_site.editor, name="script")
    for path in ("/chat", "/connect"):
        assert editor.client.get(path).status_code == 200
        refused = editor.client.get(path, headers={"Authorization": f"Bearer {plain}"})
        assert refused.status_code == 401
        assert "API tokens are for the chat API" in refused.get_data(as_text=True)
        token_only = demo_site.app.test_client().get(
            path, headers={"Authorization": f"Bearer {plain}"}
        )
        assert token_only.status_code == 401


# -- MCP and REST never take the cookie ------------------------------------------


def test_mcp_and_rest_refuse_the_cookie(site: Site) -> None:
    client, csrf = site.sign_in()
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for response in (
        client.get("/chatmem/api/tools"),
        client.post("/chatmem/api/tools/recall", json={}, headers={"X-CSRFToken": csrf}),
        client.get("/chatmem/api/openapi.json"),
        client.post("/chatmem/mcp", json=ping, headers={"X-CSRFToken": csrf}),
    ):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_junk_tokens_get_the_same_answer_everywhere(site: Site) -> None:
    """No oracle: a revoked token and a made-up one read alike on MCP and REST."""
    with site.app.app_context():
        row, revoked = tokens.issue(site.memory, site.editor, name="old")
        tokens.revoke(site.memory.db.session(), row.id)
    client = site.app.test_client()
    answers = set()
    for header in (f"Bearer {revoked}", "Bearer cm_" + secrets.token_urlsafe(32)):
        rest = client.get("/chatmem/api/tools", headers={"Authorization": header})
        assert rest.status_code == 401
        answers.add(rest.get_json()["error"]["message"])
    assert len(answers) == 1
