"""The table of secret shapes (chatmem/text/secret_shapes.py), shape by shape and anchor by anchor.

For every shape, a secret as its vendor issues it is redacted, through the one
redaction step (`redaction.scan`), with the shape's kind and nothing around it
changed; each of a shape's anchors (the literal text that lets the shape run)
has a sample that holds that anchor alone. Near-misses at each bound of a
shape (one character short, one letter that is not allowed, a word where a key
would be, a link with a port, a flag of the next command, a placeholder) stay
as written. Then the checks the shapes use, at their bounds: what
`looks_random` takes for a secret under a key that only often names one
(through `redact_value`), the long random token, the prefixed token and a
command line's secret flag.

Samples marked "kingfisher.<rule>" are that rule's own examples in Kingfisher
1.112.0 (mongodb/kingfisher, Apache-2.0; the rule list its CLI prints, which
tests/corpora/secrets reads); the others are written here in the format the
vendor's documentation gives, and say so.
"""

from __future__ import annotations

import pytest

from chatmem.text import redaction, secret_shapes
from tests.redaction_checks import redacted_as, untouched

pytestmark = pytest.mark.db_free  # pure text functions


def under_an_unsure_key(value: str) -> object:
    """`value` under `asana_key`, a key that names a secret only when its value looks random."""
    return redaction.redact_value({"asana_key": value})["asana_key"]


# -- one sample per shape and anchor: (kind, text, the secret in it) ---------------------

PEM_BODY = "FPaBqPQWx0nxTJbSrPavSaNtmAyAH6etkjZs0/In"  # kingfisher.privkey.2
PGP_BODY = (
    "V75NeIrlsI80Gf0aTS2RZQvEcUQ3n6XwFnOvB/O5rRv3HGqvptc3P3n0bxfEg5KA"  # kingfisher.privkey.2
)

