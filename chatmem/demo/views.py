"""Pages (login, chat, connect) and the chat JSON API the page itself uses.

The API takes the session cookie plus an `X-CSRFToken` header (Flask-WTF's
CSRFProtect guards every POST in the app), or an API token judged alone
(`api_login`). Pages take the session cookie only: a request to one that
carries an `Authorization` header is refused. Errors are `{"error": {...}}`
with chatmem's stable codes; nothing here answers with a stack trace.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    Response,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_login import current_user, login_required, login_user, logout_user
from flask_wtf.csrf import CSRFError
from limits.errors import StorageError
from sqlalchemy import select
from werkzeug.exceptions import HTTPException

from chatmem import (
    ChatmemError,
    Forbidden,
    InvalidParams,
    NotFound,
    PayloadTooLarge,
    Unauthorized,
)
from chatmem.auth import tokens
from chatmem.auth.admission import admit, admit_signed_in
from chatmem.auth.ratelimit import store_unreachable
from chatmem.errors import headers_for
from chatmem.http.errors import http_error as json_error
from chatmem.http.errors import outage_page, server_failure
from chatmem.inputs import form_boolean, parse_json
from chatmem.memory.models import ApiToken
from chatmem.permissions import user_id_of

from . import chat, conversations, held_calls, notices, sessions
from .connect import mcp_configs
from .extensions import csrf, db, limiter, login_manager, memory
from .models import Conversation, User

bp = Blueprint("demo", __name__)
API = "/chat/api/"
ID_MAX = 2**31 - 1  # the id column's range: a larger id in a URL is simply not found


# -- errors -----------------------------------------------------------------


def _wants_json() -> bool:
    return request.path.startswith(API)


@bp.errorhandler(ChatmemError)
def _chatmem_error(error: ChatmemError) -> Any:
    if _wants_json():
        return json_error(error)
    return render_template("demo/error.html", message=error.message), error.status


@bp.errorhandler(CSRFError)
def _csrf_error(error: CSRFError) -> Any:
    message = "The page's security token is missing or expired: reload the page and try again."
    if _wants_json():
        return json_error(Forbidden(message, details={"reason": "csrf"}))
    return render_template("demo/error.html", message=message), 400


def http_exception(error: HTTPException) -> Any:
    """App-wide: 404/405/413/500 as JSON on the API, a plain page elsewhere."""
    if error.response is not None:
        return error.response  # made for this error already (the sign-in throttle's page)
    status = error.code or 500
    if status == 413:
        mapped: ChatmemError = PayloadTooLarge("The request body is too large.")
    elif status == 404:
        mapped = NotFound("Nothing here.")
    else:
        mapped = ChatmemError(
            error.description or "Request failed.", code="http_error", status=status
        )
    # Keep what the status needs (Allow on a 405), whichever body answers.
    headers = {k: v for k, v in error.get_headers() if k in ("Allow", "Retry-After")}
    if _wants_json():
        response = json_error(mapped)
        response.headers.update(headers)
        return response
    return render_template("demo/error.html", message=mapped.message), status, headers


def server_error(error: Exception) -> Any:
    """App-wide: chatmem's one mapping, so the database down is 503 `unavailable` here too."""
    failure = server_failure(error, "demo request")
    if _wants_json():
        return json_error(failure)
    if failure.status == 503:
        return outage_page(failure)  # chatmem's: the demo's layout needs the database
    message = "Something went wrong on our side; it was logged."
    return render_template("demo/error.html", message=message), 500


def throttle_down(error: StorageError) -> Any:
    """The sign-in throttle's store cannot be reached: 503, as chatmem's own budgets answer.

    Failing open would make the throttle no throttle; a 500 would say it is our bug.
    """
    failure = store_unreachable(error.storage_error)
    if _wants_json():
        return json_error(failure)
    page = render_template("demo/login.html", error=failure.message)
    return page, failure.status, headers_for(failure)


@login_manager.unauthorized_handler
def _unauthorized() -> Any:
    if _wants_json():
        return json_error(Unauthorized("Log in first (session cookie)."))
    return redirect(url_for("demo.login", next=request.full_path.rstrip("?")))


@bp.before_request
def _pages_take_no_tokens() -> None:
    """A token is for the chat API (and chatmem's MCP and REST), never a page login."""
    if "Authorization" in request.headers and not request.path.startswith(API):
        raise Unauthorized(
            "Pages take the browser sign-in; API tokens are for the chat API, MCP and REST."
        )


@bp.app_context_processor
def _navigation() -> dict[str, Any]:
    prefix = memory.settings.url_prefix.rstrip("/")
    is_admin = memory.can(current_user, "manage_options")
    pending = memory.pending_count() if is_admin else None
    return {
        "memory_url": f"{prefix}/memory",
        "pending_count": pending,
        "curator_notices": notices.recent() if is_admin and pending else [],
        "is_admin": is_admin,
    }


