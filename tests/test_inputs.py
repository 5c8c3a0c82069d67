"""The outside-value rules themselves: each refusal's words, code and field, and each bound.

The channel tests (`test_malformed_input.py`, `test_json_errors.py`) show
every channel answers these with a 400 and writes nothing; here is what the
caller reads in that answer: the sentence, `details.reason` (the stable code
a client branches on) and `details.field` (where the value was), at the
exact edge of each bound.
"""

from __future__ import annotations

from typing import Any

import pytest
from werkzeug.datastructures import MultiDict

from chatmem.errors import InvalidParams, PayloadTooLarge
from chatmem.inputs import (
    INT_MAX,
    INT_MIN,
    NotJson,
    boolean_field,
    check_text,
    check_value,
    form_boolean,
    json_safe,
    parse_json,
    whole_number,
)

pytestmark = pytest.mark.db_free


def refusal(error: pytest.ExceptionInfo[InvalidParams]) -> tuple[str, dict[str, Any]]:
    return error.value.message, error.value.details


# -- parse_json: the body's bounds ------------------------------------------------


def test_a_body_at_its_byte_limit_passes_and_one_byte_more_is_413() -> None:
    body = '{"a": "' + "x" * 991 + '"}'
    assert len(body) == 1000
    assert parse_json(body, max_bytes=1000) == {"a": "x" * 991}
    with pytest.raises(PayloadTooLarge) as error:
        parse_json(body + " ", field="import", max_bytes=1000)
    assert refusal(error) == (
        "import is larger than 1,000 bytes.",
        {"field": "import", "reason": "too_large"},
    )


@pytest.mark.parametrize(
    ("limit", "said"),
    [(1024 * 1024, "1 MB"), (5 * 1024 * 1024, "5 MB"), (1024 * 1024 + 1, "1,048,577 bytes")],
)
def test_the_size_limit_is_said_in_megabytes_when_it_is_whole(limit: int, said: str) -> None:
    with pytest.raises(PayloadTooLarge) as error:
        parse_json(b" " * (limit + 1), max_bytes=limit)
    assert refusal(error) == (
        f"The body is larger than {said}.",
        {"field": "body", "reason": "too_large"},
    )


def test_not_json_names_the_field() -> None:
    with pytest.raises(NotJson) as error:
        parse_json("{nope", field="arguments")
    assert refusal(error) == (
        "arguments is not valid JSON.",
        {"field": "arguments", "reason": "not_json"},
    )


def test_bytes_are_read_as_utf_8_only() -> None:
    assert parse_json('{"name": "café"}'.encode()) == {"name": "café"}
    # json.loads alone would guess UTF-16 from the zero bytes and accept it.
    with pytest.raises(NotJson):
        parse_json('{"a": 1}'.encode("utf-16-le"))


def test_nesting_past_the_parser_s_own_limit_is_too_deep_not_a_crash() -> None:
    with pytest.raises(NotJson) as error:
        parse_json("[" * 100_000, field="arguments", max_depth=7)
    assert refusal(error) == (
        "arguments is nested more than 7 levels deep.",
        {"field": "arguments", "reason": "too_deep"},
    )


def test_nan_and_infinity_are_not_json() -> None:
    for constant in ("NaN", "Infinity", "-Infinity"):
        with pytest.raises(NotJson) as error:
            parse_json(f'{{"a": {constant}}}')
        assert refusal(error) == (
            f"{constant} is not JSON: send a finite number.",
            {"field": "body", "reason": "not_finite"},
        )


def test_a_number_literal_may_have_forty_digits() -> None:
    # Forty digits parse (and are then out of a 64-bit range: another rule).
    assert parse_json("-" + "1" * 40, values=False) == -int("1" * 40)
    with pytest.raises(NotJson) as error:
        parse_json("1" * 41)
    assert refusal(error) == (
        "A number in the body has more than 40 digits.",
        {"field": "body", "reason": "number_too_long"},
    )


def test_parse_json_checks_the_values_unless_told_not_to() -> None:
    body = '{"note": "a\\u0000b"}'
    with pytest.raises(InvalidParams) as error:
        parse_json(body, field="arguments")
    assert error.value.details["field"] == "arguments/note"
    assert parse_json(body, values=False) == {"note": "a\x00b"}
    with pytest.raises(NotJson):  # the parse bounds still hold
        parse_json("[[[]]]", values=False, max_depth=2)


# -- check_value: depth, numbers, text ----------------------------------------------


def test_depth_counts_from_the_value_itself() -> None:
    check_value([[]], max_depth=2)
    with pytest.raises(NotJson) as error:
        check_value([[[]]], field="arguments", max_depth=2)
    assert refusal(error) == (
        "arguments/0/0 is nested more than 2 levels deep.",
        {"field": "arguments/0/0", "reason": "too_deep"},
    )
    with pytest.raises(NotJson) as error:
        check_value({"a": {}}, max_depth=1)
    assert refusal(error) == (
        "a is nested more than 1 levels deep.",
        {"field": "a", "reason": "too_deep"},
    )