SHAPES = {
    "private key, its end line kept in the match": (
        "private_key",
        "key:\n-----BEGIN ENCRYPTED PRIVATE KEY-----\n"
        f"{PEM_BODY}\n-----END ENCRYPTED PRIVATE KEY-----\nnext line",
        f"-----BEGIN ENCRYPTED PRIVATE KEY-----\n{PEM_BODY}\n-----END ENCRYPTED PRIVATE KEY-----",
    ),
    "private key block (PGP)": (
        "private_key",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PGP_BODY}\n-----END PGP PRIVATE KEY BLOCK-----"
        " sent",
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n{PGP_BODY}\n-----END PGP PRIVATE KEY BLOCK-----",
    ),
    "anthropic": (  # kingfisher.anthropic.1
        "anthropic_key",
        "key: sk-ant-api03-gOe0gMC1pt-tUe3PC6bqj3YqGhkHvyvJgtwIjGhmQIScHCRbIinUwsgFuqyQnnaTDXrH"
        "CaTmX2GkSU117pxITQ-XhkxPAAA.",
        "sk-ant-api03-gOe0gMC1pt-tUe3PC6bqj3YqGhkHvyvJgtwIjGhmQIScHCRbIinUwsgFuqyQnnaTDXrH"
        "CaTmX2GkSU117pxITQ-XhkxPAAA",
    ),
    "openai legacy": (  # kingfisher.openai.1
        "openai_key",
        "use 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 here",
        "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",
    ),
    "openai project": (  # kingfisher.openai.2 (cut to its first 60 characters)
        "openai_key",
        "use sk-proj-4XbCt861Cf8lxTz-GI3oSPLTVpkdxQh-FFtFwuFL4PMaDI8H_yqd1AU2 here",
        "sk-proj-4XbCt861Cf8lxTz-GI3oSPLTVpkdxQh-FFtFwuFL4PMaDI8H_yqd1AU2",
    ),
    "stripe live": (  # kingfisher.stripe.2
        "stripe_key",
        "charge with sk_live_f01c79xuuug7yodgzj5ws0h1x2kyvho3 today",
        "sk_live_f01c79xuuug7yodgzj5ws0h1x2kyvho3",
    ),
    "stripe restricted test": (  # Stripe's docs: rk_test_ + 24+ base62 (written here)
        "stripe_key",
        "restricted rk_test_4eC39HqLyjWDarjtT1zdp7dc ok",
        "rk_test_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    "stripe webhook secret": (  # kingfisher.stripe.3
        "stripe_key",
        "signing secret whsec_UOTBUgpYjyLswPFMxvzo4PyUxleOAiJd for the hook",
        "whsec_UOTBUgpYjyLswPFMxvzo4PyUxleOAiJd",
    ),
    "google api key": (  # kingfisher.google.7
        "google_api_key",
        "maps: AIzaSyA_uW1h2CF4ak3vHr7si_RFD_yWxM4tMAM;",
        "AIzaSyA_uW1h2CF4ak3vHr7si_RFD_yWxM4tMAM",
    ),
    "aws session key id (ASIA)": (  # kingfisher.aws.1
        "aws_access_key",
        "id ASIAOZW6VBVAZFJHJLQA in us-east-1",
        "ASIAOZW6VBVAZFJHJLQA",
    ),
    "aws key id (AKIA)": (  # AWS's documentation's example key id
        "aws_access_key",
        "id AKIAIOSFODNN7EXAMPLE in us-east-1",
        "AKIAIOSFODNN7EXAMPLE",
    ),
    "github classic": (  # kingfisher.github.2
        "github_token",
        "## git developer settings\n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\n",
        "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",
    ),
    "github oauth": (  # kingfisher.github.3
        "github_token",
        "oauth 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",
        "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",
    ),
    "github user-to-server": (  # kingfisher.github.4
        "github_token",
        "app ghu_TIOHHEVefAwRonSMALCFfWMYK0un1R1dj2rn,",
        "ghu_TIOHHEVefAwRonSMALCFfWMYK0un1R1dj2rn",
    ),
    "github server-to-server": (  # kingfisher.github.5
        "github_token",
        "app ghs_16C7e42F292c69C2E7C10c838347Ae178B4a,",
        "ghs_16C7e42F292c69C2E7C10c838347Ae178B4a",
    ),
    "github refresh": (  # kingfisher.github.6 (cut to 40 characters)
        "github_token",
        "refresh ghr_xgrrGzSbbGRL34Wp39JU9nxtN27Pr1v1He8F,",
        "ghr_xgrrGzSbbGRL34Wp39JU9nxtN27Pr1v1He8F",
    ),
    "github fine-grained": (  # kingfisher.github.1
        "github_token",
        "pat github_pat_11AAYCBDQ0tjwxY3uiVv5v_lo8vfONwp06Vaq9ORB7pSxWM1UT5wSEuqxoxNv15mbAJTNMO62Sd"
        "eYHLyzV.",
        "github_pat_11AAYCBDQ0tjwxY3uiVv5v_lo8vfONwp06Vaq9ORB7pSxWM1UT5wSEuqxoxNv15mbAJTNMO62Sd"
        "eYHLyzV",
    ),
    "gitlab personal": (  # kingfisher.gitlab.1
        "gitlab_token",
        "GitLab: glpat-kSaPeOD_-T0JxMi3p28B.",
        "glpat-kSaPeOD_-T0JxMi3p28B",
    ),
    "gitlab deploy": (  # kingfisher.gitlab.6
        "gitlab_token",
        "deploy with gldt-3dEfGhIjK4MnOpQrStUv.",
        "gldt-3dEfGhIjK4MnOpQrStUv",
    ),
    "gitlab runner": (  # kingfisher.gitlab.12
        "gitlab_token",
        "runner glrt-xY9kLmNpQrStUvWxYz01.",
        "glrt-xY9kLmNpQrStUvWxYz01",
    ),
    "gitlab pipeline trigger": (  # kingfisher.gitlab.3
        "gitlab_token",
        "trigger glptt-0d66598d696a02da33fb65e2a041f607c68ea50d.",
        "glptt-0d66598d696a02da33fb65e2a041f607c68ea50d",
    ),
    "gitlab service account": (  # kingfisher.gitlab.14
        "gitlab_token",
        "account glsoat-xY9kLmNpQrStUvWxYz01.",
        "glsoat-xY9kLmNpQrStUvWxYz01",
    ),
    "gitlab ci job": (  # kingfisher.gitlab.5
        "gitlab_token",
        "job glcbt-ab12_xY9kLmNpQrStUvWxYz01.",
        "glcbt-ab12_xY9kLmNpQrStUvWxYz01",
    ),
    "gitlab feed": (  # kingfisher.gitlab.8
        "gitlab_token",
        "feed glft-xY9kLmNpQrStUvWxYz01.",
        "glft-xY9kLmNpQrStUvWxYz01",
    ),
    "gitlab incoming mail": (  # kingfisher.gitlab.9
        "gitlab_token",
        "mail glimt-xY9kLmNpQrStUvWxYz0123456.",
        "glimt-xY9kLmNpQrStUvWxYz0123456",
    ),
    "slack webhook": (  # kingfisher.slack.4
        "slack_webhook",
        "post to https://hooks.slack.com/services/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 now",
        "https://hooks.slack.com/services/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",
    ),
    "slack workflow webhook": (  # Slack's docs: /workflows/<team>/<id>/<id>/<secret> (written here)
        "slack_webhook",
        "post to https://hooks.slack.com/workflows/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 now",
        "https://hooks.slack.com/workflows/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",
    ),
    "slack trigger webhook": (  # Slack's docs: /triggers/<team>/<id>/<secret> (written here)
        "slack_webhook",
        "post to https://hooks.slack.com/triggers/T0ZQ8W2E4/4815162342/Mq3Xk9Lp2Wz7 now",
        "https://hooks.slack.com/triggers/T0ZQ8W2E4/4815162342/Mq3Xk9Lp2Wz7",
    ),
    "slack bot": (  # kingfisher.slack.7
        "slack_token",
        "bot xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1 ok",
        "xoxb-263594206564-FGqddMF8t08v8N7Oq4i57vs1",
    ),
    "slack config token": (  # kingfisher.slack.2 (cut to its first 60 characters)
        "slack_token",
        "rotate xoxe-1-My0xLTIxNTE3NzA2MDYtNzE5MDc2ODQ3OTg3Ny03MjE2NDY0MzYx ok",
        "xoxe-1-My0xLTIxNTE3NzA2MDYtNzE5MDc2ODQ3OTg3Ny03MjE2NDY0MzYx",
    ),
    "jwt": (  # kingfisher.jwt.1
        "jwt",
        "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJsb2dnZWRJbkFzIjoiYWRtaW4iLCJpYXQiOjE0MjI3"
        "Nzk2Mzh9.gzSraSYS8EXBxLN_oWnFSRgCzcmEmMjLiuyu5CSpyHI sent",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJsb2dnZWRJbkFzIjoiYWRtaW4iLCJpYXQiOjE0MjI3Nzk2"
        "Mzh9.gzSraSYS8EXBxLN_oWnFSRgCzcmEmMjLiuyu5CSpyHI",
    ),
    "chatmem token": (  # chatmem's own: cm_ + token_urlsafe(32)
        "chatmem_token",
        "connect with cm_Zq8Wx2Ec4Rv6Tb8Nm2Qw6Er0Ty4Ui8Op2As6Df0Gh4J now",
        "cm_Zq8Wx2Ec4Rv6Tb8Nm2Qw6Er0Ty4Ui8Op2As6Df0Gh4J",
    ),
    "bearer": (  # kingfisher.auth.2
        "bearer_token",
        "  - Bearer 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7384efb311c04069d9c892c6b",
        "Bearer 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7384efb311c04069d9c892c6b",
    ),
    "bearer, lower case": (
        "bearer_token",
        "send bearer 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7 along",
        "bearer 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7",
    ),
    "bearer, upper case": (
        "bearer_token",
        "send BEARER 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7 along",
        "BEARER 7727d2fa5e8f7d37de25ef385ff8766d265ee2e7",
    ),
    "oauth": (  # kingfisher.statuspage.1
        "bearer_token",
        "statuspage: OAuth 89a229ce1a8dbcf9ff30430fbe35eb4c0426574bca932061892cefd2138aa4b1",
        "OAuth 89a229ce1a8dbcf9ff30430fbe35eb4c0426574bca932061892cefd2138aa4b1",
    ),
    "oauth, lower case": (
        "bearer_token",
        "header: oauth 89a229ce1a8dbcf9ff30430fbe35eb4c04",
        "oauth 89a229ce1a8dbcf9ff30430fbe35eb4c04",
    ),
    "oauth, upper case": (
        "bearer_token",
        "header: OAUTH 89a229ce1a8dbcf9ff30430fbe35eb4c04",
        "OAUTH 89a229ce1a8dbcf9ff30430fbe35eb4c04",
    ),
    "link password": (  # kingfisher.ftp.1
        "url_credentials",
        "BACKUP_URL ftps://backupuser:S5ec4rePassWord@ftp.corp.example.com",
        "backupuser:S5ec4rePassWord",
    ),
    "key as a link's user": (  # kingfisher.gemfury.1
        "url_credentials",
        "extra-index-url https://2yryChg-4CDmo6lyRtjCEpOQuHegzKAF@repo.fury.io/myuser",
        "2yryChg-4CDmo6lyRtjCEpOQuHegzKAF",
    ),
    "key as a link's user, with its colon": (  # kingfisher.gemfury.2
        "url_credentials",
        "index https://Toqq8z53AbKDYmGcTgRb:@pypi.fury.io/myorg",
        "Toqq8z53AbKDYmGcTgRb:",
    ),
    "ansible vault": (  # kingfisher.ansible.1
        "secret",
        "$ANSIBLE_VAULT;1.1;AES256\n"
        "36373836643336626639643534346538623766623661646261303130636166663566653335343033\n",
        "36373836643336626639643534346538623766623661646261303130636166663566653335343033\n",
    ),
    "telegram bot": (  # kingfisher.telegram.1
        "telegram_bot_token",
        "telegram: 508627689:AAEuLPKs-EhrjrYGnz60bnYNZqakf6HJxc0",
        "508627689:AAEuLPKs-EhrjrYGnz60bnYNZqakf6HJxc0",
    ),
    "discord webhook": (  # kingfisher.discord.1
        "discord_webhook",
        "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyzABCDEFGHIJK"
        "LMNOPQRSTUVWXYZ1234567890abcdef",
        "123456789012345678/abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890abcdef",
    ),
    "md5-crypt hash": (  # kingfisher.pwhash.1
        "password_hash",
        "root:$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/:19000:0",
        "$1$OKgLCmVl$d02jECa4DXn/oXX0R.MoQ/:19000:0",
    ),
    "bcrypt hash": (  # kingfisher.pwhash.2
        "password_hash",
        "hash $2a$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW stored",
        "$2a$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
    ),
    "atlassian": (  # kingfisher.atlassian.5 (cut to its first 60 characters)
        "api_token",
        "jira ATATT3xFfGF0Ab3_defGh7-Jk9LmN2PqR5StUv8WxYz0Ab3_defGh7-Jk9Lm ok",
        "ATATT3xFfGF0Ab3_defGh7-Jk9LmN2PqR5StUv8WxYz0Ab3_defGh7-Jk9Lm",
    ),
    "bitbucket repository": (  # kingfisher.bitbucket.4 (cut to its first 60 characters)
        "api_token",
        "repo ATCTT3xFfGN0Repo7_Token9-AbCdEfGhJkLmN2PqR5Repo7_Token9-AbCd ok",
        "ATCTT3xFfGN0Repo7_Token9-AbCdEfGhJkLmN2PqR5Repo7_Token9-AbCd",
    ),
    "bitbucket app password": (  # kingfisher.bitbucket.5
        "api_token",
        "app ATBBAb3dE5fG7hJ9kL2mN4pQ6rS8AD6D34F4 ok",
        "ATBBAb3dE5fG7hJ9kL2mN4pQ6rS8AD6D34F4",
    ),
    "artifactory": (  # kingfisher.artifactory.1
        "api_token",
        "apikey AKCp8igrDNFerC357m4422e4tmu7xB983QLPxJhKFcSMfoux2RFvp8rc4jC8t9ncdmYCMFD8W ok",
        "AKCp8igrDNFerC357m4422e4tmu7xB983QLPxJhKFcSMfoux2RFvp8rc4jC8t9ncdmYCMFD8W",
    ),
    "facebook": (  # kingfisher.square.1
        "api_token",
        "square EAAA7h9fL9zQJR8P0eAioAf9239345rDA2349bQ8edUA9FgA5JojdsF3A9f6nKLm",
        "EAAA7h9fL9zQJR8P0eAioAf9239345rDA2349bQ8edUA9FgA5JojdsF3A9f6nKLm",
    ),
    "nuget": (  # kingfisher.nuget.1
        "api_token",
        "push with oy2er16dp0r068m6p36u4bvr9nmkescfm1pf9lek1bgn3n ok",
        "oy2er16dp0r068m6p36u4bvr9nmkescfm1pf9lek1bgn3n",
    ),
    "airtable": (  # kingfisher.airtable.1
        "api_token",
        "base patXfsZBLOgxbJqSi.fd6210cfb2e0b2049bd8e7fa0e69f26a3a704412af6fcbd93a097c42507fc893"
        " ok",
        "patXfsZBLOgxbJqSi.fd6210cfb2e0b2049bd8e7fa0e69f26a3a704412af6fcbd93a097c42507fc893",
    ),
    "google oauth access token": (  # kingfisher.google.oauth2.1
        "api_token",
        "access ya29.A0ARrdaM9Ra8K7R9AcxA1PpIMLVQ021H0TL0PRh2s_HH0_tn5gCSSf ok",
        "ya29.A0ARrdaM9Ra8K7R9AcxA1PpIMLVQ021H0TL0PRh2s_HH0_tn5gCSSf",
    ),
    "1password secret key": (  # kingfisher.1password.2
        "api_token",
        "secret key A3-R69SQK-TZ9KPW-8MXYD-6W373-V7GHJ-EDJQW ok",
        "A3-R69SQK-TZ9KPW-8MXYD-6W373-V7GHJ-EDJQW",
    ),
    "1password recovery key": (  # kingfisher.1password.3
        "api_token",
        "recovery 1PRK-ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ12-3456-789A-BCDE-FGHI-JKLM-NOPQ ok",
        "1PRK-ABCD-EFGH-IJKL-MNOP-QRST-UVWX-YZ12-3456-789A-BCDE-FGHI-JKLM-NOPQ",
    ),
    "pubnub": (  # kingfisher.pubnub.2
        "api_token",
        "subscribe sub-c-12345678-abcd-1234-efgh-567890abcdef ok",
        "sub-c-12345678-abcd-1234-efgh-567890abcdef",
    ),
    "hubspot": (  # kingfisher.hubspot.1
        "api_token",
        "crm pat-na2-3b124f92-f4cb-4d1d-8d1c-7fc3f3512dba ok",
        "pat-na2-3b124f92-f4cb-4d1d-8d1c-7fc3f3512dba",
    ),
    "riot": (  # kingfisher.riot.2
        "api_token",
        "riot RGAPI-4sb3f6a1-2941-5a81-9c23-4bf3a83c14f3 ok",
        "RGAPI-4sb3f6a1-2941-5a81-9c23-4bf3a83c14f3",
    ),
    "iterative studio": (  # kingfisher.iterative.1
        "api_token",
        "studio isat_a1b2c3d4-e5f6-7890-abcd-ef1234567890 ok",
        "isat_a1b2c3d4-e5f6-7890-abcd-ef1234567890",
    ),
    "checkout.com": (  # kingfisher.checkout.1
        "api_token",
        "const cko = new Checkout('sk_0b9b5db6-fabc-49d0-b68f-13343bb4f708')",
        "sk_0b9b5db6-fabc-49d0-b68f-13343bb4f708",
    ),
    "databricks": (  # kingfisher.databricks.2
        "api_token",
        "workspace dapif21ee53d2b3648c2a1ed38953312a203 ok",
        "dapif21ee53d2b3648c2a1ed38953312a203",
    ),
    "zoho": (  # kingfisher.zohocrm.1
        "api_token",
        "zoho 1000.a23f12b4c5d6e7f8901234567890abc1.23d4e5f67890abcdef1234567890abcd ok",
        "1000.a23f12b4c5d6e7f8901234567890abc1.23d4e5f67890abcdef1234567890abcd",
    ),
    "salesforce": (  # kingfisher.salesforce.1
        "api_token",
        "sid 00DE0X0A0M0PeLE!CJoAQOx1GCLf1UIt4UU9y0VOPLUZAYN6I8DsdGEDyHh5cO02egObcAhIDHYiGCfi94c53o"
        "Fbr4HB.xZfuYRGhvNuxobAAXRe ok",
        "00DE0X0A0M0PeLE!CJoAQOx1GCLf1UIt4UU9y0VOPLUZAYN6I8DsdGEDyHh5cO02egObcAhIDHYiGCfi94c53o"
        "Fbr4HB.xZfuYRGhvNuxobAAXRe",
    ),
    "alchemy link": (  # kingfisher.alchemy.1
        "api_token",
        "rpc https://eth-mainnet.alchemyapi.io/v2/PajdHzB75s1V_7aldcQ6XbodqDCWMC7m ok",
        "PajdHzB75s1V_7aldcQ6XbodqDCWMC7m",
    ),
    "infura link": (  # kingfisher.infura.1
        "api_token",
        "rpc https://mainnet.infura.io/v3/7238211010344719ad14a89db874158c ok",
        "7238211010344719ad14a89db874158c",
    ),
    "mattermost hook": (  # kingfisher.mattermost.3
        "api_token",
        "post to https://mattermost.example.com/hooks/9xuqwrwgstrb3mzrxb83nb357a ok",
        "9xuqwrwgstrb3mzrxb83nb357a",
    ),
    "thingsboard device": (  # kingfisher.thingsboard.1
        "api_token",
        "https://thingsboard.cloud/api/v1/354u1g321kcqc1oad3w7/telemetry",
        "354u1g321kcqc1oad3w7",
    ),
    "zapier catch hook": (  # kingfisher.zapier.1, with a hook id of Zapier's format
        "api_token",
        "ZAPIER_WEBHOOK https://hooks.zapier.com/hooks/catch/9999999/b3k7xq2/ ok",
        "9999999/b3k7xq2",
    ),
    "office 365 webhook": (  # Microsoft's Teams connector format: /webhookb2/<guid>@<guid>/...
        "api_token",
        "https://contoso.webhook.office.com/webhookb2/4b2e8f1a-9c3d-4e5f-8a7b-1c2d3e4f5a6b@"
        "7d8e9f0a-1b2c-3d4e-5f6a-7b8c9d0e1f2a/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/"
        "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d ok",
        "4b2e8f1a-9c3d-4e5f-8a7b-1c2d3e4f5a6b@"
        "7d8e9f0a-1b2c-3d4e-5f6a-7b8c9d0e1f2a/IncomingWebhook/9f8e7d6c5b4a39281706f5e4d3c2b1a0/"
        "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
    ),
    "prefixed token": (  # kingfisher.huggingface.1's shape: hf_ + 34 letters (written here)
        "api_token",
        "HF hub hf_QmVyZnRrZWx2c0xhZ2JpZ3Rva2VuS9xY ok",
        "hf_QmVyZnRrZWx2c0xhZ2JpZ3Rva2VuS9xY",
    ),
    "sendgrid": (  # SendGrid's format: SG.<22>.<43> (written here)
        "api_token",
        "mail 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 ok",
        "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",
    ),
    "long random token": (  # an Azure storage account key's first 40 characters (written here)
        "random_token",
        "account 6jqh42QQjWWBwoPGGR/Jr0PZjhBMZVbHm/gkhEfH in the portal",
        "6jqh42QQjWWBwoPGGR/Jr0PZjhBMZVbHm/gkhEfH",
    ),
}


