"""Signing in and out of the demo, with a throttle on failed sign-ins.

A sign-in binds the browser's session to the user (`sessions.bind`);
signing out ends it on the server too (`sessions.end`).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from flask import Response, redirect, render_template, request, url_for
from flask_login import current_user, login_user, logout_user
from sqlalchemy import select

from .. import sessions
from ..extensions import db, limiter
from ..models import User
from .blueprint import bp

# Sign-in throttle: failed attempts only (a right password is never counted),
# per username (guessing one account's password) and per address (trying
# many accounts). The 11th failure for a name within a minute gets 429, and
# other users keep signing in.
LOGIN_FAILURES_PER_USER = "10 per minute"
LOGIN_FAILURES_PER_ADDRESS = "30 per minute"
TOO_MANY_SIGN_INS = "Too many failed sign-ins: wait a minute, then try again."


def _sign_in_name() -> str:
    return "sign-in:" + request.form.get("username", "").strip().lower()[:200]


def _sign_in_failed(response: Response) -> bool:
    return response.status_code == 401


def _too_many_sign_ins(limit: Any) -> Response:
    page = render_template("demo/login.html", error=TOO_MANY_SIGN_INS)
    response = Response(page, status=429)
    response.headers["Retry-After"] = str(max(1, int(limit.reset_at - time.time())))
    return response


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit(
    LOGIN_FAILURES_PER_USER,
    key_func=_sign_in_name,
    methods=["POST"],
    deduct_when=_sign_in_failed,
    on_breach=_too_many_sign_ins,
)
@limiter.limit(
    LOGIN_FAILURES_PER_ADDRESS,
    methods=["POST"],
    deduct_when=_sign_in_failed,
    on_breach=_too_many_sign_ins,
)
def login() -> Any:
    error = None
    if request.method == "POST":
        username = request.form.get("username", "").strip()
        # A name PostgreSQL could not even compare (NUL) is simply no user.
        known = "\x00" not in username and len(username) <= 200
        user = db.session.scalar(select(User).where(User.username == username)) if known else None
        if user is not None and user.check_password(request.form.get("password", "")):
            login_user(user)
            sessions.bind(user)
            return redirect(safe_next(request.args.get("next")))
        error = "Wrong username or password."
    return render_template("demo/login.html", error=error), 401 if error else 200


def safe_next(target: str | None) -> str:
    """Only a path on this site: never an open redirect (`//evil`, `https://evil`)."""
    parts = urlsplit(target or "")
    local = not parts.scheme and not parts.netloc
    if target and local and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return url_for("demo.chat_page")


@bp.post("/logout")
def logout() -> Any:
    """End the sign-in on the server too: a copy of this cookie stops working."""
    sessions.end(current_user._get_current_object())
    logout_user()
    return redirect(url_for("demo.login"))
