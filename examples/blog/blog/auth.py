"""Log in and out: the blog's own flask-login views."""

from flask import Blueprint, redirect, render_template, request, url_for
from flask_login import login_user, logout_user
from sqlalchemy import select

from .extensions import db
from .extensions import login as login_manager
from .models import User

bp = Blueprint("auth", __name__)


@login_manager.user_loader
def load_user(user_id):
    return db.session.get(User, int(user_id))


@bp.route("/login", methods=["GET", "POST"])
def login():
    if request.method == "POST":
        user = db.session.scalar(select(User).filter_by(username=request.form.get("username")))
        if user and user.check_password(request.form.get("password", "")):
            login_user(user)
            return redirect(url_for("posts.index"))
    return render_template("login.html")


@bp.get("/logout")
def logout():
    logout_user()
    return redirect(url_for("auth.login"))
