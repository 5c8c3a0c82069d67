"""The `ChatMemory` Flask extension: chatmem's API (core.py) wired into a Flask app."""

from __future__ import annotations

from datetime import timedelta

from flask import Flask, current_app
from flask_sqlalchemy import SQLAlchemy

from . import csp as _csp
from . import host_autogenerate as _host_autogenerate
from . import host_logging as _host_logging
from . import settings as _settings
from .auth import ratelimit as _ratelimit
from .core import MemoryCore, current_memory
from .permissions import user_id_of, user_name_of
from .workers import notices as _notices

__all__ = ["ChatMemory", "current_memory", "user_id_of", "user_name_of"]


class ChatMemory(MemoryCore):
    """Project memory for a Flask chat app.

    ``ChatMemory(app, db=db)`` or ``memory = ChatMemory(db=db)`` then
    ``memory.init_app(app)``. Host tools and callbacks are registered with
    decorators on this object; per-app state lives in
    ``app.extensions["chatmem"]``.
    """

    def __init__(self, app: Flask | None = None, *, db: SQLAlchemy) -> None:
        super().__init__(db=db)
        _host_autogenerate.install()
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        """Check the settings, put the per-app state together, add routes and commands.

        A bad CHATMEM_* value raises `ConfigError` here, naming the key.
        """
        if "sqlalchemy" not in app.extensions:
            raise RuntimeError(
                "Flask-SQLAlchemy is not set up on this app: call db.init_app(app) "
                "before memory.init_app(app)."
            )
        self._apps.add(app)
        _settings.apply_defaults(app.config)
        settings = _settings.Settings.load(app.config)
        _ratelimit.init_app(app, settings.rate)
        _host_logging.install()  # chatmem's records reach the handlers on app.logger
        app.extensions["chatmem"] = self._build_state(settings)
        from .cli import chatmem_cli
        from .http import register_blueprints

        register_blueprints(app, settings.url_prefix)
        # For the host's layout: <script nonce="{{ csp_nonce() }}"> (see csp.py).
        _csp.install(app)
        app.cli.add_command(chatmem_cli)
        _notices.install_session_events()
        if settings.background_sweep > timedelta(0) and not app.testing:
            # Started on the first request if not before (`start_background`
            # from gunicorn's post_worker_init): a thread started here, before
            # gunicorn forks its workers (--preload), would not survive the
            # fork, and CLI commands should not start one at all.
            app.before_request(self._start_on_request)

    def reload_settings(self) -> None:
        """Read the CHATMEM_* settings again after the app's config changed at run time."""
        state = self._state()
        settings = _settings.Settings.load(current_app.config)
        _ratelimit.init_app(current_app, settings.rate)
        current_app.extensions["chatmem"] = self._build_state(settings)
        current_app.extensions["chatmem"].sweeper = state.sweeper

    def start_background(self) -> bool:
        """Start this app's in-process sweeper now, if CHATMEM_BACKGROUND_SWEEP_SECONDS is set.

        Call it in the worker process, inside an app context: gunicorn's
        ``post_worker_init`` hook (`chatmem.workers.gunicorn`) does, so a
        worker that replaces a dead one sweeps before anyone sends it a
        request. Otherwise the first request starts it. True when a sweeper
        runs after the call; calling it again changes nothing.
        """
        state = self._state()
        interval = self.settings.background_sweep.total_seconds()
        if interval <= 0:
            return False
        if state.sweeper is None:
            with state.lock:
                if state.sweeper is None:
                    from .workers.background import BackgroundSweeper

                    app = current_app._get_current_object()  # type: ignore[attr-defined]  # a LocalProxy method, not on Flask's type
                    state.sweeper = BackgroundSweeper(app, interval).start()
        return True

    def _start_on_request(self) -> None:
        self.start_background()  # a before_request hook must return None

    def stop_background(self, timeout: float = 10.0) -> None:
        """Stop this app's background sweeper, if one was started."""
        state = self._state()
        sweeper, state.sweeper = state.sweeper, None
        if sweeper is not None:
            sweeper.stop(timeout)
