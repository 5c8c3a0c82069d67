"""The app's extensions, made here without an app: every module imports them from here.

`memory` lives beside `db` for the same reason `db` does: a blueprint that
imported it from the package's `__init__` (where `create_app` is) would be
a circular import.
"""

from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf.csrf import CSRFProtect

from chatmem import ChatMemory

db = SQLAlchemy()
migrate = Migrate()
login = LoginManager()
csrf = CSRFProtect()
memory = ChatMemory(db=db)
