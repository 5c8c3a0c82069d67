"""The secret shapes (chatmem/text/secret_shapes.py) at the edges their regexes draw.

Each test stands at one bound of one shape: a key as a URL's path segment
(Infura, Mattermost, Teams webhooks) and the segment's end, the prefix of a
prefixed token (`dop_v1_`, `SG.`) against a code identifier with version
parts, and a password on a command line (cmdkey, schtasks, runas, net use,
curl, htpasswd) against the next command after `|`, `;`, `&&` or a line
break. All samples are synthetic, written in the vendor's documented format.
"""

from __future__ import annotations

import pytest

from tests.redaction_checks import redacted_as, untouched

pytestmark = pytest.mark.db_free  # pure text functions


# -- a key as a URL's path segment --------------------------------------------------------

MATTERMOST_HOOK = "k3j5h7g9f1d2s4a6p8o0"  # 20 lower-case letters and digits, the shortest taken
TEAMS_ID = "8f3c2a1b-4d5e-4f60-9a7b-0c1d2e3f4a5b@72f988bf-86f1-41af-91ab-2d7cd011db47"
TEAMS_PATH = (
    f"{TEAMS_ID}/IncomingWebhook/0123456789abcdef0123456789abcdef/"
    "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
)
SIXTY = TEAMS_ID[:60]  # the shortest webhook path the shape takes


@pytest.mark.parametrize(
    "text",
    [
        # a path segment that goes on in a letter outside ASCII is a word, not a key
        "https://wiki.example.de/v3/Kapitel12Abschnitt34Übersicht",
        "https://wiki.example.de/v3/Kapitel12-Abschnitt34-Übersicht",
    ],
)
def test_an_infura_v3_segment_that_goes_on_in_a_word_stays(text: str) -> None:
    untouched(f"see {text} for the chapter")


def test_a_mattermost_hook_id_of_twenty_characters_is_redacted() -> None:
    text = f"curl -X POST https://chat.example.com/hooks/{MATTERMOST_HOOK} -d @msg.json"
    redacted_as("api_token", text, MATTERMOST_HOOK)


@pytest.mark.parametrize("tail", ["-old", "_old", "Old", "-2"])
def test_a_hooks_segment_that_goes_on_past_the_lower_case_id_stays(tail: str) -> None:
    # a Mattermost hook id is the whole segment, lower-case letters and digits only
    untouched(f"see https://chat.example.com/hooks/{MATTERMOST_HOOK}{tail} for the old one")


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("https://outlook.office.com/webhook/", TEAMS_PATH),  # its slashes are in the secret
        ("https://outlook.office.com/webhook/", SIXTY),
        ("https://corp.webhook.office.com/webhookb2/", TEAMS_PATH),
        ("https://corp.webhook.office.com/webhookb2/", SIXTY),
    ],
)
def test_a_teams_webhook_path_is_redacted_whole(url: str, secret: str) -> None:
    redacted_as("api_token", f"post to {url}{secret} now", secret)


# -- a prefixed token --------------------------------------------------------------------


@pytest.mark.parametrize(
    "token",
    [
        "SG.Ab3dE+f9Gh2jK4lM6nP8qR0sT",  # a `+` in the first twenty characters
        "SG.Ab3dEf9Gh/2jK4lM6nP8qR0sT",  # a `/` in the first twenty characters
    ],
)
def test_a_prefixed_token_with_base64_signs_is_an_api_token(token: str) -> None:
    redacted_as("api_token", f"mail sent with {token} today", token)


@pytest.mark.parametrize(
    "name",
    [
        "load_v2_accountsettings7",  # a lower-case part with a digit
        "load_V2_accountsettings7",  # an upper-case part
        "btn-v2-primarycolorsetting7",  # parts joined by `-`
        "load_2_accountsettings7",  # a part of one character
        "cfg_snapshot2024_accountsettings7",  # a part of twelve characters
        "load_v2_eu1_db3_accountsettings7",  # three parts
    ],
)
def test_an_identifier_whose_version_parts_read_as_a_prefix_stays(name: str) -> None:
    # the parts before the last `_` are the prefix; what follows reads as words
    untouched(f"call {name}() first")


# -- passwords on Windows command lines --------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'cmdkey /add:host01 /user:alice /pass:"Hunter 2 xyz"',
        "cmdkey /add:host01 /user:alice /pass:'Hunter 2 xyz'",
        'cmdkey /add:host01 /user:alice /password:"Hunter 2 xyz"',
        'net use Z: \\\\fs01\\share /password:"Hunter 2 xyz"',
    ],
)
def test_a_quoted_windows_password_is_redacted_with_its_quotes(text: str) -> None:
    secret = text.split(":")[-1]
    redacted_as("password", text, secret)


@pytest.mark.parametrize(
    "text",
    [
        "runas /user:Administrator /p:Adm1nPass notepad.exe",
        "runas /user:Administrator /rp Adm1nPass",
    ],
)
def test_a_runas_password_flag_is_redacted(text: str) -> None:
    redacted_as("password", text, "Adm1nPass")


@pytest.mark.parametrize("joint", ["\n", " | ", "; ", " && "])
def test_net_use_does_not_reach_past_its_command(joint: str) -> None:
    untouched(f"net use Z: \\\\fs01\\share{joint}runas /user:admin notepad.exe")


def test_net_use_with_a_user_and_a_flag_after_it_stays() -> None:
    # no password given: net use asks for it; `/persistent:yes` is a flag
    untouched("net use Z: \\\\fs01\\share /user:CORP\\alice /persistent:yes")


# -- curl and htpasswd ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "curl -u 'alice:Passw0rd9' https://api.example.com",
        'curl -u "alice:Passw0rd9" https://api.example.com',
    ],
)
def test_a_quoted_curl_user_and_password_is_redacted(text: str) -> None:
    redacted_as("password", text, "Passw0rd9")


def test_a_curl_password_with_a_colon_is_redacted_from_the_first_colon() -> None:
    redacted_as("password", "curl -u alice:Pa55:word https://api.example.com", "Pa55:word")


def test_curl_with_a_user_alone_stays() -> None:
    # curl asks for the password; the link's port is no password
    untouched("curl -u alice https://api.example.com:8443/v1/items")


@pytest.mark.parametrize("joint", ["\n", " | ", "; ", " && "])
def test_curl_does_not_reach_past_its_command(joint: str) -> None:
    untouched(f"curl -O https://example.com/a.tgz{joint}docker run -u 1000:1000 alpine")


@pytest.mark.parametrize("end", ["", "\ndone"])
def test_an_htpasswd_batch_password_is_the_third_word(end: str) -> None:
    text = f"htpasswd -b /etc/nginx/.htpasswd alice S3cretPw{end}"
    redacted_as("password", text, "S3cretPw")


@pytest.mark.parametrize(
    ("text", "password"),
    [
        ('curl -u "o\'brien:Passw0rd9" https://api.example', "Passw0rd9"),  # an apostrophe
        ("curl -u 'admin':'Passw0rd9' https://api.example", "'Passw0rd9'"),  # quoted apart
        ('curl -u "admin":"Passw0rd9" https://api.example', '"Passw0rd9"'),
    ],
)
def test_a_curl_user_with_quotes_of_its_own_keeps_no_password(text: str, password: str) -> None:
    redacted_as("password", text, password)
