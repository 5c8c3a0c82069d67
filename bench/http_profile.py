"""Where a gunicorn worker's time goes while serving MCP `tools/call recall`.

    python bench/http_profile.py [--database-url postgresql+psycopg://...] [--seconds 8]

The same set-up as `http_mcp.py` (2 gthread workers, 4 keep-alive clients,
rate limit off), with py-spy (`pip install py-spy`) sampling one worker in
`--gil` mode: only the thread holding the GIL is sampled, so the shares
are shares of the worker's Python CPU time, not of wall time spent waiting
on the database or for the GIL. Prints the inclusive share of chatmem's
functions and of the main library layers.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import ROOT, served_database

sys.path.insert(0, str(ROOT))
from tests.gunicorn_server import Connection, gunicorn  # noqa: E402

CLIENTS = 4
SHOWN = re.compile(
    r"chatmem/|Flask\.wsgi_app|ThreadWorker\.handle_request|Session\.(execute|commit|get|connection)"
    r"|DefaultDialect\.do_execute|Validator\.iter_errors|open_session"
)


def inclusive(raw: Path) -> tuple[int, collections.Counter[str]]:
    """Samples, and samples per function counting every stack it appears in once."""
    shares: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        total += int(count)
        frames = {re.sub(r":\d+\)$", ")", frame) for frame in stack.split(";")}
        for frame in frames:
            shares[re.sub(r"\(/.*?site-packages/", "(", frame)] += int(count)
    return total, shares


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--database-url")
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    _name, url, plain = served_database(args.database_url)
    tmp = Path(tempfile.mkdtemp(prefix="chatmem-profile-"))
    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Bearer {plain}",
        "MCP-Protocol-Version": "2025-06-18",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {}},
    }
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"limit": 10}},
    }
    with gunicorn(url, tmp, app_module="bench.http_host:app") as server:
        conn = Connection(server.port)
        conn.http.request("POST", "/chatmem/mcp", body=json.dumps(init), headers=headers)
        response = conn.http.getresponse()
        response.read()
        headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id") or ""
        conn.close()
        stop = time.monotonic() + args.seconds + 3
        done = [0] * CLIENTS

        def run(i: int) -> None:
            client = Connection(server.port)
            while time.monotonic() < stop:
                client.http.request("POST", "/chatmem/mcp", body=json.dumps(call), headers=headers)
                client.http.getresponse().read()
                done[i] += 1
            client.close()

        threads = [threading.Thread(target=run, args=(i,)) for i in range(CLIENTS)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
        worker = children.read_text().split()[0]
        raw = tmp / "worker.txt"
        subprocess.run(
            [spy, "record", "--pid", worker, "--duration", str(int(args.seconds)), "--gil",
             "--nonblocking", "--rate", "500", "--format", "raw", "--output", str(raw)],
            check=True, capture_output=True, timeout=args.seconds + 60,
        )  # fmt: skip
        for thread in threads:
            thread.join(timeout=30)
    total, shares = inclusive(raw)
    print(f"{sum(done)} calls; {total} samples of one worker's GIL-holding thread")
    for frame, count in shares.most_common():
        if SHOWN.search(frame):
            print(f"{100 * count / total:5.1f}%  {frame}")


if __name__ == "__main__":
    main()
