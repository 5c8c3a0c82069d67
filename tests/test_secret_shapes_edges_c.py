"""Edges of the secret shapes (chatmem/text/secret_shapes.py) the mutation run found untested.

Each test pins one bound of one shape as a user sees it through `redaction.scan`:
PowerShell's and C#'s `NetworkCredential(user, password[, domain])`, a secret
flag after a dash that is prose, the mysql client's `-p` in a longer word,
~/.pgpass lines (where one starts, how its password ends), XML password
elements, the long random token before `=`, an AWS secret key in a longer
base64 run, and the placeholders a secret flag may carry. Samples are
synthetic, built in the formats the tools document.
"""

from __future__ import annotations

import pytest

from chatmem.text import redaction
from tests.redaction_checks import redacted_as, untouched

pytestmark = pytest.mark.db_free  # pure text functions


# -- NetworkCredential(user, password[, domain]): the second argument, in either quote ----


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # PowerShell quotes with ' as often as with "
        ("$cred = New-Object System.Net.NetworkCredential('alice', 'S3cretPw!')", "'S3cretPw!'"),
        ("[System.Net.NetworkCredential]::new('alice', 'S3cretPw!', 'CORP')", "'S3cretPw!'"),
        # the three-argument form: the password is the second, not the domain after it
        ('$c = [System.Net.NetworkCredential]::new("alice", "S3cretPw!", "CORP")', '"S3cretPw!"'),
    ],
)
def test_network_credential_password_is_its_second_argument(text: str, secret: str) -> None:
    redacted_as("password", text, secret)


def test_network_credential_user_never_spans_a_line() -> None:
    # a quote that opens at the end of one line is no user name
    untouched('Quote it: NetworkCredential("\nthen ", "the domain")')


# -- command lines ---------------------------------------------------------------------


def test_a_flag_glued_to_a_word_by_dashes_is_prose() -> None:
    # `--` as a dash in prose: `key--token` starts no `--token` flag
    untouched("Rotate the signing key--token expiry stays the same.")


def test_mysql_p_only_after_the_mysql_word_itself() -> None:
    # `test_mysql.py` is no mysql client: its `-p` loads a pytest plugin
    untouched("pytest tests/test_mysql.py -pno:cacheprovider")


# -- ~/.pgpass: host:port:database:user:password ------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "src/my-app.ini:12:mode:debug:true",  # grep -n: a path, its line and the line
        "ping6 2001:0db8:0000:0042:0000:8a2e:0370:7334",  # an IPv6 address
    ],
)
def test_pgpass_line_starts_nowhere_inside_a_path_or_address(text: str) -> None:
    untouched(text)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # pgpass escapes a `:` in a password as `\:`: a bare one ends it
        ("localhost:5432:app:admin:S3cretPw:extra", "S3cretPw"),
        # a backslash that escapes nothing (at a line's end) is no part of it
        ("localhost:5432:app:admin:S3cretPw\\\nnext", "S3cretPw"),
    ],
)
def test_pgpass_password_ends_at_an_unescaped_colon_or_lone_backslash(
    text: str, secret: str
) -> None:
    redacted_as("password", text, secret)


# -- XML password elements ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        # an empty <Value>: the next tag is no password
        "<Password><Value></Value><PlainText>true</PlainText></Password>",
        # three characters after a space: too short to be one
        "<AutoLogon><Password> N/A</Password></AutoLogon>",
    ],
)
def test_xml_password_element_without_a_password(text: str) -> None:
    untouched(text)


# -- the long random token: before `=` is a name -------------------------------------------

NAME = "Kx9mP2vQ7wR4tY8uZ3nB6cD1"  # random-looking: mixed case and digits, 24 characters
VALUE = "1Dc6Bn3Zu8Yt4Rw7Qv2Pm9xK"


@pytest.mark.parametrize("first", ["A", "a", "7", "+", "/", "_", "~", "-"])
@pytest.mark.parametrize("equals", ["=", "==", "==="])
def test_random_token_before_equals_and_more_is_a_name(first: str, equals: str) -> None:
    # `=` (or a run of them) with more token characters after it is no base64 padding:
    # what stands before it is a name, only the value after it is redacted
    text = f"{NAME}{equals}{first}{VALUE}"
    assert redaction.scan(text) == (f"{NAME}{equals}[redacted:random_token]", ["random_token"])


