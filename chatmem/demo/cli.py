"""`chatmem-demo`: install, run, log in. One command on a fresh machine."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from typing import Any

from . import create_app

log = logging.getLogger("chatmem.demo")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="chatmem-demo",
        description="Run the chatmem demo chat app (development server; see the README "
        "for gunicorn).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=5000, help="port to listen on (5000)")
    parser.add_argument(
        "--database-url",
        help="SQLAlchemy URL, e.g. postgresql+psycopg://user@host/db "
        "(default: $DATABASE_URL, else a SQLite file in the instance folder)",
    )
    parser.add_argument(
        "--instance-path", help="folder for the SQLite file and the generated secret key"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    config: dict[str, Any] = {}
    if args.database_url:
        config["SQLALCHEMY_DATABASE_URI"] = args.database_url
    app = create_app(config, instance_path=args.instance_path)
    log.info(
        "chatmem demo: open http://%s:%d and log in as admin/admin, editor/editor or "
        "viewer/viewer (demo-only passwords)",
        args.host,
        args.port,
    )
    app.run(host=args.host, port=args.port, debug=False, use_reloader=False, threaded=True)


if __name__ == "__main__":
    main()
