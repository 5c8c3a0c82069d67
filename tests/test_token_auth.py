"""The token check (auth/token_check.py) at its edges, as a REST client and an operator see it.

What is stored (a hash that never equals the token, stable across releases),
the name rules, the exact refusals, the once-a-minute `last used` write on a
fixed clock, binding a token made before binding existed, and the per-worker
cache: a token this worker knows costs no token read, and the request's state
row is the one the call uses.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import event, func, select

from chatmem.auth import token_check, tokens
from chatmem.errors import InvalidParams, NotFound, Unauthorized
from chatmem.memory.models import ApiToken
from tests.hostapp import USERS, User, reconfigure

TOOLS = "/chatmem/api/tools"
ASK_FOR_A_TOKEN = "Send an API token as 'Authorization: Bearer cm_...'."


def get(app: Flask, authorization: str | None) -> Any:
    headers = {} if authorization is None else {"Authorization": authorization}
    return app.test_client().get(TOOLS, headers=headers)


def refusal(app: Flask, authorization: str | None) -> dict[str, Any]:
    response = get(app, authorization)
    assert response.status_code == 401
    return dict(response.get_json()["error"])


def fresh(memory: Any, column: Any, token_id: int) -> Any:
    memory.db.session.remove()
    return memory.db.session.scalar(select(column).where(ApiToken.id == token_id))


# -- what is stored -------------------------------------------------------------------


def test_the_stored_hashes_are_those_of_earlier_releases() -> None:
    """A database from an earlier release keeps its tokens working: the hashes are fixed."""
    plain = "cm_" + "A" * 43
    assert token_check.hash_token(plain) == (
        "aacb3267ef9e7497508b3dbe8444519c1cf1175656b3bdb82aa59115ac94074b"
    )
    assert token_check.hash_fingerprint("editor") == (
        "37a3719f1f2a757b5ea494b0c577b41a495b07616bf08064783e7336347ba704"
    )
    assert token_check.hash_fingerprint("editor") != token_check.hash_token("editor")


def test_a_new_token_its_row_and_its_defaults(memory: Any) -> None:
    row, plain = tokens.create(memory.db.session(), user_id="2")
    assert re.fullmatch(r"cm_[A-Za-z0-9_-]{43}", plain)
    assert row.name == "default" and row.read_only is False and row.expires_at is None
    assert row.prefix == plain[:10] and len(row.prefix) == 10
    assert row.token_hash == token_check.hash_token(plain) != plain
    stored = [str(v) for v in memory.db.session.execute(select(ApiToken.__table__)).one()]
    assert not any(plain[3:13] in value for value in stored)

    issued, _ = tokens.issue(memory, USERS["editor"])
    assert (issued.name, issued.read_only) == ("default", False)


@pytest.mark.parametrize("name", ["", "   ", None])
def test_a_blank_name_is_default(memory: Any, name: Any) -> None:
    assert tokens.create(memory.db.session(), user_id="2", name=name)[0].name == "default"


def test_a_name_is_at_most_100_characters(memory: Any) -> None:
    assert tokens.create(memory.db.session(), user_id="2", name="n" * 100)[0].name == "n" * 100
    with pytest.raises(InvalidParams) as refused:
        tokens.create(memory.db.session(), user_id="2", name="n" * 101)
    assert refused.value.to_dict() == {
        "code": "invalid_params",
        "message": "A token name is at most 100 characters.",
        "field": "name",
    }
    memory.db.session.rollback()
    assert memory.db.session.scalar(select(func.count()).select_from(ApiToken)) == 1


def test_revoking_an_unknown_token_names_it(memory: Any) -> None:
    with pytest.raises(NotFound) as missing:
        tokens.revoke(memory.db.session(), 99)
    assert missing.value.to_dict() == {
        "code": "not_found",
        "message": "No token #99.",
        "token_id": 99,
    }


# -- refusals -------------------------------------------------------------------------


def test_the_header_must_be_a_bearer_cm_token(app: Flask, make_token: Any) -> None:
    plain = make_token("editor")
    for header in (None, "", "Bearer", f"Token {plain}", f"Basic {plain}", "Bearer abc"):
        assert refusal(app, header) == {"code": "unauthorized", "message": ASK_FOR_A_TOKEN}
    for header in (f"bearer {plain}", f"Bearer  {plain}", f"  BEARER {plain}  "):
        assert get(app, header).status_code == 200, header


def test_unknown_revoked_and_orphaned_tokens_get_one_answer(
    app: Flask, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_valid = {"code": "unauthorized", "message": token_check.NOT_VALID}
    assert refusal(app, "Bearer cm_" + "x" * 43) == not_valid
    revoked, orphaned = make_token("admin"), make_token("editor")
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        tokens.revoke(
            db.session(), next(t.id for t in tokens.list_tokens(db.session(), user_id="1"))
        )
    assert refusal(app, f"Bearer {revoked}") == not_valid
    assert get(app, f"Bearer {orphaned}").status_code == 200
    monkeypatch.delitem(USERS, "editor")
    assert refusal(app, f"Bearer {orphaned}") == not_valid


def test_a_deactivated_user_is_refused(
    app: Flask, make_token: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = make_token("editor")
    assert get(app, f"Bearer {plain}").status_code == 200
    monkeypatch.setattr(USERS["editor"], "is_active", False)
    assert refusal(app, f"Bearer {plain}") == {
        "code": "unauthorized",
        "message": token_check.NOT_VALID,
    }


def test_a_host_checks_a_token_from_python(memory: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`token_check.authenticate(memory, header)` for a host's own API."""
    row, plain = tokens.issue(memory, USERS["editor"], name="host", read_only=True)
    who = token_check.authenticate(memory, f"Bearer {plain}")
    assert (who.user.username, who.token_id, who.read_only) == ("editor", row.id, True)
    monkeypatch.setattr(USERS["editor"], "is_active", False)
    with pytest.raises(Unauthorized) as refused:
        token_check.authenticate(memory, f"Bearer {plain}")
    assert refused.value.message == token_check.NOT_VALID


