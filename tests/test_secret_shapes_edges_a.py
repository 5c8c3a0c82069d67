"""Secret shapes at the edges a surviving mutant moved (chatmem/text/secret_shapes.py).

Each sample sits at one bound of one shape: a body of exactly the shortest
length, a character the class allows that the vendor's format holds, an
alternative of the pattern, a lookbehind or a lookahead that keeps a path or a
shell line as written. Samples are synthetic, written in the format the
vendor's documentation gives.
"""

from __future__ import annotations

import pytest

from tests.redaction_checks import redacted_as, untouched

pytestmark = pytest.mark.db_free  # pure text functions


B64 = "Qm9vT2x4ZWRqS3Z6aDhSbjJ3WXBBdDVn"  # 32 characters of mixed base64
HEX32 = "f59d3a7c2b8e41f09c6d5e7a8b9c0d1e"


# -- the long random token: what is written just before it ------------------------------


def test_a_digest_labelled_sha256_after_a_prefix_is_no_secret() -> None:
    # a label ending in `sha256:` names a digest, whatever precedes it
    untouched(f"image_sha256: {B64}")
    untouched(f"layer.sha256: {B64}")
    untouched("sha256:" + " " * 20 + B64)  # the label is read as far back as a name is


@pytest.mark.parametrize("label", ["Marsha: ", "sent to Natasha: ", "Pasha1= "])
def test_a_word_ending_in_sha_is_no_hash_label(label: str) -> None:
    redacted_as("random_token", f"{label}{B64}", B64)


def test_a_name_more_than_80_characters_before_the_value_is_not_read() -> None:
    # a one-case key counts only under a name close to it (80 characters back)
    redacted_as("random_token", "postmark" + " " * 76 + f'= "{HEX32}"', HEX32)
    untouched("postmark" + " " * 77 + f'= "{HEX32}"')


def test_a_one_case_key_after_a_run_of_spaces_is_still_assigned() -> None:
    # `=` is read as far back as the name is, not only in the last few characters
    redacted_as("random_token", "postmark=" + " " * 40 + HEX32, HEX32)
    redacted_as("random_token", "postmark:" + " " * 60 + f'"{HEX32}"', HEX32)
    untouched("notes about postmark" + " " * 40 + HEX32)  # no `=`: a one-case hex alone


@pytest.mark.parametrize("name", ["postmark.", "postmark-", "settings.postmark.", "x-postmark-"])
def test_a_one_case_key_under_a_name_ending_in_a_dot_or_dash(name: str) -> None:
    redacted_as("random_token", f'{name}: "{HEX32}"', HEX32)


# -- PEM private keys ----------------------------------------------------------------------

PEM_BODY = "MC4CAQAwBQYDK2VwBCIEIAbc1Def2Ghi3Jkl4Mno5Pqr6Stu7Vwx8Yz"


@pytest.mark.parametrize("label", ["X25519", "ED25519", "SSH2 ENCRYPTED", "PKCS8"])
def test_a_private_key_whose_label_holds_digits(label: str) -> None:
    key = f"-----BEGIN {label} PRIVATE KEY-----\n{PEM_BODY}\n-----END {label} PRIVATE KEY-----"
    redacted_as("private_key", f"key:\n{key}\nthe line after stays", key)


# -- Slack webhooks --------------------------------------------------------------------------


def test_a_slack_webhook_path_with_a_dash() -> None:
    hook = "https://hooks.slack.com/triggers/T01ABCDEF/4242424242-Ab3dEf9hIj1kLm2nOp4q"
    redacted_as("slack_webhook", f"POST {hook} ok", hook)


# -- a user and password in a link ---------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "docs at http://wiki say log in as admin:hunter2@db",  # a space ends the user
        'http://shop.example,"sales:info@shop.example"',  # a quote ends the user (CSV)
        "http://shop.example,'sales:info@shop.example'",
        'http://shop.example:80,"info@shop.example"',  # a quote ends the password
        "http://shop.example:80,'info@shop.example'",
    ],
)
def test_a_link_next_to_an_address_holds_no_credentials(text: str) -> None:
    untouched(text)


# -- Ansible vault, a pgpass line -----------------------------------------------------------------


def test_an_ansible_vault_body_of_exactly_32_hex_characters() -> None:
    redacted_as("secret", f"$ANSIBLE_VAULT;1.1;AES256\n{HEX32}", HEX32)


def test_a_pgpass_line_whose_user_is_digits_keeps_its_password_shape() -> None:
    # `<digits>:AA…` after a `:` is a pgpass user and password, not a Telegram bot token
    password = "AAx7Kq2mP9vL4nR8tW3yZ6bC1dF5gH0jS"
    redacted_as("password", f"db.example.com:5432:app:123456789:{password}", password)


