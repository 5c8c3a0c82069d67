"""Real HTTP servers for tests: the app under test on a free 127.0.0.1 port."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from flask import Flask


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """Serve `app` over real HTTP on a free port of 127.0.0.1; yields its base URL."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", 0, app, threaded=True)
    # Closing waits for the requests still running (a client's last notification
    # poll, a stream its client just left), so none outlives the app's database.
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)
        server.server_close()
