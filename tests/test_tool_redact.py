"""Secret redaction: each kind of secret, what must stay readable, idempotence, linear time."""

from __future__ import annotations

import base64
import json

import pytest

from tests.cli_helpers import err, run_zeph
from tests.fakes import openai_wire
from tests.secret_shapes import HEX, MORE_LOOK_ALIKES, UNSEEN_SHAPES, fake
from zeph_cli.tools.redact import (
    REDACTED,
    TOKEN_RULES,
    gitleaks_rules,
    is_secret_name,
    redact_arguments,
    redact_secrets,
)
from zeph_cli.tools.redact.token_rules import redact_tokens

OPENAI_KEY = "sk-abc123DEF456ghi789JKL012mno345PQR678stu901"
OPENAI_PROJECT_KEY = "sk-proj-Ab12Cd34Ef56Gh78Ij90_Kl12-Mn34Op56Qr78St90"
ANTHROPIC_KEY = "sk-ant-api03-AbCdEf0123456789_GhIjKl-MnOpQr0123456789-StUvWxAA"
AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SESSION_KEY_ID = "ASIAY34FZKBOKMUTVV7A"
GITHUB_TOKENS = [
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "gho_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "ghu_" + "0123456789abcdefghijABCDEFGHIJ012345",
    "ghs_" + "abcdefghijABCDEFGHIJ0123456789abcdef",
    "ghr_" + "ABCDEFGHIJ0123456789abcdefghijABCDEF",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456",
]
SLACK_TOKENS = [
    "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "xoxa-2-123456789012-abcdef0123",
    "xoxp-123456789012-123456789012-123456789012-0123456789abcdef0123456789abcdef",
    "xoxr-123456789012-AbCdEf012345",
    "xoxs-123456789012-123456789012-AbCdEf",
]
PEM_BODY = "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naAbBcCdDeEfFgGhHiIjJkKlLmMnNoOpPqQrRsStTuUvVwWxXyYzZ0123456789+/\n"


def redacted(text: str) -> str:
    return redact_secrets(text)[0]


# ---- key-shaped tokens ----------------------------------------------------------


@pytest.mark.parametrize("key", [OPENAI_KEY, OPENAI_PROJECT_KEY, ANTHROPIC_KEY, AWS_KEY_ID, AWS_SESSION_KEY_ID, *GITHUB_TOKENS, *SLACK_TOKENS])
def test_key_shaped_tokens_are_replaced_in_running_text(key):
    text, count = redact_secrets(f"using {key} for the call\n")
    assert text == f"using {REDACTED} for the call\n"
    assert count == 1


def test_a_token_in_quotes_or_after_a_colon_keeps_its_surroundings():
    assert redacted(f'client = OpenAI(api_key="{OPENAI_KEY}")') == f'client = OpenAI(api_key="{REDACTED}")'
    assert redacted(f"key:{ANTHROPIC_KEY},") == f"key:{REDACTED},"


def test_stripe_keys_bearer_tokens_and_url_passwords():
    assert redacted("sk_live_4eC39HqLyjWDarjtT1zdp7dc") == REDACTED
    assert redacted("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc123") == f"Authorization: Bearer {REDACTED}"
    assert redacted("DATABASE_URL is postgres://app:s3cr3t-pw@db.local:5432/app") == (
        f"DATABASE_URL is postgres://app:{REDACTED}@db.local:5432/app"
    )
    assert redacted("https://user:${DB_PASSWORD}@db.local/app") == "https://user:${DB_PASSWORD}@db.local/app"


# ---- private-key blocks ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["RSA ", "EC ", "OPENSSH ", "", "ENCRYPTED ", "DSA "])
def test_private_key_blocks_keep_their_armor_lines_only(kind):
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{PEM_BODY}-----END {kind}PRIVATE KEY-----"
    text, count = redact_secrets(f"before\n{block}\nafter\n")
    assert text == f"before\n-----BEGIN {kind}PRIVATE KEY-----\n{REDACTED}\n-----END {kind}PRIVATE KEY-----\nafter\n"
    assert count == 1


def test_an_unterminated_private_key_block_is_redacted_to_the_end():
    text, count = redact_secrets(f"key follows\n-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}AAAA tail line\n")
    assert text == f"key follows\n-----BEGIN RSA PRIVATE KEY-----\n{REDACTED}\n"
    assert count == 1