# -- password hashes: what may precede the `$` --------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "cp dir_$1$BACKUP_DIR/file",  # a shell argument glued to a name
        "awk '{print $$1$$HOME_DIRECTORY}'",  # a Makefile's `$$` escapes
        "echo run$5$TARGET_DIRECTORY",
    ],
)
def test_a_shell_variable_after_a_word_or_dollar_is_no_password_hash(text: str) -> None:
    untouched(text)


def test_a_kerberos_hash_whose_spn_holds_a_dash() -> None:
    hashed = (
        "$krb5tgs$23$*svc_sql$CORP.LOCAL$MSSQLSvc/sql-01.corp.local~1433*"
        "$3e156ada591263b8aab0965f5aebd837$007497cb51b6c8116d64"
    )
    redacted_as("password_hash", f"hash {hashed} cracked", hashed)


# -- prefixed vendor tokens at their shortest -----------------------------------------------


@pytest.mark.parametrize(
    "secret",
    [
        "ATATT3" + "xFfGF0Ab3dEfGh7Jk9Lm",  # Atlassian: 20 after ATATT3
        "ATCTT3" + "xFfGF0Ab3dEfGh7Jk9Lm",
        "ATBB" + "Ab3dE5fG7hJ9kL2mN4pQ6rS8",  # Bitbucket: 24 after ATBB
        "AKCp" + "8igrDNFerC357m4422e4tmu7xB983QLPxJhKFcSM",  # Artifactory: 40 after AKCp
        "EAA" + "A7h9fL9zQJR8P0eAioAf9239345rDA",  # Facebook: 30 after EAA
        "ya29." + "A0ARrdaM9Ra8K7R9AcxA",  # Google OAuth: 20 after ya29.
        "pat" + "Ab3dEf9hIj1kLm" + "." + "0123456789abcdef" * 4,  # Airtable: digits in the id
    ],
)
def test_a_prefixed_vendor_token_at_its_shortest(secret: str) -> None:
    redacted_as("api_token", f"use: {secret} ok", secret)


@pytest.mark.parametrize(
    "secret",
    [
        "A3-R69SQK-TZ9KP-8MXYD-6W373-V7GHJ",  # 1Password: a 5-character second group, 3 more
        "A3-R69SQK-TZ9KPW-8MXYDA-6W373B-V7GHJC",  # groups of 6
        "A3-R69SQK-TZ9KPW-8MXYD-6W373-V7GHJ",  # three groups after the second
        "1PRK-ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ12-3456-789A-BCDE",  # ten groups of four
        "00DE0X0A0M0PeLE123!" + "CJoAQOx1GCLf1UIt4UU9y0VOPLUZAYN6" * 2 + "I8DsdGEDyHh5cO02",
        "00DE0X0A0M0PeLE!" + "CJo_QOx1GCLf1UIt4UU9y0VOPLUZAYN6" * 2 + "I8DsdGEDyHh5cO02",
        "00DE0X0A0M0PeLE!" + "CJoAQOx1GCLf1UIt4UU9y0VOPLUZAYN6" * 2 + "I8DsdGEDyHh5cO02",
    ],
)
def test_a_fixed_shape_vendor_token_at_its_bounds(secret: str) -> None:
    redacted_as("api_token", f"use {secret} ok", secret)


# -- a key as a URL's path --------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "Ab3dEf9hIj1kLm2nOp4q",  # exactly 20
        "7238211010344719AD14a89db874158c",  # upper case
        "72382110_10344719ad14a89db874158c",  # an underscore
        "72382110-10344719ad14a89db874158c",  # a dash
    ],
)
def test_an_infura_key_in_the_path(key: str) -> None:
    redacted_as("api_token", f"rpc https://mainnet.infura.io/v3/{key} ok", key)


def test_an_alchemy_key_of_exactly_20() -> None:
    key = "Ab3dEf9hIj1kLm2nOp4q"
    redacted_as("api_token", f"rpc https://eth-mainnet.g.alchemy.com/v2/{key} ok", key)


@pytest.mark.parametrize(
    "text",
    [
        "https://files.example.com/v2/quarterly_report_2024-résumé.pdf",
        "https://files.example.com/v3/quarterly_report_2024-résumé.pdf",
        "src/hooks/useoauth2callbackhandler_test.ts",
        "src/hooks/useoauth2callbackhandlerTest.ts",
    ],
)
def test_a_path_segment_running_on_is_no_key(text: str) -> None:
    untouched(text)


def test_a_link_whose_user_name_is_an_email_address_keeps_no_password() -> None:
    # The user part may hold an unescaped `@` (many clients send it so): the password
    # is found after the last `@` of the user info, and the whole user info goes.
    redacted_as(
        "url_credentials",
        "db at https://john@corp.com:hunter2@db.example/x",
        "john@corp.com:hunter2",
    )
    untouched("see http://example.com:8080/path@foo and ssh://git@github.com:org/repo.git")
