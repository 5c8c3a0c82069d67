from flask import Blueprint

bp = Blueprint("main", __name__)


@bp.app_context_processor
def site_stats():
    """The layout's footer: a query made on every page, after the nav's badge."""
    import sqlalchemy as sa

    from ..extensions import db
    from ..models import User

    return {"member_count": lambda: db.session.scalar(sa.select(sa.func.count(User.id)))}


from . import routes  # noqa: E402,F401
