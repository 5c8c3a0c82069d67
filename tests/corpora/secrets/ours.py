"""Written for this project (not from a rule set): shapes agents paste, and benign look-alikes.

Every credential here is made up in the real format. TRUE holds the shapes
a rule set's examples rarely show: connection strings, `KEY=value` exports,
CLI flags, pgpass and .npmrc lines, service-account JSON, URLs with user
info, the 17 shapes issue 24 found stored verbatim (marked "issue 24"), and
the 7 key shapes issue 27's mutation audits found stored (KEY_EDGES).
BENIGN holds text that looks like a secret and is not: ids, hashes, data
URIs, colours, order numbers, slugs, versions, timestamps, and ordinary
prose about passwords and tokens. The benign values are generated from a
fixed seed so the list is the same on every run.
"""

from __future__ import annotations

import base64
import hashlib
import random
import uuid
from typing import NamedTuple


class Shape(NamedTuple):
    shape: str
    text: str
    secret: str


def _t(shape: str, template: str, secret: str) -> Shape:
    return Shape(shape, template.format(s=secret), secret)


_PEM = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7Zq3Xr8Tv2Lk4Wm5"
_SA_JSON = (
    '{{"type": "service_account", "project_id": "shop-prod-4821", '
    '"private_key_id": "{s}", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
    + _PEM
    + '\\n-----END PRIVATE KEY-----\\n", '
    '"client_email": "deploy@shop-prod-4821.iam.gserviceaccount.com"}}'
)

# Keys mutation testing found stored (issue 27): after a letter no key holds,
# longer than one key, a quote never closed. Passphrases: no random shape catches them.
KEY_EDGES: tuple[Shape, ...] = (
    _t("key_after_letter", "数据库密码password: {s}", "correcthorsebatterystaple"),
    _t("key_after_dot", "deploy notes .password={s}", "tangerinelighthousemarble"),
    _t("key_too_long", "x" * 70 + "_db_password={s}", "quietriverpaperlantern"),
    _t("unclosed_quote", 'DB_PASSWORD="{s}', "mapleorbitcanvasthunder"),
    _t("punctuation_first", "DB_PASSWORD={s} # rotate monthly", ")Xk29fj!q"),
    _t("open_bracket", "DB_PASSWORD={s} # rotate monthly", "Xk29(fj!q"),
    _t("glued_key", "DBPASS={s}", "hunter2pinecone"),
)

