"""The redaction step (chatmem/text/redaction.py) at its edges: the exact text a reader gets.

tests/test_text.py plants every secret shape; these pin where each rule starts
and stops: the shortest secret, what may come before a prefix, the length
limits of the shapes, placeholders and prose, and the bounds on structured
arguments.
"""

from __future__ import annotations

import pytest

from chatmem.memory import ledger
from chatmem.text import redaction, secret_keys, secret_shapes

pytestmark = pytest.mark.db_free  # pure text functions

GITHUB = "ghp_R8tY2uI6oP0aS4dF8gH2jK6lZ0xC4vB8nM2qW"
AWS_ID = "AKIAZX4Q7RT2WN8PLM3V"


def test_the_shortest_secret_is_five_characters() -> None:
    assert redaction.scan("pwd=a") == ("pwd=[redacted:password]", ["password"])
    assert redaction.scan("pw=a") == ("pw=a", [])


def test_a_prefix_may_follow_an_underscore_or_equals_sign_but_not_a_letter() -> None:
    assert redaction.redact(f"deploy_{GITHUB}") == "deploy_[redacted:github_token]"
    assert redaction.redact(f"GH={GITHUB}") == "GH=[redacted:github_token]"
    # not as a GitHub token, but still a random body after a prefix
    assert redaction.scan(f"x{GITHUB}") == ("[redacted:api_token]", ["api_token"])
    assert redaction.scan(f"9{GITHUB}") == ("[redacted:random_token]", ["random_token"])


def test_an_anthropic_key_from_twenty_characters_after_its_prefix() -> None:
    key = "sk-ant-" + "a1" * 10
    assert redaction.scan(f"key {key}") == ("key [redacted:anthropic_key]", ["anthropic_key"])


def test_an_aws_access_key_id_is_exactly_twenty_characters() -> None:
    assert redaction.scan(f"id {AWS_ID}.") == ("id [redacted:aws_access_key].", ["aws_access_key"])
    assert redaction.scan(f"id {AWS_ID}X.") == (f"id {AWS_ID}X.", [])


def test_a_chatmem_token_keeps_its_dashes_and_underscores() -> None:
    token = "cm_" + "Ab-_" * 6
    assert redaction.redact(f"use {token} now") == "use [redacted:chatmem_token] now"


def test_secrets_in_text_without_an_underscore_or_dash() -> None:
    """The cheap gate before the shapes lets these through to them."""
    bearer = "Bearer Qm9vZ2xlLXRva2VuLTQyNDI0Mg.Xy7Z"
    assert redaction.redact(f"send {bearer} along") == "send [redacted:bearer_token] along"
    assert redaction.redact(f"send {bearer.upper()}") == "send [redacted:bearer_token]"
    assert redaction.redact(f"id {AWS_ID}") == "id [redacted:aws_access_key]"


@pytest.mark.parametrize(
    ("key", "kind"),
    [
        ("passphrase", "password"),
        ("pwd", "password"),
        ("secretKey", "secret"),
        ("credential", "secret"),
        ("session_key", "token"),
        ("accessKey", "api_key"),
        ("Set-Cookie", "token"),
        ("password_hash", "password"),
        ("token_value", "token"),
        ("api_key_b64", "api_key"),
        ("secret_enc", "secret"),
        ("token_expiry", None),
        ("key_session", None),  # "sessionkey" only in that order
        ("passport", None),
    ],
)
def test_more_key_names(key: str, kind: str | None) -> None:
    assert secret_keys.key_kind(key) == kind


@pytest.mark.parametrize("value", ["null", "none", "nil", "true", "false", "undefined", "..."])
def test_a_placeholder_under_a_secret_key_is_left_as_written(value: str) -> None:
    assert redaction.scan(f"password={value}") == (f"password={value}", [])


def test_prose_after_a_secret_key_is_a_plain_word_of_at_most_twenty_letters() -> None:
    twenty = "abcdefghijklmnopqrst"
    assert redaction.redact(f"password: {twenty} and more") == f"password: {twenty} and more"
    assert (
        redaction.redact(f"password: {twenty}u and more")
        == "password: [redacted:password] and more"
    )


def test_structured_arguments_are_cut_at_fifty_items() -> None:
    assert redaction.redact_value(list(range(51))) == list(range(50))
    many = {f"k{i}": i for i in range(51)}
    assert list(redaction.redact_value(many)) == [f"k{i}" for i in range(50)]


def test_structured_arguments_are_cut_below_six_levels() -> None:
    six: object = "x"
    for _ in range(6):
        six = [six]
    assert redaction.redact_value(six) == six
    assert redaction.redact_value([six]) == [[[[[[["[…]"]]]]]]]


def test_secret_kinds_names_each_kind_once_shapes_before_keys() -> None:
    text = f"pwd=abc1 then {GITHUB} and pwd=xyz2"
    assert redaction.secret_kinds(text) == ["github_token", "password"]