# -- pages --------------------------------------------------------------------


@bp.get("/")
def index() -> Any:
    return redirect(url_for("demo.chat_page"))


@bp.get("/favicon.ico")
def favicon() -> Any:
    """Browsers ask for /favicon.ico on every page (the Memory screen's too): no 404s."""
    return current_app.send_static_file("favicon.svg")


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
            return redirect(_safe_next(request.args.get("next")))
        error = "Wrong username or password."
    return render_template("demo/login.html", error=error), 401 if error else 200


def _safe_next(target: str | None) -> str:
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


@bp.get("/chat")
@bp.get(f"/chat/<int(max={ID_MAX}):conversation_id>")
@login_required
def chat_page(conversation_id: int | None = None) -> Any:
    conversation = _own(conversation_id) if conversation_id is not None else None
    data: dict[str, Any] = {"conversation": None, "messages": []}
    if conversation is not None:
        data["conversation"] = conversation.to_dict()
        data["messages"] = [m.to_dict() for m in conversations.messages_of(conversation)]
        if not memory.can(current_user, "manage_options"):
            data["conversation"].pop("system_context")
    return render_template(
        "demo/chat.html",
        conversations=_conversations(),
        conversation=conversation,
        data=data,
        provider=memory.settings.provider.name,
    )


@bp.get("/connect")
@login_required
def connect() -> Any:
    """Where an MCP client or a script connects, and the user's own API tokens."""
    return _connect_page()


@bp.post("/connect/tokens")
@login_required
def create_token() -> Any:
    """Make a token for the signed-in user: shown in this answer only, never again.

    The page is rendered here rather than after a redirect, so the plain
    token never travels through the session cookie or a second request.
    """
    form = request.form
    try:
        token, plain = tokens.issue(
            memory,
            current_user._get_current_object(),
            name=form.get("name", ""),
            expires_in=tokens.expires_in_days(form.get("expires_days")),
            read_only=form_boolean(form, "read_only"),
        )
    except ChatmemError as error:
        db.session.rollback()
        return _connect_page(error=error, form=form), error.status
    return _connect_page(created=token, plain=plain), 201


@bp.post(f"/connect/tokens/<int(max={ID_MAX}):token_id>/revoke")
@login_required
def revoke_token(token_id: int) -> Any:
    """Revoke one of the user's own tokens (anyone else's is 404, as if absent)."""
    user = current_user._get_current_object()
    token = tokens.revoke(memory.db, token_id, owner_id=user_id_of(user), actor_id=user_id_of(user))
    flash(f"Revoked token “{token.name}” ({token.prefix}…): it no longer works.")
    return redirect(url_for("demo.connect"), code=303)


def _connect_page(
    *,
    created: ApiToken | None = None,
    plain: str | None = None,
    error: ChatmemError | None = None,
    form: Any = None,
) -> Response:
    prefix = memory.settings.url_prefix.rstrip("/")
    mounted = {rule.rule for rule in current_app.url_map.iter_rules()}
    root = request.host_url.rstrip("/")
    mcp_url = f"{root}{prefix}/mcp"
    own = tokens.list_tokens(memory.db, user_id=user_id_of(current_user))
    page = render_template(
        "demo/connect.html",
        mcp_url=mcp_url,
        mcp_mounted=f"{prefix}/mcp" in mounted,
        rest_url=f"{root}{prefix}/api/tools/<name>",
        chat_api=f"{root}{API}conversations",
        tokens=list(reversed(own)),
        token_state=tokens.state_of,
        created=created,
        plain=plain,
        error=error,
        form=form or {},
        configs=mcp_configs(mcp_url, plain),
        expires_days_max=tokens.EXPIRES_DAYS_MAX,
        name_max=tokens.NAME_MAX,
    )
    response = Response(page)
    # It may hold a token shown once: no cache keeps a copy.
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.post(f"/notices/<int(max={ID_MAX}):notice_id>/dismiss")
@login_required
def dismiss_notice(notice_id: int) -> Any:
    """A curator hides one "waiting for you" line; the item stays in its queue."""
    if not memory.can(current_user, "manage_options"):
        raise Forbidden("Only a curator sees and dismisses these notices.")
    if not notices.dismiss(notice_id):
        raise NotFound("No such notice: it was dismissed already.")
    return redirect(_safe_next(request.form.get("next")), code=303)


# -- the chat JSON API ----------------------------------------------------------


