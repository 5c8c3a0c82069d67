"""Malformed import files, through the Memory screen's Import form and the
shell's `flask chatmem import`: each one a 4xx (or exit 1) naming the
problem, never a 500 or a stack trace, and nothing written (issue 24, point 4).

First the four files that answered 500 and their kin, each with the words
the refusal must hold; then the shared malformed-input corpus
(`tests/test_malformed_input.py`) in slots of an otherwise good file, and
as the whole file.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from flask import Flask
from flask.testing import FlaskClient

from chatmem import PayloadTooLarge
from chatmem.memory import transfer
from tests.screen_helpers import JSON, SCREEN, state, token
from tests.test_import_screening import document, row
from tests.test_malformed_input import FRAGMENTS, WHOLE_BODIES, strict_json

DEEP_DETAIL = '"__deep__"'
FORM = "application/x-www-form-urlencoded"


def good() -> dict[str, Any]:
    """A small file that imports: the malformed ones are this with one thing broken."""
    return document(row(1, "Checkout is page 42."), row(2, "Prices include VAT."))


def encoded(change: Callable[[dict[str, Any]], Any]) -> bytes:
    file = good()
    change(file)
    return json.dumps(file).encode()


def deep_detail(depth: int) -> bytes:
    """An event detail nested `depth` levels (json.dumps itself cannot write it)."""
    file = good()
    file["entries"][1]["events"][0]["detail"] = "__deep__"
    return json.dumps(file).replace(DEEP_DETAIL, '{"a":' * depth + "1" + "}" * depth).encode()


def entry(index: int, **fields: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda file: file["entries"][index].update(fields)


CASES: list[tuple[str, bytes, str]] = [
    (
        "version 2**70",
        encoded(lambda f: f.update(version=2**70)),
        "(version 1): version: is out of range: whole numbers must fit in 64 bits",
    ),
    (
        "JSON 200k deep",
        b'{"a":' * 200_000 + b"1" + b"}" * 200_000,
        "The file is nested more than 16 levels deep.",
    ),
    # Past the parser's own recursion limit the place is not known, only the bound.
    ("event detail 20k deep", deep_detail(20_000), "The file is nested more than 16 levels deep."),
    (
        "event detail 40 deep",
        deep_detail(40),
        "file/entries/1/events/0/detail/" + "a/" * 10 + "a is nested more than 16 levels deep.",
    ),
    (
        "created_at 9999-99-99T99:99:99Z",
        encoded(entry(1, created_at="9999-99-99T99:99:99Z")),
        "entry 2 (#2 “Prices include VAT.”): created_at '9999-99-99T99:99:99Z' is not a date",
    ),
    (
        "approved_at 30 February",
        encoded(entry(0, approved_at="2026-02-30T10:00:00Z")),
        "approved_at '2026-02-30T10:00:00Z' is not a date and time that exists",
    ),
    (
        "event at month 13",
        encoded(lambda f: f["entries"][0]["events"][0].update(at="2026-13-01T00:00:00Z")),
        "events/1/at '2026-13-01T00:00:00Z' is not a date",
    ),
    ("entry version 2**40", encoded(entry(0, version=2**40)), "greater than the maximum"),
    (
        "entry version 2**70",
        encoded(entry(0, version=2**70)),
        "entry 1 (#1 “Checkout is page 42.”), at version: is out of range",
    ),
    ("entry version 1e300", encoded(entry(0, version=1e300)), "is not of type 'integer'"),
    ("entry version 1.0", encoded(entry(0, version=1.0)), "is not of type 'integer'"),
    ("id 1.5", encoded(entry(0, id=1.5)), "is not of type 'integer'"),
    ("id true", encoded(entry(0, id=True)), "is not of type 'integer'"),
    ("enabled 'yes'", encoded(entry(0, enabled="yes")), "'yes' is not of type 'boolean'"),
    ("severity loud", encoded(entry(0, severity="loud")), "'loud' is not one of"),
    ("status live", encoded(entry(0, status="live")), "'live' is not one of"),
    ("entries an object", encoded(lambda f: f.update(entries={})), "is not of type 'array'"),
    ("events a string", encoded(entry(0, events="x")), "'x' is not of type 'array'"),
    (
        "detail a list",
        encoded(lambda f: f["entries"][0]["events"][0].update(detail=[])),
        "is not of type 'object', 'null'",
    ),
    ("actors a number", encoded(lambda f: f.update(actors=5)), "5 is not of type 'object'"),
    ("no entries", encoded(lambda f: f.pop("entries")), "'entries' is a required property"),
    ("a list", b"[]", "is not of type 'object'"),
    ("version 2", encoded(lambda f: f.update(version=2)), "1 was expected"),
    (
        "text with NUL",
        encoded(entry(0, text="a\x00b")),
        "entry 1 (#1 “Checkout is page 42.”), at text: holds a NUL character",
    ),
    ("title lone surrogate", b'{"title": "\\ud800"}', "holds a lone surrogate"),
    ("NaN version", encoded(entry(0, version=float("nan"))), "NaN is not JSON"),
    (
        "created_at offset +99:00",
        encoded(entry(0, created_at="2026-01-01T10:00:00+99:00")),
        "at created_at: '2026-01-01T10:00:00+99:00' is not a UTC date and time such as",
    ),
    (
        "review_after a time",
        encoded(entry(0, review_after="2026-01-01T10:00")),
        "at review_after: '2026-01-01T10:00' is not a day such as 2026-01-31",
    ),
    ("not UTF-8", b"\xff\xfe{}", "The file is not JSON (UTF-8)."),
]


@pytest.fixture
def cli_import(app: Flask, tmp_path: Path) -> Callable[[bytes], tuple[int, str]]:
    def run(body: bytes) -> tuple[int, str]:
        path = tmp_path / "memory.json"
        path.write_bytes(body)
        result = app.test_cli_runner().invoke(args=["chatmem", "import", str(path)])
        return result.exit_code, result.stderr

    return run


def multipart(client: FlaskClient, body: bytes) -> tuple[bytes, str]:
    """The Import form encoded as a browser sends it (with "Keep their status" ticked).

    Encoded here: the test client would spool a large file to a temporary
    file it never closes."""
    boundary = "cm-boundary-7f3a"

    def part(name: str, value: bytes, filename: str = "") -> bytes:
        extra = f'; filename="{filename}"' if filename else ""
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"{extra}\r\n\r\n'
        return head.encode() + value + b"\r\n"

    data = (
        part("csrf_token", token(client).encode())
        + part("keep_status", b"1")
        + part("file", body, "memory.json")
        + f"--{boundary}--\r\n".encode()
    )
    return data, f"multipart/form-data; boundary={boundary}"


@pytest.fixture
def form_import(client: FlaskClient) -> Iterator[Callable[[bytes], tuple[int, str]]]:
    def run(body: bytes) -> tuple[int, str]:
        data, content_type = multipart(client, body)
        with client.post(
            f"{SCREEN}/import", data=data, headers=JSON, content_type=content_type
        ) as answer:
            status, text = answer.status_code, answer.get_data(as_text=True)
        if status == 200:
            return 0, text
        error = (strict_json(text) or {}).get("error", {})
        if not 400 <= status < 500 or error.get("code") != "invalid_params":
            return 2, f"{status} {text[:300]}"
        return 1, str(error["message"])

    yield run


@pytest.mark.parametrize("channel", ["cli", "form"])
def test_each_malformed_file_is_refused_by_name(
    app: Flask, channel: str, request: pytest.FixtureRequest
) -> None:
    run = request.getfixturevalue(f"{channel}_import")
    before = state(app)
    problems = []
    for name, body, says in CASES:
        refused, message = run(body)
        if refused != 1 or says not in message or "Nothing was imported." not in message:
            problems.append(f"{name}: {message[:300]}")
        if state(app) != before:
            problems.append(f"{name}: something was written")
            before = state(app)
    assert not problems, "\n".join(problems)
    assert run(json.dumps(good()).encode())[0] == 0, "the good file imports"


@pytest.mark.parametrize("channel", ["cli", "form"])
def test_a_file_with_a_byte_order_mark_imports(
    app: Flask, channel: str, request: pytest.FixtureRequest
) -> None:
    """Windows Notepad saves UTF-8 with a BOM; the export is still an export."""
    run = request.getfixturevalue(f"{channel}_import")
    refused, message = run(b"\xef\xbb\xbf" + json.dumps(good()).encode())
    assert refused == 0, message


def corpus() -> Iterator[tuple[str, bytes]]:
    """Each fragment in a slot of a good file, then each whole body as the file."""
    template = json.dumps(good())
    slots = {
        "version": ('"version": 1', '"version": {}'),
        "entry version": ('"version": 2', '"version": {}'),
        "created_at": ('"created_at": "2020-01-01T00:00:00.000000Z"', '"created_at": {}'),
        "text": ('"text": "Checkout is page 42."', '"text": {}'),
    }
    for slot, (good_part, bad_part) in slots.items():
        assert template.count(good_part) >= 1, good_part
        for fragment in FRAGMENTS:
            if slot == "text" and fragment.is_text:
                continue  # ordinary text: a fine entry
            body = template.replace(good_part, bad_part.replace("{}", fragment.json), 1)
            yield f"{slot} = {fragment.name}", body.encode()
    for name, body in WHOLE_BODIES:
        yield f"the file: {name}", body


def test_the_malformed_input_corpus_is_refused_on_the_form_and_the_shell(
    app: Flask, cli_import: Any, form_import: Any
) -> None:
    before = state(app)
    problems = []
    count = 0
    for label, body in corpus():
        for channel, run in (("cli", cli_import), ("form", form_import)):
            refused, message = run(body)
            count += 1
            if refused != 1 or "Traceback" in message or strict_json(json.dumps(message)) is None:
                problems.append(f"{channel} {label}: {message[:300]}")
            if state(app) != before:
                problems.append(f"{channel} {label}: something was written")
                before = state(app)
    assert not problems, "\n".join(problems)
    assert count >= 300
    assert transfer.MAX_DEPTH < 40, "the corpus's 40-deep fragments are past the bound"


def test_parse_refuses_a_file_past_its_size_before_reading_it() -> None:
    with pytest.raises(PayloadTooLarge) as caught:
        transfer.parse(b"[" + b" " * 100 + b"]", max_bytes=100)
    assert caught.value.message == "The file is larger than 100 bytes. Nothing was imported."
    assert transfer.parse(b"[" + b" " * 98 + b"]", max_bytes=100) == []


def chunked_import(live_server: str, file: Iterator[bytes]) -> tuple[int, Any]:
    """Sign in and send the Import form chunked (no Content-Length), as a client
    streaming a file may; the answer's status and JSON."""
    connection = http.client.HTTPConnection(urlsplit(live_server).netloc, timeout=30)
    form = "username=admin&password=admin"
    connection.request("POST", "/login", body=form, headers={"Content-Type": FORM})
    answer = connection.getresponse()
    answer.read()
    cookie = answer.getheader("Set-Cookie", "").split(";")[0]
    connection.request("GET", SCREEN, headers={"Cookie": cookie})
    answer = connection.getresponse()
    page = answer.read().decode()
    cookie = (answer.getheader("Set-Cookie") or cookie).split(";")[0]  # the CSRF secret's
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert csrf, page[:300]
    boundary = "cm-chunked"

    def body() -> Iterator[bytes]:
        yield (
            f'--{boundary}\r\nContent-Disposition: form-data; name="csrf_token"\r\n\r\n'
            f"{csrf[1]}\r\n--{boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="m.json"\r\n\r\n'
        ).encode()
        yield from file
        yield f"\r\n--{boundary}--\r\n".encode()

    headers = {
        "Cookie": cookie,
        "Accept": "application/json",
        "Content-Type": f"multipart/form-data; boundary={boundary}",
    }
    connection.request(
        "POST", f"{SCREEN}/import", body=body(), headers=headers, encode_chunked=True
    )
    answer = connection.getresponse()
    try:
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_an_upload_without_a_length_is_read_within_the_limit(app: Flask, live_server: str) -> None:
    """Chunked, so no Content-Length to refuse up front: past 5 MB it is 413 all the same
    (found while reading, before the form parser spools any of it); within, it imports."""
    before = state(app)
    megabytes = transfer.UPLOAD_MAX_BYTES // (1024 * 1024)
    status, answer = chunked_import(
        live_server, (b" " * (1024 * 1024) for _ in range(megabytes + 1))
    )
    assert (status, answer) == (
        413,
        {"error": {"code": "payload_too_large", "message": "The file is larger than 5 MB."}},
    )
    assert state(app) == before
    status, answer = chunked_import(live_server, iter([json.dumps(good()).encode()]))
    assert (status, answer.get("message")) == (200, "Imported 2 entries (pending)."), answer
