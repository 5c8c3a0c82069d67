"""The demo host chat app: chatmem plugged into a small AI chat product.

`create_app()` is the reference integration a host can copy: its own users,
posts and conversations; chatmem for project memory; flask-login for users;
Flask-WTF for CSRF. Run it with the `chatmem-demo` console script.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flask import Flask
from limits.errors import StorageError
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from chatmem.settings import Setting, from_environ, integer

from . import notices, sessions, tools  # noqa: F401 - registers tools and hooks
from .extensions import csrf, db, limiter, login_manager, memory
from .seed import setup_database
from .views import bp, http_exception, server_error, throttle_down

log = logging.getLogger("chatmem.demo")

#: The demo's own settings, read from the environment like chatmem's.
DEMO_SETTINGS: dict[str, Setting] = {
    "DEMO_LICENSE_ACTIVE": Setting(
        True, "The demo's license_checker; false shows the Memory screen's locked view."
    ),
    "DEMO_MAX_TOOL_STEPS": Setting(8, "Most model calls for one chat message.", integer(1)),
    "DEMO_SEED": Setting(True, "Seed users and posts into an empty database on start."),
    "DEMO_TRUSTED_PROXIES": Setting(
        0,
        "How many reverse proxies in front of the demo set X-Forwarded-For/-Proto/-Host/-Port "
        "(werkzeug's ProxyFix); 0 trusts none. Needed behind a TLS proxy for Secure cookies "
        "and for the sign-in throttle to see the client's address.",
        integer(0),
    ),
}

DEFAULTS: dict[str, Any] = {
    **{key: setting.default for key, setting in DEMO_SETTINGS.items()},
    "MAX_CONTENT_LENGTH": 1024 * 1024,
    "SESSION_COOKIE_SAMESITE": "Lax",
    "REMEMBER_COOKIE_SAMESITE": "Lax",
    "WTF_CSRF_TIME_LIMIT": None,  # valid for the login session: a chat tab stays open for hours
}


def create_app(
    config: Mapping[str, Any] | None = None, *, instance_path: str | None = None
) -> Flask:
    """The demo app: defaults, then the environment, then `config`; the last one wins.

    Every CHATMEM_* and DEMO_* setting is read from an environment variable of
    the same name, typed and checked: a bad value raises ConfigError naming the
    key and what it expects. Database: `config["SQLALCHEMY_DATABASE_URI"]`,
    else `DATABASE_URL`, else a SQLite file in the instance folder (the
    `instance_path` argument, else `DEMO_INSTANCE_PATH`, else Flask's). Secret
    key: `config`, else `SECRET_KEY`, else one generated once and kept in the
    instance folder.
    """
    instance_path = instance_path or os.environ.get("DEMO_INSTANCE_PATH")
    if instance_path:
        instance_path = os.path.abspath(instance_path)  # Flask wants it absolute
    app = Flask(__name__, instance_path=instance_path, instance_relative_config=True)
    app.config.update(DEFAULTS)
    app.config.update(from_environ(os.environ))
    app.config.update(from_environ(os.environ, DEMO_SETTINGS))
    app.config.update(config or {})
    app.config.setdefault("CHATMEM_SCREEN_CSP", sessions.SCREEN_CSP)  # unless set: never framed
    Path(app.instance_path).mkdir(parents=True, exist_ok=True)
    app.config.setdefault("SQLALCHEMY_DATABASE_URI", _database_url(app))
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = os.environ.get("SECRET_KEY") or _kept_secret(app)
    app.config.setdefault("SQLALCHEMY_ENGINE_OPTIONS", {"pool_pre_ping": True})

    proxies = int(app.config["DEMO_TRUSTED_PROXIES"])
    if proxies:
        # Only headers set by our own proxies are believed; with 0 a client cannot fake HTTPS.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]  # Flask documents replacing wsgi_app this way
            app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies, x_port=proxies
        )
    # The session cookie is Secure whenever the request is HTTPS (sessions.py).
    app.session_interface = sessions.HttpsAwareSessionInterface()
    app.after_request(sessions.page_headers)

    db.init_app(app)
    memory.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "demo.login"
    login_manager.login_message = None  # the login page says enough
    csrf.init_app(app)
    # The sign-in throttle counts where chatmem's budgets do (one Redis for many workers).
    app.config.setdefault("RATELIMIT_STORAGE_URI", app.config["CHATMEM_RATELIMIT_STORAGE_URI"])
    app.config.setdefault("RATELIMIT_KEY_PREFIX", app.config["CHATMEM_RATELIMIT_KEY_PREFIX"])
    # The store's errors (redis, memcached) as limits' StorageError: views.errors.throttle_down.
    app.config.setdefault("RATELIMIT_STORAGE_OPTIONS", {"wrap_exceptions": True})
    limiter.init_app(app)

    app.register_blueprint(bp)
    app.register_error_handler(HTTPException, http_exception)
    app.register_error_handler(StorageError, throttle_down)
    app.register_error_handler(Exception, server_error)

    with app.app_context():
        setup_database(seed=bool(app.config["DEMO_SEED"]))
    return app


def _database_url(app: Flask) -> str:
    url = (
        os.environ.get("DATABASE_URL") or f"sqlite:///{Path(app.instance_path) / 'chatmem-demo.db'}"
    )
    # Hosting platforms hand out postgres:// URLs; SQLAlchemy needs a driver named.
    for plain in ("postgres://", "postgresql://"):
        if url.startswith(plain):
            return "postgresql+psycopg://" + url[len(plain) :]
    return url


def _kept_secret(app: Flask) -> str:
    """A random key made on first run and reused, so logins survive restarts."""
    path = Path(app.instance_path) / "secret_key"
    if path.exists():
        return path.read_text().strip()
    key = secrets.token_hex(32)
    # Written aside and hard-linked into place: two workers starting together
    # agree on one key, and nobody ever reads a half-written file.
    spare = path.with_name(f".secret_key.{os.getpid()}")
    fd = os.open(spare, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(key)
    try:
        os.link(spare, path)
        log.info("generated a secret key in %s", path)
    except FileExistsError:
        key = path.read_text().strip()
    finally:
        spare.unlink()
    return key
