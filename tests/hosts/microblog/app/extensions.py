"""Extensions made once and bound in the factory, as the tutorial app does."""

from flask_login import LoginManager
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from flask_wtf import CSRFProtect

from chatmem import ChatMemory

db = SQLAlchemy()
migrate = Migrate()
login = LoginManager()
login.login_view = "auth.login"
csrf = CSRFProtect()
memory = ChatMemory(db=db)
