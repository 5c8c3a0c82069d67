"""gunicorn's ``post_worker_init`` hook: a worker starts its sweeper as it boots.

With CHATMEM_BACKGROUND_SWEEP_SECONDS set, a worker otherwise starts its
sweeper on its first request, so a worker that replaced a killed one would
leave due jobs waiting until someone called it. Use the hook as a config
module, or import it into your own ``gunicorn.conf.py``::

    gunicorn -c python:chatmem.workers.gunicorn -w 4 'yourapp:create_app()'

It runs in each worker after the app is loaded (``worker.wsgi``), so the
thread is started in the process that keeps it, ``--preload`` or not.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("chatmem.background")


def post_worker_init(worker: Any) -> None:
    """Start the sweeper of the chatmem app this worker serves (nothing if the sweep is off)."""
    app = worker.wsgi
    state = getattr(app, "extensions", {}).get("chatmem")
    if state is None:
        # A wrapped app (middleware around Flask): the host calls it itself.
        log.warning(
            "chatmem: the gunicorn hook found no Flask app with chatmem in worker %s; "
            "call memory.start_background() inside an app context from your own hook",
            worker.pid,
        )
        return
    with app.app_context():
        state.memory.start_background()
