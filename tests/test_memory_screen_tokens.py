"""The Memory screen's "API tokens" tab: a curator sees every user's tokens
(by prefix only) and revokes any of them, through `chatmem.auth.tokens`, with the
capability and CSRF checks every screen action has, and an audit entry. Real
host app and database, Flask test client."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask
from sqlalchemy import select

from chatmem.memory.models import ApiToken, GuidanceEvent
from tests.screen_helpers import JSON, SCREEN, add_token_route, login, page_token, token

TAB = f"{SCREEN}?tab=tokens"
TOOLS = "/chatmem/api/tools"


def revoke_url(token_id: int) -> str:
    return f"{SCREEN}/tokens/{token_id}/revoke"


def bearer(plain: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {plain}"}


def works(app: Flask, plain: str) -> bool:
    status = app.test_client().get(TOOLS, headers=bearer(plain)).status_code
    assert status in (200, 401)
    return status == 200


def token_rows(app: Flask) -> list[tuple[Any, ...]]:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        found = [
            (t.id, t.user_id, t.name, t.revoked_at)
            for t in db.session.scalars(select(ApiToken).order_by(ApiToken.id))
        ]
        db.session.remove()
        return found


def audit(app: Flask) -> list[tuple[Any, ...]]:
    with app.app_context():
        db = app.extensions["test_host"]["db"]
        found = [
            (e.actor_id, e.detail)
            for e in db.session.scalars(
                select(GuidanceEvent).where(GuidanceEvent.action == "token_revoke")
            )
        ]
        db.session.remove()
        return found


def token_id_of(app: Flask, plain: str) -> int:
    from chatmem.auth.tokens import hash_token

    with app.app_context():
        db = app.extensions["test_host"]["db"]
        found = db.session.scalar(
            select(ApiToken.id).where(ApiToken.token_hash == hash_token(plain))
        )
        db.session.remove()
        return int(found)


def test_a_curator_sees_everyones_tokens_by_prefix_only(app: Flask, make_token: Any) -> None:
    editor_plain = make_token("editor", "laptop")
    viewer_plain = make_token("viewer", "reader", read_only=True)
    client = app.test_client()
    login(client, "admin")
    answer = client.get(TAB)
    assert answer.status_code == 200
    page = answer.get_data(as_text=True)
    assert re.search(r'aria-current="page">\s*API tokens <span class="cm-count">2</span>', page)
    for plain, user, name in (
        (editor_plain, "editor", "laptop"),
        (viewer_plain, "viewer", "reader"),
    ):
        assert plain not in page
        assert plain[10:20] not in page
        row = re.search(rf'<tr id="token-{token_id_of(app, plain)}".*?</tr>', page, re.DOTALL)
        assert row, name
        # Each cell carries its label, which a phone shows beside it (the card layout).
        assert re.search(rf'<td data-label="User"[^>]*>{user}</td>', row[0])
        assert re.search(rf'<td data-label="Name"[^>]*>{name}</td>', row[0])
        assert f"<code>{plain[:10]}…</code>" in row[0]
    assert "read-only" in page


def test_a_curator_revokes_a_users_token(app: Flask, make_token: Any) -> None:
    plain = make_token("editor", "laptop")
    token_id = token_id_of(app, plain)
    assert works(app, plain)
    client = app.test_client()
    login(client, "admin")
    page = client.get(TAB).get_data(as_text=True)
    answer = client.post(
        revoke_url(token_id), data={"csrf_token": page_token(page), "tab": "tokens"}
    )
    assert answer.status_code == 303
    assert answer.headers["Location"].endswith("tab=tokens")
    after = client.get(TAB).get_data(as_text=True)
    assert f"Revoked editor’s token “laptop” ({plain[:10]}…): it no longer works." in after
    assert f'<tr id="token-{token_id}" class="cm-token-revoked">' in after
    assert re.search(r'API tokens <span class="cm-count">0</span>', after)
    assert not works(app, plain)
    assert audit(app) == [("1", {"token_id": token_id, "user_id": "2", "name": "laptop"})]


def test_json_revocation_answers_without_the_secret(app: Flask, make_token: Any) -> None:
    add_token_route(app)
    plain = make_token("editor", "script")
    token_id = token_id_of(app, plain)
    client = app.test_client()
    login(client, "admin")
    headers = {**JSON, "X-CSRFToken": token(client)}
    answer = client.post(revoke_url(token_id), headers=headers)
    assert answer.status_code == 200
    body = answer.get_json()
    assert body["ok"] is True and body["token"]["state"] == "revoked"
    assert body["token"]["prefix"] == plain[:10]
    assert plain not in answer.get_data(as_text=True)
    assert "token_hash" not in body["token"]
    missing = client.post(revoke_url(99999), headers=headers)
    assert missing.status_code == 404
    assert missing.get_json()["error"]["code"] == "not_found"


def test_refused_revocations_change_nothing(app: Flask, make_token: Any) -> None:
    add_token_route(app)
    plain = make_token("editor", "laptop")
    token_id = token_id_of(app, plain)
    before = token_rows(app)

    editor = app.test_client()
    login(editor, "editor")
    assert editor.get(TAB).status_code == 403
    refused = editor.post(revoke_url(token_id), data={"csrf_token": token(editor)})
    assert refused.status_code == 403
    assert "needs the manage_options capability" in refused.get_data(as_text=True)

    admin = app.test_client()
    login(admin, "admin")
    no_csrf = admin.post(revoke_url(token_id), headers=JSON)
    assert no_csrf.status_code == 403
    assert no_csrf.get_json()["error"]["reason"] == "csrf"
    # A token never opens the screen, even the curator's own beside a valid sign-in.
    admin_plain = make_token("admin", "mine")
    with_header = admin.post(
        revoke_url(token_id),
        data={"csrf_token": token(admin)},
        headers={**JSON, **bearer(admin_plain)},
    )
    assert with_header.status_code == 401
    signed_out = app.test_client().post(revoke_url(token_id), headers=JSON)
    assert signed_out.status_code == 401

    assert token_rows(app)[:1] == before
    assert works(app, plain)
    assert audit(app) == []


def test_revoking_twice_keeps_the_first_time_and_one_audit_entry(
    app: Flask, make_token: Any
) -> None:
    add_token_route(app)
    plain = make_token("editor", "laptop")
    token_id = token_id_of(app, plain)
    client = app.test_client()
    login(client, "admin")
    headers = {**JSON, "X-CSRFToken": token(client)}
    assert client.post(revoke_url(token_id), headers=headers).status_code == 200
    first = token_rows(app)
    assert client.post(revoke_url(token_id), headers=headers).status_code == 200
    assert token_rows(app) == first
    assert len(audit(app)) == 1
