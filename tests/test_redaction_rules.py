"""The rules of the redaction step, each pinned by the exact text a reader gets.

tests/test_redaction.py pins where the shapes start and stop; these pin the
key pass (`key: value` in free text): where a key starts in a long run, how
the separator, the scheme and the words after a value decide, which code is
not a value; the order of the passes (a key names its value's kind before the
randomness rule does); structured values (weak keys, an AWS key id and its
secret in two fields); and the key names `secret_keys` reads.
"""

from __future__ import annotations

import pytest

from chatmem.text import redaction

pytestmark = pytest.mark.db_free  # pure text functions

RANDOM = "Xk29fjqPz81mQw7RtLp4"  # random enough for any key, and for the randomness rule
AWS_ID = "AKIAZX4Q7RT2WN8PLM3V"
# 40 characters of base64 with one capital: AWS's secret only next to an id
# (the randomness rule wants two of each case).
AWS_SECRET = "kv9rt2xq/8mn4pl6zw1yb3cf5hj7ds0ag2eu4iO6"


def masked(text: str, kind: str = "password") -> tuple[str, list[str]]:
    """What `scan` returns for a text with one kind of secret: the redacted text, and the kind."""
    return text, [kind]


# -- the order of the passes ------------------------------------------------------------


def test_a_random_value_under_a_key_is_named_by_its_key_not_by_the_randomness_rule() -> None:
    assert redaction.scan(f"db_password={RANDOM}") == masked("db_password=[redacted:password]")


def test_a_word_that_only_ends_in_a_key_word_leaves_its_value_to_the_randomness_rule() -> None:
    """`XAUTH`, `XPASS` are no `auth`, `pass` key: a random value is still masked."""
    assert redaction.scan(f"XPASS={RANDOM}") == masked(
        "XPASS=[redacted:random_token]", "random_token"
    )
    assert redaction.scan("XPASS=hunter2") == ("XPASS=hunter2", [])


def test_a_shape_runs_only_on_text_that_holds_one_of_its_anchors() -> None:
    """`BeArEr` is none of the bearer shape's spellings: its token is still masked, as random."""
    assert redaction.scan("send BeArEr Qm9vZ2xlLXRva2VuLTQyNDI0Mg.Xy7Z to ci_runner") == (
        "send BeArEr [redacted:random_token] to ci_runner",
        ["random_token"],
    )


def test_a_secret_tag_keeps_its_closing_tag_wherever_it_sits() -> None:
    assert redaction.scan("config: <Password>hunter22</Password> done") == masked(
        "config: <Password>[redacted:password]</Password> done"
    )


# -- where a key starts --------------------------------------------------------------


def test_an_upper_case_key_is_found_in_text_whose_lower_case_is_longer() -> None:
    assert redaction.redact("İ PASSWORD=hunter2") == "İ PASSWORD=[redacted:password]"


def test_a_secret_word_within_forty_characters_of_its_run_start_is_read_with_the_whole_run() -> (
    None
):
    """`bypass` is no `pass` key, however far into the text or into the run it sits."""
    text = "When the page is stale the proxy serves it with bypass=cache"
    assert redaction.redact(text) == text
    assert redaction.redact("x" * 38 + "bypass=cache") == "x" * 38 + "bypass=cache"


@pytest.mark.parametrize(
    "text",
    [
        # an underscore long before the run is not where its last words start
        "see my_notes: " + "x" * 70 + "_db_password=hunter2",
        # nor one after the secret word
        "x" * 70 + "password_hash=hunter2",
        # the words start at the first separator of the last forty characters
        "x" * 70 + "_session_key=abc1",
        # only `_`, `.` and `-` separate words
        "x" * 60 + "Xyypass=hunter2",
        # the first separator exactly forty characters back, after a dot
        "x" * 29 + "._" + "y" * 38 + "_password=hunter2",
    ],
    ids=["underscore-before-run", "underscore-after-word", "pair", "capital-x", "dot-at-41"],
)
def test_the_last_words_of_a_run_too_long_for_one_key(text: str) -> None:
    key, _, _ = text.partition("=")
    kind = "token" if key.endswith("session_key") else "password"
    assert redaction.scan(text) == masked(f"{key}=[redacted:{kind}]", kind)


def test_a_key_inside_a_masked_value_masks_nothing_more() -> None:
    assert redaction.redact('password="see token: c"') == 'password="[redacted:password]"'


# -- the separator and what follows the value ------------------------------------------


@pytest.mark.parametrize("text", ["Your password was reset.", "Your password is reset."])
def test_is_and_was_join_a_key_to_a_value_only_when_it_looks_random(text: str) -> None:
    assert redaction.scan(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("password: hunter\tand more", "password: hunter\tand more"),  # a tab before words
        (
            "password: hunter - the one in the vault",
            "password: [redacted:password] - the one in the vault",
        ),
        ("password: hunter 2 and more", "password: [redacted:password] 2 and more"),
        ("password: hunter _x", "password: [redacted:password] _x"),
    ],
    ids=["tab", "dash", "digit", "underscore"],
)
def test_only_letters_after_a_space_or_tab_make_a_plain_value_prose(
    text: str, redacted: str
) -> None:
    assert redaction.redact(text) == redacted


@pytest.mark.parametrize(
    "value",
    ["Basic $CREDENTIALS", "Token ${API_TOKEN}", "Bearer\t$TOKEN", "basic\t$B64"],
)
def test_a_scheme_before_a_placeholder_is_no_secret(value: str) -> None:
    assert redaction.scan(f"Authorization: {value}") == (f"Authorization: {value}", [])


def test_a_scheme_word_counts_only_at_the_start_of_a_value() -> None:
    assert redaction.redact('"password": "xxxBearer xxx"') == '"password": "[redacted:password]"'


