"""API tokens bound to their user, with expiry, a read-only scope and revoke-by-user (SPEC §9).

A token keeps a hash of its user's fingerprint (`@memory.user_fingerprint`,
default the name): a deleted user's id given to someone new does not hand
them the token, on MCP, REST and the demo's chat API. Expiry and scope are
checked on the one path every channel takes, the cached token included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import delete, select, update

from chatmem import Forbidden
from chatmem.auth import token_check, tokens
from chatmem.memory.models import ApiToken, LedgerEntry, utcnow
from tests.conftest import PG_URL
from tests.demo_client import DemoClient, tool_results
from tests.hostapp import USERS, User

TOOLS = "/chatmem/api/tools"
MCP = "/chatmem/mcp"
CHAT = "/chat/api/conversations"


def auth(plain: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {plain}"}


def rpc(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}


def cli(app: Flask, *args: str) -> Any:
    return app.test_cli_runner().invoke(args=["chatmem", "token", *args])


def channels(app: Flask, plain: str) -> dict[str, int]:
    """The status each channel gives this token: MCP, REST (list and call), OpenAPI."""
    client = app.test_client()
    return {
        "mcp": client.post(MCP, json=rpc("ping"), headers=auth(plain)).status_code,
        "rest list": client.get(TOOLS, headers=auth(plain)).status_code,
        "rest call": client.post(f"{TOOLS}/recall", json={}, headers=auth(plain)).status_code,
        "openapi": client.get("/chatmem/api/openapi.json", headers=auth(plain)).status_code,
    }


def demo_channels(app: Flask, plain: str) -> dict[str, int]:
    statuses = channels(app, plain)
    client = app.test_client()
    statuses["chat create"] = client.post(CHAT, headers=auth(plain)).status_code
    statuses["chat list"] = client.get(CHAT, headers=auth(plain)).status_code
    return statuses


def all_ok(statuses: dict[str, int]) -> bool:
    return {s for k, s in statuses.items() if k != "chat create"} == {200} and statuses.get(
        "chat create", 201
    ) == 201


# -- a reused id does not inherit the token ----------------------------------------


@pytest.fixture
def demo_db(demo_app: Flask) -> Iterator[Any]:
    from chatmem.demo.extensions import db

    with demo_app.app_context():
        yield db


def _demo_user(db: Any, username: str, user_id: int | None = None) -> Any:
    from chatmem.demo.models import User as DemoUser

    user = DemoUser(username=username, capability_names="manage_options edit_posts")
    if user_id is not None:
        user.id = user_id
    user.set_password(username)
    db.session.add(user)
    db.session.commit()
    return user


@pytest.mark.parametrize("reuse", ["by the database", "given explicitly"])
def test_a_deleted_users_token_does_not_pass_to_the_next_user_with_its_id(
    demo_app: Flask, demo_db: Any, reuse: str
) -> None:
    if reuse == "by the database" and PG_URL:
        pytest.skip("PostgreSQL sequences never hand out an id twice")
    from chatmem.demo.extensions import memory

    first = _demo_user(demo_db, "temp")
    old_id = first.id
    _row, old_token = tokens.issue(memory, first, name="agent")
    assert all_ok(demo_channels(demo_app, old_token))  # and now cached by this worker

    from chatmem.demo.models import Conversation

    demo_db.session.execute(delete(Conversation).where(Conversation.user_id == old_id))
    demo_db.session.delete(first)
    demo_db.session.commit()
    # Same name, same rights, same id: only the person differs.
    second = _demo_user(demo_db, "temp", None if reuse == "by the database" else old_id)
    assert second.id == old_id
    before = demo_db.session.scalar(select(ApiToken.last_used_at).where(ApiToken.id == _row.id))

    refused = demo_channels(demo_app, old_token)
    assert set(refused.values()) == {401}, refused
    body = demo_app.test_client().get(TOOLS, headers=auth(old_token)).get_json()
    assert body["error"]["message"] == token_check.NOT_VALID
    assert demo_db.session.scalar(select(ApiToken.last_used_at).where(ApiToken.id == _row.id)) == (
        before
    )

    _row2, new_token = tokens.issue(memory, second, name="agent")
    assert all_ok(demo_channels(demo_app, new_token))


def test_the_demo_fingerprint_survives_a_rename(demo_app: Flask, demo_db: Any) -> None:
    from chatmem.demo.extensions import memory

    user = _demo_user(demo_db, "dana")
    _row, plain = tokens.issue(memory, user, name="agent")
    user.username = "dana-renamed"
    demo_db.session.commit()
    assert all_ok(demo_channels(demo_app, plain))


def test_the_default_fingerprint_is_the_users_name(
    app: Flask, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host without the hook: another user under the same id is refused."""
    plain = make_token("editor")
    assert set(channels(app, plain).values()) == {200}
    monkeypatch.setitem(USERS, "editor", User(2, "mallory", {"edit_posts"}))
    assert set(channels(app, plain).values()) == {401}