# -- an AWS secret key is 40 characters on their own, not the tail of a longer run ----------

AWS_ID = "AKIA" + "Q7ZP4MX2KD9WB3HN"
BASE64_40 = "Hq3Lw8Zt2Nc5Vb7Xk4Jm9Pr6Sd1Fg0Ty2Ue5Wa8O"


@pytest.mark.parametrize("joint", ["/", "+"])
def test_aws_secret_is_not_cut_from_a_longer_base64_run(joint: str) -> None:
    blob = f"Tz8Wq2Lm5Xc7Vn4Bk1Rs{joint}{BASE64_40}"
    assert redaction.scan(f"id {AWS_ID} blob {blob}") == (
        "id [redacted:aws_access_key] blob [redacted:random_token]",
        ["aws_access_key", "random_token"],
    )


# -- placeholders a secret flag carries, and passwords that only resemble one ----------------


@pytest.mark.parametrize(
    "text",
    [
        "mysql --password=${_DB_PASS}",  # a variable whose name starts with `_`
        'swprintf(cmd, L"runas --password %ls", pw)',  # a format directive without parentheses
        'mysql --password "[not set]"',  # a bracketed note of words and spaces
    ],
)
def test_secret_flag_placeholder_stays(text: str) -> None:
    untouched(text)


@pytest.mark.parametrize("password", ["'<9f<Kq2z>'", "'<Kq2>z9>'"])
def test_secret_flag_password_in_angle_brackets_is_no_placeholder(password: str) -> None:
    # `<name>` is a placeholder; a password with more `<` or `>` inside is not
    redacted_as("password", f"mysql --password {password}", password)


def test_a_plain_csharp_network_credential_keeps_no_password() -> None:
    # No `-`, `_` or `:` in the line: the shape is still tried.
    redacted_as(
        "password",
        'var c = new NetworkCredential("alice", "S3cretPw!");',
        '"S3cretPw!"',
    )


def test_a_php_connection_whose_dsn_spans_two_lines_keeps_no_password() -> None:
    # PHP's quoted strings may hold a line break; the password is the third argument still
    code = '$db = new PDO("mysql:host=db;\n    dbname=shop", "app", "S3cretPass");'
    redacted_as("password", code, '"S3cretPass"')


RANDOM_B64 = "Kx9mP2vQ7wR4tY8uZ3nB6cD1Hq3Lw8Zt2Nc5Vb7Xk4Jm9P"


@pytest.mark.parametrize("symbol", ["+", "/", "_", "-", "~"])
def test_a_random_token_that_begins_with_a_symbol_is_redacted_symbol_and_all(symbol: str) -> None:
    redacted_as("random_token", f"I pasted {symbol}{RANDOM_B64} into the form", symbol + RANDOM_B64)


@pytest.mark.parametrize("end", [".", ". Next", ".\n"])
def test_a_padded_random_token_at_the_end_of_a_sentence_is_redacted(end: str) -> None:
    redacted_as("random_token", f"I pasted {RANDOM_B64}=={end}", RANDOM_B64 + "==")


def test_a_flag_or_a_dotted_name_after_padding_is_no_token_start() -> None:
    untouched("run --some-long-flag-name-here now")
    untouched(f"x {RANDOM_B64}==.def")  # a dotted name goes on after the padding: not a token


@pytest.mark.parametrize("after", ["A", "0", "+", "/", "=", "_", "~", "-"])
def test_a_padded_value_whose_dotted_name_goes_on_is_read_whole(after: str) -> None:
    # `….{after}…`: any token character after the full stop makes it one dotted name
    untouched(f"x {RANDOM_B64}==.{after}def")


@pytest.mark.parametrize("second", ["X", "+", "_", "~", "-"])
def test_a_name_that_begins_with_a_dot_is_read_whole_not_from_its_middle(second: str) -> None:
    # A match starts only where a run of token characters starts; one starting with
    # `.` (a dotfile, a property path) is no token, and none starts after its first character.
    untouched(f"see .{second}{RANDOM_B64} here")