def test_every_secret_under_a_key_is_redacted_however_often_the_key_recurs() -> None:
    assert (
        redaction.redact("pwd=a1 pwd=b2 pwd=c3, password=d4 and password=e5")
        == "pwd=[redacted:password] pwd=[redacted:password] pwd=[redacted:password], "
        "password=[redacted:password] and password=[redacted:password]"
    )


def test_a_key_inside_a_redacted_value_is_not_redacted_twice() -> None:
    assert redaction.redact('password="see token: b"') == 'password="[redacted:password]"'


def test_a_secret_inside_the_value_of_another_key_is_found() -> None:
    assert redaction.scan('password_policy="pwd=abc1"') == (
        'password_policy="pwd=[redacted:password]"',
        ["password"],
    )


def test_text_whose_lower_case_is_longer_is_scanned_all_the_same() -> None:
    """ "İ".lower() is two characters: the positions of the fast path would be off."""
    assert (
        redaction.redact("İstanbul office: password=hunter2")
        == "İstanbul office: password=[redacted:password]"
    )
    assert redaction.redact("İ" * 40 + " pwd=abc1") == "İ" * 40 + " pwd=[redacted:password]"


def test_a_value_with_a_digit_or_symbol_is_not_prose() -> None:
    assert redaction.redact("password: hunter2 is it") == "password: [redacted:password] is it"
    assert redaction.redact("password: 12345 or so") == "password: 12345 or so"


def test_next_to_an_aws_key_id_only_mixed_strings_of_forty_are_taken_for_its_secret() -> None:
    sha = "3f786850e387550fdab836ed7e6dc881de23001b"  # a commit: lower case and digits
    letters = "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGhIjKlMn"
    upper = "ABCDEFGHIJ0123456789ABCDEFGHIJ0123456789"
    digits = "0123456789" * 4
    text = f"{AWS_ID} commit {sha} {letters} {upper} {digits}"
    assert (
        redaction.redact(text)
        == f"[redacted:aws_access_key] commit {sha} {letters} {upper} {digits}"
    )
    assert redaction.redact(f"{AWS_ID} kV9rT2xQ/8mN4pL6zW1yB3cF5hJ7dS0aG2eU4iO6") == (
        "[redacted:aws_access_key] [redacted:aws_secret_key]"
    )


def test_finish_is_applied_to_every_value_and_finish_key_to_every_key() -> None:
    value = {"note": "see pwd=abc1", "list": ["a", 1], "password": "x1", "pwd=abc2": {"k": "v"}}
    assert redaction.redact_value(value, finish=str.upper) == {
        "note": "SEE PWD=[REDACTED:PASSWORD]",
        "list": ["A", 1],
        "password": "[redacted:password]",
        "pwd=[redacted:password]": {"k": "V"},
    }
    assert redaction.redact_value(value, finish=str.upper, finish_key=str.title)["Note"] == (
        "SEE PWD=[REDACTED:PASSWORD]"
    )


def test_the_ledger_cuts_long_values_but_keeps_keys_whole_and_visible() -> None:
    """A held call's curator must see which field each cut value belongs to."""
    stored = ledger.safe_arguments(
        {"post_id": 3, "title\u200b": "Sales", "pwd=abc1x": 1}, max_len=4
    )
    assert stored == {
        "post_id": 3,
        "title<U+200B>": "Sale… [+1 chars]",
        "pwd=[redacted:password]": 1,
    }


def test_a_secret_written_as_a_key_is_redacted_like_a_value() -> None:
    """An agent may put anything in a key: `{"ghp_…": "mine"}` holds a token all the same."""
    token = "ghp_R8tY2uI6oP0aS4dF7gH1jK3lZ5xC9vB2nM4q"
    assert redaction.redact_value({"tokens": {token: "mine"}, "note": {"pwd=abc1": 1}}) == {
        "tokens": {"[redacted:github_token]": "mine"},
        "note": {"pwd=[redacted:password]": 1},
    }


def test_dicts_are_cut_below_six_levels_too() -> None:
    six: object = "x"
    for _ in range(6):
        six = {"d": six}
    assert redaction.redact_value(six) == six
    assert redaction.redact_value({"d": six}) == {
        "d": {"d": {"d": {"d": {"d": {"d": {"d": "[…]"}}}}}}
    }


def test_json_lists_in_a_string_are_redacted_as_structure() -> None:
    value = {"config": '[{"credentials": {"user": "ci"}, "note": "café"}]'}
    assert redaction.redact_value(value) == {
        "config": '[{"credentials": "[redacted:secret]", "note": "café"}]'
    }


