"""`chatmem-demo`: install, run, log in. One command on a fresh machine."""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Sequence
from typing import Any

from werkzeug.serving import make_server, select_address_family

from chatmem.config import ConfigError

from . import create_app

log = logging.getLogger("chatmem.demo")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="chatmem-demo",
        description="Run the chatmem demo chat app (development server; see the README "
        "for gunicorn). Every CHATMEM_* setting may also come from the environment; "
        "these flags win over it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=5000, help="port to listen on (5000)")
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db "
        "(default: $DATABASE_URL, else a SQLite file in the instance folder)",
    )
    parser.add_argument(
        "--instance-path",
        help="folder for the SQLite file and the generated secret key "
        "(default: $DEMO_INSTANCE_PATH, else Flask's instance folder)",
    )
    parser.add_argument(
        "--provider",
        choices=("openai", "anthropic", "none"),
        help="the LLM the chat talks to (default: $CHATMEM_PROVIDER, else none); "
        "the key comes from OPENAI_API_KEY or ANTHROPIC_API_KEY",
    )
    parser.add_argument(
        "--model", help="model name (default: $CHATMEM_MODEL, else the provider's cheap default)"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # Alembic announces each of its plugins at INFO on every start; its warnings still show.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    config: dict[str, Any] = {}
    if args.database_url:
        config["SQLALCHEMY_DATABASE_URI"] = args.database_url
    if args.provider:
        config["CHATMEM_PROVIDER"] = args.provider
    if args.model:
        config["CHATMEM_MODEL"] = args.model
    _check_port(args.host, args.port)  # before the database is touched or "open ..." said
    try:
        app = create_app(config, instance_path=args.instance_path)
    except ConfigError as error:
        sys.exit(f"chatmem-demo: {error}")
    # (If another server took the port meanwhile, werkzeug says so and exits.)
    server = make_server(args.host, args.port, app, threaded=True)
    log.info(
        "chatmem demo: open http://%s:%d and log in as admin/admin, editor/editor or "
        "viewer/viewer (demo-only passwords); provider: %s",
        args.host,
        args.port,
        app.config["CHATMEM_PROVIDER"],
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def _check_port(host: str, port: int) -> None:
    """Exit with a message naming --port when the port is taken."""
    with socket.socket(select_address_family(host, port), socket.SOCK_STREAM) as probe:
        # The option werkzeug's server binds with, so "free" means free for it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            sys.exit(
                f"chatmem-demo: cannot listen on {host}:{port} ({error.strerror or error}); "
                f"another server may be using it. Choose another port with --port, "
                f"e.g. chatmem-demo --port {port + 1}"
            )


if __name__ == "__main__":
    main()