def test_a_token_made_before_binding_is_bound_at_its_first_use(
    app: Flask, ctx: Flask, memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    row, plain = tokens.create(
        memory.db.session(), user_id="2", name="old"
    )  # as before migration 0003
    token_id = row.id
    assert row.user_fingerprint is None
    assert set(channels(app, plain).values()) == {200}
    memory.db.session.remove()
    stored = memory.db.session.scalar(
        select(ApiToken.user_fingerprint).where(ApiToken.id == token_id)
    )
    assert stored == token_check.hash_fingerprint("editor")
    monkeypatch.setitem(USERS, "editor", User(2, "mallory", {"edit_posts"}))
    assert set(channels(app, plain).values()) == {401}


def test_a_failing_fingerprint_hook_refuses_the_token(
    app: Flask, memory: Any, make_token: Any, caplog: pytest.LogCaptureFixture
) -> None:
    plain = make_token("editor")

    @memory.user_fingerprint
    def broken(user: Any) -> str:
        raise RuntimeError("directory down")

    assert set(channels(app, plain).values()) == {401}
    assert "user_fingerprint failed" in caplog.text


# -- expiry --------------------------------------------------------------------------


def test_an_expiring_token_works_until_its_expiry_even_while_cached(
    app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = cli(app, "create", "editor", "--expires-days", "7")
    assert created.exit_code == 0, created.output
    plain = created.stdout.strip()
    with app.app_context():
        memory = app.extensions["test_host"]["memory"]
        row = memory.db.session.scalar(select(ApiToken))
        assert row.expires_at - row.created_at == timedelta(days=7)
        expires_at = row.expires_at
    assert f"expires {expires_at:%Y-%m-%d %H:%M} UTC" in created.stderr
    assert set(channels(app, plain).values()) == {200}  # cached from here on

    monkeypatch.setattr(token_check, "utcnow", lambda: expires_at - timedelta(microseconds=1))
    assert set(channels(app, plain).values()) == {200}
    monkeypatch.setattr(token_check, "utcnow", lambda: expires_at)
    refused = app.test_client().post(MCP, json=rpc("ping"), headers=auth(plain))
    assert refused.status_code == 401
    assert refused.get_json()["error"]["message"] == token_check.NOT_VALID
    assert set(channels(app, plain).values()) == {401}


def test_an_expired_token_is_refused_on_the_chat_api(
    demo_app: Flask, demo_db: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.demo.extensions import memory

    user = _demo_user(demo_db, "dana")
    row, plain = tokens.issue(memory, user, name="agent", expires_in=timedelta(days=1))
    assert demo_app.test_client().get(CHAT, headers=auth(plain)).status_code == 200
    later = row.expires_at + timedelta(seconds=1)
    monkeypatch.setattr(token_check, "utcnow", lambda: later)
    assert set(demo_channels(demo_app, plain).values()) == {401}


@pytest.mark.parametrize("days", ["0", "-1", "soon"])
def test_expires_days_must_be_a_positive_number(app: Flask, days: str) -> None:
    created = cli(app, "create", "editor", "--expires-days", days)
    assert created.exit_code == 2
    assert "--expires-days" in created.output
    assert cli(app, "list").output.strip() == "No tokens."


# -- read-only scope ------------------------------------------------------------------


@pytest.fixture
def read_only_token(app: Flask) -> str:
    created = cli(app, "create", "admin", "--read-only", "--name", "reader")
    assert created.exit_code == 0, created.output
    assert "scope read-only" in created.stderr
    return str(created.stdout.strip())


def _ledger_and_titles(app: Flask) -> tuple[int, list[str]]:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        Post = app.extensions["test_host"]["Post"]
        ledger = len(db.session.scalars(select(LedgerEntry)).all())
        titles = [p.title for p in db.session.scalars(select(Post).order_by(Post.id))]
        db.session.remove()
        return ledger, titles


def test_a_read_only_token_lists_and_calls_read_only_tools_on_mcp(
    app: Flask, read_only_token: str
) -> None:
    client = app.test_client()
    listed = client.post(MCP, json=rpc("tools/list"), headers=auth(read_only_token))
    tools = listed.get_json()["result"]["tools"]
    assert [t["name"] for t in tools] == ["recall", "get-post"]
    assert all(t["annotations"]["readOnlyHint"] for t in tools)

    before = _ledger_and_titles(app)
    for name, arguments in (
        ("update-post", {"post_id": 7, "title": "Changed"}),
        ("remember", {"type": "fact", "text": "A read-only token wrote this."}),
    ):
        called = client.post(
            MCP,
            json=rpc("tools/call", {"name": name, "arguments": arguments}),
            headers=auth(read_only_token),
        )
        result = called.get_json()["result"]
        assert result["isError"] is True
        error = result["structuredContent"]["error"]
        assert error["code"] == "forbidden" and error["scope"] == "read-only"
        assert "read-only scope" in error["message"] and name in error["message"]
    assert _ledger_and_titles(app) == before
    read = client.post(
        MCP,
        json=rpc("tools/call", {"name": "get-post", "arguments": {"post_id": 7}}),
        headers=auth(read_only_token),
    )
    assert read.get_json()["result"]["structuredContent"]["title"] == "Hello"


def test_a_read_only_token_on_rest_and_openapi(app: Flask, read_only_token: str) -> None:
    client = app.test_client()
    listed = client.get(TOOLS, headers=auth(read_only_token)).get_json()["tools"]
    assert [t["name"] for t in listed] == ["recall", "get-post"]
    document = client.get("/chatmem/api/openapi.json", headers=auth(read_only_token)).get_json()
    assert sorted(document["paths"]) == [TOOLS, f"{TOOLS}/get-post", f"{TOOLS}/recall"]

    before = _ledger_and_titles(app)
    refused = client.post(
        f"{TOOLS}/update-post",
        json={"post_id": 7, "title": "Changed"},
        headers=auth(read_only_token),
    )
    assert refused.status_code == 403
    assert refused.get_json()["error"]["scope"] == "read-only"
    assert _ledger_and_titles(app) == before
    assert client.post(f"{TOOLS}/recall", json={}, headers=auth(read_only_token)).status_code == 200


def test_a_full_token_of_the_same_user_is_not_narrowed(app: Flask, make_token: Any) -> None:
    client = app.test_client()
    plain = make_token("admin")
    names = [t["name"] for t in client.get(TOOLS, headers=auth(plain)).get_json()["tools"]]
    assert {"update-post", "remember", "create-user"} <= set(names)


def test_a_read_only_token_on_the_chat_api(demo_app: Flask, demo_db: Any) -> None:
    from chatmem.demo.extensions import memory
    from chatmem.demo.models import Post
    from chatmem.demo.models import User as DemoUser

    editor = demo_db.session.scalar(select(DemoUser).where(DemoUser.username == "editor"))
    _row, plain = tokens.issue(memory, editor, name="reader", read_only=True)
    client = demo_app.test_client()
    cid = client.post(CHAT, headers=auth(plain)).get_json()["id"]

    def run(command: str) -> dict[str, Any]:
        sent = client.post(f"{CHAT}/{cid}/messages", json={"content": command}, headers=auth(plain))
        assert sent.status_code == 201
        [card] = tool_results(sent.get_json()["messages"])
        return card  # type: ignore[no-any-return]

    refused = run('/tool update-post {"post_id": 1, "title": "By a reader"}')
    assert refused["outcome"] == "error"
    assert refused["result"]["error"]["code"] == "forbidden"
    assert refused["result"]["error"]["scope"] == "read-only"
    demo_db.session.expire_all()
    assert demo_db.session.get(Post, 1).title != "By a reader"
    assert run('/tool get-post {"post_id": 1}')["outcome"] == "ok"
    from chatmem.demo.chat import tool_specs

    offered = {spec.name for spec in tool_specs(editor, read_only=True)}
    assert offered == {"recall", "list-posts", "get-post"}
    # The same user by cookie is not narrowed.
    cookie = DemoClient(demo_app, "editor")
    other = cookie.new_conversation()["id"]
    [done] = tool_results(
        cookie.say(other, '/tool update-post {"post_id": 1, "title": "By the editor"}')
    )
    assert done["outcome"] == "ok"


def test_call_tool_takes_the_scope_from_python(memory: Any, editor: Any) -> None:
    with pytest.raises(Forbidden) as refused:
        memory.call_tool(
            "remember", {"type": "fact", "text": "From a reader."}, user=editor, read_only=True
        )
    assert refused.value.details == {"scope": "read-only", "tool": "remember"}
    assert memory.call_tool("recall", {}, user=editor, read_only=True)["guidance"] == []


# -- token list and revoke --user -----------------------------------------------------


def _fix_times(app: Flask, token_id: int, **values: datetime | None) -> None:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        db.session.execute(update(ApiToken).where(ApiToken.id == token_id).values(**values))
        db.session.commit()


def test_token_list_shows_scope_expiry_and_state(app: Flask) -> None:
    for args in (
        ("create", "editor", "--name", "laptop"),
        ("create", "editor", "--name", "ci", "--read-only", "--expires-days", "30"),
        ("create", "admin", "--name", "old", "--expires-days", "1"),
    ):
        assert cli(app, *args).exit_code == 0
    created = datetime(2026, 1, 2, 3, 4, 5)
    _fix_times(app, 1, created_at=created, last_used_at=datetime(2026, 1, 3, 8, 0))
    _fix_times(app, 2, created_at=created, expires_at=utcnow() + timedelta(days=400))
    _fix_times(app, 3, created_at=created, expires_at=datetime(2026, 1, 3, 3, 4, 5))
    with app.app_context():
        prefixes = [
            t.prefix for t in tokens.list_tokens(app.extensions["test_host"]["db"].session())
        ]
        far = tokens.list_tokens(app.extensions["test_host"]["db"].session())[1].expires_at
    lines = cli(app, "list").output.splitlines()
    assert lines == [
        f"#1  editor  laptop  {prefixes[0]}…  scope full  created 2026-01-02 03:04 UTC  "
        "last used 2026-01-03 08:00 UTC  no expiry  active",
        f"#2  editor  ci  {prefixes[1]}…  scope read-only  created 2026-01-02 03:04 UTC  "
        f"last used never  expires {far:%Y-%m-%d %H:%M} UTC  active",
        f"#3  admin  old  {prefixes[2]}…  scope full  created 2026-01-02 03:04 UTC  "
        "last used never  expires 2026-01-03 03:04 UTC  expired",
    ]


def test_revoke_by_user_stops_all_their_tokens_on_every_worker(
    app: Flask, second_worker: Flask
) -> None:
    editor_tokens = [cli(app, "create", "editor", "--name", n).stdout.strip() for n in "ab"]
    admin_token = cli(app, "create", "admin").stdout.strip()
    other = second_worker.test_client()
    for plain in (*editor_tokens, admin_token):
        assert other.get(TOOLS, headers=auth(plain)).status_code == 200  # cached there

    revoked = cli(app, "revoke", "--user", "editor")
    assert revoked.exit_code == 0, revoked.output
    assert revoked.output.strip() == "Revoked 2 tokens of editor."
    for plain in editor_tokens:
        assert other.get(TOOLS, headers=auth(plain)).status_code == 401
    assert other.get(TOOLS, headers=auth(admin_token)).status_code == 200
    listed = cli(app, "list", "editor").output.splitlines()
    assert len(listed) == 2 and all("  revoked " in line for line in listed)
    assert cli(app, "revoke", "--user", "editor").output.strip() == "Revoked 0 tokens of editor."
    assert cli(app, "revoke", "3").output.strip() == "Revoked token #3."
    assert other.get(TOOLS, headers=auth(admin_token)).status_code == 401


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Give a token id or --user NAME"),
        (("1", "--user", "editor"), "Give a token id or --user NAME"),
        (("--user", "nobody"), "No user named 'nobody'."),
    ],
)
def test_revoke_needs_one_target(app: Flask, args: tuple[str, ...], message: str) -> None:
    plain = cli(app, "create", "editor").stdout.strip()
    result = cli(app, "revoke", *args)
    assert result.exit_code != 0
    assert message in result.output
    assert set(channels(app, plain).values()) == {200}


def test_the_token_row_keeps_no_fingerprint_in_clear(ctx: Flask, memory: Any) -> None:
    tokens.issue(memory, USERS["editor"], name="laptop")
    dumped = json.dumps(
        [[str(v) for v in r] for r in memory.db.session.execute(select(ApiToken.__table__))]
    )
    assert "editor" not in dumped
    assert token_check.hash_fingerprint("editor") in dumped


# -- migration 0003: tokens made before it ----------------------------------------------


@pytest.fixture
def at_0002(database_url: str) -> Iterator[Flask]:
    """A host app whose chatmem tables are at revision 0002, with one token in them."""
    from chatmem import migrate
    from tests.conftest import dispose
    from tests.dbtools import drop_chatmem
    from tests.hostapp import create_host_app

    app = create_host_app(database_url, seed=False)
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        drop_chatmem(db.engine)
        app.extensions["test_host"]["memory"].upgrade_db("0002")
        assert migrate.current(db.engine) == "0002"
        with db.engine.begin() as connection:
            connection.exec_driver_sql(
                "INSERT INTO chatmem_token (user_id, name, token_hash, prefix, created_at) "
                f"VALUES ('2', 'old', '{token_check.hash_token(OLD_TOKEN)}', 'cm_old', "
                "'2026-01-02 03:04:05')"
            )
    yield app
    with app.app_context():
        db.session.remove()
        drop_chatmem(db.engine)
    dispose(app)


OLD_TOKEN = "cm_" + "o" * 43


def test_a_token_from_before_0003_works_and_is_bound_at_first_use(
    at_0002: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem import migrate

    with at_0002.app_context():
        memory = at_0002.extensions["test_host"]["memory"]
        memory.upgrade_db()
        assert migrate.current(memory.db.engine) == migrate.head()
        row = memory.db.session.scalar(select(ApiToken))
        assert (row.user_fingerprint, row.expires_at, row.read_only) == (None, None, False)
        memory.db.session.remove()
    listed = cli(at_0002, "list").output.strip()
    assert listed.endswith(
        "scope full  created 2026-01-02 03:04 UTC  last used never  no expiry  active"
    )
    assert set(channels(at_0002, OLD_TOKEN).values()) == {200}
    with at_0002.app_context():
        bound = at_0002.extensions["test_host"]["db"].session.scalar(
            select(ApiToken.user_fingerprint)
        )
    assert bound == token_check.hash_fingerprint("editor")
    monkeypatch.setitem(USERS, "editor", User(2, "mallory", {"edit_posts"}))
    assert set(channels(at_0002, OLD_TOKEN).values()) == {401}


def test_0003_downgrades_to_0002_keeping_the_tokens(at_0002: Flask) -> None:
    from chatmem import migrate

    with at_0002.app_context():
        memory = at_0002.extensions["test_host"]["memory"]
        memory.upgrade_db()
        tokens.issue(memory, USERS["admin"], name="new", read_only=True)
        memory.db.session.remove()
        migrate.downgrade(memory.db.engine, "0002")
        assert migrate.current(memory.db.engine) == "0002"
        with memory.db.engine.connect() as connection:
            names = [
                r[0]
                for r in connection.exec_driver_sql("SELECT name FROM chatmem_token ORDER BY id")
            ]
        assert names == ["old", "new"]
