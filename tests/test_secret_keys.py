"""Which key names a secret sits under (`chatmem.text.secret_keys`), name by name.

The redaction tests show values masked in whole texts; here is the rule that
decides it, one key at a time: (kind, sure) where sure means any value is
a secret, not sure that only a random-looking value is, None no secret.
"""

from __future__ import annotations

import pytest

from chatmem.text.secret_keys import key_kind, secret_key

pytestmark = pytest.mark.db_free


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("password", ("password", True)),
        ("PGPASSWORD", ("password", True)),
        ("clientSecret", ("secret", True)),
        ("X-Auth-Token", ("token", True)),
        ("api_key", ("api_key", True)),
        ("AWS_SECRET_ACCESS_KEY", ("api_key", True)),
        ("private_key_id", ("secret", True)),
        ("PRIVATE-KEY-ID", ("secret", True)),
        ("secret_id", ("secret", True)),
        ("vault-secret-id", ("secret", True)),
        ("asana_key", ("api_key", False)),
        ("ASANA_PAT", ("token", False)),
        ("sonar.login", ("token", False)),
        ("adobeKey", ("api_key", False)),
        ("accountkey", ("api_key", False)),
        ("MERAKI_KEY", ("api_key", False)),
        ("primary_key", ("api_key", False)),
        ("sort_key", ("api_key", False)),
        ("monkey", ("api_key", False)),
        ("password_policy", None),
        ("token_count", None),
        ("password_hash", ("password", True)),
        ("api_key_b64", ("api_key", True)),
        ("secret_value", ("secret", True)),
        ("token_str", ("token", True)),
        ("apiKeyRaw", ("api_key", True)),
        ("DB_PASS", ("password", True)),
        ("SMTP_PW", ("password", True)),
        ("x_pass", ("password", True)),
        ("pass", ("password", True)),
        ("pw", ("password", True)),
        ("DB_PASS_FILE", None),
        ("pw_hash", ("password", False)),
        ("pass_hash", ("password", False)),
        ("DBPassword", ("password", True)),
        ("APIKey", ("api_key", True)),
        ("title", None),
        ("author", None),
        ("keyboard", None),
        ("passenger", None),
        ("turnkey_id", None),
        ("keyid", None),
        ("user_pw_hint", None),
        ("signature", ("token", False)),
        ("sig", ("token", False)),
        ("dsn", ("secret", False)),
        ("SENTRY_DSN", ("secret", False)),
        ("certificate", ("secret", False)),
        ("login", ("token", False)),
        ("auth", ("token", False)),
        ("pat", ("token", False)),
        ("cookie", ("token", True)),
        ("Authorization", ("token", True)),
        ("session_key", ("token", True)),
        ("sessionKey", ("token", True)),
        ("credentials", ("secret", True)),
        ("my_credential", ("secret", True)),
        ("passphrase", ("password", True)),
        ("pwd", ("password", True)),
    ],
)
def test_a_key_name_says_what_its_value_is(name: str, found: tuple[str, bool] | None) -> None:
    assert secret_key(name) == found


def test_key_kind_names_only_the_keys_whose_value_is_surely_a_secret() -> None:
    assert [key_kind(n) for n in ("api_key", "PGPASSWORD", "asana_key", "title")] == [
        "api_key",
        "password",
        None,
        None,
    ]