@pytest.mark.parametrize(("kind", "text", "secret"), SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_redacts_its_vendors_secret_and_only_it(
    kind: str, text: str, secret: str
) -> None:
    redacted_as(kind, text, secret)


# -- looks_random: a value under a key that only often names a secret ------------------


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("ab12cd34", "eight characters, letters and digits"),
        ("819551384702", "twelve digits, varied (an Asana key is all digits)"),
        ("1111222233445566", "digits at exactly 2.5 bits a character"),
        ("aaaabbbb11223344", "letters and digits at exactly 2.5 bits a character"),
        ("AbCdEfGhIjKlMnOpQrSt", "twenty letters, mixed case, no word in them"),
        ("AbCdEfGhIjKlIjKlAbCdEfGhIjKlIjKl", "letters only at exactly 3.5 bits a character"),
        (("a1b2c3d4e5f6" * 167)[:2000], "2,000 characters, the longest value taken"),
    ],
)
def test_a_random_value_under_an_unsure_key_is_its_secret(value: str, why: str) -> None:
    assert under_an_unsure_key(value) == "[redacted:api_key]", why


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("ab12cd3", "seven characters"),
        ("81955138470", "eleven digits"),
        ("2024-06-01", "a date: digits and dashes"),
        ("AbCdEfGhIjKlMnOpQrS", "nineteen letters"),
        ("ring-bell-tree-frog-lamp", "short words in one case"),
        ("${ASANA_KEY_2024}", "a variable standing for the key"),
        ("https://app.asana.com/0/1200000000000000", "a link"),
        (("a1b2c3d4e5f6" * 167)[:2001], "over 2,000 characters"),
    ],
)
def test_a_plain_value_under_an_unsure_key_is_kept(value: str, why: str) -> None:
    assert under_an_unsure_key(value) == value, why


