"""A forum with plugins and themes, and no app templates folder.

Its pages come from themes (`forum/themes/<name>/`, loaded as
`_themes/<name>/...`, the way Flask-Themes2 names them), and everything
optional is a plugin: a module named in `FORUM_PLUGINS` whose `setup(app)`
the factory calls. chatmem is such a plugin (`forum_chatmem`): the factory
knows nothing about it.
"""

import importlib
from pathlib import Path

from flask import Blueprint, Flask, g, render_template, request, send_from_directory, url_for
from flask_login import LoginManager, login_user
from jinja2 import FileSystemLoader, PrefixLoader, pass_context
from sqlalchemy import select

from .models import Forum, User, db

THEMES = Path(__file__).resolve().parent / "themes"
login_manager = LoginManager()
board = Blueprint("board", __name__)


def current_theme():
    """The signed-in user's theme, or the site's."""
    from flask import current_app

    return g.get("theme") or current_app.config["FORUM_THEME"]


def render_theme(name, **context):
    """Every forum page: drawn in the current theme, which it carries as `_theme`."""
    theme = current_theme()
    return render_template(f"_themes/{theme}/{name}", _theme=theme, **context)


@pass_context
def theme_static(context, filename):
    """A theme's file, as Flask-Themes2's `theme_static`: the theme comes from the page."""
    theme = context.get("_theme")
    if theme is None:
        raise RuntimeError("Could not find the active theme")
    return url_for("board.theme_file", theme=theme, filename=filename)


@board.get("/theme/<theme>/<path:filename>")
def theme_file(theme, filename):
    return send_from_directory(THEMES / theme / "static", filename)


@board.before_app_request
def pick_theme():
    g.theme = request.args.get("theme") or None


@board.get("/")
def index():
    return render_theme("index.html", forums=db.session.scalars(select(Forum)))


@board.route("/login", methods=["GET", "POST"])
def login():
    if request.method == "POST":
        user = db.session.scalar(select(User).filter_by(username=request.form.get("username")))
        if user and request.form.get("password") == user.username:  # example passwords
            login_user(user)
    return render_theme("login.html")


@login_manager.user_loader
def load_user(user_id):
    return db.session.get(User, int(user_id))


def create_app(config=None):
    app = Flask(__name__, template_folder=None)  # no templates folder: the themes are the pages
    app.config.update(
        SECRET_KEY="dev: set SECRET_KEY in production",
        SQLALCHEMY_DATABASE_URI="sqlite:///forum.db",
        FORUM_THEME="default",
        FORUM_PLUGINS=["forum_chatmem"],
    )
    app.config.update(config or {})
    app.jinja_loader = PrefixLoader({"_themes": FileSystemLoader(THEMES)})
    app.add_template_global(current_theme)
    app.add_template_global(theme_static)
    db.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "board.login"
    app.register_blueprint(board)
    for name in app.config["FORUM_PLUGINS"]:
        importlib.import_module(name).setup(app)
    return app