TRUE: tuple[Shape, ...] = (
    # --- the 17 shapes issue 24 found leaking ---
    _t("gcp_service_account", _SA_JSON, "8f3c2a9d41b7e6f05c2d9a8b7e6f1c3d4a5b6c7d"),  # issue 24
    _t(
        "azure_storage",
        "DefaultEndpointsProtocol=https;AccountName=shopassets;AccountKey={s};"
        "EndpointSuffix=core.windows.net",
        "Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp2Oo4Ii6Uu8Yy0Tt2Rr4Ee6Ww8Qq0Ss2Dd4Ff6Gg8Hh0JjKk==",
    ),  # issue 24
    _t(
        "twilio_auth_token", "TWILIO_AUTH_TOKEN {s}", "9f2c7e1a4b8d3f6e0a5c9b2d7e4f1a8c"
    ),  # issue 24
    _t("twilio_key", "twilio key {s} for SMS", "SK2b7f4e9c1a8d3f6b0e5c9a2d7f4e1b8c"),  # issue 24
    _t(
        "sendgrid_key",
        "mail goes out with {s}",
        "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",
    ),  # issue 24
    _t(
        "npm_token",
        "publish with the token {s} from CI",
        "npm_Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp2",
    ),  # issue 24
    _t("mysql_password", "mysql -u shop -p{s} -h db.internal shop", "Wn4-xQ7zLp2v"),  # issue 24
    _t("redis_url", "CACHE_URL is redis://:{s}@cache.internal:6379/0", "r3dis-Pw9qZx7Lm2"),  # 24
    _t("mailgun_key", "Mailgun: {s}", "key-3f9a7c2e1b8d4f6a0c5e9b2d7f4a1e8c"),  # issue 24
    _t(
        "heroku_key",
        "heroku token {s}",
        "HRKU-AAZq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp2Oo4Ii6Uu8Yy0T_abc12",
    ),  # issue 24
    _t(
        "digitalocean_token",
        "doctl auth init -t {s}",
        "dop_v1_3f9a7c2e1b8d4f6a0c5e9b2d7f4a1e8c3f9a7c2e1b8d4f6a0c5e9b2d7f4a1e8c",
    ),  # issue 24
    _t("shopify_token", "the store app uses {s}", "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"),  # 24
    _t(
        "discord_webhook",
        "alerts go to https://discord.com/api/webhooks/1234567890123456789/{s}",
        "Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp2Oo4Ii6Uu8Yy0Tt2Rr4Ee6Ww8Qq0Ss2Dd4Ff6Gg8Hh",
    ),  # issue 24
    _t("pgpass", "~/.pgpass: db.internal:5432:shop:shop_app:{s}", "pG7-wQ2zXn9Lm4"),  # issue 24
    _t("signing_key_export", "export SHOP_SIGNING_KEY={s}", "b5Xq9Lr2Wz7Nd4Tf8Hk1Mp6Vc3"),  # 24
    _t("huggingface_token", "HF token {s}", "hf_Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8AaPpO"),  # issue 24
    _t(
        "telegram_bot_token",
        "the bot is {s}",
        "7412589630:AAHq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0",
    ),  # issue 24
    # --- connection strings and URLs with user info ---
    _t("postgres_url", "DATABASE_URL=postgresql://shop:{s}@db.internal:5432/shop", "Pg-9xQ2zWn7"),
    _t("postgres_url", "psql 'postgres://admin:{s}@10.0.0.5/shop'", "hunter2-Zx8q"),
    _t("mysql_url", "mysql://root:{s}@localhost:3306/wp", "Wp-r00t-2024x"),
    _t("mongodb_url", "mongodb+srv://app:{s}@cluster0.ab1cd.mongodb.net/shop", "M0ng0-Qz7wX2"),
    _t("amqp_url", "BROKER=amqp://guest:{s}@rabbit:5672//", "Rb7-kq2ZxW9"),
    _t("redis_url", "rediss://default:{s}@redis.example.net:6380", "AVNS_q8Wx2Ec4Rv6Tb8Nm0"),
    _t("ftp_url", "upload to ftp://deploy:{s}@ftp.example.com/www", "Ftp-Pa55-w0rd9"),
    _t("https_userinfo", "curl https://admin:{s}@example.com/wp-json/", "Adm1n-Qx7zLp"),
    _t(
        "jdbc_password",
        "jdbc:postgresql://db:5432/shop?user=shop&password={s}",
        "Jd8-Kf2Lg6Mh",
    ),
    _t(
        "sqlserver_conn",
        "Server=tcp:shop.database.windows.net,1433;User ID=shop;Password={s};Encrypt=True;",
        "Sq1-Pw7zXq2Lm",
    ),
    _t("odbc_pwd", "DRIVER={{ODBC Driver 18}};SERVER=db;UID=sa;PWD={s};", "0dbc-Zx9Qw2"),
    # --- KEY=value exports and config lines ---
    _t("env_export", "export STRIPE_SECRET={s}", "Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh"),
    _t("env_export", "export DB_PASS={s}", "Pq9-Lm2zXw7v"),
    _t("env_export", "SHOP_API_KEY={s}", "a8F3kL9qZ2xW7mN4pR6t"),
    _t("env_export", "set WEBHOOK_SIGNING_SECRET={s}", "wS9q2Lm7Zx4Kp8Vn3Rt6"),
    _t("env_export", "$env:AZURE_CLIENT_SECRET = '{s}'", "Az8Q~q8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8"),
    _t("env_export", 'MAILCHIMP_KEY="{s}"', "3f9a7c2e1b8d4f6a0c5e9b2d7f4a1e8c-us21"),
    _t("env_export", "ENCRYPTION_KEY: {s}", "k7Zq2Wx9Lm4Pn8Rt3Vb6Yc1Hd5Jf0Gs"),
    _t("env_export", "APP_KEY=base64:{s}", "Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp2Oo4Ii6U="),
    _t("env_export", "SECRET_KEY_BASE={s}", "9f2c7e1a4b8d3f6e0a5c9b2d7e4f1a8c3b6d9e2f"),
    _t("env_export", "DJANGO_SECRET_KEY='{s}'", "django-insecure-q8w#x2e$c4r^v6t&b8n*m0l"),
    _t("env_export", "JWT_SIGNING_KEY={s}", "Jw7-Zq2Xn9Lm4Pr8Tv3"),
    _t("env_export", "auth_token: {s}", "Au7Zq2Xn9Lm4Pr8Tv3Kc6"),
    _t("yaml_secret", "  client_secret: {s}", "Cs8Q2zXn9Lm4Pr8Tv3Kc6Wd"),
    _t("yaml_secret", "    password: '{s}'", "Yaml-Pw7zXq2"),
    _t("ini_secret", "[smtp]\nhost = mail.example.com\npassword = {s}", "Smtp-9Qz2Xw7"),
    _t("json_secret", '{{"apiKey": "{s}", "region": "eu"}}', "Jk8Lm2Nq6Rp4Ts0Vw"),
    _t("json_secret", '{{"access_token": "{s}"}}', "ya29.a0AfH6SMBq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4"),
    _t("docker_env", "docker run -e POSTGRES_PASSWORD={s} postgres:16", "Dk7-Pw2zQx9L"),
    _t("k8s_secret", "kubectl create secret generic db --from-literal=password={s}", "K8s-Qz7wX2p"),
    # --- CLI flags ---
    _t("mysql_password", "mysqldump -uroot -p{s} shop > shop.sql", "R00t-Pw9zXq"),
    _t("mysql_password", "mysql --password={s} -u shop", "Pw-Long9zXq2"),
    _t("cli_password", "wp user create bob bob@example.com --user_pass={s}", "Wp-U5er-Pw7z"),
    _t("cli_password", "redis-cli -a {s} -h cache.internal", "Rc7-Zq2Xn9Lm"),
    _t("cli_password", "sshpass -p '{s}' ssh deploy@web1", "Ssh-Pa55-Qz7"),
    _t("cli_token", "gh auth login --with-token {s}", "ghp_Zq8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0Pp"),
    _t("cli_token", "vercel deploy --token {s}", "Vc7Zq2Xn9Lm4Pr8Tv3Kc6Wd"),
    _t("cli_token", "curl -u admin:{s} https://ci.example.com/api", "Cu7-Zq2Xn9Lm"),
    _t("cli_token", "htpasswd -b -c .htpasswd admin {s}", "Ht7-Zq2Xn9Lm"),
    # --- files agents paste ---
    _t("npmrc", "//registry.npmjs.org/:_authToken={s}", "npm_Q8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0PpZ"),
    _t("npmrc", "//npm.pkg.github.com/:_authToken={s}", "9f2c7e1a-4b8d-3f6e-0a5c-9b2d7e4f1a8c"),
    _t(
        "pypirc",
        "[pypi]\nusername = __token__\npassword = {s}",
        "pypi-AgEIcHlwaS5vcmc" + "q8Wx2Ec4",
    ),
    _t("netrc", "machine api.example.com login deploy password {s}", "N3trc-Qz7wX2"),
    _t(
        "git_credentials",
        "https://deploy:{s}@github.com",
        "ghp_Q8Wx2Ec4Rv6Tb8Nm0Lk2Jh4Gf6Ds8Aa0PpZ",
    ),
    _t("docker_auth", '{{"auths": {{"ghcr.io": {{"auth": "{s}"}}}}}}', "ZGVwbG95OlBhNTUtV3g3UXo5"),
    _t("htpasswd_line", "admin:{s}", "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/"),
    _t(
        "aws_credentials",
        "[default]\naws_secret_access_key = {s}",
        "kV9rT2xQ/8mN4pL6zW1yB3cF5hJ7dS0aG2eU4iO6",
    ),
    _t("wp_config", "define( 'DB_PASSWORD', '{s}' );", "Wp-Db-Pw7zXq2"),
    _t("wp_config", "define('AUTH_KEY', '{s}');", "q8W#x2E$c4R^v6T&b8N*m0L(k2J)h4G"),
    _t("php_array", "'password' => '{s}',", "Php-Pw7zXq2Ln"),
    _t(
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
    ),
    _t("basic_auth", "Authorization: Basic {s}", "YWRtaW46UGE1NS1XeDdRejk="),
    _t("cookie", "Cookie: sessionid={s}", "q8wx2ec4rv6tb8nm0lk2jh4gf6ds8aa0"),
    _t(
        "api_key_header",
        "curl -H 'X-API-Key: {s}' https://api.example.com",
        "Xk7Zq2Xn9Lm4Pr8Tv3Kc6",
    ),
    _t(
        "api_key_query", "https://api.example.com/v1/items?api_key={s}&page=2", "Qk7Zq2Xn9Lm4Pr8Tv3"
    ),
    _t("prose_password", "the admin password is {s}, change it later", "Tr0ub4dor&3x"),
    _t("prose_token", "my token is {s}", "Zq8Wx2Ec4Rv6Tb8Nm0Lk2J"),
    *KEY_EDGES,
)


