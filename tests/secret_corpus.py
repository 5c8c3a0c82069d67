"""Secrets in the shapes agents paste, for the redaction tests and bench/redaction.py.

Each is made up (no real credential) but has the real format. `secret` is
the part that must never be stored or sent; `text` plants it the way it
turns up in practice; `kind` is the label chatmem's redaction gives it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Planted:
    kind: str
    secret: str
    text: str


PEM_BODY = "MIIEowIBAAKCAQEAzQ8xW4r7Ty2Ui6Op0As4Df8Gh2Jk6Lz0Xc4Vb8Nm2Qw6Er0Ty4"
AWS_ID = "AKIAZX4Q7RT2WN8PLM3V"

SECRETS: tuple[Planted, ...] = (
    Planted(
        "openai_key",
        "sk-proj-Ab3dEf6hIj9kLm2nOp5qT3BlbkFJRs8tUv1wXy4zAb7cDe0f",
        "The bot uses the OpenAI key {secret} for now.",
    ),
    Planted("openai_key", "sk-Qw7ErT9yUi1oPa3sDf5gHj7kLz9xCv1bNm3", "legacy key {secret}"),
    Planted(
        "anthropic_key",
        "sk-ant-api03-Tq4Wc8Yb2Nd6Rf0Hj3Lm7Pk1Vs5Xz9Ga2Ue6Io0-Kq4Wt8Ab",
        "ANTHROPIC_API_KEY is {secret}",
    ),
    Planted("google_api_key", "AIzaSyD4f8Gh2Jk6Lm0Np4Qr8St2Uv6Wx0Yz4Ab", "maps key {secret}."),
    Planted("aws_access_key", AWS_ID, "aws id {secret} in us-east-1"),
    Planted(
        "aws_secret_key",
        "kV9rT2xQ/8mN4pL6zW1yB3cF5hJ7dS0aG2eU4iO6",
        f"deploy with {AWS_ID} and {{secret}} please",
    ),
    Planted("github_token", "ghp_R8tY2uI6oP0aS4dF8gH2jK6lZ0xC4vB8nM2qW", "GH token {secret}"),
    Planted(
        "github_token",
        "github_pat_11AQX7Z4Y0abcdEFGH1234_ijklMNOPqrst5678UVWXyzAB9012cdefGHIJ3456klmn",
        "fine-grained {secret}",
    ),
    Planted("gitlab_token", "glpat-Hn4Jk8Lm2Np6Qr0St4Uv", "GitLab: {secret}"),
    Planted("slack_token", "xoxb-2468013579-1357924680-Zq8Wx2Ec4Rv6Tb", "slack bot {secret}"),
    Planted(
        "slack_webhook",
        "https://hooks.slack.com/services/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",
        "post alerts to {secret}",
    ),
    Planted("stripe_key", "sk_live_51Hq8Zx2Cv4Bn6Mm8Ll0Kk2Jj4Hh6Gg", "stripe {secret}"),
    Planted("stripe_key", "rk_live_51Wd3Fe5Gr7Th9Yj1Uk3Il5Op7Aq9", "restricted {secret}"),
    Planted("stripe_key", "sk_test_51Pz2Ox4Ny6Mw8Lv0Ku2Jt4Is6Hr8", "test mode {secret}"),
    Planted(
        "jwt",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJlZGl0b3IiLCJyb2xlIjoiYWRtaW4ifQ"
        ".Xq7Zk2Wp9Lm4Rt8Yv1Nc6Bd3Hf0Js5Gu2Ko7Ea9Ti",
        "session cookie {secret}",
    ),
    Planted(
        "private_key",
        PEM_BODY,
        "-----BEGIN RSA PRIVATE KEY-----\n{secret}\nVb8Nm2Qw6Er0Ty4Ui8Op2As6Df0Gh4Jk8Lz2Xc6\n"
        "-----END RSA PRIVATE KEY-----",
    ),
    Planted("chatmem_token", "cm_Vz4Xq8Wr2Et6Yu0Io4Pa8Sd2Fg6Hj0Kl4Zx8Cv2Bn6M", "my token {secret}"),
    Planted(
        "bearer_token",
        "Qm9vZ2xlLXRva2VuLTQyNDI0Mg.Xy7Z",
        "curl -H 'Authorization: Bearer {secret}' https://api.example.com",
    ),
    Planted("password", "Tr0ub4dor-Zx93", "db login: password={secret}"),
    Planted("secret", "Wm5Zq2Xr8Tv-Lk4", "the client secret: {secret}"),
    Planted("token", "Hq7Ws3Ed9Rf1Tg5", "use token={secret} for the feed"),
    Planted(
        "api_key",
        "Jd8Kf2Lg6Mh0Nj4Pq",
        '{{"settings": "{{\\"api_key\\": \\"{secret}\\", \\"region\\": \\"eu\\"}}"}}',
    ),
    Planted(
        "url_credentials",
        "deploy:Pa55-Wx7Qz9",
        "clone https://{secret}@git.example.com/site.git",
    ),
)


def planted(entry: Planted) -> str:
    return entry.text.format(secret=entry.secret)


# Ordinary prose and code-like facts that hold no secret.
ORDINARY = (
    "Checkout is page 42.",
    "Use tokens sparingly: the model's context is small.",
    "Set password rules in Settings > Security.",
    "Passwords must be at least 12 characters.",
    "password: must be 12 characters long",
    "The API key lives in the vault, never in a post.",
    "max_tokens: 800 for summaries",
    "token_count=5 per request",
    "Rotate the secret every 90 days.",
    "Bearer authentication is used by the REST API.",
    "Deploy with `git push origin main`; CI runs bin/test.",
    "The header template is post 5; never edit it by hand.",
    "Use British spelling (colour, organise) in titles.",
    "Links look like https://example.com/docs/page?id=42.",
    "task-abcdefghijklmnopqrstuvwxyz is the CSS class of the sale banner.",
    "Time slots are 09:30-12:00 and 14:00-17:30.",
    "The secret: it's in the vault, ask the admin.",
    "token: <your token here>",
    "password: ${DB_PASSWORD} in the env file",
)