def test_public_keys_and_certificates_are_left_alone():
    text = "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA\n-----END PUBLIC KEY-----\n"
    assert redact_secrets(text) == (text, 0)


# ---- assignments of secret-named settings ------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("DB_PASSWORD=hunter2", f"DB_PASSWORD={REDACTED}"),
        ("export GITLAB_TOKEN=glpat-abcdef", f"export GITLAB_TOKEN={REDACTED}"),
        ("password: hunter2 # the staging one", f"password: {REDACTED} # the staging one"),
        ("  client_secret: 'a1b2c3'", f"  client_secret: '{REDACTED}'"),
        ('{"api_key": "abc123def", "user": "bob"}', f'{{"api_key": "{REDACTED}", "user": "bob"}}'),
        ('secret_key = "django-insecure-abc"', f'secret_key = "{REDACTED}"'),
        ('self.password = "hunter2"', f'self.password = "{REDACTED}"'),
        ('password: str = "hunter2"', f'password: str = "{REDACTED}"'),
        ("'password' => 'hunter2',", f"'password' => '{REDACTED}',"),
        ('accessToken: "ya29.a0AfH6"', f'accessToken: "{REDACTED}"'),
        ("X-Api-Key: 0123abcd", f"X-Api-Key: {REDACTED}"),
        ("mysql --password=hunter2 -u root", f"mysql --password={REDACTED} -u root"),
        ("STRIPE_KEY=rk_abc", f"STRIPE_KEY={REDACTED}"),
        ('PASSWORD="two words"', f'PASSWORD="{REDACTED}"'),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCY", f"aws_secret_access_key = {REDACTED}"),
        ('password = "with \\" quote"', f'password = "{REDACTED}"'),
    ],
)
def test_secret_assignments_keep_the_name_and_operator(line, expected):
    assert redact_secrets(line) == (expected, 1)


def test_two_assignments_on_one_command_line_are_both_redacted():
    assert redact_secrets("PASSWORD=a1 TOKEN=b2 make") == (f"PASSWORD={REDACTED} TOKEN={REDACTED} make", 2)


def test_a_token_inside_an_assignment_is_counted_once():
    assert redact_secrets(f"OPENAI_API_KEY={OPENAI_KEY}\n") == (f"OPENAI_API_KEY={REDACTED}\n", 1)
    assert redact_secrets(f'"anthropic_api_key": "{ANTHROPIC_KEY}"') == (f'"anthropic_api_key": "{REDACTED}"', 1)


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("PASSWORD", True), ("passwd", True), ("SECRET", True), ("TOKEN", True), ("API_KEY", True),
        ("OPENAI_API_KEY", True), ("github_token", True), ("apiKey", True), ("SIGNING_KEY", True),
        ("self.client_secret", True), ("x-api-key", True), ("--password", True), ("STRIPE_KEY", True),
        # Ordinary code and identifiers, not secrets:
        ("sort_key", False), ("cache_key", False), ("primary_key", False), ("key", False), ("KEY", False),
        ("AWS_ACCESS_KEY_ID", False), ("SSH_KEY_PATH", False), ("TLS_KEY_FILE", False),
        ("token_count", False), ("max_tokens", False), ("password_hash", False), ("PWD", False),
    ],
)
def test_which_names_count_as_secret(name, secret):
    assert is_secret_name(name) is secret


FALSE_POSITIVES = """\
from sklearn.linear_model import LinearRegression  # scikit-learn, sk-learn
pip install sk-learn-compatible-estimators-for-everyone
risk-assessment-report-for-the-quarterly-review
task-1234567890-abcdefghij-klmnop
password = input("Password: ")
API_KEY = os.environ["API_KEY"]
api_key = os.getenv("OPENAI_API_KEY")
apiKey: process.env.API_KEY,
token = request.headers.get("X-Token")
client = Client(api_key=self.api_key, token=token)
connect(user, password=password)
token_count = 5
max_tokens=100
max_token = 4096
KEY_PATH=/etc/ssl/private/server.key
AWS_ACCESS_KEY_ID=my-id
sort_key = "name"
export OPENAI_API_KEY=$OPENAI_API_KEY
GITHUB_TOKEN=${{ secrets.GITHUB_TOKEN }}
DB_PASSWORD=${DB_PASSWORD}
set API_KEY=%API_KEY%
api_key = "<your-api-key>"
api_key = "your_api_key_here"
OPENAI_API_KEY=sk-xxxxxxxxxxxxxxxxxxxxxxxx
PASSWORD=********
password: changeme
password = ""
password: null
token = None
secret: false
password: str
token: Optional[str] = None
password = f"{prefix}-{suffix}"
pad_token = "[PAD]"
eos_token = "</s>"
password:
  nested: value
if password == "hunter2":
TOKEN=[REDACTED]
"""