def api_login(view: Callable[..., Any]) -> Callable[..., Any]:
    """The chat API's sign-in: an API token judged alone, else the cookie (+ CSRF on POST).

    With an `Authorization` header the header decides: a valid token is its
    user for this request only (no login, no cookie set) and needs no CSRF
    token, because another site's page cannot send that header without a
    CORS preflight this app never grants; anything else is 401, even beside
    a valid session cookie. Without the header: the session cookie, and on a
    POST the page's CSRF token.
    """

    @functools.wraps(view)
    def checked(*args: Any, **kwargs: Any) -> Any:
        authorization = request.headers.get("Authorization")
        if authorization is not None:
            # chatmem's door for tokens: the same check and the same per-token
            # budget as its MCP and REST endpoints, so no channel is a way around it.
            who = admit(memory, authorization)
            g.api_user, g.api_read_only = who.user, who.read_only
        else:
            if not current_user.is_authenticated:
                raise Unauthorized("Log in first (session cookie) or send an API token.")
            if request.method == "POST":
                csrf.protect()
            # The same door's budget, per user: the page is no way around the limit.
            admit_signed_in(memory, user_id_of(current_user))
            g.api_user, g.api_read_only = current_user._get_current_object(), False
        return view(*args, **kwargs)

    return csrf.exempt(checked)  # type: ignore[no-any-return]  # Flask-WTF ships no types


def _caller() -> Any:
    """Who this request acts for: the chat API's caller, else the signed-in user."""
    return g.get("api_user") or current_user


@bp.get(API + "conversations")
@api_login
def api_list() -> Any:
    return jsonify({"conversations": [c.to_dict() for c in _conversations()]})


@bp.post(API + "conversations")
@api_login
def api_create() -> Any:
    conversation = conversations.start_conversation(_caller())
    return jsonify(conversation.to_dict()), 201


@bp.get(f"{API}conversations/<int(max={ID_MAX}):conversation_id>")
@api_login
def api_show(conversation_id: int) -> Any:
    conversation = _own(conversation_id)
    body = conversation.to_dict()
    body["messages"] = [m.to_dict() for m in conversations.messages_of(conversation)]
    return jsonify(body)


@bp.post(f"{API}conversations/<int(max={ID_MAX}):conversation_id>/messages")
@api_login
def api_message(conversation_id: int) -> Any:
    conversation = _own(conversation_id)
    # chatmem's bounded parser: deep nesting, NaN, NUL, lone surrogates and
    # 5,000-digit numbers are a 400 here too, never a 500 or a stored row.
    body = parse_json(request.get_data()) if request.is_json else None
    if not isinstance(body, dict):
        raise InvalidParams('Send a JSON object: {"content": "..."}.', details={"field": "content"})
    added = chat.post_message(
        conversation, _caller(), body.get("content"), read_only=g.api_read_only
    )
    # The conversation too: its first message titles it, and the page shows the title.
    return jsonify(
        {"messages": [m.to_dict() for m in added], "conversation": conversation.to_dict()}
    ), 201


@bp.get(
    f"{API}conversations/<int(max={ID_MAX}):conversation_id>/held/<int(max={ID_MAX}):message_id>"
)
@api_login
def api_held_state(conversation_id: int, message_id: int) -> Any:
    """Where a held call stands: the "Waiting for approval" card asks."""
    conversation = _own(conversation_id)
    return jsonify(held_calls.approval_state(conversation, _caller(), message_id))


@bp.post(
    f"{API}conversations/<int(max={ID_MAX}):conversation_id>/held/<int(max={ID_MAX}):message_id>/run"
)
@api_login
def api_run_now(conversation_id: int, message_id: int) -> Any:
    """Run now: the allowed call, through the same dispatch path."""
    conversation = _own(conversation_id)
    added = held_calls.run_now(conversation, _caller(), message_id, read_only=g.api_read_only)
    return jsonify({"messages": [m.to_dict() for m in added]}), 201


@bp.post(f"{API}conversations/<int(max={ID_MAX}):conversation_id>/close")
@api_login
def api_close(conversation_id: int) -> Any:
    conversation = _own(conversation_id)
    record = conversations.close_conversation(conversation)
    body = conversation.to_dict()
    body["digest"] = record.digest if record is not None else None
    body["changes"] = record.change_count if record is not None else 0
    return jsonify(body)


def _own(conversation_id: int) -> Conversation:
    """The user's own conversation; anyone else's looks absent."""
    conversation = db.session.get(Conversation, conversation_id)
    if conversation is None or conversation.user_id != _caller().id:
        raise NotFound("No such conversation.", details={"id": conversation_id})
    return conversation


def _conversations() -> list[Conversation]:
    return list(
        db.session.scalars(
            select(Conversation)
            .where(Conversation.user_id == _caller().id)
            .order_by(Conversation.id.desc())
            .limit(50)
        )
    )