# -- the long random token (random_token) ---------------------------------------------

MIXED_24 = "kT7pQ2mX9rL4vW8zAb3dEf6h"  # upper, lower and digits


def test_a_lone_random_token_is_a_secret_from_24_characters() -> None:
    redacted_as("random_token", f"paste {MIXED_24} here", MIXED_24)
    untouched(f"paste {MIXED_24[:-1]} here")


def test_a_random_token_set_to_a_name_or_quoted_is_a_secret_from_16_characters() -> None:
    redacted_as("random_token", f'value = "{MIXED_24[:16]}"', MIXED_24[:16])
    untouched(f'value = "{MIXED_24[:15]}"')
    # quoted at the very start of the text: the quote alone says it is a value
    redacted_as("random_token", f'"{MIXED_24[:16]}"', MIXED_24[:16])


def test_a_random_tokens_entropy_bar_is_lower_when_it_is_set_to_a_name() -> None:
    set_to = "Ab3dEf6hIj9kLm2A"  # 3.875 bits a character: random enough when assigned
    redacted_as("random_token", f'build_arg: "{set_to}"', set_to)
    alone = "Ab3dEf6hIjAb3dEf6hIjKl9M"  # 3.75 bits: not alone (4.0 wanted)
    untouched(f"see {alone} there")
    sixteen_twice = "aB3dE5gH7jK9mN2p" * 2  # exactly 4.0 bits: enough alone
    redacted_as("random_token", f"see {sixteen_twice} there", sixteen_twice)


def test_a_one_case_value_set_to_a_name_is_a_key_unless_the_name_says_otherwise() -> None:
    """`assemblyai = fa0e…` (kingfisher.assemblyai.1): hex or base36 after a name."""
    for value in (
        "8195513847023883abcd819551384702",  # four letters, the fewest taken
        "k7pqmxrlvwzbn3ghtyjdcsfa2e9uoith",  # four digits, the fewest taken
        "3F2504E0-4f89-11D3-9A0C-0305E82C3301",  # a UUID in mixed case
    ):
        redacted_as("random_token", f'assemblyai = "{value}"', value)
    untouched('assemblyai = "8195513847023883abc8195513847023"')  # three letters
    untouched('assemblyai = "k7pqmxrlvwzbn3ghtyjdcsfa2euoithx"')  # three digits


# -- the prefixed token (api_token without an anchor) ----------------------------------


def test_a_prefixed_tokens_body_needs_a_run_of_12_or_of_24_hex_digits() -> None:
    redacted_as("api_token", "tok_Kq4Wt8Ab2Nd6-xy7 ok", "tok_Kq4Wt8Ab2Nd6-xy7")
    untouched("tok_Kq4Wt8Ab2Nd-xy7z ok")  # its longest run is eleven
    redacted_as("api_token", "tok_5f2b8c1e9a7d3f60b4e2c8a1 ok", "tok_5f2b8c1e9a7d3f60b4e2c8a1")
    untouched("tok_5f2b8c1e9a7d3f60b4e2c8a ok")  # 23 hex digits: an id, a short hash
    untouched("REQ-9F3A7C1D2E8B4F60AB12 ok")  # 22 upper-case hex digits too
    # an X is not a hex digit: 17 of these are enough
    redacted_as("api_token", "r8_Xa91bC3dE5f7A2c4e ok", "r8_Xa91bC3dE5f7A2c4e")


def test_a_prefixed_token_of_letters_only_is_mixed_case_and_20_long() -> None:
    redacted_as("api_token", "key-AbCdEfGhIjKlMnOpQrSt ok", "key-AbCdEfGhIjKlMnOpQrSt")
    untouched("key-AbCdEfGhIjKlMnOpQrS ok")
    untouched("page-installationinstructions-2024 ok")  # one case: words run together


def test_a_prefixed_tokens_body_at_exactly_three_bits_a_character_is_random() -> None:
    redacted_as("api_token", "tok_k1M2n3P4k1M2n3P4 ok", "tok_k1M2n3P4k1M2n3P4")


# -- a secret flag on a command line ---------------------------------------------------


def test_a_flag_value_of_three_characters_is_a_password_and_of_two_is_not() -> None:
    assert redaction.scan("mysql -pab1 shop") == ("mysql -p[redacted:password] shop", ["password"])
    untouched("mysql -pab shop")
    # quotes are not part of the value: 'X9k' is three characters
    assert redaction.scan("sshpass -p 'X9k' ssh deploy@host") == (
        "sshpass -p [redacted:password] ssh deploy@host",
        ["password"],
    )


def test_a_placeholder_flag_value_is_kept() -> None:
    untouched("mysql -u root -p'***' shop")
    untouched("docker run app --db-password=changeme")


def test_a_shape_keeps_the_check_it_is_made_with() -> None:
    """The table is built at import: a shape made with a check applies it."""
    shape = secret_shapes._shape("demo_key", ("dk_",), r"dk_\d+", lambda m: len(m.group()) > 4)
    assert shape.check is not None
    assert [shape.check(m) for m in shape.pattern.finditer("dk_1 dk_22")] == [False, True]


# -- passwords on command lines, in code and in config files: (text, what is kept) --------

