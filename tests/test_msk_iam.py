"""AWS MSK IAM tokens (streaming.cluster.msk_iam), offline: the token AWS's signer makes of fixed credentials, region and
clock, checked against known values and against a SigV4 signature computed here from AWS's specification; the
cluster's region from its host names; the credentials AWS's chain finds (or not) in an AWS environment of the test's
own (tests/aws_environment.py); when a token is signed again. No network: there is no MSK here, and no STS.
"""

import base64
import datetime
import hashlib
import hmac
import importlib.metadata
import urllib.parse

import botocore.auth
import pytest
from botocore.credentials import Credentials

from streaming.cluster import msk_iam
from streaming.vocabulary import aws_region
from streaming.vocabulary.client_config import MskIamLogin
from streaming.vocabulary.errors import AuthenticationFailed, BadInput, Unreachable
from tests import aws_environment
from tests.aws_environment import ACCESS_KEY, SECRET_KEY

SIGNED_AT = datetime.datetime(2026, 11, 28, 2, 30, 0)  # botocore's clock, frozen (naive UTC, as botocore reads it)
SIGNED_AT_UNIX = 1795833000
SESSION_TOKEN = "FwoGZXIvYXdzEXAMPLE/token+=="
# The presigned URLs AWS's signer (aws-msk-iam-sasl-signer-python 1.0.2 over botocore) made of these inputs, computed
# once; the User-Agent parameter the signer appends after signing (its own name and version) is checked apart.
KNOWN = {  # id: (access key, session token, region, the signed URL without User-Agent, its signature)
    "long-term-keys": (ACCESS_KEY, None, "us-east-1",
                       "https://kafka.us-east-1.amazonaws.com/?Action=kafka-cluster%3AConnect"
                       "&X-Amz-Algorithm=AWS4-HMAC-SHA256"
                       "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20261128%2Fus-east-1%2Fkafka-cluster%2Faws4_request"
                       "&X-Amz-Date=20261128T023000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
                       "&X-Amz-Signature=4c7cdf02243cb876c5d441e37d0f82ebc974c352b7c8f15d2fe1bef4e9d0ed31",
                       "4c7cdf02243cb876c5d441e37d0f82ebc974c352b7c8f15d2fe1bef4e9d0ed31"),
    "session-credentials": ("ASIAIOSFODNN7EXAMPLE", SESSION_TOKEN, "eu-west-1",
                            "https://kafka.eu-west-1.amazonaws.com/?Action=kafka-cluster%3AConnect"
                            "&X-Amz-Algorithm=AWS4-HMAC-SHA256"
                            "&X-Amz-Credential=ASIAIOSFODNN7EXAMPLE%2F20261128%2Feu-west-1%2Fkafka-cluster%2Faws4_request"
                            "&X-Amz-Date=20261128T023000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host"
                            "&X-Amz-Security-Token=FwoGZXIvYXdzEXAMPLE%2Ftoken%2B%3D%3D"
                            "&X-Amz-Signature=c9d1e3352c19667f5495a09d12d3558501ac986a98f670837332781ba4574443",
                            "c9d1e3352c19667f5495a09d12d3558501ac986a98f670837332781ba4574443"),
}
SIGNER = "aws-msk-iam-sasl-signer-python"


@pytest.fixture
def frozen_clock(monkeypatch):
    """botocore's signing clock at SIGNED_AT (the signer takes no clock of its own)."""
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda remove_tzinfo=True: SIGNED_AT)


@pytest.fixture
def aws(monkeypatch, tmp_path):
    aws_environment.isolate(monkeypatch, tmp_path / "aws")


def _decoded(value):
    assert set(value) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), "base64url, unpadded"
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode()


