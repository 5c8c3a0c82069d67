"""The application factory: config, extensions, blueprints, then chatmem's glue."""

from __future__ import annotations

from typing import Any

from flask import Flask

from .extensions import csrf, db, login, memory, migrate


class Config:
    SECRET_KEY = "microblog-tests-secret"
    SQLALCHEMY_DATABASE_URI = "sqlite://"
    POSTS_PER_PAGE = 10


def create_app(config: dict[str, Any] | None = None, *, chatmem_first: bool = False) -> Flask:
    """`chatmem_first`: bind chatmem before Flask-Migrate (the order must not matter)."""
    app = Flask(__name__)
    app.config.from_object(Config)
    app.config.update(config or {})
    db.init_app(app)
    if chatmem_first:
        memory.init_app(app)
    migrate.init_app(app, db)
    login.init_app(app)
    csrf.init_app(app)
    if not chatmem_first:
        memory.init_app(app)

    from . import models  # noqa: F401  (the tables, before migrations look)
    from .auth import bp as auth_bp
    from .chatmem_glue import connect
    from .cli import bp as cli_bp
    from .errors import bp as errors_bp
    from .main import bp as main_bp

    app.register_blueprint(errors_bp)
    app.register_blueprint(auth_bp, url_prefix="/auth")
    app.register_blueprint(main_bp)
    app.register_blueprint(cli_bp)
    connect(memory)
    return app