PASSWORDS = {
    "mysql -p": (  # kingfisher.mysql's command-line form (written here)
        "mysql -u root -pS3cret! shop",
        "mysql -u root -p[redacted:password] shop",
    ),
    "redis-cli -a": (
        "redis-cli -h cache -a S3cretPass ping",
        "redis-cli -h cache -a [redacted:password] ping",
    ),
    "docker login -p": (
        "docker login -u ci -p S3cretPass registry.example.com",
        "docker login -u ci -p [redacted:password] registry.example.com",
    ),
    "psexec -p": (  # kingfisher.psexec.1
        "cmd.exe /C PSEXEC \\\\10.0.94.120 -u Administrator -p dev_admin CMD /C ECHO",
        "cmd.exe /C PSEXEC \\\\10.0.94.120 -u Administrator -p [redacted:password] CMD /C ECHO",
    ),
    "cmdkey /pass:": (  # kingfisher.wincmd.3
        "cmdkey /add:server01 /user:admin /pass:P@ssw0rd",
        "cmdkey /add:server01 /user:admin /pass:[redacted:password]",
    ),
    "schtasks /rp": (  # kingfisher.wincmd.1
        'schtasks /create /tn "Backup" /tr "backup.bat" /sc daily /ru admin /rp P@ssw0rd',
        'schtasks /create /tn "Backup" /tr "backup.bat" /sc daily /ru admin '
        "/rp [redacted:password]",
    ),
    "net use": (  # kingfisher.wincmd.2
        "net use Z: \\\\server\\share /user:DOMAIN\\admin P@ssw0rd",
        "net use Z: \\\\server\\share /user:DOMAIN\\admin [redacted:password]",
    ),
    "curl -u": (
        "curl -u admin:S3cretPass https://api.example.com",
        "curl -u admin:[redacted:password] https://api.example.com",
    ),
    "htpasswd -b": (
        "htpasswd -b -c /etc/nginx/.htpasswd admin S3cretPass",
        "htpasswd -b -c /etc/nginx/.htpasswd admin [redacted:password]",
    ),
    "ConvertTo-SecureString": (  # kingfisher.powershell.1
        "ConvertTo-SecureString 'MyS3cret!' -AsPlainText -Force",
        "ConvertTo-SecureString [redacted:password] -AsPlainText -Force",
    ),
    "PowerShell -Password": (  # kingfisher.vmware.1
        "Connect-VIServer -Server 192.168.1.51 -User administrator@vSphere.local "
        "-Password VMware1!",
        "Connect-VIServer -Server 192.168.1.51 -User administrator@vSphere.local "
        "-Password [redacted:password]",
    ),
    "NetworkCredential": (  # kingfisher.powershell.2
        '[Net.NetworkCredential]::new("admin", "P@ssw0rd!")',
        '[Net.NetworkCredential]::new("admin", [redacted:password])',
    ),
    "IDENTIFIED BY": (  # kingfisher.sqlddl.1
        "CREATE USER 'admin'@'%' IDENTIFIED BY 'secret123'",
        "CREATE USER 'admin'@'%' IDENTIFIED BY [redacted:password]",
    ),
    "identified by": (
        "create user 'admin'@'%' identified by 'secret123'",
        "create user 'admin'@'%' identified by [redacted:password]",
    ),
    "WITH PASSWORD": (
        "ALTER ROLE app WITH PASSWORD 'MyStr0ngP@ss'",
        "ALTER ROLE app WITH PASSWORD [redacted:password]",
    ),
    "DBI->connect": (  # kingfisher.dbconn.perl.1
        'my $dbh = DBI->connect("dbi:mysql:database=test", "root", "secret");',
        'my $dbh = DBI->connect("dbi:mysql:database=test", "root", [redacted:password]);',
    ),
    "mysql_connect": (  # kingfisher.dbconn.php.1
        'mysql_connect("localhost", "root", "password123")',
        'mysql_connect("localhost", "root", [redacted:password])',
    ),
    "PDO": (
        '$db = new PDO("mysql:host=db;dbname=shop", "app", "S3cretPass");',
        '$db = new PDO("mysql:host=db;dbname=shop", "app", [redacted:password]);',
    ),
    "mysqli": (
        '$db = new mysqli("db", "app", "S3cretPass", "shop");',
        '$db = new mysqli("db", "app", [redacted:password], "shop");',
    ),
    "--api-key=": ("app --api-key=Qm9vZ2xl42 run", "app --api-key=[redacted:password] run"),
    "pgpass line": (
        "db.example.com:5432:shop:app:S3cr3tPa55",
        "db.example.com:5432:shop:app:[redacted:password]",
    ),
    "pgpass line, any host, port and database": (
        "*:*:*:postgres:S3cr3tPa55",
        "*:*:*:postgres:[redacted:password]",
    ),
    "maven <password>": (  # kingfisher.maven.1
        "<server>\n  <id>releases</id>\n  <password>Pr0d_D3pl0y!</password>\n</server>",
        "<server>\n  <id>releases</id>\n  <password>[redacted:password]</password>\n</server>",
    ),
    "unattend.xml <Value>": (  # kingfisher.unattend.1
        "<AdministratorPassword><Value>MyPlainTextPassword</Value></AdministratorPassword>",
        "<AdministratorPassword><Value>[redacted:password]</Value></AdministratorPassword>",
    ),
    "<clientSecret>": (
        "<add><clientSecret>p8e-ibndcvsmAp9ZgPBZ606F</clientSecret></add>",
        "<add><clientSecret>[redacted:password]</clientSecret></add>",
    ),
    "<accessToken>": (
        "<auth><accessToken>9xuqwrwgstrb3mzrxb83</accessToken></auth>",
        "<auth><accessToken>[redacted:password]</accessToken></auth>",
    ),
    "<apiKey>": (
        "<settings><apiKey>a65b0146769d433a835f</apiKey></settings>",
        "<settings><apiKey>[redacted:password]</apiKey></settings>",
    ),
}


@pytest.mark.parametrize(("text", "kept"), PASSWORDS.values(), ids=PASSWORDS.keys())
def test_a_password_on_a_command_line_in_code_or_config_is_redacted(text: str, kept: str) -> None:
    assert redaction.scan(text) == (kept, ["password"])


# -- what is no secret though it looks random -----------------------------------------

COMMIT = "3f786850e387550fdab836ed7e6dc881de23001b"  # a git commit: 40 hex digits
NOT_A_KEY = (
    *("sha", "sha256", "md5", "hash", "checksum", "digest", "commit", "commits", "etag", "rev"),
    *("revision", "id", "uuid", "guid", "ref", "integrity", "fingerprint", "version", "build"),
    *("object", "request", "trace", "span", "nonce", "salt", "iv", "color"),
)


@pytest.mark.parametrize("name", NOT_A_KEY)
def test_hex_under_a_name_that_says_what_else_it_is_is_kept(name: str) -> None:
    untouched(f'{name} = "{COMMIT}"')
    untouched(f"{name.upper()}: {COMMIT}")


def test_hex_under_any_other_name_is_a_key() -> None:
    """`assemblyai = fa0e…` (kingfisher.assemblyai.1); a name that only starts with one of
    the words above is a vendor's."""
    for name in ("assemblyai", "buildkite", "identity_api", "refiner", "versionone"):
        redacted_as("random_token", f'{name} = "{COMMIT}"', COMMIT)


SRI = "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"  # a sha256 in base64, as in `integrity=`
HASH_PREFIXES = (
    *("sha256-", "SHA512-", "md5-", "blake3-", "crc32-", "sri-", "x86_64-", "amd64-"),
    *("arm64-", "utf8-", "iso8859-", "rfc3339-", "cve-", "sha1_"),
)


@pytest.mark.parametrize("prefix", HASH_PREFIXES)
def test_a_digest_after_a_hash_or_platform_prefix_is_kept(prefix: str) -> None:
    untouched(f"see {prefix}{SRI} ok")


@pytest.mark.parametrize(
    "text",
    [
        f'<img src="data:image/png;base64,{MIXED_24}">',
        f"data:{MIXED_24}",
        f'<script integrity="sha384-{MIXED_24}">',
        f"digest sha256:{MIXED_24}",
        f"SHA1={MIXED_24}",
    ],
)
def test_a_token_after_a_data_url_or_a_digest_label_is_kept(text: str) -> None:
    untouched(text)


@pytest.mark.parametrize(
    "written", ["x: {}", "x = {}", "x => {}", "x := {}", "x '{}'", 'x "{}"', "x `{}`", 'x =  "{}"']
)
def test_each_way_of_setting_a_value_makes_16_characters_enough(written: str) -> None:
    value = MIXED_24[:16]
    redacted_as("random_token", written.format(value), value)
    untouched(f"x {value}")  # no separator, no quote: alone, 24 are wanted


# -- each shape's shortest secret, and one character less ------------------------------
# (kind, the shortest secret the shape takes, one character less, what that one becomes):
# the vendors' samples above cut to the bound. One short of a known shape, a token may
# still be a prefixed or random token (named so), or nothing.

GH = "gOopU03DASjFw8k3jiy4uJWh1t46Sd0P4bh3"  # kingfisher.github.2's body
BOUNDS = {
    "openai: 20 after sk-": ("openai_key", "sk-" + GH[:20], "api_token"),
    "stripe: 16 after sk_live_": ("stripe_key", "sk_live_" + GH[:16], "api_token"),
    "stripe webhook: 20 after whsec_": ("stripe_key", "whsec_" + GH[:20], "api_token"),
    "google: exactly 35 after AIza": ("google_api_key", "AIza" + GH[:35], "random_token"),
    "github: 20 after ghp_": ("github_token", "ghp_" + GH[:20], "api_token"),
    "github fine-grained: 22": ("github_token", "github_pat_" + GH[:22], "api_token"),
    "gitlab: 20 after glpat-": ("gitlab_token", "glpat-" + GH[:20], "api_token"),
    "slack webhook: 10 after the path": (
        "slack_webhook",
        "https://hooks.slack.com/services/T0ZQ8W2E4/",
        None,
    ),
    "slack token: 10 after xoxb-": ("slack_token", "xoxb-2468013579", None),
    "chatmem token: 20 after cm_": ("chatmem_token", "cm_" + GH[:20], "api_token"),
    "bearer: 16 letters": ("bearer_token", "Bearer abcdefghijklmnop", None),
    "bearer: 12 with a digit": ("bearer_token", "Bearer abcdefghijk1", None),
    "pwhash: 8 after the scheme": ("password_hash", "$1$saltsalt", None),
}