def _sigv4(secret, region, query, stamp):
    """AWS's SigV4 signature of a presigned GET of kafka.REGION.amazonaws.com/ (AWS's "Create a signed AWS API
    request"), computed from the specification: canonical request, string to sign, the derived key's HMAC."""
    canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                               for k, v in sorted(query.items()) if k != "X-Amz-Signature")
    canonical = "\n".join(["GET", "/", canonical_query, f"host:kafka.{region}.amazonaws.com", "", "host",
                           hashlib.sha256(b"").hexdigest()])
    scope = f"{stamp[:8]}/{region}/kafka-cluster/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", stamp, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    key = ("AWS4" + secret).encode()
    for part in (stamp[:8], region, "kafka-cluster", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


@pytest.mark.parametrize("case_id", list(KNOWN))
def test_the_signed_token_against_known_values(frozen_clock, case_id):
    access_key, session_token, region, url, signature = KNOWN[case_id]
    token = msk_iam.signed_token(Credentials(access_key, SECRET_KEY, session_token), region)
    user_agent = urllib.parse.quote(f"{SIGNER}/{importlib.metadata.version(SIGNER)}", safe="")
    signed = _decoded(token.value)
    assert signed == f"{url}&User-Agent={user_agent}"
    assert token.value == base64.urlsafe_b64encode(signed.encode()).decode().rstrip("=")
    parts = urllib.parse.urlsplit(signed)
    query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    assert (parts.scheme, parts.netloc, parts.path) == ("https", f"kafka.{region}.amazonaws.com", "/")
    assert query["Action"] == "kafka-cluster:Connect" and query["X-Amz-Algorithm"] == "AWS4-HMAC-SHA256"
    assert query["X-Amz-Credential"] == f"{access_key}/20261128/{region}/kafka-cluster/aws4_request"
    assert query["X-Amz-Date"] == "20261128T023000Z" and query["X-Amz-Expires"] == "900"
    assert query.get("X-Amz-Security-Token") == session_token
    assert query["X-Amz-Signature"] == signature
    del query["User-Agent"]  # appended after signing: not signed
    assert _sigv4(SECRET_KEY, region, query, "20261128T023000Z") == signature
    assert (token.issued_at, token.expires_at, token.principal) == (SIGNED_AT_UNIX, SIGNED_AT_UNIX + 900, "kafka-cluster")
    assert SECRET_KEY not in signed


HOSTS = {  # host name: the region it carries
    "b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com": "us-east-1",
    "b-3-public.demo.abc123.c2.kafka.eu-central-1.amazonaws.com": "eu-central-1",
    "boot-abcd1234.c1.kafka-serverless.ap-southeast-2.amazonaws.com": "ap-southeast-2",
    "b-1.demo.abc123.c1.kafka.cn-north-1.amazonaws.com.cn": "cn-north-1",
    "b-1.demo.abc123.c3.kafka.us-gov-west-1.amazonaws.com": "us-gov-west-1",
    "vpce-0a1b2c3d-abcd.vpce-svc-0123.eu-west-1.vpce.amazonaws.com": "eu-west-1",
    "B-1.DEMO.ABC123.C2.KAFKA.US-EAST-1.AMAZONAWS.COM.": "us-east-1",
    "127.0.0.1": None,
    "kafka.internal.example.com": None,
    "kafka.amazonaws.com": None,
    "sts.amazonaws.com": None,
    "b-1.x.kafka.us-east-1.amazonaws.com.evil.example": None,
}


@pytest.mark.parametrize("host", list(HOSTS))
def test_the_region_of_a_host(host):
    assert aws_region.region_of_host(host) == HOSTS[host]


REGIONS = {  # id: (aws.region, bootstrap, AWS's own setting, region or the fragment of the refusal)
    "from-the-host": (None, "b-1.d.a.c2.kafka.us-east-1.amazonaws.com:9098,b-2.d.a.c2.kafka.us-east-1.amazonaws.com:9098",
                      "eu-west-1", "us-east-1"),
    "given": ("eu-west-1", "10.0.0.1:9098", None, "eu-west-1"),
    "given-agrees-with-host": ("us-east-1", "b-1.d.a.c2.kafka.us-east-1.amazonaws.com:9098", None, "us-east-1"),
    "aws-setting": (None, "10.0.0.1:9098", "ap-south-1", "ap-south-1"),
    "none": (None, "10.0.0.1:9098", None, "no region for the cluster"),
    "given-not-a-region": ("useast1", "10.0.0.1:9098", None, "'useast1' is not an AWS region"),
    "aws-setting-not-a-region": (None, "10.0.0.1:9098", "Frankfurt", "'Frankfurt', is not an AWS region"),
    "given-differs-from-host": ("eu-west-1", "b-1.d.a.c2.kafka.us-east-1.amazonaws.com:9098", None,
                                "differs from the region of the bootstrap servers (us-east-1)"),
    "hosts-in-two-regions": (None, "b-1.d.a.c2.kafka.us-east-1.amazonaws.com:9098,"
                                   "b-2.d.a.c2.kafka.us-west-2.amazonaws.com:9098", None, "different AWS regions"),
}


@pytest.mark.parametrize("case_id", list(REGIONS))
def test_the_cluster_region(case_id):
    given, bootstrap, configured, expected = REGIONS[case_id]
    if expected in ("us-east-1", "eu-west-1", "ap-south-1"):
        assert aws_region.cluster_region(given, bootstrap, lambda: configured) == expected
    else:
        with pytest.raises(BadInput, match=expected.replace("(", r"\(").replace(")", r"\)")):
            aws_region.cluster_region(given, bootstrap, lambda: configured)


def test_aws_region_variable_first(aws, monkeypatch):
    assert msk_iam.configured_region(aws_environment.EMPTY_PROFILE) == "eu-west-1"  # the profile's
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert msk_iam.configured_region(None) == "us-west-2"
    monkeypatch.setenv("AWS_REGION", "ap-northeast-1")
    assert msk_iam.configured_region(None) == "ap-northeast-1"


CREDENTIALS = {  # id: (login, environment variables, the access key found or the fragment of the refusal)
    "profile": (MskIamLogin("AWS_MSK_IAM", profile=aws_environment.PROFILE), {}, ACCESS_KEY),
    "environment": (MskIamLogin("OAUTHBEARER"), {"AWS_ACCESS_KEY_ID": "AKIAENVIRONMENTEXAMPL",
                                                 "AWS_SECRET_ACCESS_KEY": SECRET_KEY}, "AKIAENVIRONMENTEXAMPL"),
    "aws-profile-variable": (MskIamLogin("OAUTHBEARER"), {"AWS_PROFILE": aws_environment.PROFILE}, ACCESS_KEY),
    "none": (MskIamLogin("AWS_MSK_IAM"), {}, "no AWS credentials found"),
    "unknown-profile": (MskIamLogin("AWS_MSK_IAM", profile="nope"), {}, "AWS profile 'nope' (awsProfileName) is in "
                                                                        "neither"),
    "unknown-aws-profile-variable": (MskIamLogin("OAUTHBEARER"), {"AWS_PROFILE": "gone"},
                                     "AWS profile 'gone' (AWS_PROFILE) is in neither"),
    "profile-without-keys": (MskIamLogin("AWS_MSK_IAM", profile=aws_environment.EMPTY_PROFILE), {},
                             f"AWS profile {aws_environment.EMPTY_PROFILE} holds no AWS credentials"),
    "partial-environment": (MskIamLogin("AWS_MSK_IAM"), {"AWS_ACCESS_KEY_ID": "AKIAENVIRONMENTEXAMPL"},
                            "incomplete AWS credentials in env"),
}


@pytest.mark.parametrize("case_id", list(CREDENTIALS))
def test_credentials_from_aws_chain(aws, monkeypatch, case_id):
    login, variables, expected = CREDENTIALS[case_id]
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    if expected.startswith("AKIA"):
        assert msk_iam.credentials(login, 2).access_key == expected
    else:
        with pytest.raises(BadInput) as refused:
            msk_iam.credentials(login, 2)
        assert expected in str(refused.value) and SECRET_KEY not in str(refused.value)
        assert "\n" not in str(refused.value)


class Clock:
    def __init__(self, now):
        self.now = now

    def __call__(self):
        return self.now


def test_a_token_is_kept_until_due_then_signed_again(aws, frozen_clock, monkeypatch):
    clock = Clock(SIGNED_AT_UNIX)
    tokens = msk_iam.IamTokens(MskIamLogin("AWS_MSK_IAM", profile=aws_environment.PROFILE),
                               "b-1.demo.abc.c2.kafka.us-east-1.amazonaws.com:9098", 2, clock)
    assert tokens.region == "us-east-1" and tokens.principal() is None
    first = tokens.current()
    clock.now = SIGNED_AT_UNIX + 719
    assert tokens.current() is first
    later = SIGNED_AT + datetime.timedelta(seconds=720)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda remove_tzinfo=True: later)
    clock.now = SIGNED_AT_UNIX + 720  # 80 % of 900 s: a fresh token, signed at the later time
    fresh = tokens.current()
    assert fresh is not first and fresh.issued_at == SIGNED_AT_UNIX + 720 and fresh.value != first.value