def test_references_expressions_and_placeholders_stay_readable():
    assert redact_secrets(FALSE_POSITIVES) == (FALSE_POSITIVES, 0)


# ---- properties ---------------------------------------------------------------------


def mixed_document() -> str:
    return (
        f"# .env\nOPENAI_API_KEY={OPENAI_KEY}\nDB_PASSWORD=hunter2\nexport SLACK={SLACK_TOKENS[0]}\n"
        f"config:\n  password: 'p@ss w0rd'\n  user: admin\n"
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PEM_BODY}-----END OPENSSH PRIVATE KEY-----\n"
        f"id {AWS_KEY_ID} and {GITHUB_TOKENS[0]}\nclone https://bot:{GITHUB_TOKENS[1]}@github.com/o/r\n"
    )


def test_multi_line_input_counts_every_secret():
    text, count = redact_secrets(mixed_document())
    assert count == 8
    assert text == (
        f"# .env\nOPENAI_API_KEY={REDACTED}\nDB_PASSWORD={REDACTED}\nexport SLACK={REDACTED}\n"
        f"config:\n  password: '{REDACTED}'\n  user: admin\n"
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{REDACTED}\n-----END OPENSSH PRIVATE KEY-----\n"
        f"id {REDACTED} and {REDACTED}\nclone https://bot:{REDACTED}@github.com/o/r\n"
    )


def test_redacting_twice_changes_nothing_more():
    once, count = redact_secrets(mixed_document() + FALSE_POSITIVES)
    assert count == 8
    assert redact_secrets(once) == (once, 0)


def test_text_without_secrets_is_returned_unchanged():
    for text in ["", "plain words\n", "héllo wörld ✓ 日本語\n", "\x00\x01 binary-ish \ufffd"]:
        assert redact_secrets(text) == (text, 0)


def test_five_megabytes_of_mixed_input_are_redacted():
    unit = mixed_document() + FALSE_POSITIVES
    copies = 5_000_000 // len(unit)
    text, count = redact_secrets(unit * copies)
    assert count == 8 * copies
    assert OPENAI_KEY not in text and "hunter2\n" not in text