@pytest.mark.parametrize(("kind", "shortest", "short_kind"), BOUNDS.values(), ids=BOUNDS.keys())
def test_each_shape_takes_its_shortest_secret_and_not_one_less(
    kind: str, shortest: str, short_kind: str | None
) -> None:
    redacted_as(kind, f"x {shortest} y", shortest)
    short = shortest[:-1] if not shortest.endswith("/") else shortest[:-2] + "/"
    if short_kind is None:
        untouched(f"x {short} y")
    else:
        redacted_as(short_kind, f"x {short} y", short)


def test_a_jwt_has_eight_characters_after_each_eyj() -> None:
    shortest = "eyJhbGciOiJ.eyJzdWIiOiJ.sig"
    redacted_as("jwt", f"x {shortest} y", shortest)
    untouched("x eyJhbGciOi.eyJzdWIiOiJ.sig y")
    untouched("x eyJhbGciOiJ.eyJzdWIiOi.sig y")


def test_a_key_as_a_links_user_is_16_characters() -> None:
    redacted_as("url_credentials", f"https://{GH[:16]}@sentry.io/1", GH[:16])
    untouched(f"https://{GH[:15]}@sentry.io/1")


def test_a_telegram_bot_id_is_8_to_10_digits_and_its_secret_30_after_aa() -> None:
    """kingfisher.telegram.1's token, its bot id and secret cut or grown to each bound."""
    secret = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawd"[:32]
    for bot in ("12345678", "1234567890"):
        redacted_as("telegram_bot_token", f"bot {bot}:{secret}", f"{bot}:{secret}")
    for bot in ("1234567", "12345678901"):  # the secret alone is still a random token
        redacted_as("random_token", f"bot {bot}:{secret}", secret)
    redacted_as("random_token", f"bot 123456789:{secret[:-1]}", secret[:-1])


def test_a_discord_webhook_id_is_5_to_30_digits_and_its_secret_20_characters() -> None:
    secret = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"[:20]  # kingfisher.discord.1's, cut
    for hook in ("12345", "1" * 30):
        link = f"https://discord.com/api/webhooks/{hook}/{secret}"
        redacted_as("discord_webhook", link, f"{hook}/{secret}")
    for hook, cut in (("1234", secret), ("1" * 31, secret), ("12345", secret[:-1])):
        untouched(f"https://discord.com/api/webhooks/{hook}/{cut}")


# -- every tool, flag and scheme the command-line and hash shapes name -------------------

COMMANDS = (
    *("mysqldump -u root -pS3cretPass shop", "mysqladmin -u root -pS3cretPass status"),
    *("mariadb -u root -pS3cretPass shop", "mariadb-dump -u root -pS3cretPass shop"),
    *("sshpass -p S3cretPass ssh deploy@host", "podman login -u ci -p S3cretPass quay.io"),
    *("helm registry login -u ci -p S3cretPass ghcr.io", "nerdctl login -u ci -p S3cretPass io"),
    *("psexec64 \\\\host -u admin -p S3cretPass cmd", "PsExec.exe \\\\host -u admin -p S3cretPass"),
    *(
        "runas /user:admin /password:S3cretPass cmd",
        "cmdkey /generic:host /user:admin /p S3cretPass",
    ),
    *("curl --user admin:S3cretPass https://api.example.com", "app -password S3cretPass"),
    'ConvertTo-SecureString -String "S3cretPass" -AsPlainText -Force',
    "CREATE USER app WITH ENCRYPTED PASSWORD 'S3cretPass'",
    'mysqli_connect("db", "app", "S3cretPass")',
    'DBI.connect("DBI:Mysql:shop", "app", "S3cretPass")',
    'New-Object System.Net.NetworkCredential("admin", "S3cretPass")',
    *("app --passwd S3cretPass", "app --pass S3cretPass", "app --token S3cretPass"),
    *("app --secret S3cretPass", "app --apikey S3cretPass", "app --api_key S3cretPass"),
    *("app --auth-token S3cretPass", "app --authtoken S3cretPass", "app --access-key S3cretPass"),
    *("app --accesskey S3cretPass", "gh auth login --with-token S3cretPass"),
)


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_and_flag_that_takes_a_password(command: str) -> None:
    secret = "'S3cretPass'" if "'S3cretPass'" in command else "S3cretPass"
    secret = '"S3cretPass"' if '"S3cretPass"' in command else secret
    redacted_as("password", f"run {command}", secret)


@pytest.mark.parametrize("letter", "abposre")
def test_each_kind_of_slack_token(letter: str) -> None:
    """Bot (b), user (p), app (a), refresh (r), config (e), ... tokens; the body is
    kingfisher.slack.7's."""
    token = f"xox{letter}-263594206564-FGqddMF8t08v8N7Oq4i57vs1"
    redacted_as("slack_token", f"slack {token} ok", token)


BCRYPT = "12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW"  # kingfisher.pwhash.2's
HASHES = (
    *(f"$2${BCRYPT}", f"$2b${BCRYPT}", f"$2x${BCRYPT}", f"$2y${BCRYPT}"),
    "$5$9ks3nNEqv31FX.F$gdEoLFsCRsn/WRN3wxUnzfeZLoooVlzeF4WjLomTRFD",  # kingfisher.pwhash.3
    "$6$qoE2letU$wWPRl.PVczjzeMVgjiA8LLy2nOyZbf7Amj3qLIL978o18gbMySdKZ7uepq9t",  # .pwhash.4
    "$7$CU..../....SzsA8c2R3VXhUkUfmQfiS/$ODF6mkuVNk4zV2EuHmNd3Vg2fXrW.mUxVaVy5xyJ0n3",  # scrypt
    "$8$TnGX/fE4KGHOVU$pEhnEvxrvaynpi8j4f.EMHr6M.FzU8xnZnBr/tJdFWk",  # kingfisher.pwhash.5
    "$9$kBtMd8Gh6p3F7z$Hs0a7DhXPxq6.3YpM5tT8lBzF2wQe9rU1vN4jKcA",  # Cisco type 9 (scrypt)
    "$apr1$71850310$gh9m4xcAn3MGxogwX/ztb.",  # htpasswd -m
    "$y$j9T$F5Jx5fExrKuPp53xLKQ..1$X3DX6M94c7o.9agCG9G317fhZg9SqC.5i5rd.RhAtQ7",  # yescrypt
    "$argon2id$v=19$m=65536,t=3,p=4$c29tZXNhbHQ$RdescudvJCsgt3ub+b+dWRWJTmaaJObG",
    "$argon2i$v=19$m=4096,t=3,p=1$c29tZXNhbHQ$iWh06vD8Fy27wf9npn6FXWiCX4K6pW6Ue1Bnzz07Z8A",
    "$argon2d$v=19$m=4096,t=3,p=1$c29tZXNhbHQ$2+JCoQtY/2x5F0VB9pEVP3xBNguWP1T25Ui0PtZuk8o",
    # kingfisher.krb5.asrep.23.1 (cut); a TGS hash in the same layout
    "$krb5asrep$23$user@domain.com:3e156ada591263b8aab0965f5aebd837$007497cb51b6c8116d64",
    "$krb5tgs$23$user@domain.com:3e156ada591263b8aab0965f5aebd837$007497cb51b6c8116d64",
)


@pytest.mark.parametrize("stored", HASHES, ids=lambda h: h.split("$")[1])
def test_each_password_hash_scheme(stored: str) -> None:
    redacted_as("password_hash", f"shadow: {stored} ok", stored)


# -- more vendors' samples, each holding a character or layout the shapes allow ----------

