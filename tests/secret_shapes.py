"""Secret shapes for the redaction tests and benchmarks/redaction.py, and text that must stay as it is.

Every value is made here from a seeded random source and a vendor's published prefix and length, so the
values are fake, runs compare, and no whole token is written in the repository (secret scanners stay quiet).
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from dataclasses import dataclass

_rng = random.Random(31)
HEX = "0123456789abcdef"
ALNUM = string.ascii_letters + string.digits
URLSAFE = ALNUM + "_-"


def fake(alphabet: str, size: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(size))


def fake_uuid() -> str:
    return str(uuid.UUID(int=_rng.getrandbits(128)))


@dataclass(frozen=True)
class Shape:
    kind: str  # registry, cloud, commerce, pgpass, netrc, webhook
    name: str
    text: str  # a line as a tool would print it
    secrets: tuple[str, ...]  # what must become the marker, each once

    def expected(self, marker: str) -> str:
        text = self.text
        for secret in self.secrets:
            text = text.replace(secret, marker, 1)
        return text


def _shape(kind: str, name: str, template: str, *secrets: str) -> Shape:
    return Shape(kind, name, template.format(*secrets), secrets)


_PYPI = "pypi-" + "AgEIcHlwaS5vcmc" + fake(URLSAFE, 150)
_TEST_PYPI = "pypi-" + "AgENdGVzdC5weXBpLm9yZw" + fake(URLSAFE, 150)
_NPMRC_AUTH = base64.b64encode(("deploy:" + fake(ALNUM, 14)).encode()).decode()
_PRIVATE_KEY_BODY = "\\n" + "\\n".join(fake(ALNUM + "+/", 64) for _ in range(4)) + "\\n"

# Shapes of the kinds the hand-written table did not know: registry and cloud tokens, e-commerce tokens,
# .pgpass and .netrc lines, webhook URLs.
UNSEEN_SHAPES: tuple[Shape, ...] = (
    _shape("registry", "pypi-upload-token", "uv publish --token {}", _PYPI),
    _shape("registry", "test-pypi-token", "password = {}", _TEST_PYPI),
    _shape("registry", "docker-hub-pat", "echo {} | docker login -u ci-bot --password-stdin", "dckr_pat_" + fake(URLSAFE, 27)),
    _shape("registry", "gitlab-feed-token", "feed: {} (expires never)", "glft-" + fake(URLSAFE, 20)),
    _shape("registry", "rubygems-key", ":rubygems_api_key: {}", "rubygems_" + fake(HEX, 48)),
    _shape("registry", "nuget-api-key", "dotnet nuget push app.nupkg --api-key {} --source nuget.org", "oy2" + fake(HEX[:10] + "abcdefghijklmnopqrstuvwxyz", 43)),
    _shape("registry", "npmrc-basic-auth", "//npm.example.com/:_auth={}", _NPMRC_AUTH),
    _shape("registry", "artifactory-api-key", "X-JFrog-Art-Api: {}", "AKCp" + fake(ALNUM, 69)),
    _shape("cloud", "gcp-service-account-key", '"private_key": "-----BEGIN PRIVATE KEY-----{}-----END PRIVATE KEY-----\\n",', _PRIVATE_KEY_BODY),
    _shape("cloud", "gcp-oauth-access-token", "$ gcloud auth print-access-token\n{}", "ya29." + "a0" + fake(URLSAFE, 150)),
    _shape("cloud", "gcp-oauth-client-secret", "client secret  {}", "GOCSPX-" + fake(URLSAFE, 28)),
    _shape("cloud", "azure-ad-client-secret", "Value    {}    Expires 2027-01-01", fake(ALNUM, 3) + "8Q~" + fake(ALNUM + "_~.-", 34)),
    _shape(
        "cloud", "azure-sas-url",
        "https://acct.blob.core.windows.net/backups/db.tar?sv=2022-11-02&ss=b&srt=o&sp=r&se=2027-01-01T00:00:00Z&spr=https&sig={}",
        fake(ALNUM, 30) + "%2B" + fake(ALNUM, 12) + "%3D",
    ),
    _shape("cloud", "digitalocean-pat", "doctl auth init -t {}", "dop_v1_" + fake(HEX, 64)),
    _shape("cloud", "heroku-api-key", "heroku authorizations:create -> {}", "HRKU-AA" + fake(URLSAFE, 58)),
    _shape("cloud", "alibaba-access-key-id", "AccessKeyId: {}", "LTAI" + fake(ALNUM, 20)),
    _shape("commerce", "shopify-access-token", "X-Shopify-Access-Token: {}", "shpat_" + fake(HEX, 32)),
    _shape("commerce", "shopify-shared-secret", "shared secret {}", "shpss_" + fake(HEX, 32)),
    _shape("commerce", "square-access-token", "square: {}", "EAAA" + fake(URLSAFE, 60)),
    _shape("commerce", "square-oauth-secret", "application secret {}", "sq0csp-" + fake(URLSAFE, 43)),
    _shape("commerce", "stripe-restricted-key", "using {} for refunds", "rk_live_" + fake(ALNUM, 99)),
    _shape("commerce", "stripe-webhook-secret", "Ready! Your webhook signing secret is {} (^C to quit)", "whsec_" + fake(ALNUM, 32)),
    _shape("commerce", "braintree-access-token", "gateway = {}", "access_token$production$" + fake("0123456789abcdefghijklmnopqrstuvwxyz", 16) + "$" + fake(HEX, 32)),
    _shape("pgpass", "pgpass-line", "db.internal:5432:shop:app:{}", fake(ALNUM + "!@#%^&*", 18)),
    _shape("pgpass", "pgpass-wildcards", "*:*:*:replicator:{}", fake(ALNUM, 24)),
    _shape("netrc", "netrc-one-line", "machine api.example.com login deploy password {}", fake(ALNUM, 20)),
    _shape("netrc", "netrc-lines", "machine git.example.org\n  login me@example.org\n  password {}\n", fake(ALNUM + "-_", 16)),
    _shape(
        "webhook", "discord-webhook", "curl -H 'Content-Type: application/json' https://discord.com/api/webhooks/{}",
        fake("0123456789", 19) + "/" + fake(URLSAFE, 68),
    ),
    _shape(
        "webhook", "teams-webhook", "POST https://contoso.webhook.office.com/webhookb2/{}",
        f"{fake_uuid()}@{fake_uuid()}/IncomingWebhook/{fake(HEX, 32)}/{fake_uuid()}/V2{fake(URLSAFE, 44)}",
    ),
    _shape(
        "webhook", "teams-workflow-url",
        "https://prod-12.westeurope.logic.azure.com:443/workflows/" + fake(HEX, 32)
        + "/triggers/manual/paths/invoke?api-version=2016-06-01&sp=%2Ftriggers%2Fmanual%2Frun&sv=1.0&sig={}",
        fake(URLSAFE, 43),
    ),
    _shape("webhook", "zapier-webhook", "https://hooks.zapier.com/hooks/catch/{}/", fake("0123456789", 7) + "/" + fake(HEX[:10] + "abcdefghijklmnopqrstuvwxyz", 7)),
    _shape(
        "webhook", "google-chat-webhook", "https://chat.googleapis.com/v1/spaces/AAAA" + fake(ALNUM, 7) + "/messages?key={}&token={}",
        "AIza" + "Sy" + fake(URLSAFE, 33), fake(URLSAFE, 43) + "%3D",
    ),
)

# Text that looks like a secret to a careless rule and must reach the model as it is: digests, identifiers,
# encoded data and settings beside the words gitleaks' generic rule keys on.
MORE_LOOK_ALIKES = "\n".join([
    f"cache_key = \"{fake(HEX, 32)}\"",
    f"etag: \"{fake(HEX, 40)}\"",
    f"  \"integrity\": \"sha512-{base64.b64encode(_rng.randbytes(64)).decode()}\",",
    f"    --hash=sha256:{fake(HEX, 64)}",
    f"Digest: sha256:{fake(HEX, 64)}",
    f"request_id={fake_uuid()}",
    "api_version: 2024-06-01",
    "access_log: /var/log/nginx/access.log",
    f"key_id = {fake(HEX, 16)}",
    f"public_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{fake(ALNUM, 43)} me@laptop\"",
    f"author: Jane Doe <jane@example.com> {fake(HEX, 40)}",
    f"Merge pull request #4521 from org/fix-token-refresh {fake(HEX, 7)}",
    "token_count: 123456",
    "max_tokens = 4096",
    f"primary_key = \"id_{fake('0123456789', 12)}\"",
    f"The file was last modified by commit {fake(HEX, 40)}.",
    "localhost:5432:postgres:ok",
    "12:30:45:000:start",
    "src/app.py:42:    password = getpass()",
    "tests/test_auth.py:17:def test_login_requires_password():",
    "machine learning with a password manager is a login topic",
    "Use `machine x login y password z` lines in ~/.netrc.",
    "https://discord.com/api/webhooks/<id>/<token>",
    "https://hooks.zapier.com/hooks/catch/",
    "POST https://ci.example.com/webhooks/incoming/deployment-notifications-for-staging",
    "?sig=",
    "whsec_ is the prefix of Stripe's webhook secrets",
    f"uuid {fake_uuid()} sha1 {fake(HEX, 40)} md5 {fake(HEX, 32)}",
    f"base64 {base64.b64encode(_rng.randbytes(60)).decode()}",
]) + "\n"

_held = random.Random(47)


def _held_fake(alphabet: str, size: int) -> str:
    return "".join(_held.choice(alphabet) for _ in range(size))


LOWER_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"

# More shapes of the same kinds, written after the rules above were and not used to tune them: what
# benchmarks/redaction.py reports as the held-out share.
HELD_OUT_SHAPES: tuple[Shape, ...] = (
    _shape("registry", "clojars-token", "deploy token {}", "CLOJARS_" + _held_fake(LOWER_ALNUM, 60)),
    _shape("registry", "terraform-cloud-token", 'token = "{}"', _held_fake(ALNUM, 14) + ".atlasv1." + _held_fake(LOWER_ALNUM, 67)),
    _shape("registry", "pulumi-token", "pulumi login --token {}", "pul-" + _held_fake(HEX, 40)),
    _shape("registry", "postman-key", "x-api-key: {}", "PMAK-" + _held_fake(HEX, 24) + "-" + _held_fake(HEX, 34)),
    _shape("registry", "crates-io-token", "cargo login {}", "cio" + _held_fake(ALNUM, 32)),
    _shape("registry", "azure-devops-pat-in-url", "git clone https://build:{}@dev.azure.com/org/app/_git/app", _held_fake("abcdefghijklmnopqrstuvwxyz234567", 52)),
    _shape("cloud", "databricks-token", "databricks configure --token {}", "dapi" + _held_fake(HEX, 32)),
    _shape("cloud", "cloudflare-origin-ca-key", "origin key {}", "v1.0-" + _held_fake(HEX, 24) + "-" + _held_fake(HEX, 146)),
    _shape("cloud", "flyio-token", "fly auth token -> {}", "fo1_" + _held_fake(URLSAFE, 43)),
    _shape("cloud", "doppler-token", "doppler configure set token {}", "dp.pt." + _held_fake(ALNUM, 43)),
    _shape("cloud", "tailscale-auth-key", "tailscale up --authkey {}", "tskey-auth-" + _held_fake(ALNUM, 17) + "-" + _held_fake(ALNUM, 32)),
    _shape("cloud", "supabase-token", "supabase login --token {}", "sbp_" + _held_fake(HEX, 40)),
    _shape("cloud", "vault-token", "vault login {}", "hvs." + _held_fake(URLSAFE, 95)),
    _shape("commerce", "shopify-custom-app-token", "{}", "shpca_" + _held_fake(HEX, 32)),
    _shape("commerce", "razorpay-key", "key_secret for {}", "rzp_live_" + _held_fake(ALNUM, 14)),
    _shape("commerce", "mollie-key", "Mollie {}", "live_" + _held_fake(ALNUM, 30)),
    _shape("commerce", "flutterwave-secret", "FLW {}", "FLWSECK-" + _held_fake(HEX, 32) + "-X"),
    _shape("commerce", "shippo-token", "ShippoToken {}", "shippo_live_" + _held_fake(HEX, 40)),
    _shape("commerce", "easypost-key", "EasyPost::Client.new(api_key: '{}')", "EZAK" + _held_fake(ALNUM, 54)),
    _shape("pgpass", "pgpass-localhost", "localhost:5432:*:postgres:{}", _held_fake(ALNUM, 20)),
    _shape("pgpass", "pgpass-socket-dir", "/var/run/postgresql:5432:app:app:{}", _held_fake(ALNUM + "#!", 16)),
    _shape("pgpass", "pgpass-escaped-colon", "db.example.net:6432:app:app:{}", _held_fake(ALNUM, 8) + "\\:" + _held_fake(ALNUM, 8)),
    _shape("netrc", "netrc-account", "machine ftp.example.com login anon account acct password {}", _held_fake(ALNUM, 14)),
    _shape("netrc", "netrc-default", "default login anonymous password {}", _held_fake(ALNUM, 12)),
    _shape("webhook", "discord-canary-webhook", "https://canary.discord.com/api/webhooks/{}", _held_fake("0123456789", 18) + "/" + _held_fake(URLSAFE, 68)),
    _shape("webhook", "mattermost-webhook", "https://chat.example.com/hooks/{}", _held_fake(LOWER_ALNUM, 26)),
    _shape("webhook", "rocketchat-webhook", "https://rc.example.com/hooks/{}", _held_fake(ALNUM, 24) + "/" + _held_fake(ALNUM, 48)),
    _shape("webhook", "webex-webhook", "https://webexapis.com/v1/webhooks/incoming/{}", _held_fake(ALNUM, 100)),
    _shape("webhook", "feishu-webhook", "https://open.feishu.cn/open-apis/bot/v2/hook/{}", str(uuid.UUID(int=_held.getrandbits(128)))),
    _shape("webhook", "ifttt-webhook", "https://maker.ifttt.com/trigger/deploy/with/key/{}", _held_fake(URLSAFE, 22)),
    _shape("webhook", "dingtalk-webhook", "https://oapi.dingtalk.com/robot/send?access_token={}", _held_fake(HEX, 64)),
)