def test_no_region_is_said_before_any_credential_is_looked_for(aws):
    with pytest.raises(BadInput, match="no region for the cluster"):
        msk_iam.IamTokens(MskIamLogin("AWS_MSK_IAM"), "127.0.0.1:9098", 2)


# -- awsRoleArn: the role assumed through STS; STS here is a local answerer (AWS_ENDPOINT_URL_STS), which checks
# the request AWS's STS gets and answers in STS's query protocol --

ASSUMED_KEY, ASSUMED_SECRET, ASSUMED_TOKEN = "ASIAASSUMEDROLEEXAMPL", "assumed-secret-never-echo", "assumed-session-token"
ASSUMED = (f"<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><Credentials>"
           f"<AccessKeyId>{ASSUMED_KEY}</AccessKeyId><SecretAccessKey>{ASSUMED_SECRET}</SecretAccessKey>"
           f"<SessionToken>{ASSUMED_TOKEN}</SessionToken><Expiration>2026-11-28T03:30:00Z</Expiration></Credentials>"
           "<AssumedRoleUser><AssumedRoleId>AROAEXAMPLE:ops</AssumedRoleId><Arn>arn:aws:sts::123456789012:assumed-role/"
           "msk-operator/ops</Arn></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>1</RequestId>"
           "</ResponseMetadata></AssumeRoleResponse>")
