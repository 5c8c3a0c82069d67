import sqlalchemy as sa
from flask import abort, flash, redirect, render_template, url_for
from flask_login import current_user, login_required

from ..extensions import db
from ..forms import PostForm
from ..models import Post, User
from . import bp


@bp.route("/", methods=["GET", "POST"])
@bp.route("/index", methods=["GET", "POST"])
@login_required
def index():
    form = PostForm()
    if form.validate_on_submit():
        db.session.add(Post(body=form.post.data, author=current_user))
        db.session.commit()
        flash("Your post is now live!")
        return redirect(url_for("main.index"))
    posts = db.session.scalars(sa.select(Post).order_by(Post.timestamp.desc())).all()
    return render_template("index.html", title="Home", form=form, posts=posts)


@bp.route("/explore")
def explore():
    posts = db.session.scalars(sa.select(Post).order_by(Post.timestamp.desc())).all()
    return render_template("index.html", title="Explore", posts=posts, form=None)


@bp.route("/user/<username>")
def user(username):
    found = db.first_or_404(sa.select(User).where(User.username == username))
    return render_template("user.html", user=found)


@bp.route("/boom")
def boom():
    """A host bug, to see the host's own 500 page."""
    raise RuntimeError("host bug")


@bp.route("/gone")
def gone():
    abort(404)
