"""Demo sign-ins end when they should (issue 24, "Sessions"): logout ends the
session on the server, a cookie is bound to its user as tokens are, cookies
are Secure over HTTPS (ProxyFix behind a proxy), and every page sends a CSP
that forbids framing. Real demo app, Flask test client, SQLite or PostgreSQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import delete, select

from chatmem.demo.extensions import db
from chatmem.demo.models import User
from tests.demo_client import DemoClient

MEMORY = "/chatmem/memory"
API = "/chat/api/conversations"
_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def copy_of(client: FlaskClient, app: Flask) -> FlaskClient:
    """Another browser holding a copy of this one's session cookie."""
    cookie = client.get_cookie("session")
    assert cookie is not None
    other = app.test_client()
    other.set_cookie("session", cookie.value)
    return other


def signed_in(client: FlaskClient) -> bool:
    """What the user sees: the chat page (200), or the way to the login form (302)."""
    response = client.get("/chat")
    if response.status_code == 302:
        assert "/login" in response.headers["Location"]
        return False
    assert response.status_code == 200
    return True


def log_out(user: DemoClient) -> None:
    response = user.client.post("/logout", data={"csrf_token": user.csrf})
    assert response.status_code == 302


def test_a_copied_cookie_stops_working_at_logout(demo_app: Flask) -> None:
    editor = DemoClient(demo_app, "editor")
    stolen = copy_of(editor.client, demo_app)
    assert signed_in(stolen), "the copy works while the user is signed in"

    log_out(editor)

    assert not signed_in(editor.client)
    assert not signed_in(stolen)
    refused = stolen.post(API, headers={"X-CSRFToken": editor.csrf})
    assert refused.status_code == 401
    assert refused.json["error"]["code"] == "unauthorized"
    # Signing in again works, and that new cookie is not the stolen one.
    again = DemoClient(demo_app, "editor")
    assert signed_in(again.client)
    assert not signed_in(stolen)


def test_logout_ends_the_users_other_browsers_too(demo_app: Flask) -> None:
    """One nonce per user: the price of cookie sessions, and what the docs say."""
    laptop, phone = DemoClient(demo_app, "editor"), DemoClient(demo_app, "editor")
    admin = DemoClient(demo_app, "admin")
    log_out(laptop)
    assert not signed_in(phone.client)
    assert signed_in(admin.client), "another user's sign-in is untouched"


def test_a_deleted_users_cookie_does_not_open_the_next_user_with_that_id(
    demo_app: Flask,
) -> None:
    viewer = DemoClient(demo_app, "viewer")
    assert viewer.client.get(MEMORY).status_code == 403, "a viewer is no curator"
    with demo_app.app_context():
        old = db.session.scalar(select(User).where(User.username == "viewer"))
        old_id, created = old.id, old.created_at
        db.session.execute(delete(User).where(User.id == old_id))
        db.session.commit()
        # The host gives the id to a new curator, even under the same name.
        new = User(
            id=old_id,
            username="viewer",
            capability_names="manage_options edit_posts",
            created_at=created + timedelta(seconds=5),
        )
        new.set_password("another-password")
        db.session.add(new)
        db.session.commit()

    response = viewer.client.get(MEMORY)
    assert response.status_code == 302 and "/login" in response.headers["Location"]
    assert not signed_in(viewer.client)
    assert viewer.client.get(API).status_code == 401


def test_a_cookie_without_a_binding_is_refused(demo_app: Flask) -> None:
    """A cookie signed before bindings existed (or made by hand with the key) names an id only."""
    editor = DemoClient(demo_app, "editor")
    with editor.client.session_transaction() as session:
        session.pop("demo_binding")
    assert not signed_in(editor.client)


def set_cookies(response: object) -> list[str]:
    return response.headers.getlist("Set-Cookie")  # type: ignore[attr-defined]


def login_response(
    client: FlaskClient, username: str, headers: dict[str, str] | None = None, **kwargs: object
) -> object:
    page = client.get("/login", headers=headers, **kwargs).get_data(as_text=True)  # type: ignore[arg-type]
    token = _FIELD.search(page)
    assert token
    form = {"username": username, "password": username, "csrf_token": token[1]}
    # As a browser does: over HTTPS Flask-WTF wants a same-site Referer.
    sent = {"Referer": "https://localhost/login", **(headers or {})}
    response = client.post("/login", data=form, headers=sent, **kwargs)  # type: ignore[arg-type]
    assert response.status_code == 302
    return response


def session_cookie(response: object) -> str:
    (cookie,) = [c for c in set_cookies(response) if c.startswith("session=")]
    return cookie