# -- code is not a value --------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["f", "b", "r", "u", "rb", "br", "fr", "rf"])
@pytest.mark.parametrize("quote", ["'", '"'])
def test_a_python_string_prefix_is_code_not_a_value(prefix: str, quote: str) -> None:
    text = f"password = {prefix}{quote}{{value}}{quote}"
    assert redaction.scan(text) == (text, [])


# -- keys that are not sure -------------------------------------------------------------


def test_a_value_with_an_equals_sign_inside_is_no_secret_under_a_weak_key() -> None:
    assert redaction.redact("asana_key: Xk29fjqPz81mQw7=X") == "asana_key: Xk29fjqPz81mQw7=X"


def test_a_weak_key_takes_a_random_value_from_eight_characters_a_sure_key_from_six() -> None:
    assert redaction.redact("sort_key: ab12cd") == "sort_key: ab12cd"
    assert redaction.redact("asana_key: ab12cd34") == "asana_key: [redacted:api_key]"
    assert redaction.redact("password ab12cd") == "password [redacted:password]"
    assert redaction.redact("password ab12c") == "password ab12c"


def test_a_weak_key_in_structured_arguments_masks_only_a_random_string() -> None:
    value = {"sort_key": "created_at", "asana_key": RANDOM, "primary_key": 12}
    assert redaction.redact_value(value) == {
        "sort_key": "created_at",
        "asana_key": "[redacted:api_key]",
        "primary_key": 12,
    }


# -- an AWS key id and its secret in two fields -----------------------------------------


def test_an_aws_secret_is_masked_when_its_id_is_split_by_an_invisible_character() -> None:
    """The id is found only once the text is made visible; the second pass then
    finds its secret in another field."""
    value = {"id": AWS_ID[:4] + "\u200b" + AWS_ID[4:], "secret": "x", "note": AWS_SECRET}
    assert redaction.redact_value(value) == {
        "id": "[redacted:aws_access_key]",
        "secret": "[redacted:secret]",
        "note": "[redacted:aws_secret_key]",
    }
    assert redaction.redact_value({"note": AWS_SECRET}) == {"note": AWS_SECRET}


# -- key names (`secret_keys`) ------------------------------------------------------------


def test_a_key_whose_tail_is_every_tail_word_still_names_its_secret() -> None:
    key = "password_key_value_val_str_string_b64_base64_raw_hash_enc_base"
    assert redaction.redact_value({key: "x"}) == {key: "[redacted:password]"}


def test_a_key_name_that_holds_every_key_word_is_read_from_its_last_words() -> None:
    key = "login_dsn_sig_pat_cookie_certificate_authorization_credential_pwd_passphrase_token_key"
    assert redaction.redact_value({key: "x"}) == {key: "[redacted:token]"}


def test_a_sure_word_with_another_word_after_it_leaves_the_key_to_a_weak_word() -> None:
    """`webhook_secret_sig` names a signature (a weak key): a random value is masked as a token."""
    assert redaction.redact_value({"webhook_secret_sig": RANDOM}) == {
        "webhook_secret_sig": "[redacted:token]"
    }
    assert redaction.redact_value({"webhook_secret_sig": "sha256"}) == {
        "webhook_secret_sig": "sha256"
    }


def test_a_key_of_sixty_four_characters_is_read_whole() -> None:
    key = "a" * 37 + "_password_hash_string_value"
    assert redaction.redact(f"{key}=hunter2") == f"{key}=[redacted:password]"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("password\t= hunter2", "password\t= [redacted:password]"),
        ("password := hunter2", "password := [redacted:password]"),
        ("password:\thunter2", "password:\t[redacted:password]"),
        ("password\thunter2", "password\t[redacted:password]"),
        ("password \nhunter2", "password \n[redacted:password]"),
        ("password\t\nhunter2", "password\t\n[redacted:password]"),
        ("password\n  hunter2", "password\n  [redacted:password]"),
        ("password\n\thunter2", "password\n\t[redacted:password]"),
        ("password was hunter2", "password was [redacted:password]"),
        ("password is\thunter2", "password is\t[redacted:password]"),
    ],
)
def test_every_separator_with_spaces_or_tabs_around_it(text: str, redacted: str) -> None:
    assert redaction.redact(text) == redacted


def test_a_quoted_value_runs_past_an_escaped_quote() -> None:
    assert redaction.redact('"password": "a\\"b" next') == '"password": "[redacted:password]" next'


@pytest.mark.parametrize("scheme", ["Bearer ", "Basic ", "Token ", "bearer\t"])
def test_a_scheme_and_the_value_after_it_are_masked_together(scheme: str) -> None:
    assert redaction.redact(f"password: {scheme}abc123xyz") == "password: [redacted:password]"


@pytest.mark.parametrize(
    "text",
    ["password=, user=bob", "password=; user=bob", "?password=&user=bob", "{password=}"]
    + ["(password=)", "[password=]", "password=\\n"],
)
def test_an_empty_value_before_a_delimiter_is_no_value(text: str) -> None:
    assert redaction.scan(text) == (text, [])


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("password=abc1,def", "password=[redacted:password],def"),
        ("password=abc1;def", "password=[redacted:password];def"),
        ("?password=abc1&user=bob", "?password=[redacted:password]&user=bob"),
        ("{password=abc1}", "{password=[redacted:password]}"),
        ("[password=abc1] x", "[password=[redacted:password]] x"),
        ("pwd=abc1\\n", "pwd=[redacted:password]\\n"),
    ],
)
def test_a_bare_value_ends_at_a_delimiter(text: str, redacted: str) -> None:
    assert redaction.redact(text) == redacted
