"""The blog's posts: the page people read."""

from flask import Blueprint, render_template
from sqlalchemy import select

from ..extensions import db
from ..models import Post

bp = Blueprint("posts", __name__)


@bp.get("/")
def index():
    return render_template("posts/index.html", posts=db.session.scalars(select(Post)))