class PlainUser:
    """A host's user with no `is_active`: active, as flask-login assumes."""

    id = 2
    username = "editor"
    capabilities = frozenset({"edit_posts"})


def test_a_user_without_is_active_is_active(app: Flask, make_token: Any) -> None:
    plain = make_token("editor")
    app.extensions["test_host"]["memory"].user_loader(lambda user_id: PlainUser())
    assert get(app, f"Bearer {plain}").status_code == 200


def test_a_failing_fingerprint_hook_is_logged_for_the_operator(
    app: Flask, make_token: Any, caplog: pytest.LogCaptureFixture
) -> None:
    plain = make_token("editor")

    @app.extensions["test_host"]["memory"].user_fingerprint
    def broken(user: Any) -> str:
        raise RuntimeError("directory down")

    assert refusal(app, f"Bearer {plain}")["message"] == token_check.NOT_VALID
    [logged] = [r for r in caplog.records if r.name == "chatmem"]
    assert logged.getMessage() == "user_fingerprint failed; refusing the API token"
    assert logged.exc_info is not None and "directory down" in str(logged.exc_info[1])


# -- last used, on a fixed clock -----------------------------------------------------


def test_last_used_is_written_at_most_once_a_minute(
    app: Flask, second_worker: Flask, memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    start = datetime(2026, 3, 1, 12, 0, 0)
    clock = {"now": start}
    monkeypatch.setattr(token_check, "utcnow", lambda: clock["now"])
    row, plain = tokens.issue(memory, USERS["editor"], name="clocked")
    token_id = row.id
    assert fresh(memory, ApiToken.last_used_at, token_id) is None

    steps = [
        (timedelta(0), app, start),  # first use
        (timedelta(seconds=30), app, start),  # known to this worker
        (timedelta(seconds=30), second_worker, start),  # read from the row by another
        (timedelta(minutes=1), app, start),  # exactly a minute: not yet
        (timedelta(minutes=1, microseconds=1), app, start + timedelta(minutes=1, microseconds=1)),
    ]
    for after, worker, expected in steps:
        clock["now"] = start + after
        assert get(worker, f"Bearer {plain}").status_code == 200
        assert fresh(memory, ApiToken.last_used_at, token_id) == expected, after


# -- binding a token made before binding existed --------------------------------------


def test_binding_one_old_token_leaves_the_others_to_their_own_users(
    app: Flask, memory: Any
) -> None:
    _, editor_plain = tokens.create(memory.db.session(), user_id="2", name="old")
    admins, admin_plain = tokens.create(memory.db.session(), user_id="1", name="old")
    admin_id = admins.id
    assert get(app, f"Bearer {editor_plain}").status_code == 200
    assert fresh(memory, ApiToken.user_fingerprint, admin_id) is None
    assert get(app, f"Bearer {admin_plain}").status_code == 200
    assert fresh(memory, ApiToken.user_fingerprint, admin_id) == token_check.hash_fingerprint(
        "admin"
    )


def test_a_token_bound_by_another_worker_is_not_bound_again(
    app: Flask, second_worker: Flask, memory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Worker one knows the token unbound (its hook failed); worker two binds it to the
    editor; the id then passes to someone else. Worker one must not re-bind it to them."""
    row, plain = tokens.create(memory.db.session(), user_id="2", name="old")
    token_id = row.id
    failing = {"on": True}

    @app.extensions["test_host"]["memory"].user_fingerprint
    def flaky(user: Any) -> str:
        if failing["on"]:
            raise RuntimeError("directory down")
        return str(user.username)

    assert get(app, f"Bearer {plain}").status_code == 401
    assert get(second_worker, f"Bearer {plain}").status_code == 200
    assert fresh(memory, ApiToken.user_fingerprint, token_id) == token_check.hash_fingerprint(
        "editor"
    )
    failing["on"] = False
    monkeypatch.setitem(USERS, "editor", User(2, "mallory", {"edit_posts"}))
    assert refusal(app, f"Bearer {plain}")["message"] == token_check.NOT_VALID
    assert fresh(memory, ApiToken.user_fingerprint, token_id) == token_check.hash_fingerprint(
        "editor"
    )


# -- the per-worker cache -------------------------------------------------------------


@contextmanager
def reads_of(app: Flask) -> Iterator[list[str]]:
    """`VERB table` for each statement on chatmem_token or chatmem_state inside the block."""
    seen: list[str] = []
    with app.app_context():
        engine = app.extensions["test_host"]["db"].engine

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        verb = statement.strip().split()[0].upper()
        for table in re.findall(r"\b(?:FROM|UPDATE|INTO) (chatmem_(?:token|state))\b", statement):
            seen.append(f"{verb} {table}")

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


def test_known_tokens_cost_no_token_read_and_the_state_row_is_read_once(
    app: Flask, second_worker: Flask, make_token: Any
) -> None:
    reconfigure(app, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    reconfigure(second_worker, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    first, second = make_token("editor", "one"), make_token("admin", "two")
    for plain in (first, second):
        assert get(app, f"Bearer {plain}").status_code == 200  # read, bound, touched
    with reads_of(app) as seen:
        for plain in (first, second, first, second):
            response = app.test_client().post(
                f"{TOOLS}/recall", json={}, headers={"Authorization": f"Bearer {plain}"}
            )
            assert response.status_code == 200
    assert seen == ["SELECT chatmem_state"] * 4
    with reads_of(second_worker) as seen:  # a worker that does not know the token yet
        assert get(second_worker, f"Bearer {first}").status_code == 200
    assert seen == ["SELECT chatmem_state", "SELECT chatmem_token"]