@pytest.mark.parametrize(
    "unit",
    [
        "a", "sk-", "sk-" + "a" * 19 + " ", "-----BEGIN RSA PRIVATE KEY-----", "-----BEGIN A ", "x://u:",
        "password=", "password: ", "a: ", '"a', 'password="', "password: a[", "bearer ", "a.", "ghp_",
        "xoxb-", "AKIA", 'password="\\', "aB", "password: x\n",
    ],
)
def test_a_megabyte_of_one_repeated_fragment_completes(unit):
    # Linear patterns take a fraction of a second here; a backtracking one would
    # take hours, so a regression shows as a hang rather than a flaky timing.
    text = unit * (1_000_000 // len(unit))
    redacted_text, count = redact_secrets(text)
    assert len(redacted_text) <= len(text) + count * len(REDACTED)


# ---- one example per rule of the table, and the look-alikes each must keep ----------------

SLACK_APP_TOKEN = "xapp-1-A0123456789-1234567890123-" + "0a1b2c3d4e5f" * 5
SLACK_WEBHOOK_PATH = "T0ABCD123/B0EFGH456/" + "aB3dE5gH7jK9mN1pQ3sT5vW7"
GOOGLE_KEY = "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY"
JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
HF_TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh"
GITLAB_TOKEN = "glpat-" + "xYz12AbCdEfGhIjKlMnO"
NPM_TOKEN = "npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
SENDGRID_KEY = "SG." + "ngeVfQFYQlKU0ufo8x5d1A" + "." + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr"
BASIC_CREDENTIALS = "dXNlcjpwYXNzd29yZA=="  # user:password
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
DOCKER_AUTH = "Ym90OmdocF9zZWNyZXR0b2tlbjEyMzQ1"  # bot:ghp_secrettoken12345
MATTERMOST_HOOK = "x1b2" + "c3d4e5f6g7h8i9j0k1l2m3"

# Rule name -> (text with one secret, the text as the model must see it).
RULE_EXAMPLES = {
    "private-key-block": (
        f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}-----END RSA PRIVATE KEY-----",
        f"-----BEGIN RSA PRIVATE KEY-----\n{REDACTED}\n-----END RSA PRIVATE KEY-----",
    ),
    "openai-or-anthropic-key": (f"key {OPENAI_KEY}", f"key {REDACTED}"),
    "stripe-key": ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", REDACTED),
    "aws-access-key-id": (f"id {AWS_KEY_ID}", f"id {REDACTED}"),
    "github-token": (f"push with {GITHUB_TOKENS[0]}", f"push with {REDACTED}"),
    "gitlab-token": (f"curl --header 'PRIVATE-TOKEN: {GITLAB_TOKEN}' …", f"curl --header 'PRIVATE-TOKEN: {REDACTED}' …"),
    "slack-token": (f"SLACK_APP {SLACK_APP_TOKEN} ok", f"SLACK_APP {REDACTED} ok"),
    "slack-webhook": (
        f"curl -X POST https://hooks.slack.com/services/{SLACK_WEBHOOK_PATH} -d @msg.json",
        f"curl -X POST https://hooks.slack.com/services/{REDACTED} -d @msg.json",
    ),
    "google-api-key": (
        f"GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key={GOOGLE_KEY}&lang=en",
        f"GET https://maps.googleapis.com/maps/api/geocode/json?address=x&key={REDACTED}&lang=en",
    ),
    "hugging-face-token": (f"huggingface-cli login --token {HF_TOKEN}", f"huggingface-cli login --token {REDACTED}"),
    "npm-token": (f"//registry.npmjs.org/:_authToken={NPM_TOKEN}", f"//registry.npmjs.org/:_authToken={REDACTED}"),
    "sendgrid-key": (f"using {SENDGRID_KEY} to send", f"using {REDACTED} to send"),
    "json-web-token": (f"session={JWT}", f"session={REDACTED}"),
    "bearer-token": ("Authorization: Bearer abc123def456ghi789jkl012", f"Authorization: Bearer {REDACTED}"),
    "basic-auth-header": (
        f'curl -H "Authorization: Basic {BASIC_CREDENTIALS}" https://x',
        f'curl -H "Authorization: Basic {REDACTED}" https://x',
    ),
    "docker-config-auth": (
        f'{{"auths": {{"ghcr.io": {{"auth": "{DOCKER_AUTH}"}}}}}}',
        f'{{"auths": {{"ghcr.io": {{"auth": "{REDACTED}"}}}}}}',
    ),
    "azure-account-key": (
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        f"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={REDACTED};EndpointSuffix=core.windows.net",
    ),
    "mysql-password-option": ("mysql -h db -u root -pS3cretPass99 shop", f"mysql -h db -u root -p{REDACTED} shop"),
    "url-password": ("postgres://app:s3cr3t-pw@db.local/app", f"postgres://app:{REDACTED}@db.local/app"),
    "webhook-path": (
        "curl -d @msg.json https://chat.example.com/hooks/" + MATTERMOST_HOOK,
        f"curl -d @msg.json https://chat.example.com/hooks/{REDACTED}",
    ),
}
SHAPES = {shape.name: shape for shape in UNSEEN_SHAPES}
# Rows of the table for shapes gitleaks' rules lack (or miss in these forms), by their example shape.
for _rule_name, _shape_name in {
    "docker-hub-token": "docker-hub-pat", "nuget-api-key": "nuget-api-key",
    "google-oauth-access-token": "gcp-oauth-access-token", "google-oauth-client-secret": "gcp-oauth-client-secret",
    "square-oauth-secret": "square-oauth-secret", "stripe-webhook-secret": "stripe-webhook-secret",
    "braintree-access-token": "braintree-access-token", "url-signature": "azure-sas-url",
    "discord-webhook": "discord-webhook", "teams-webhook": "teams-webhook", "zapier-webhook": "zapier-webhook",
    "pgpass-line": "pgpass-line", "netrc-password": "netrc-one-line",
}.items():
    RULE_EXAMPLES[_rule_name] = (SHAPES[_shape_name].text, SHAPES[_shape_name].expected(REDACTED))


