"""chatmem's log records reach the handlers the host put on `app.logger`.

chatmem logs to module loggers under `chatmem` (`chatmem`, `chatmem.jobs`,
`chatmem.notify`, `chatmem.upkeep`, ...), made at import time, before any app
exists and shared by every app of the process, so they cannot be children of
one `app.logger`. Instead one handler on the `chatmem` logger passes each
record to the current app's logger's own handlers (and those of its
ancestors below the root, as propagation would), so the host's file or
e-mail handler sees chatmem's errors. Records still propagate to the root
logger as before, so a handler there sees each record once.

Flask's stand-in `default_handler` is skipped: it is not a handler the host
chose, and the root's (or Python's last-resort) output already covers it.
Records emitted outside an app context go to the root only.
"""

from __future__ import annotations

import logging
import threading

from flask import current_app, has_app_context
from flask.logging import default_handler

LOGGER = "chatmem"

_lock = threading.Lock()


class ToAppLogger(logging.Handler):
    """Hands a `chatmem` record to the handlers of the current app's logger."""

    def emit(self, record: logging.LogRecord) -> None:
        if not has_app_context() or "chatmem" not in current_app.extensions:
            return
        logger: logging.Logger | None = current_app.logger
        if logger is None or not logger.isEnabledFor(record.levelno):
            return
        if record.name == logger.name or record.name.startswith(logger.name + "."):
            return  # from inside the app's own logger tree: propagation got it there
        # Up to chatmem's own logger or the root: those see the record by propagation.
        while logger is not None and logger is not logging.root and logger.name != LOGGER:
            for handler in logger.handlers:
                if handler is not default_handler and record.levelno >= handler.level:
                    handler.handle(record)
            logger = logger.parent if logger.propagate else None


def install() -> None:
    """Put the one handler on the `chatmem` logger (idempotent)."""
    chatmem_logger = logging.getLogger(LOGGER)
    with _lock:
        if not any(isinstance(h, ToAppLogger) for h in chatmem_logger.handlers):
            chatmem_logger.addHandler(ToAppLogger())