def test_json_in_a_string_is_parsed_up_to_100_000_characters() -> None:
    def sent(length: int) -> str:
        head = '{"password":"abc1","pad":"'
        return head + "x" * (length - len(head) - 2) + '"}'

    parsed = redaction.redact_value(sent(100_000))
    assert parsed.startswith('{"password": "[redacted:password]", "pad": "xxx')
    scanned = redaction.redact_value(sent(100_001))
    assert scanned.startswith('{"password":"[redacted:password]","pad":"xxx')


def test_a_shape_is_a_kind_its_anchors_and_its_compiled_pattern() -> None:
    """The table of shapes is built at import: how one entry is made."""
    shape = secret_shapes._shape("demo_key", ("dk_",), r"dk_\d+")
    assert shape.kind == "demo_key" and shape.anchors == ("dk_",)
    assert shape.pattern.findall("dk_1 dk_x dk_22") == ["dk_1", "dk_22"]


@pytest.mark.parametrize(
    "hider",
    ["\u200b", "\u00ad", "\u2060", "\U000e0041", "\x00"],
    ids=["zero-width space", "soft hyphen", "word joiner", "tag", "NUL"],
)
def test_a_secret_split_by_invisible_characters_is_found(hider: str) -> None:
    """Dropping the invisible character later would put the secret back together."""
    split = GITHUB[:8] + hider + GITHUB[8:]
    assert redaction.scan(f"key {split} ok") == ("key [redacted:github_token] ok", ["github_token"])
    assert redaction.scan(f"pass{hider}word=hunter2") == (
        "password=[redacted:password]",
        ["password"],
    )


def test_invisible_characters_are_kept_where_they_hide_no_secret() -> None:
    """So that `text.visible` can still show them to a person."""
    assert redaction.scan("page\u200b 4, pwd=abc1") == (
        "page\u200b 4, pwd=[redacted:password]",
        ["password"],
    )
    assert redaction.scan("page\u200b 4") == ("page\u200b 4", [])


def test_the_ledger_shape_of_a_split_secret_is_redacted() -> None:
    """`redact_value` with a `finish` that shows invisible text, as the ledger calls it."""
    from chatmem import text

    split = GITHUB[:8] + "\u200b" + GITHUB[8:]
    assert redaction.redact_value(
        {"note": f"x {split}", "page": "a\u200bb"}, finish=text.visible
    ) == {
        "note": "x [redacted:github_token]",
        "page": "a<U+200B>b",
    }


@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"])
def test_every_github_token_prefix_is_a_github_token(prefix: str) -> None:
    """Server-to-server (`ghs_`) and refresh (`ghr_`) tokens are named as GitHub's too,
    not left to the generic prefixed-token rule."""
    token = prefix + GITHUB.removeprefix("ghp_")
    assert redaction.scan(f"token {token} ok") == (
        "token [redacted:github_token] ok",
        ["github_token"],
    )


@pytest.mark.parametrize(
    ("link", "rest"),
    [
        ("https://deploy:hunter22@example.com/x", "@example.com/x"),
        ("http://deploy:hunter22@example.com/x", "@example.com/x"),
        ("redis://:s3cretpass@cache:6379/0", "@cache:6379/0"),
        ("postgres://app:pa55word@db/app", "@db/app"),
        ("postgresql+psycopg://app:pa55word@db/app", "@db/app"),
        ("amqp://guest:guest22@mq/vhost", "@mq/vhost"),
    ],
)
def test_the_password_in_a_link_of_any_scheme_is_redacted(link: str, rest: str) -> None:
    scheme = link.partition("://")[0]
    assert redaction.scan(f"url {link} ok") == (
        f"url {scheme}://[redacted:url_credentials]{rest} ok",
        ["url_credentials"],
    )


def test_a_private_key_cut_off_before_its_end_line_is_redacted_to_the_end() -> None:
    """A key pasted without its `-----END ...-----` line: everything after the header goes."""
    pasted = "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE\nbm9u"
    assert redaction.scan(pasted) == ("key:\n[redacted:private_key]", ["private_key"])
    assert redaction.scan("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA") == (
        "[redacted:private_key]",
        ["private_key"],
    )


def test_a_secret_in_text_that_holds_every_gate_is_found() -> None:
    """The gate lets text through to the shapes when it holds any one of its strings,
    and so certainly when it holds all of them."""
    text = " ".join(redaction._GATES) + f" token {GITHUB}"
    assert "[redacted:github_token]" in redaction.redact(text)
    assert GITHUB not in redaction.redact(text)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # after a letter the key walk does not cross: a non-ASCII letter, a leading dot
        ("密码password: hunter2", "密码password: [redacted:password]"),
        ("café_password=hunter2", "café_password=[redacted:password]"),
        (".password=hunter2", ".password=[redacted:password]"),
        ("-Dsonar.login=Xk29fjqPz81mQw7Rt", "-Dsonar.login=[redacted:token]"),
    ],
)
def test_a_key_is_found_after_any_character_a_key_cannot_hold(text: str, redacted: str) -> None:
    assert redaction.redact(text) == redacted


