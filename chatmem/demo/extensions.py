"""The demo's extension objects, created once and bound to each app by `create_app`.

Module-level objects with `init_app` are the Flask pattern a host would copy:
tools and hooks are registered on `memory` at import time, and every app made
by `create_app` (tests make many) shares those registrations.
"""

from __future__ import annotations

from flask_limiter import Limiter
from flask_limiter.util import get_remote_address
from flask_login import LoginManager
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect
from sqlalchemy import MetaData
from sqlalchemy.orm import DeclarativeBase

from chatmem import ChatMemory


class Base(DeclarativeBase):
    """The host's own tables (users, posts, conversations), apart from chatmem's."""

    metadata = MetaData(
        naming_convention={
            "ix": "ix_%(column_0_label)s",
            "uq": "uq_%(table_name)s_%(column_0_name)s",
            "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
            "pk": "pk_%(table_name)s",
        }
    )


db = SQLAlchemy(model_class=Base)
memory = ChatMemory(db=db)
login_manager = LoginManager()
csrf = CSRFProtect()
# Sign-in throttling (see views.signin.login). Its store is chatmem's
# (`create_app` copies CHATMEM_RATELIMIT_STORAGE_URI into Flask-Limiter's
# RATELIMIT_STORAGE_URI): memory for one process, one Redis for several
# workers or hosts, so a password guesser cannot spread tries over them. No
# limit applies by default: only the routes that ask for one are limited.
limiter = Limiter(key_func=get_remote_address)
