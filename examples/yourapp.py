"""yourapp.py: a small Flask app with chatmem plugged in (the README's example).

Two users who log in, a curator, a host tool and API tokens. From the folder
that holds this file::

    flask --app yourapp run    # then open http://127.0.0.1:5000 and log in as admin/admin
    flask --app yourapp chatmem token create editor    # a token for MCP and REST
"""

import os
import secrets

from flask import Flask, redirect, render_template_string, request, url_for
from flask_login import LoginManager, UserMixin, login_user
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from werkzeug.security import check_password_hash, generate_password_hash

from chatmem import ChatMemory
from chatmem.settings import from_environ

db = SQLAlchemy()
memory = ChatMemory(db=db)
login_manager = LoginManager()


class User(UserMixin):
    def __init__(self, id, username, password, capabilities):
        self.id, self.username, self.capabilities = id, username, capabilities
        self.password_hash = generate_password_hash(password)


# Your users live wherever they already do. "manage_options" curates the
# memory, "edit_posts" may use the tools. (Example passwords: change them.)
USERS = {
    user.username: user
    for user in (
        User(1, "admin", "admin", {"manage_options", "edit_posts"}),
        User(2, "editor", "editor", {"edit_posts"}),
    )
}


@login_manager.user_loader
def load_user(user_id):
    return next((user for user in USERS.values() if user.get_id() == user_id), None)


@memory.user_by_name  # how `flask chatmem token create editor` finds the user
def user_by_name(username):
    return USERS.get(username)


@memory.capability_checker
def can(user, capability):
    return capability in user.capabilities


@memory.post_type_resolver
def post_type(post_id):  # lets guardrails like post_type:header_footer match
    return {3: "header_footer"}.get(int(post_id))


@memory.tool(
    name="update-post",
    description="Change a post's title.",
    input_schema={
        "type": "object",
        "properties": {"post_id": {"type": "integer"}, "title": {"type": "string"}},
        "required": ["post_id", "title"],
    },
)
def update_post(post_id, title):
    return {"post_id": post_id, "title": title}


LOGIN_FORM = """<form method="post">
<input type="hidden" name="csrf_token" value="{{ csrf_token() }}">
<input name="username" aria-label="Username">
<input name="password" type="password" aria-label="Password">
<button>Log in</button></form>"""


def create_app():
    app = Flask(__name__)
    app.config.update(
        # Set SECRET_KEY in production: a random one logs everyone out on restart.
        SECRET_KEY=os.environ.get("SECRET_KEY") or secrets.token_hex(32),
        SQLALCHEMY_DATABASE_URI=os.environ.get("DATABASE_URL", "sqlite:///yourapp.db"),
        **from_environ(os.environ),  # CHATMEM_* settings from the environment, typed and checked
    )
    db.init_app(app)
    memory.init_app(app)
    login_manager.init_app(app)
    login_manager.login_view = "login"
    CSRFProtect(app)

    @app.route("/login", methods=["GET", "POST"])
    def login():
        user = USERS.get(request.form.get("username", ""))
        if user and check_password_hash(user.password_hash, request.form.get("password", "")):
            login_user(user)
            return redirect(url_for("index"))
        return render_template_string(LOGIN_FORM)

    @app.get("/")
    def index():
        return redirect(url_for("chatmem_memory.index"))  # the Memory screen: /chatmem/memory

    with app.app_context():
        memory.upgrade_db()  # chatmem's migrations; or `flask chatmem db upgrade`
    return app


# Then, for each new conversation of your chat:
#   block = memory.block()
#   session_id = memory.start_session(user, "chat", block=block)  # records what it started with
#   system_prompt = your_prompt + "\n\n" + block.text
# run every tool call the model makes through
#   memory.call_tool(name, arguments, user=user, session_id=session_id)
# (it validates, checks capabilities and guardrails, runs, and ledgers it), and
#   memory.end_session(session_id, transcript=...) when the conversation closes.