def test_the_session_cookie_is_secure_over_https_only(demo_app: Flask) -> None:
    over_https = login_response(demo_app.test_client(), "editor", base_url="https://localhost")
    assert "; Secure" in session_cookie(over_https)
    assert "HttpOnly" in session_cookie(over_https)
    over_http = login_response(demo_app.test_client(), "editor")
    assert "Secure" not in session_cookie(over_http), "plain http would drop a Secure cookie"
    # The demo never makes a remember-me cookie: the session is the only sign-in.
    assert not any(c.startswith("remember_token=") for c in set_cookies(over_https))


@pytest.fixture
def behind_proxy(demo_app: Flask, tmp_path: Path) -> Iterator[Flask]:
    """A second demo worker on the same database, configured behind one TLS proxy."""
    from chatmem.demo import create_app

    url = demo_app.config["SQLALCHEMY_DATABASE_URI"]
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": url,
            "TESTING": True,
            "CHATMEM_PROVIDER": "none",
            "DEMO_TRUSTED_PROXIES": 1,
            "SECRET_KEY": demo_app.config["SECRET_KEY"],
        },
        instance_path=str(tmp_path / "proxied"),
    )
    yield app
    with app.app_context():
        app.extensions["sqlalchemy"].engine.dispose()


def test_behind_a_trusted_proxy_the_forwarded_https_makes_it_secure(
    demo_app: Flask, behind_proxy: Flask
) -> None:
    forwarded = {"X-Forwarded-Proto": "https"}
    proxied = login_response(behind_proxy.test_client(), "editor", headers=forwarded)
    assert "; Secure" in session_cookie(proxied)
    # Without DEMO_TRUSTED_PROXIES a client's own header is not believed.
    direct = login_response(demo_app.test_client(), "editor", headers=forwarded)
    assert "Secure" not in session_cookie(direct)


def test_every_demo_page_forbids_framing(demo_app: Flask) -> None:
    admin = DemoClient(demo_app, "admin")
    anonymous = demo_app.test_client()
    answers = {
        "/login": anonymous.get("/login"),
        "/chat": admin.client.get("/chat"),
        "/connect": admin.client.get("/connect"),
        "/chat help": admin.client.post(
            API + "/1/messages", json={"content": "/help"}, headers={"X-CSRFToken": admin.csrf}
        ),
        "a 404 page": admin.client.get("/no-such-page"),
        "the login redirect": anonymous.get("/chat"),
    }
    for name, response in answers.items():
        csp = response.headers.get("Content-Security-Policy", "")
        assert "frame-ancestors 'none'" in csp, name
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp, name
        assert response.headers["X-Frame-Options"] == "DENY", name
    # The Memory screen keeps its own policy (CHATMEM_SCREEN_CSP), set first: see below.
    screen = admin.client.get(MEMORY)
    assert screen.status_code == 200
    assert screen.headers["Content-Security-Policy"].startswith("default-src 'self'")


def test_a_demo_database_from_before_gets_the_column(demo_app: Flask) -> None:
    """create_all adds tables, not columns: an older demo database is brought up to date."""
    from sqlalchemy import inspect, text

    from chatmem.demo.seed import setup_database

    with demo_app.app_context():
        with db.engine.begin() as connection:
            connection.execute(text("ALTER TABLE demo_user DROP COLUMN session_nonce"))
        setup_database(seed=False)
        columns = {c["name"] for c in inspect(db.engine).get_columns("demo_user")}
        db.session.remove()
    assert "session_nonce" in columns
    editor = DemoClient(demo_app, "editor")
    log_out(editor)
    assert not signed_in(editor.client)


def test_a_failing_fingerprint_hook_refuses_the_cookie_not_a_500(
    demo_app: Flask, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chatmem.demo.extensions import memory

    editor = DemoClient(demo_app, "editor")

    def broken(user: object) -> str:
        raise RuntimeError("the directory is down")

    monkeypatch.setattr(memory.permissions, "user_fingerprint", broken)
    assert not signed_in(editor.client)
    monkeypatch.undo()
    assert signed_in(editor.client), "the cookie itself was fine"


def test_the_demos_memory_screen_cannot_be_framed_either(demo_app: Flask) -> None:
    """Found by trying it: the demo's Memory screen said `frame-ancestors 'self'` and no
    X-Frame-Options, though the docs promise `'none'` on every demo page. A host may still
    choose its own policy (CHATMEM_SCREEN_CSP); the demo's is the library's, never framed."""
    admin = DemoClient(demo_app, "admin")
    for path in (MEMORY, MEMORY + "/upkeep", MEMORY + "/guidance/1"):
        response = admin.client.get(path)
        csp = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "frame-ancestors 'self'" not in csp, path
        assert csp.startswith("default-src 'self'"), path