MORE_SHAPES = {
    "anthropic admin key, with _ and -": (  # kingfisher.anthropic.2
        "anthropic_key",
        "sk-ant-admin01-MSLxH1vwJBWWIwDTzFro0xQrkN1dWoHo-6E9qdBHiJDCx5076IoxCH_L-sritH-zkJw2tx6ig",
    ),
    "openai key whose body starts with letters and a dash": (  # kingfisher.openai.2 (cut)
        "openai_key",
        "sk-None-JEBiV9H-bLEZoOhNvLWmCNR74dIbql-p3yWFmWpdYCjeR1PWM_PS40yTLowkF3VzXHYJ3VbFarT3",
    ),
    "google key ending in a dash": ("google_api_key", "AIzaSyNHxIf32IQ1a1yjl3ZJIqKZqzLAK1XhDk-"),
    "chatmem token with _ and -": ("chatmem_token", "cm_Zq8Wx2Ec4Rv6_Tb8Nm2Qw6-Er0Ty4Ui8Op2As6Df0"),
    "jwt with - and _ in its signature": (  # kingfisher.carto.1
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJhIjoiYWNfMjQ2M3dpNCIsImp0aSI6ImNkMDI2ZDk5In0."
        "N2mk5Zg-e7_XC3NtLIM9UD8usbFz5pKRalGVYGkgZbZ",
    ),
    "jwt whose header and claims encode to - and _": (  # made here: base64url of ?, > and ~
        "jwt",
        "eyJhbGciOiJIUzI1NiIsImtpZCI6Ing-P34_Pz4-In0.eyJzdWIiOiJjaSIsInEiOiI_Pz4-eD95Pnp-In0."
        "gzSraSYS8EXBxLN_oWnFSRgCzcmEmMjLiuyu5CSpyHI",
    ),
    "telegram token with an underscore": (  # kingfisher.telegram.1's, base64url as issued
        "telegram_bot_token",
        "110201543:AAHdqTcvCH1vGWJx_SeofSAs0K5PALDsawd",
    ),
    "atlassian token with its checksum": (  # kingfisher.atlassian.5
        "api_token",
        "ATATT3xFfGF0Ab3_defGh7-Jk9LmN2PqR5StUv8WxYz0Ab3_defGh7-Jk9LmN2PqR5StUv8WxYz0Ab3_defGh7-"
        "Jk9LmN2PqR5StUv8WxYz0=91BF55F4",
    ),
    "google oauth token with - and _": (  # kingfisher.google.4
        "api_token",
        "ya29.Ci_UA7aEsvT6-oVI8f96kvB6i8oO13WgdZUviLaCVtpEPYZqhQcQycR-u2X9xtmYGA",
    ),
    "pubnub publish key": ("api_token", "pub-c-12345678-1234-1234-1234-123456789012"),  # .pubnub.1
    "pubnub secret key": ("api_token", "sec-c-ZDA1ZjBkYjAtZjFjYi00ZjM1LWE2NDktYjM4Njk2Mjc1ZjU2"),
    "hubspot eu key": ("api_token", "pat-eu1-3b124f92-f4cb-4d1d-8d1c-7fc3f3512dba"),
}


@pytest.mark.parametrize(("kind", "secret"), MORE_SHAPES.values(), ids=MORE_SHAPES.keys())
def test_a_secret_with_every_character_its_vendor_uses(kind: str, secret: str) -> None:
    redacted_as(kind, f"use {secret} now", secret)


def test_a_mixed_case_uuid_set_to_a_name_is_a_key() -> None:
    """At 3.5 bits a character it is too plain for a mixed token: taken as a UUID only."""
    uuid = "deadbeef-DEAD-BEEF-0001-deadbeef0002"
    redacted_as("random_token", f'assemblyai = "{uuid}"', uuid)


@pytest.mark.parametrize(
    "written",
    [
        '{{"assemblyai": "{}"}}',
        "{{'assemblyai': '{}'}}",
        "config[`assemblyai`] = `{}`",
        'config["assemblyai"] = "{}"',
        "assemblyai\t= {}",
        "assemblyai =\t{}",
        "assemblyai: {}",
        "assemblyai := {}",
        "assemblyai => {}",
        "assemblyai = {}",
        "id=7 assemblyai='{}'",
    ],
)
def test_hex_set_to_a_name_in_any_language_is_a_key(written: str) -> None:
    redacted_as("random_token", written.format(COMMIT), COMMIT)


def test_a_quote_earlier_on_the_line_does_not_make_a_value() -> None:
    untouched(f"it's {MIXED_24[:16]}")
    redacted_as("random_token", f"data: {MIXED_24}", MIXED_24)  # a label, not a data: URL


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("AbCdEfghijKlMnOpQrStUv", "five lower-case letters in a row read as a word"),
        ("aBcDEFGHiJkLmNoPqRsTuV", "five capitals in a row too"),
    ],
)
def test_a_letters_only_value_with_a_word_in_it_is_kept(value: str, why: str) -> None:
    assert under_an_unsure_key(value) == value, why


def test_a_lone_token_with_a_word_of_eight_letters_is_a_name_not_a_key() -> None:
    untouched("see Q7mountainXz4Rk9Tp2Wv8Ls3 there")


# -- links that hold no password ------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "open http://localhost:8080/admin",  # a port is not a password
        "http://localhost:8080 or mail admin@example.com",
        "follow https://mastodon.social:443/@Gargron",
        "http://localhost:3000?next=team@example.com",
        "http://localhost:3000#team@example.com",
        "pull https://ghcr.io/acme/app:1.2@sha256:3f786850e387550fdab836ed7e6dc881de23001b",
        "https://mail.example.com?q=from:alice@example.com",
        "https://mail.example.com#from:alice@example.com",
        "https://d1a2b3c4d5e6f7g8.cloudfront.net/app.js",  # a random host is no key
        "wrap it withOAuth credentialsProviderChain",  # OAuth inside a word
        "pip install sk-learn-compatible-estimators",  # sk- and words: no digit in it
        "https://thingsboard.cloud/api/v1/a1b2c3d4e5f6a7b8c9d0e1f2/telemetry",  # 24, not 20
    ],
)
def test_a_link_or_word_that_only_looks_like_a_credential_is_kept(text: str) -> None:
    untouched(text)


@pytest.mark.parametrize("symbol", [".", "~", "+", "/", "_", "-"])
def test_a_short_bearer_token_needs_a_digit_or_a_symbol(symbol: str) -> None:
    token = f"abcdef{symbol}ghijk"  # twelve characters
    redacted_as("bearer_token", f"send Bearer {token} along", f"Bearer {token}")


def test_pgpass_ports_of_two_to_five_digits() -> None:
    for line in ("10.0.0.5:22:shop:app:S3cr3tPa55", "db.example.com:65432:shop:app:S3cr3tPa55"):
        redacted_as("password", line, "S3cr3tPa55")


def test_a_thingsboard_token_may_hold_capitals() -> None:
    token = "Ab3dEf6hIj9kLm2nOp5q"
    redacted_as("api_token", f"https://thingsboard.cloud/api/v1/{token}/telemetry", token)


def test_an_aws_key_id_followed_by_a_digit_is_no_key_id() -> None:
    untouched("id AKIAIOSFODNN7EXAMPLE1 there")


@pytest.mark.parametrize("then", ["\n", " | ", "; ", " && "])
@pytest.mark.parametrize(
    ("command", "after"),
    [
        ("mysqldump shop > shop.sql", "tar -pczf shop.tgz shop.sql"),
        ("redis-cli bgsave", "ls -a /var/lib/redis"),
        ("sshpass -f pass.txt scp dump.sql host:", "ls -a /tmp"),
        ("docker login ghcr.io", "ssh -p 2222 deploy@host"),
        ("psexec \\\\host ipconfig", "ssh -p 2222 deploy@host"),
        ("cmdkey /list", "xcopy /p a.txt b.txt"),
    ],
)
def test_a_flag_of_the_next_command_is_not_the_password(
    command: str, after: str, then: str
) -> None:
    """A password flag belongs to the command it follows, up to a newline, pipe, `;` or `&`."""
    untouched(command + then + after)


AWS_SECRET = "sBmHlDFrNcsz35N+LRjwlUxF8/wypT4tiJCQ0wP4"  # kingfisher.aws.2


@pytest.mark.parametrize(
    "run", [f"{c}{AWS_SECRET}" for c in "aA7="] + [f"{AWS_SECRET}{c}" for c in "aA7/+="]
)
def test_next_to_an_aws_key_id_a_longer_run_is_not_its_secret_key(run: str) -> None:
    """Exactly 40 characters of base64 are an AWS secret key; 41 are some other token."""
    cleaned, kinds = redaction.scan(f"id AKIAIOSFODNN7EXAMPLE and {run} ok")
    assert kinds == ["aws_access_key", "random_token"]
    assert AWS_SECRET not in cleaned


