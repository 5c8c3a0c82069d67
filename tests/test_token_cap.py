"""A per-user token cap (issue 24, "The rest"): `CHATMEM_TOKENS_PER_USER` live
tokens at most, refused with 409 `conflict` / `too_many_tokens` on every channel
that mints (the CLI, the demo's Connect page, `tokens.issue`), nothing made.
Revoked and expired tokens do not count. Real apps, SQLite file or PostgreSQL.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from flask import Flask
from sqlalchemy import update

from chatmem import Conflict
from chatmem.auth import tokens
from chatmem.memory.models import ApiToken, utcnow
from tests.demo_client import DemoClient
from tests.hostapp import USERS, reconfigure, work
from tests.test_connect_tokens import CREATE, rows
from tests.test_tokens import cli

REFUSAL = "editor already has 3 live API tokens, the most one user may have"


def mint(app: Flask, username: str = "editor", **kwargs: Any) -> Any:
    return work(app, lambda memory, db: tokens.issue(memory, USERS[username], **kwargs)[0].id)


def count(app: Flask) -> int:
    return len(work(app, lambda memory, db: tokens.list_tokens(db.session())))


def test_the_default_cap_is_20_live_tokens_per_user(app: Flask) -> None:
    for number in range(20):
        mint(app, name=f"t{number}")
    with pytest.raises(Conflict) as refused:
        mint(app, name="one too many")
    assert refused.value.details == {"reason": "too_many_tokens", "limit": 20}
    assert refused.value.message == (
        "editor already has 20 live API tokens, the most one user may have "
        "(CHATMEM_TOKENS_PER_USER): revoke one first."
    )
    assert count(app) == 20
    mint(app, "admin")  # another user's count is their own


def test_revoked_and_expired_tokens_free_a_place(app: Flask) -> None:
    reconfigure(app, CHATMEM_TOKENS_PER_USER=3)
    first, second, _third = (mint(app, name=f"t{n}") for n in range(3))
    with pytest.raises(Conflict):
        mint(app)
    work(app, lambda memory, db: tokens.revoke(db.session(), first))
    mint(app, name="after a revocation")

    def expire(memory: Any, db: Any) -> None:
        db.session.execute(
            update(ApiToken)
            .where(ApiToken.id == second)
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
        db.session.commit()

    work(app, expire)
    mint(app, name="after an expiry")
    with pytest.raises(Conflict):
        mint(app)


def test_the_cli_refuses_the_token_past_the_cap(app: Flask) -> None:
    reconfigure(app, CHATMEM_TOKENS_PER_USER=3)
    for number in range(3):
        assert cli(app, "create", "editor", "--name", f"t{number}").exit_code == 0
    refused = cli(app, "create", "editor", "--name", "t3")
    assert refused.exit_code == 1
    assert REFUSAL in refused.stderr
    assert "cm_" not in refused.stdout and "Traceback" not in refused.output
    assert count(app) == 3


def test_zero_means_no_cap(app: Flask) -> None:
    reconfigure(app, CHATMEM_TOKENS_PER_USER=0)
    for number in range(25):
        mint(app, name=f"t{number}")
    assert count(app) == 25


def test_the_connect_page_refuses_the_token_past_the_cap(demo_app: Flask) -> None:
    reconfigure(demo_app, CHATMEM_TOKENS_PER_USER=3)
    editor = DemoClient(demo_app, "editor")
    form = {"csrf_token": editor.csrf, "name": "laptop"}
    for _ in range(3):
        assert editor.client.post(CREATE, data=form).status_code == 201
    refused = editor.client.post(CREATE, data=form)
    page = refused.get_data(as_text=True)
    assert refused.status_code == 409
    assert REFUSAL in page and "revoke one first" in page
    assert 'id="new-token"' not in page
    assert len(rows(demo_app)) == 3


def test_mints_at_the_same_moment_do_not_pass_the_cap_together(app: Flask) -> None:
    """Found by trying it: 40 parallel Connect-page posts made 33 live tokens under a cap of
    20 (each request counted before any had written). Counting and writing are one step."""
    reconfigure(app, CHATMEM_TOKENS_PER_USER=3)

    def one(number: int) -> str:
        try:
            mint(app, name=f"p{number}")
        except Conflict:
            return "refused"
        return "made"

    with ThreadPoolExecutor(8) as pool:
        outcomes = sorted(pool.map(one, range(12)))
    assert count(app) == 3
    assert outcomes == ["made"] * 3 + ["refused"] * 9