@pytest.mark.parametrize("number", [INT_MIN, INT_MAX, 0])
def test_a_64_bit_whole_number_passes(number: int) -> None:
    check_value({"n": number})


@pytest.mark.parametrize("number", [INT_MIN - 1, INT_MAX + 1])
def test_a_whole_number_outside_64_bits_is_out_of_range(number: int) -> None:
    with pytest.raises(InvalidParams) as error:
        check_value({"post_id": number}, field="arguments")
    assert refusal(error) == (
        "arguments/post_id is out of range: whole numbers must fit in 64 bits "
        f"({INT_MIN} to {INT_MAX}).",
        {"field": "arguments/post_id", "reason": "out_of_range"},
    )


def test_a_decoded_nan_is_refused_where_it_stands() -> None:
    with pytest.raises(InvalidParams) as error:
        check_value(float("inf"))
    assert refusal(error) == (
        "The body must be a finite number: JSON has no NaN or Infinity.",
        {"field": "body", "reason": "not_finite"},
    )
    with pytest.raises(InvalidParams) as error:
        check_value([1.5, float("nan")], field="scores")
    assert error.value.details == {"field": "scores/1", "reason": "not_finite"}


def test_a_key_is_text_too() -> None:
    with pytest.raises(InvalidParams) as error:
        check_value({"ok": {"bad\x00key": 1}}, field="arguments")
    assert error.value.details["field"] == "arguments/ok"
    check_value({"bad\x00key": 1}, values=False)


def test_text_with_nul_or_a_lone_surrogate_is_refused_with_its_code_point() -> None:
    assert check_text("fine", field="title") == "fine"
    with pytest.raises(InvalidParams) as error:
        check_text("a\x00b", field="title")
    assert refusal(error) == (
        "title holds a NUL character (U+0000).",
        {"field": "title", "reason": "nul_character", "code_points": ["U+0000"]},
    )
    with pytest.raises(InvalidParams) as error:
        check_text("a\udc00b", field="")
    assert refusal(error) == (
        "The body holds a lone surrogate (U+DC00), which is not text.",
        {"field": "body", "reason": "lone_surrogate", "code_points": ["U+DC00"]},
    )


# -- whole_number: form and query fields -------------------------------------------


@pytest.mark.parametrize(
    ("raw", "number"), [("0", 0), (" 42 ", 42), (7, 7), (str(INT_MAX), INT_MAX)]
)
def test_a_whole_number_field(raw: Any, number: int) -> None:
    assert whole_number(raw, field="limit") == number


@pytest.mark.parametrize("raw", ["²", "1.5", "-1", "", True, None, 2.0, "1" * 20])
def test_anything_else_is_not_a_whole_number(raw: Any) -> None:
    with pytest.raises(InvalidParams) as error:
        whole_number(raw, field="limit")
    assert refusal(error) == (
        "limit must be a whole number.",
        {"field": "limit", "reason": "not_integer"},
    )


def test_a_whole_number_below_its_minimum_or_over_64_bits_is_out_of_range() -> None:
    assert whole_number("1", field="page", minimum=1) == 1
    for raw in ("0", INT_MAX + 1, -1):
        with pytest.raises(InvalidParams) as error:
            whole_number(raw, field="page", minimum=1)
        assert refusal(error) == (
            f"page must be between 1 and {INT_MAX}.",
            {"field": "page", "reason": "out_of_range"},
        )


# -- json_safe: records of what someone else sent -----------------------------------


def test_json_safe_replaces_what_json_columns_refuse() -> None:
    sent = {"x\x00": [float("nan"), "a\ud800", ("t", float("-inf"))], "n": 1.5, "ok": None}
    assert json_safe(sent) == {"x\ufffd": [None, "a\ufffd", ["t", None]], "n": 1.5, "ok": None}


# -- boolean fields ----------------------------------------------------------------


def test_a_boolean_field_takes_its_documented_values_only() -> None:
    assert [boolean_field(v, field="f") for v in ("1", "true", "on", True)] == [True] * 4
    assert [boolean_field(v, field="f") for v in ("0", "false", "", None, False)] == [False] * 5
    for raw in ("TRUE", "yes", 1, "off"):
        with pytest.raises(InvalidParams) as error:
            boolean_field(raw, field="read_only")
        assert refusal(error) == (
            'read_only must be one of "1", "true", "on", "0", "false" (or left out for false).',
            {"field": "read_only", "reason": "not_boolean"},
        )


def test_a_form_boolean_sent_twice_is_refused() -> None:
    assert form_boolean(MultiDict([("anyway", "1")]), "anyway") is True
    assert form_boolean(MultiDict(), "anyway") is False
    with pytest.raises(InvalidParams) as error:
        form_boolean(MultiDict([("read_only", "0"), ("read_only", "1")]), "read_only")
    assert refusal(error) == (
        "read_only was sent more than once.",
        {"field": "read_only", "reason": "repeated_field"},
    )
