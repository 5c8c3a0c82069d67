"""chatmem's MCP answers served back with no work: the floor of a measured call.

    python bench/mcp_replay.py --upstream http://127.0.0.1:PORT/chatmem/mcp --port N

A WSGI app on waitress (the server `chatmem-demo` runs) that forwards each
JSON-RPC request to `--upstream` the first time it sees it and, from then on,
answers the same request (same method and params) with the answer it kept,
only the id changed. Timed through the same MCP client, a replayed call is
what a call would cost if chatmem's work took no time at all: the client,
the HTTP hop and the WSGI server. `peer_memory_server.py` reports it next to
chatmem's figures, so the ratio against the peer can be read against the
best any server behind this client could do.
"""

from __future__ import annotations

import argparse
import http.client
import json
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from waitress import serve

# Request headers the upstream needs; answer headers the client needs.
FORWARDED = ("authorization", "accept", "content-type", "mcp-session-id", "mcp-protocol-version")
RETURNED = ("content-type", "mcp-session-id")


def replay_app(upstream: str) -> Callable[..., Iterable[bytes]]:
    target = urlsplit(upstream)
    kept: dict[str, tuple[str, list[tuple[str, str]], dict[str, Any]]] = {}

    def forward(environ: dict[str, Any], body: bytes) -> tuple[str, list[tuple[str, str]], bytes]:
        headers = {
            name: environ[key]
            for name in FORWARDED
            if (key := "HTTP_" + name.upper().replace("-", "_")) in environ
            or (key := name.upper().replace("-", "_")) in environ
        }
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=120)
        try:
            connection.request(environ["REQUEST_METHOD"], target.path, body, headers)
            answer = connection.getresponse()
            status = f"{answer.status} {answer.reason}"
            returned = [(n, v) for n, v in answer.getheaders() if n.lower() in RETURNED]
            return status, returned, answer.read()
        finally:
            connection.close()

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        message = json.loads(body) if body else {}
        params = {k: v for k, v in (message.get("params") or {}).items() if k != "_meta"}
        key = json.dumps([message.get("method"), params], sort_keys=True)
        if "id" in message and key in kept:
            status, headers, answer = kept[key]
            payload = json.dumps({**answer, "id": message["id"]}).encode()
        else:
            status, headers, payload = forward(environ, body)
            if "id" in message and status.startswith("200") and payload:
                kept[key] = (status, headers, json.loads(payload))
        headers = [(n, v) for n, v in headers if n.lower() != "content-length"]
        start_response(status, [*headers, ("Content-Length", str(len(payload)))])
        return [payload]

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--upstream", required=True, help="chatmem's MCP endpoint URL")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=8, help="as chatmem-demo's default")
    args = parser.parse_args()
    serve(replay_app(args.upstream), host="127.0.0.1", port=args.port, threads=args.threads)


if __name__ == "__main__":
    main()
