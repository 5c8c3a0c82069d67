"""The demo app's own Flask answering chatmem's MCP answers replayed: the floor
of a call that goes through the host's Flask app but does none of chatmem's work.

    python bench/flask_floor.py --upstream http://127.0.0.1:PORT/chatmem/mcp --port N \
        --database-url URL --instance-path DIR

The app `chatmem-demo` serves (`chatmem.demo.create_app`, the same database and
instance folder, so the same secret key, extensions and hooks: its session
interface, CSRF, Flask-Login, Flask-Limiter, its page headers and chatmem's
app-wide hooks), on waitress with chatmem-demo's threads, plus one route,
`POST /floor/mcp`, that hands the request to `mcp_replay.replay_app`: chatmem's
answer to the same request, kept from the first time. `peer_memory_server.py`
times it in the same rounds as chatmem and the bare replay, so a call's time
splits into the client and the HTTP hop (the bare replay), the host's Flask
(this one over the bare replay) and chatmem's own work (chatmem over this one).
"""

from __future__ import annotations

import argparse

from flask import Response, request
from mcp_replay import replay_app
from waitress import serve

from chatmem.demo import create_app
from chatmem.demo.cli import THREADS
from chatmem.demo.extensions import csrf


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", required=True, help="chatmem's MCP endpoint URL")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True, help="chatmem-demo's database")
    parser.add_argument("--instance-path", required=True, help="chatmem-demo's instance folder")
    args = parser.parse_args()
    app = create_app(
        {"SQLALCHEMY_DATABASE_URI": args.database_url}, instance_path=args.instance_path
    )
    replay = replay_app(args.upstream)

    @app.post("/floor/mcp")
    @csrf.exempt  # as chatmem's MCP route is: a bearer token, no cookie
    def floor() -> Response:
        return Response.from_app(replay, request.environ)

    serve(app, host="127.0.0.1", port=args.port, threads=THREADS)


if __name__ == "__main__":
    main()
