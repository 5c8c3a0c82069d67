"""A blog built the usual way: an application factory, blueprints, Flask-Migrate.

chatmem is one more extension in `extensions.py`; its glue (tools and hooks)
is `chatmem_glue.py`, imported by the factory. Nothing imports `create_app`.
"""

import os

from flask import Flask

from chatmem.settings import from_environ

from .extensions import csrf, db, login, memory, migrate


def create_app(config=None):
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=os.environ.get("SECRET_KEY", "dev: set SECRET_KEY in production"),
        SQLALCHEMY_DATABASE_URI=os.environ.get("DATABASE_URL", "sqlite:///blog.db"),
        # The Memory screen inside the blog's Bootstrap layout (see templates/).
        CHATMEM_BASE_TEMPLATE="chatmem_layout.html",
        CHATMEM_SCREEN_STYLE_SOURCES="https://cdn.jsdelivr.net",
        CHATMEM_SCREEN_SCRIPT_SOURCES="https://cdn.jsdelivr.net",
        **from_environ(os.environ),
    )
    app.config.update(config or {})
    db.init_app(app)
    migrate.init_app(app, db)
    login.init_app(app)
    login.login_view = "auth.login"
    csrf.init_app(app)
    memory.init_app(app)

    from . import chatmem_glue  # noqa: F401  (registers the tools and hooks on `memory`)
    from .auth import bp as auth
    from .posts import bp as posts

    app.register_blueprint(auth)
    app.register_blueprint(posts)
    return app