def test_every_rule_of_the_table_has_an_example():
    assert {rule.name for rule in TOKEN_RULES} == set(RULE_EXAMPLES)


@pytest.mark.parametrize("rule_name", sorted(RULE_EXAMPLES))
def test_each_rule_replaces_its_secret_with_the_marker(rule_name):
    text, expected = RULE_EXAMPLES[rule_name]
    assert redact_secrets(text) == (expected, 1)
    rule = next(rule for rule in TOKEN_RULES if rule.name == rule_name)
    assert rule.pattern.search(text), "the example must be found by its own rule, not another one"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"token {SLACK_APP_TOKEN}", f"token {REDACTED}"),
        (f"key: {GOOGLE_KEY}", f"key: {REDACTED}"),
        (f"{GOOGLE_KEY}", REDACTED),
        (f"id_token={JWT}&state=1", f"id_token={REDACTED}&state=1"),
        (f"jwt: {JWT}", f"jwt: {REDACTED}"),
        (f"Cookie: theme=dark; session={JWT}; lang=en", f"Cookie: theme=dark; session={REDACTED}; lang=en"),
        (f"Set-Cookie: auth={JWT}; Path=/; HttpOnly", f"Set-Cookie: auth={REDACTED}; Path=/; HttpOnly"),
        ("mysqldump -uroot -p'pass word' shop > dump.sql", f"mysqldump -uroot -p{REDACTED} shop > dump.sql"),
        ("/usr/bin/mysql --user=root -phunter2x -e 'select 1'", f"/usr/bin/mysql --user=root -p{REDACTED} -e 'select 1'"),
        ("mysql --password=hunter2 -u root", f"mysql --password={REDACTED} -u root"),
        ("PGPASSWORD=hunter2x psql -h db -U app", f"PGPASSWORD={REDACTED} psql -h db -U app"),
        ("export MYSQL_PWD='s3cret!'", f"export MYSQL_PWD='{REDACTED}'"),
        ("Proxy-Authorization: basic Ym90OnMzY3JldA==", f"Proxy-Authorization: basic {REDACTED}"),
        ("Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=" + AZURE_KEY,
         f"Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey={REDACTED}"),
        ("https://hooks.slack.com/workflows/T0ABCD123/A0123/4567/" + "aB3dE5gH7jK9",
         f"https://hooks.slack.com/workflows/{REDACTED}"),
    ],
)
def test_more_forms_of_the_new_kinds(line, expected):
    assert redact_secrets(line) == (expected, 1)


LOOK_ALIKES = """\
commit 3f786850e387550fdab836ed7e6dc881de23001b
Merge: 9fceb02 d0f3a1c
request id 123e4567-e89b-12d3-a456-426614174000
sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
data: iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==
payload eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0
The password is stored in the system keyring.
mysql: [Warning] Using a password on the command line interface can be insecure.
mysql -u root -p shop
mysql -u root -p -e 'show databases'
mysql -h db -p"$MYSQL_PASSWORD" shop
psql -h db -p 5432 -U app
PGPASSWORD=$PGPASSWORD psql
PWD=/home/user/project
OLDPWD=/tmp
The Aizawl district; AIzawl; AIza is a prefix; CHAIzaQ1w2E3r4T5y6U7i8O9p0AsDfGhJkLzXcVbN
hf_hub_download(repo_id="gpt2", filename="config.json")
npm_config_registry=https://registry.npmjs.org/
npm_package_version=1.2.3
glpat-xxxxxxxxxxxxxxxxxxxx
SG.example is not a key
Authorization: Basic realm="staging"
Authorization: Basic credentials are sent base64-encoded
Authorization: Basic $CREDENTIALS
"auth": "enabled"
"auth": {"type": "basic"}
AccountKey=$AZURE_STORAGE_KEY
AccountKey=<your-account-key>
https://hooks.slack.com/services/
See https://hooks.slack.com/services/<your-webhook-path> for setup.
Basic usage: run the tool with --help.
eyJ is how base64 of JSON begins.
"""