REFUSED = ("<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>"
           "<Code>AccessDenied</Code><Message>not authorized to perform sts:AssumeRole</Message></Error>"
           "<RequestId>1</RequestId></ErrorResponse>")
ROLE = "arn:aws:iam::123456789012:role/msk-operator"


class Sts:
    """STS's AssumeRole on 127.0.0.1: answers `status` with `body`, keeping each request's form and signature scope."""

    def __init__(self, status, body):
        import http.server
        import threading

        sts = self
        self.requests = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                form = self.rfile.read(int(self.headers["Content-Length"])).decode()
                sts.requests.append((dict(urllib.parse.parse_qsl(form)), self.headers["Authorization"]))
                self.send_response(status)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sts(aws, monkeypatch):
    started = []

    def start(status=200, body=ASSUMED):
        started.append(Sts(status, body))
        monkeypatch.setenv("AWS_ENDPOINT_URL_STS", started[-1].url)
        monkeypatch.setenv("AWS_PROFILE", aws_environment.PROFILE)  # the credentials that assume the role
        return started[-1]
    yield start
    for server in started:
        server.stop()


def test_a_role_is_assumed_with_the_default_credentials_and_signs_the_token(sts, frozen_clock):
    answering = sts()
    login = MskIamLogin("AWS_MSK_IAM", role_arn=ROLE, role_session_name="ops", external_id="x-1",
                        sts_region="eu-west-1")
    token = msk_iam.signed_token(msk_iam.credentials(login, 2), "eu-west-1")
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(_decoded(token.value)).query))
    assert query["X-Amz-Credential"].startswith(f"{ASSUMED_KEY}/") and query["X-Amz-Security-Token"] == ASSUMED_TOKEN
    [(form, authorization)] = answering.requests
    assert form == {"Action": "AssumeRole", "Version": "2011-06-15", "RoleArn": ROLE, "RoleSessionName": "ops",
                    "ExternalId": "x-1"}
    assert f"Credential={ACCESS_KEY}/20261128/eu-west-1/sts/aws4_request" in authorization


STS_FAILURES = {  # id: (the answerer or None for nothing listening, error class, fragment)
    "refused": ((403, REFUSED), AuthenticationFailed,
                f"AWS refused to assume role {ROLE} (STS AssumeRole) (AccessDenied)"),
    "unreachable": (None, Unreachable, f"AWS unreachable asking to assume role {ROLE}"),
}


@pytest.mark.parametrize("case_id", list(STS_FAILURES))
def test_sts_failures_are_one_line_without_secrets(sts, monkeypatch, case_id):
    answer, error, fragment = STS_FAILURES[case_id]
    if answer is None:
        sts().stop()  # its port, closed: nothing listens there
    else:
        sts(*answer)
    with pytest.raises(error) as raised:
        msk_iam.credentials(MskIamLogin("AWS_MSK_IAM", role_arn=ROLE), 2)
    message = str(raised.value)
    assert fragment in message and "\n" not in message
    assert SECRET_KEY not in message and ASSUMED_SECRET not in message


def test_a_role_without_credentials_to_assume_it(aws):
    with pytest.raises(BadInput, match="no AWS credentials found"):
        msk_iam.credentials(MskIamLogin("AWS_MSK_IAM", role_arn=ROLE), 2)


REFUSALS = {  # (Kafka's operation, the resource as the door names it): the IAM action a refusal names
    ("Alter", "Cluster"): "kafka-cluster:AlterCluster",
    ("AlterConfigs", "Cluster"): "kafka-cluster:AlterClusterDynamicConfiguration",
    ("Describe", "Topic payments"): "kafka-cluster:DescribeTopic",
    ("AlterConfigs", "Topic a topic with spaces"): "kafka-cluster:AlterTopicDynamicConfiguration",
    ("Delete", "Topic t"): "of Kafka's Delete",
}


@pytest.mark.parametrize("needs", list(REFUSALS), ids=lambda n: "-".join(n).replace(" ", "_"))
def test_a_refusal_names_the_iam_action(needs):
    from streaming.cluster import acls

    assert acls.msk_iam_action(*needs) == REFUSALS[needs]
