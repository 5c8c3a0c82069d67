"""The host's own error pages: chatmem must not replace them."""

from flask import Blueprint, render_template

from ..extensions import db

bp = Blueprint("errors", __name__)


@bp.app_errorhandler(404)
def not_found_error(error):
    return render_template("errors/404.html"), 404


@bp.app_errorhandler(500)
def internal_error(error):
    db.session.rollback()
    return render_template("errors/500.html"), 500