def test_a_key_in_a_run_too_long_for_one_key_is_read_from_its_last_words() -> None:
    """Keys are at most 64 characters; a longer run is read again from the words
    just before the secret word, on a separator, or from the word itself."""
    prefix = "x" * 70
    assert redaction.redact(f"{prefix}_db_password=hunter2") == (
        f"{prefix}_db_password=[redacted:password]"
    )
    assert redaction.redact(f"{prefix}.api_key: hunter2") == f"{prefix}.api_key: [redacted:api_key]"
    assert redaction.redact(f"{prefix}password=hunter2") == f"{prefix}password=[redacted:password]"
    # a run of nothing but key words, tens of thousands long, holds no key
    run = "key" * 20_000
    assert redaction.scan(f"{run}=abc") == (f"{run}=abc", [])


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("password='hunter2", "password='[redacted:password]"),
        ('DB_PASSWORD="s3cr3t!x', 'DB_PASSWORD="[redacted:password]'),
        ('"api_key": "hunter2 and the rest', '"api_key": "[redacted:api_key] and the rest'),
        ("token: 'Xk29fjqPz81mQw7Rt\nnext line", "token: '[redacted:token]\nnext line"),
    ],
)
def test_a_value_whose_quote_is_never_closed_is_redacted_up_to_its_first_space(
    text: str, redacted: str
) -> None:
    assert redaction.redact(text) == redacted


def test_an_unclosed_quote_without_equals_or_colon_takes_only_a_random_value() -> None:
    assert redaction.redact("password 'letmein") == "password 'letmein"
    assert redaction.redact("password 'Xk29fjqPz81mQw7Rt") == "password '[redacted:password]"


@pytest.mark.parametrize(
    "password",
    [")Xk29fj!q", "Xk29(fj!q", "Xk29[fj!q", "(Xk29fj!q"],
    ids=["paren", "open", "index", "lead"],
)
def test_a_password_with_brackets_is_no_code(password: str) -> None:
    """A call's or an index's bracket closes later on its line; a password's need not."""
    assert redaction.redact(f"DB_PASSWORD={password} # rotate monthly") == (
        "DB_PASSWORD=[redacted:password] # rotate monthly"
    )


@pytest.mark.parametrize(
    "code",
    [
        "password = make_key(32)",
        "password = getpass()",
        'password=os.environ["X"]',
        "password=get(a, b)",
        "export TOKEN=$(flask chatmem token create editor)",
        "app --password=%(password)s run",
        "(password=)",
    ],
)
def test_code_under_a_key_is_left_as_it_is(code: str) -> None:
    assert redaction.scan(code) == (code, [])


@pytest.mark.parametrize(
    "text",
    [
        "(x) password=Xk29abcdefghij(fj!q",  # a `)` before the value closes nothing
        "password=Xk29(fj!q\nprint(x)",  # nor one on the next line
        "password=Xk29(fj!q\nprint(x)\nend",
    ],
    ids=["before", "next-line", "lines-after"],
)
def test_only_a_bracket_closed_after_it_on_its_own_line_makes_code(text: str) -> None:
    assert redaction.scan(text) == (
        text.replace("Xk29abcdefghij(fj!q", "[redacted:password]").replace(
            "Xk29(fj!q", "[redacted:password]"
        ),
        ["password"],
    )


def test_code_on_a_later_line_is_found_on_its_own_line() -> None:
    text = "config\npassword = getpass()\nend"
    assert redaction.scan(text) == (text, [])


def test_redacting_twice_changes_nothing_the_second_time() -> None:
    once = redaction.redact(
        "password=[Xk29fj!q and token: ghp_R8tY2uI6oP0aS4dF7gH1jK3lZ5xC9vB2nM4q"
    )
    assert "[redacted:password]" in once and redaction.scan(once) == (once, [])


@pytest.mark.parametrize("key", ["DBPASS", "SMTPPASS", "rootpass", "MYSQL_ROOTPASS"])
def test_pass_glued_to_what_it_opens_is_a_password_key(key: str) -> None:
    assert redaction.redact(f"{key}=hunter2") == f"{key}=[redacted:password]"


def test_pass_glued_to_anything_else_takes_only_a_random_value() -> None:
    assert redaction.scan("XPASS=hunter2") == ("XPASS=hunter2", [])


def test_a_line_break_after_a_key_is_no_mark_a_sentence_stays() -> None:
    """`Password` as a heading, then prose: a word with words after it is no value."""
    assert redaction.scan("Password\nReset your account") == ("Password\nReset your account", [])
    assert redaction.redact("Password\nhunter2") == "Password\n[redacted:password]"