def test_the_aws_secret_key_beside_its_id() -> None:
    assert redaction.scan(f"id AKIAIOSFODNN7EXAMPLE and {AWS_SECRET} ok") == (
        "id [redacted:aws_access_key] and [redacted:aws_secret_key] ok",
        ["aws_access_key", "aws_secret_key"],
    )


PLACEHOLDER_VALUES = (
    *("${DB_PASSWORD}", "$DB_PASSWORD", "{{ db_password }}", "%(password)s", "xxxx", "••••"),
    *("????", "****", "<password>", "your-password", "your_password", "YOUR-API-KEY"),
    *("my_password", "[password]", "[redacted]", "0x1F2E3D4C"),
    *("0xdeadbeef", "0xDEADBEEF", "0xF", "0x0123456789ABCDEF", "changeme", "null"),
)


@pytest.mark.parametrize("value", PLACEHOLDER_VALUES)
def test_a_placeholder_after_a_password_flag_is_kept(value: str) -> None:
    untouched(f"app --password={value} run")


FLAGS = (
    *("--password", "--passwd", "--pass", "--token", "--secret", "--api-key", "--apikey"),
    *("--api_key", "--auth-token", "--auth_token", "--authtoken", "--access-key"),
    *("--access_key", "--accesskey", "--with-token", "--db-password", "--db_password"),
    *("--new-db-password", "-password", "-Password"),
)


@pytest.mark.parametrize("between", [" ", "=", "\t"])
@pytest.mark.parametrize("flag", FLAGS)
def test_a_word_after_a_secret_flag_is_its_password(flag: str, between: str) -> None:
    """A plain word too (`swordfish`): after the flag, it can only be the secret."""
    redacted_as("password", f"app {flag}{between}swordfish run", "swordfish")


def test_a_password_flag_inside_a_longer_word_is_none() -> None:
    untouched("open the reset-password page")


@pytest.mark.parametrize(
    ("line", "secret"),
    [
        ("db-1.example.com:5432:shop-prod.v2:app.rw@corp-x:S3cr3tPa55", "S3cr3tPa55"),
        ("db:5432:shop:*:S3cr3tPa55 # ci", "S3cr3tPa55"),
        ("db:5432:shop:app:pa55", "pa55"),
    ],
)
def test_pgpass_lines_with_dashes_dots_wildcards_and_a_short_password(
    line: str, secret: str
) -> None:
    redacted_as("password", line, secret)


@pytest.mark.parametrize(
    "tag", ["ns:password", "db.password", "db-password", "client_secret", "access_token", "api_key"]
)
def test_any_xml_tag_that_names_a_secret(tag: str) -> None:
    redacted_as("password", f"<{tag}>S3cr3tPa55</{tag}>", "S3cr3tPa55")


def test_an_xml_password_of_four_characters_and_an_empty_one() -> None:
    redacted_as("password", "<password>pa55</password>", "pa55")
    untouched("<password></password>")


@pytest.mark.parametrize("glued", [".", "+", "/", "@", "-"])
def test_a_prefixed_token_glued_to_a_longer_word_is_left_to_the_random_token_rule(
    glued: str,
) -> None:
    untouched(f"x {glued}tok_Kq4Wt8Ab2Nd6-xy7 y")


def test_a_prefixed_token_is_twenty_characters_at_least() -> None:
    untouched("x ab_Kq4Wt8Ab2Nd6xy7z y")  # nineteen


@pytest.mark.parametrize(
    "token",
    [
        "serviceacct1_Kq4Wt8Ab2Nd6xy7z",  # a twelve-letter prefix
        "dop_v1_3b1f9c2e7a4d6b8f0c1e3a5d7b9f2c4e6a8d0b1f3c5e7a9d2b4f6c8e0a1d3b5f",  # DigitalOcean
        "key-live-Kq4Wt8Ab2Nd6xy7z",
        "AIK_CI_a1B2c3D4e5F6g7H8i9J0k1L2",  # kingfisher.aikido.1
        "AQ.Ab8RN6LmXq2Wt9Zr4Kp7Yv3Hs5Jd8Fg1",  # Google's AQ. keys (written here)
        "sec-c-12345678-abcd-1234-efgh-567890abcdef",  # PubNub's layout (kingfisher.pubnub.2)
        "RGAPI-4SB3F6A1-2941-5A81-9C23-4BF3A83C14F3",  # kingfisher.riot.2, upper case
    ],
)
def test_more_prefixed_tokens(token: str) -> None:
    redacted_as("api_token", f"x {token} y", token)


def test_path_tokens_with_dashes() -> None:
    alchemy = "Pajd-zB75s1V_7aldcQ6XbodqDCWMC7m"  # kingfisher.alchemy.1's, with a dash
    redacted_as("api_token", f"https://eth-mainnet.g.alchemy.com/v2/{alchemy}", alchemy)
    hook = "123456789012345678/Ab-cDeFgHiJkLmNoPqRsTuVwXyZ0123456789"
    redacted_as("discord_webhook", f"https://discord.com/api/webhooks/{hook}", hook)


@pytest.mark.parametrize("symbol", [".", "~", "+", "/", "-", "_"])
def test_a_long_bearer_token_is_redacted_past_any_symbol_in_it(symbol: str) -> None:
    token = f"a1b2c3d4e5f6g7h8{symbol}tail"
    redacted_as("bearer_token", f"send Bearer {token} along", f"Bearer {token}")


@pytest.mark.parametrize(
    ("key_id", "secret_kind"),
    [
        ("AKIAIOSFODNN7EXAMPLE", "aws_secret_key"),
        ("ASIAOZW6VBVAZFJHJLQA", "aws_secret_key"),  # kingfisher.aws.1
        ("xAKIAIOSFODNN7EXAMPLE", "random_token"),  # not an id: part of a longer word
        ("BAKIAIOSFODNN7EXAMPLE", "random_token"),
        ("9AKIAIOSFODNN7EXAMPLE", "random_token"),
        ("AKIAIOSFODNN7EXAMPLEX", "random_token"),
        ("AKIAIOSFODNN7EXAMPLE1", "random_token"),
    ],
)
def test_an_aws_key_id_in_one_field_names_the_secret_key_in_another(
    key_id: str, secret_kind: str
) -> None:
    out = redaction.redact_value({"a": key_id, "b": AWS_SECRET})
    assert out["b"] == f"[redacted:{secret_kind}]"


# -- leaks this file's mutation round found (fixed in secret_shapes.py) -------------------


@pytest.mark.parametrize("scheme", ["oauth", "OAUTH"])
def test_an_oauth_credential_in_lower_or_upper_case_is_redacted(scheme: str) -> None:
    # the gate held `Auth` only, so neither form ever reached the bearer shape
    text = f"send {scheme} 89a229ce1a8dbcf9ff30430fbe35eb4c04 along"
    assert redaction.scan(text) == ("send [redacted:bearer_token] along", ["bearer_token"])


def test_a_pgpass_password_with_an_escaped_colon_is_redacted_whole() -> None:
    # ~/.pgpass escapes `:` and `\` in a field with a backslash (PostgreSQL's libpq docs)
    redacted_as("password", "db:5432:shop:app:pa\\:ss\\\\word", "pa\\:ss\\\\word")


def test_a_kerberos_tgs_hash_as_rubeus_prints_it_is_redacted_whole() -> None:
    # $krb5tgs$<etype>$*<user>$<realm>$<spn>*$<checksum>$<encrypted part> (written here)
    hashed = (
        "$krb5tgs$23$*svc_sql$CORP.LOCAL$MSSQLSvc/db.corp.local~1433*"
        "$3e15a8b7c9d2e4f6a1b3c5d7e9f0a2b4$0074f2e8a1c3b5d7e9f1a3c5b7d9e1f3a5c7b9d1e3f5a7c9"
    )
    redacted_as("password_hash", f"cracked {hashed} overnight", hashed)


@pytest.mark.parametrize("prefix", ["xoxc", "xoxd"])
def test_slack_browser_session_tokens_are_slack_tokens(prefix: str) -> None:
    # xoxc- (a browser session's client token) and xoxd- (its cookie), written here
    token = f"{prefix}-2541715624-2536568458595-2560197464944-23a1888"
    redacted_as("slack_token", f"session {token} ok", token)