def _rng() -> random.Random:
    return random.Random(24)  # issue 24


def _benign() -> list[tuple[str, str]]:
    rng = _rng()
    out: list[tuple[str, str]] = []

    def add(shape: str, *texts: str) -> None:
        out.extend((shape, text) for text in texts)

    for _ in range(40):
        add("uuid", f"order {uuid.UUID(int=rng.getrandbits(128), version=4)} was refunded")
    for i in range(30):
        add("git_sha", f"fixed in {hashlib.sha1(str(i).encode()).hexdigest()}")
    for i in range(15):
        add("git_short_sha", f"see commit {hashlib.sha1(str(i).encode()).hexdigest()[:7]} on main")
    for i in range(25):
        add("sha256", f"sha256: {hashlib.sha256(str(i).encode()).hexdigest()}")
    for i in range(10):
        add("md5", f"checksum {hashlib.md5(str(i).encode()).hexdigest()}  backup.tar.gz")  # noqa: S324
    for i in range(10):
        digest = base64.b64encode(hashlib.sha384(str(i).encode()).digest()).decode()
        add("sri_hash", f'<script src="/app.js" integrity="sha384-{digest}"></script>')
    for i in range(15):
        pixels = base64.b64encode(hashlib.sha512(str(i).encode()).digest() * 2).decode()
        add("data_uri", f"![logo](data:image/png;base64,iVBORw0KGgo{pixels})")
    for _ in range(20):
        colour = f"#{rng.getrandbits(24):06x}"
        add("css_colour", f"the banner background is {colour}; text is #fff")
    for _ in range(20):
        add("order_number", f"order #{rng.randint(100000, 9999999)} ships on Monday")
    for _ in range(10):
        add("invoice", f"invoice INV-2026-{rng.randint(1000, 99999):05d} is paid")
    slugs = (
        "spring-sale-on-the-garden-range",
        "how-to-reset-your-password",
        "api-token-rotation-checklist",
        "secret-santa-2026-rules",
        "best-password-managers-compared",
        "shipping-policy-eu-and-uk",
        "new-arrivals-week-12",
        "password-reset-email-template",
        "token-based-authentication-explained",
        "black-friday-2026-landing",
    )
    for slug in slugs:
        add("slug", f"https://shop.example.com/blog/{slug}/", f"the post slug is {slug}")
    for _ in range(15):
        add(
            "semver",
            f"requires chatmem>={rng.randint(0, 3)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}",
        )
    for _ in range(15):
        add(
            "timestamp",
            f"last run 2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
            f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z",
        )
    for _ in range(10):
        add("unix_time", f"expires_at={rng.randint(1_700_000_000, 1_900_000_000)}")
    for i in range(5):
        sha = hashlib.sha1(f"r{i}".encode()).hexdigest()
        md5 = hashlib.md5(sha.encode()).hexdigest()  # noqa: S324
        digest = hashlib.sha256(sha.encode()).hexdigest()
        order = uuid.UUID(int=rng.getrandbits(128), version=4)
        add("assigned_hash", f"commit: {sha}", f'etag: "{md5}"', f"checksum={digest}")
        add("assigned_hash", f"revision={sha}", f"digest: {digest}", f"order_id={order}")
        add("assigned_hash", f'"request_id": "{order}"', f"build_sha={sha[:12]}")
    for _ in range(10):
        add("mongo_object_id", f"product id {rng.getrandbits(96):024x}")
    for _ in range(5):
        add(
            "ulid",
            "event 01J"
            + "".join(rng.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(23)),
        )
    add(
        "prose",
        "Passwords must be at least 12 characters long.",
        "Reset your password from the account page.",
        "The password field is required.",
        "Never paste a token into a post.",
        "Tokens expire after 30 days; rotate them in Settings.",
        "The API key lives in the vault, ask the admin.",
        "Use a password manager for shared accounts.",
        "token: use the one from the vault",
        "password: see the team vault",
        "secret: ask Maria",
        "The secret to a good banner is contrast.",
        "The token budget for summaries is 800.",
        "max_tokens=800",
        "token_count=5",
        "password_min_length=12",
        "password_reset_ttl: 3600",
        "secret_santa_budget: 20",
        "api_key_header: X-API-Key",
        "primary_key: id",
        "sort_key=created_at",
        "key: value pairs are shown in the table",
        "key=title",
        "The password reset link expires in 1 hour.",
        "Bearer authentication is used by the REST API.",
        "Log in with your password, then open Settings > Tokens.",
        "Authorization header must be present.",
        "Set the secret in the environment, never in the code.",
        "Cookies are set with SameSite=Lax.",
        "credentials are managed by the ops team",
        "The access key id starts with AKIA, the secret is longer.",
        "password_policy: strong",
        "token_type: bearer",
        "auth: required",
        "secret_name: shop-db",
        "key_id: 7",
        "passphrase hint: the name of the first shop",
        "cache key is product:42:price",
        "the keyboard shortcut is Ctrl+K",
        "Monkey business aside, checkout is page 42.",
        "Turkey orders close on 20 November.",
        "Use `git push origin main`; CI runs bin/test.",
        "Post 5 is the header template; never edit it by hand.",
        "Time slots are 09:30-12:00 and 14:00-17:30.",
        "Links look like https://example.com/docs/page?id=42.",
        "task-abcdefghijklmnopqrstuvwxyz is the CSS class of the sale banner.",
        "password: ${DB_PASSWORD} in the env file",
        "token: <your token here>",
        "api_key: YOUR_API_KEY",
        "export API_KEY=changeme",
        "export DB_PASSWORD=$DB_PASSWORD",
        "password=********",
        "SECRET_KEY={{ secret_key }}",
        "client_secret: null",
        "token: none yet",
        "mysql -u shop -p shop (it prompts for the password)",
        "psql -h db.internal -U shop -W",
        "Open https://docs.example.com/auth#tokens for details.",
        "The webhook URL is in Settings > Integrations.",
        "Our Discord is discord.gg/shop.",
        "Redis runs at redis://cache.internal:6379/0.",
        "DATABASE_URL=postgresql://db.internal:5432/shop",
        "Email me at maria@example.com.",
        "Account number for refunds: see the finance wiki.",
        "Phone +44 20 7946 0958 for the warehouse.",
        "The SKU is GRD-HOSE-25M-GRN.",
        "Coupon SPRING20 gives 20% off.",
        "Gift card codes are printed on the back.",
        "Tracking number 1Z999AA10123456784 (UPS).",
        "IBAN format: GB followed by 20 characters.",
        "Version v2.14.0-rc.1 is in staging.",
        "Build 2026.12.04.1 shipped.",
        "Docker image shop/web:1.8.3 is deployed.",
        "The key takeaway: ship smaller changes.",
        "Keys to the office are with reception.",
        "Token Ring was a network, long ago.",
        "The secret garden collection launches in May.",
        "PASSWORD_HASHERS keeps Argon2 first.",
        "SESSION_COOKIE_SECURE=True",
        "CSRF_COOKIE_HTTPONLY = False",
        "AUTH_USER_MODEL = 'shop.User'",
        "TOKEN_TTL_SECONDS=3600",
        "SECRET_ROTATION_DAYS=90",
        "KEY_PREFIX=shop",
        "API_KEY_HEADER=X-API-Key",
        "JWT_ALGORITHM=HS256",
        "PASSWORD_MIN_LENGTH=12",
        "the password is stored hashed with argon2",
        "token=abc is an example in the docs, not a real one",
        "We use sk- prefixed keys from OpenAI; they live in the vault.",
        "ghp_ tokens are GitHub's personal access tokens.",
        "the AKIA prefix marks an AWS access key",
        "Set Authorization: Bearer <token> on every request.",
        "xoxb- tokens belong to Slack bots.",
    )
    # code agents paste, that names secrets without holding one
    add(
        "code",
        "key = secrets.token_hex(32)",
        "app.config['SECRET_KEY'] = os.environ.get('SECRET_KEY')",
        "Draft202012Validator.check_schema(self.input_schema)",
        "assert types == sorted(types, key=GUIDANCE_TYPES.index)",
        "LOCK_KEY = 0x63686174",
        'for field in ("password", "password_confirm", "token"):',
        'assert request.headers["authorization"] == f"Bearer {KEY}"',
        "self.password_hash = generate_password_hash(password)",
        "token = ApiToken(user_id=user.id, name=name)",
        'runner.invoke(args=["chatmem", "token", "create", "editor"])',
        "session_key: str | None = None,",
        "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']",
        "def check_password(self, password: str) -> bool:",
        "if not user.check_password(form.password.data):",
        "api_key = os.environ['OPENAI_API_KEY']",
        "headers = {'Authorization': f'Bearer {token}'}",
        "export TOKEN=$(flask chatmem token create editor)",
        'curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:5000/chatmem/api/tools',
        "https://github.com/pallets/flask/blob/3f9a7c2e1b8d4f6a0c5e9b2d7f4a1e8c3f9a7c2e/README.md",
        "ModuleNotFoundError: No module named 'psycopg2'",
        "ERROR: Could not find a version that satisfies the requirement zlib-ng==9.9",
        'Traceback: File "/srv/app/venv/lib/python3.11/site-packages/sqlalchemy/engine/base.py"',
        "The image tag is shop/web:2026.12.04-3f9a7c2",
        "useEffect(() => { fetchProducts({ pageSize: 24 }); }, []);",
        "SELECT id, password_hash FROM users WHERE email = %s",
        "Password\nReset your account from the sign-in page",
    )
    return out


BENIGN: tuple[tuple[str, str], ...] = tuple(_benign())