def test_look_alikes_of_the_new_kinds_stay_untouched():
    assert redact_secrets(LOOK_ALIKES) == (LOOK_ALIKES, 0)


def thirty_thousand_characters_with_secrets() -> tuple[str, list[str]]:
    """A long build-and-deploy log with a secret of each kind spread through ordinary lines."""
    secrets = [
        OPENAI_KEY, AWS_KEY_ID, GITHUB_TOKENS[0], GITLAB_TOKEN, SLACK_APP_TOKEN, GOOGLE_KEY, HF_TOKEN,
        NPM_TOKEN, SENDGRID_KEY, JWT, BASIC_CREDENTIALS, AZURE_KEY, DOCKER_AUTH,
    ]
    lines = [
        f"using {OPENAI_KEY}", f"id {AWS_KEY_ID}", f"push {GITHUB_TOKENS[0]}", f"PRIVATE-TOKEN: {GITLAB_TOKEN}",
        f"slack {SLACK_APP_TOKEN}", f"maps?key={GOOGLE_KEY}", f"hf {HF_TOKEN}", f"npm {NPM_TOKEN}",
        f"mail {SENDGRID_KEY}", f"Cookie: s={JWT}", f"Authorization: Basic {BASIC_CREDENTIALS}",
        f"AccountKey={AZURE_KEY};", f'"auth": "{DOCKER_AUTH}"',
    ]
    filler = LOOK_ALIKES.splitlines()
    out: list[str] = []
    index = 0
    while sum(len(line) + 1 for line in out) < 30_000:
        out.append(filler[index % len(filler)])
        if index % 17 == 0 and index // 17 < len(lines):
            out.append(lines[index // 17])
        index += 1
    return "\n".join(out) + "\n", secrets


def test_a_thirty_thousand_character_output_loses_every_secret_and_nothing_else():
    text, secrets = thirty_thousand_characters_with_secrets()
    assert len(text) >= 30_000
    redacted_text, count = redact_secrets(text)
    assert count == len(secrets)
    for secret in secrets:
        assert secret not in redacted_text
    kept = [line for line in redacted_text.splitlines() if REDACTED not in line]
    assert kept == [line for line in text.splitlines() if not any(secret in line for secret in secrets)]
    assert redact_secrets(redacted_text) == (redacted_text, 0)


@pytest.mark.parametrize(
    "unit",
    ["mysql ", "mysql -p", "eyJ", "eyJabcdef.", "AIza", "hooks.slack.com/services/a/", '"auth": "', "AccountKey=a",
     "Authorization: Basic ", "hf_", "npm_", "SG.", "glpat-", "xapp-"],
)
def test_a_megabyte_of_a_new_rule_fragment_completes(unit):
    text = unit * (1_000_000 // len(unit))
    redacted_text, count = redact_secrets(text)
    assert len(redacted_text) <= len(text) + count * len(REDACTED)


def test_tool_call_arguments_are_redacted_at_any_depth_and_the_original_is_kept():
    arguments = {
        "command": f"curl -H 'Authorization: Bearer {OPENAI_KEY}' https://api",
        "env": {"HF_TOKEN": HF_TOKEN, "depth": [f"key={GOOGLE_KEY}", 3]},
        "timeout": 30,
        "flag": True,
    }
    redacted_arguments = redact_arguments(arguments)
    assert redacted_arguments == {
        "command": f"curl -H 'Authorization: Bearer {REDACTED}' https://api",
        "env": {"HF_TOKEN": REDACTED, "depth": [f"key={REDACTED}", 3]},
        "timeout": 30,
        "flag": True,
    }
    assert arguments["command"].endswith("https://api") and OPENAI_KEY in arguments["command"]
    assert arguments["env"]["HF_TOKEN"] == HF_TOKEN


# ---- gitleaks' rules, and shapes the table did not know ------------------------------------------


@pytest.mark.parametrize("shape", UNSEEN_SHAPES, ids=lambda shape: f"{shape.kind}-{shape.name}")
def test_registry_cloud_and_commerce_tokens_pgpass_netrc_lines_and_webhooks_are_redacted(shape):
    text, count = redact_secrets(shape.text)
    assert (text, count) == (shape.expected(REDACTED), len(shape.secrets))
    assert redact_secrets(text) == (text, 0)


# Shapes no row of the table knows: only gitleaks' rules find them.
FOUND_BY_GITLEAKS = {
    "pypi-upload-token": "pypi-upload-token", "gitlab-feed-token": "gitlab-feed-token",
    "artifactory-api-key": "artifactory-api-key", "npmrc-basic-auth": "generic-api-key",
    "azure-ad-client-secret": "azure-ad-client-secret", "digitalocean-pat": "digitalocean-pat",
    "heroku-api-key": "heroku-api-key-v2", "alibaba-access-key-id": "alibaba-access-key-id",
    "shopify-shared-secret": "shopify-shared-secret", "square-access-token": "square-access-token",
}


@pytest.mark.parametrize("shape_name", sorted(FOUND_BY_GITLEAKS))
def test_shapes_the_table_lacks_are_found_by_gitleaks_rules(shape_name):
    shape = SHAPES[shape_name]
    assert redact_tokens(shape.text)[1] == 0, "a row of the table finds it: the example proves nothing"
    rules = gitleaks_rules.rule_set()
    rule = next(rule for rule in rules.rules if rule.id == FOUND_BY_GITLEAKS[shape_name])
    assert any(match for match in gitleaks_rules._rule_findings(rule, shape.text.encode(), rules.global_allowlist))
    assert redact_secrets(shape.text) == (shape.expected(REDACTED), 1)


def test_the_vendored_rules_load_unchanged_except_those_scoped_to_file_paths():
    rules = gitleaks_rules.rule_set()
    assert len(rules.rules) == 217 and {rule.id for rule in rules.rules} >= {"generic-api-key", "private-key", "stripe-access-token"}
    assert sorted(rule_id for rule_id, _ in rules.skipped) == [
        "freemius-secret-key", "hashicorp-tf-password", "kubernetes-secret-yaml", "nuget-config-password", "pkcs12-file",
    ]
    for rule in rules.rules:  # RE2 takes every Go pattern as written
        gitleaks_rules._compiled(rule.pattern)
    assert gitleaks_rules.WHOLE_MATCH_RULES <= {rule.id for rule in rules.rules}
    assert rules.rules[-1].id.startswith("generic")


def test_a_file_whose_rules_name_an_unknown_target_is_refused(tmp_path):
    config = tmp_path / "rules.toml"
    config.write_text('[[rules]]\nid = "x"\nregex = "x"\n[[rules.allowlists]]\nregexTarget = "path"\nregexes = ["x"]\n')
    with pytest.raises(ValueError, match="regexTarget 'path'"):
        gitleaks_rules.load(config)


def test_a_generic_value_needs_entropy_and_a_digit_beside_a_secret_ish_word():
    # gitleaks' generic rule keys on access/auth/credential/key/secret/token… that assignments.py does not
    # treat as secret names; a random value with a digit there is redacted.
    random_value = "Zq8" + "xW2vN5bK9mL3pR7tY4"
    assert redact_secrets(f"auth: {random_value}") == (f"auth: {REDACTED}", 1)
    assert redact_secrets(f"credentials = '{random_value}'") == (f"credentials = '{REDACTED}'", 1)
    # kept: 2 bits a character; no digit (gitleaks' guard against identifiers); words (its stopwords)
    for kept in ("auth: ab12ab12ab12ab12", "auth: XqWz+RyKp/LmVnTbHsGd", "credentials = 'service-account-name'"):
        assert redact_secrets(kept) == (kept, 0)


def test_a_generic_value_shaped_like_a_digest_or_uuid_stays():
    digest = fake(HEX, 40)
    for kept in (f"cache_key = {digest}", f"auth: {digest[:32]}", "access: 123e4567-e89b-12d3-a456-426614174000"):
        assert redact_secrets(kept) == (kept, 0)


def test_a_match_must_hold_its_rules_keyword_not_just_the_text():
    # sourcegraph-access-token also matches any 40 hex digits; gitleaks runs it on every file that says
    # "sourcegraph", which would make each git SHA in the output a token.
    text = f"sourcegraph indexed commit {fake(HEX, 40)}\n"
    assert redact_secrets(text) == (text, 0)
    token = "sgp_" + fake(HEX, 40)
    assert redact_secrets(f"sourcegraph token {token}\n") == (f"sourcegraph token {REDACTED}\n", 1)


def test_allowlists_of_the_rule_set_apply():
    # generic-api-key's own (a public or a primary key is no secret)
    for kept in ('public_key = "Ab3dE5gH7jK9mN1pQ3sT"', "primary_key: Xc4vB6nM8qW2eR4tY6uI"):
        assert redact_secrets(kept) == (kept, 0)
    # gcp-api-key's list of keys published on purpose (the table's own row would still take them)
    assert gitleaks_rules.find_secrets("AIza" + "Syabcdefghijklmnopqrstuvwxyz1234567") == []
    assert gitleaks_rules.find_secrets("AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY") == [(0, 39)]


def test_a_placeholder_alphabet_in_a_token_is_an_example_not_a_secret():
    # gitleaks' global stopwords: a token spelling out the alphabet is documentation
    example = "pypi-" + "AgEIcHlwaS5vcmc" + "abcdefghijklmnopqrstuvwxyz" + "0123456789" * 3
    assert redact_secrets(f"uv publish --token {example}") == (f"uv publish --token {example}", 0)
    token = SHAPES["pypi-upload-token"].secrets[0]
    assert redact_secrets(f"uv publish --token {token}") == (f"uv publish --token {REDACTED}", 1)


def test_a_jwt_encoded_in_base64_is_redacted_whole():
    # jwt-base64's groups mark the header's field names; the secret is the whole match
    encoded = base64.b64encode(JWT.encode()).decode()
    assert redact_secrets(f"blob {encoded} end") == (f"blob {REDACTED} end", 1)


def test_offsets_hold_in_text_that_is_not_ascii():
    token = "dop_v1_" + fake(HEX, 64)
    text = f"héllo ✓ 日本語 {token} — done\n"
    assert redact_secrets(text) == (f"héllo ✓ 日本語 {REDACTED} — done\n", 1)
    with_surrogate = f"bad \udc80 byte {token}\n"
    assert redact_secrets(with_surrogate) == (f"bad \udc80 byte {REDACTED}\n", 1)


def test_more_look_alikes_stay_untouched():
    assert redact_secrets(MORE_LOOK_ALIKES) == (MORE_LOOK_ALIKES, 0)


@pytest.mark.parametrize(
    "unit",
    ["api_key=", "token: a1", "key = 'a1", "sk", "ey", "s.", "curl -H 'Authorization: ", "curl -u a:", ":", "a:1:b:c:",
     "db:5432:", "machine ", "machine a login b ", "hooks/", "/hooks/a", "sig=", "?sig=a", "dckr_pat_", "whsec_",
     "oy2", "ya29.", "webhookb2/", "discord.com/api/webhooks/1/", "hooks.zapier.com/hooks/catch/1/"],
)
def test_a_megabyte_of_a_rule_set_fragment_completes(unit):
    text = unit * (1_000_000 // len(unit))
    redacted_text, count = redact_secrets(text)
    assert len(redacted_text) <= len(text) + count * len(REDACTED)


def test_through_zeph_ask_the_model_never_sees_pgpass_netrc_or_vendor_tokens(fake_server, compatible, tmp_path):
    workspace = tmp_path / "project"
    (workspace / ".git").mkdir(parents=True)
    shapes = [SHAPES[name] for name in ("pgpass-line", "netrc-lines", "digitalocean-pat", "discord-webhook", "shopify-shared-secret")]
    (workspace / "creds.txt").write_text("".join(shape.text.rstrip("\n") + "\n" for shape in shapes), encoding="utf-8")
    arguments = {"command": "cat creds.txt"}
    fake_server.queue(openai_wire.stream_response(openai_wire.tool_call_chunks([("call_c", "bash", [json.dumps(arguments)])])))
    fake_server.queue(openai_wire.stream_response(openai_wire.text_chunks(["read"])))
    result = run_zeph("ask", "-y", "show the credentials", env=compatible, cwd=workspace)
    assert result.returncode == 0, err(result)
    sent = json.dumps(fake_server.requests_to("/v1/chat/completions")[-1].json)
    assert all(secret not in sent for shape in shapes for secret in shape.secrets)
    assert sent.count(REDACTED) == sum(len(shape.secrets) for shape in shapes)
    assert "db.internal:5432:shop:app:" in sent and "machine git.example.org" in sent
