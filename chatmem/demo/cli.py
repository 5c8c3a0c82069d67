"""`chatmem-demo`: install, run, log in. One command on a fresh machine."""

from __future__ import annotations

import argparse
import logging
import socket
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from flask import Flask
from waitress.server import create_server
from werkzeug.serving import make_server, select_address_family

from chatmem.settings import ConfigError

from . import create_app

log = logging.getLogger("chatmem.demo")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="chatmem-demo",
        description="Run the chatmem demo chat app on waitress, a production WSGI server "
        "with threads (--debug: Werkzeug's development server instead; see the README for "
        "gunicorn). Every CHATMEM_* setting may also come from the environment; these flags "
        "win over it.",
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
    parser.add_argument(
        "--threads",
        type=_positive,
        default=THREADS,
        help=f"requests served at once, one thread each ({THREADS})",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        help="serve with Werkzeug's development server (logs every request; not for production)",
    )
    return parser.parse_args(argv)


# Waitress's default is 4. A chat turn holds its thread for the whole LLM
# call (seconds), so a few slow conversations would starve quick recalls;
# 8 stays under SQLAlchemy's default pool (5 + 10 overflow).
THREADS = 8


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if not 1 <= number <= 256:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 256, not {value!r}")
    return number


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
    # (If another server took the port meanwhile, the server says so and exits.)
    server = _development(app, args) if args.debug else _production(app, args)
    log.info(
        "chatmem demo: open http://%s:%d and log in as admin/admin, editor/editor or "
        "viewer/viewer (demo-only passwords); provider: %s; server: %s",
        args.host,
        args.port,
        app.config["CHATMEM_PROVIDER"],
        server.name,
    )
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()


@dataclass
class _Server:
    name: str
    serve: Callable[[], None]
    close: Callable[[], None]


def _production(app: Flask, args: argparse.Namespace) -> _Server:
    # Waitress: pure Python (installs anywhere the demo does, Windows too),
    # threaded, and hardened against slow or malformed clients, which the
    # development server is not. Its own "Serving on" line says where too.
    server = create_server(app, host=args.host, port=args.port, threads=args.threads)
    return _Server(f"waitress, {args.threads} threads", server.run, server.close)


def _development(app: Flask, args: argparse.Namespace) -> _Server:
    server = make_server(args.host, args.port, app, threaded=True)
    return _Server(
        "Werkzeug development server (--debug)", server.serve_forever, server.server_close
    )


def _check_port(host: str, port: int) -> None:
    """Exit with a message naming --port when the port is taken, and one that is free."""
    error = _bind_error(host, port)
    if error is None:
        return
    # Only a port this probe could bind is suggested: "try 5001" must not fail too.
    free = next(
        (p for p in range(port + 1, min(port + 50, 65536)) if not _bind_error(host, p)), None
    )
    hint = f", e.g. chatmem-demo --port {free} (free just now)" if free else ""
    sys.exit(
        f"chatmem-demo: cannot listen on {host}:{port} ({error.strerror or error}); "
        f"another server may be using it. Choose another port with --port{hint}"
    )


def _bind_error(host: str, port: int) -> OSError | None:
    with socket.socket(select_address_family(host, port), socket.SOCK_STREAM) as probe:
        # The option both servers bind with, so "free" means free for them.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            return error
    return None


if __name__ == "__main__":
    main()
