"""Property-based fuzz of the REST routes against their own OpenAPI document.

Schemathesis reads `/chatmem/api/openapi.json` as a client with a token would,
then sends each operation generated bodies and headers, valid ones and
deliberately invalid ones, straight to the Flask app over WSGI. Every answer
must be a documented one: never a 5xx, a status the document lists, JSON,
and a body matching the schema the document gives for that status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, Phase, given, note, settings
from schemathesis import checks as sc
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi import checks as openapi_checks

from tests.conftest import PG_URL, dispose
from tests.hostapp import create_host_app

OPENAPI = "/chatmem/api/openapi.json"
# Bounded, so a pass over every operation stays well under a minute per database.
EXAMPLES = 25

# `explode` is the test host's deliberate bug (a tool that raises): its 500
# `tool_error` is documented behaviour for a host bug, not a chatmem one.
HOST_BUG = "/chatmem/api/tools/explode"


@pytest.fixture
def app(database_url: str) -> Iterator[Flask]:
    """The test host without the per-token rate limit: past it every call
    would be 429, and the fuzz would stop reaching the tools at all."""
    app = create_host_app(database_url, CHATMEM_RATE_LIMIT_PER_MINUTE=0)
    yield app
    dispose(app)


@pytest.fixture
def fuzz_token(make_token: Any) -> str:
    return str(make_token("admin", "fuzz"))


def operations(app: Flask, token: str) -> list[Any]:
    """Every operation the token's document lists, read over WSGI as a client would."""
    loaded = schemathesis.openapi.from_wsgi(OPENAPI, app, headers=bearer(token))
    found = [result.ok() for result in loaded.exclude(path=HOST_BUG).get_all_operations()]
    assert len(found) >= 5, "the document lists the tools"
    return found


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


CHECKS = [
    sc.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    openapi_checks.response_headers_conformance,
]


def fuzz(operation: Any, mode: GenerationMode, token: str) -> None:
    """EXAMPLES generated calls of one operation; the first bad answer fails the test."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,  # the same examples on every run: a failure reproduces
        suppress_health_check=list(HealthCheck),
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
    )
    def one_call(case: Any) -> None:
        note(f"{operation.label} ({mode.value})")
        response = case.call(headers=bearer(token))
        case.validate_response(response, checks=CHECKS)

    one_call()


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=str)
def test_rest_routes_answer_as_documented(
    app: Flask, fuzz_token: str, mode: GenerationMode
) -> None:
    for operation in operations(app, fuzz_token):
        fuzz(operation, mode, fuzz_token)


def test_an_extra_field_a_lax_schema_allows_is_refused_not_a_crash(
    app: Flask, fuzz_token: str
) -> None:
    """What the fuzz found first: a schema that allows extra properties (`create-user`)
    handed the extra to a function without that parameter: TypeError, a 500."""
    response = app.test_client().post(
        "/chatmem/api/tools/create-user",
        json={"username": "ada", "deny": [1]},
        headers=bearer(fuzz_token),
    )
    assert response.status_code == 400
    assert response.json["error"] == {
        "code": "invalid_params",
        "message": "deny is not an accepted field.",
        "field": "deny",
    }


def test_a_value_the_database_cannot_store_is_bad_input_not_a_crash(
    app: Flask, fuzz_token: str
) -> None:
    """The fuzz's second find, on PostgreSQL: `get-post` takes any integer, and a
    post id past the column's 32 bits made the database refuse the query."""
    response = app.test_client().post(
        "/chatmem/api/tools/get-post", json={"post_id": 2**40}, headers=bearer(fuzz_token)
    )
    if PG_URL:
        assert response.status_code == 400
        assert response.json["error"]["code"] == "invalid_params"
        assert response.json["error"]["reason"] == "out_of_range"
    else:  # SQLite's integers are 64-bit: simply no such post
        assert response.status_code == 404
