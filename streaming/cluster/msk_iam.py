"""AWS MSK IAM tokens (docs/security.md "AWS MSK IAM"), sent by both client libraries as OAUTHBEARER tokens: MSK's IAM
listeners take them from every client, Java's AWS_MSK_IAM mechanism aside.

A token is a SigV4-presigned URL of `kafka-cluster:Connect` on `kafka.REGION.amazonaws.com`, base64url-encoded, made
by AWS's aws-msk-iam-sasl-signer-python from the AWS credentials, valid for 900 s from its signing. It is signed when
first asked for and again once `refresh_factor` of that lifetime has passed (streaming.cluster.oauth.refresh_due):
a connection made or re-authenticated after that point sends a fresh one.

The credentials are resolved at each signing, as AWS's libraries resolve them: a profile (`awsProfileName`), a role
assumed through STS (`awsRoleArn`), or AWS's default chain (the environment, AWS_PROFILE and the shared files, SSO,
a container's or an instance's role). botocore refreshes what expires (an instance role, SSO) itself. The region is
the cluster's (streaming.vocabulary.aws_region).

The signer library brings boto3 and botocore, which take about a second to import: they are imported when the
first token is signed, never by a command that does not use AWS MSK IAM. The credentials and every token are
secrets: no message names them; a message names the profile, the role or the region.
"""

import os
import threading
import time

from streaming.cluster.oauth import Token, refresh_due
from streaming.vocabulary import aws_region
from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import AuthenticationFailed, BadInput, Unreachable

# AWS's own IAMOAuthBearerToken names every token's principal so (the broker takes the IAM identity from the URL).
TOKEN_PRINCIPAL = "kafka-cluster"
PROFILE_VARIABLE = "AWS_PROFILE"  # the profile of AWS's default chain
REGION_VARIABLE = "AWS_REGION"  # AWS's SDKs read it first; botocore reads AWS_DEFAULT_REGION and the profile's
NO_CREDENTIALS = ("AWS MSK IAM: no AWS credentials found (none in the environment, AWS_ACCESS_KEY_ID and "
                  "AWS_SECRET_ACCESS_KEY; none in a profile, AWS_PROFILE or the default one in ~/.aws; no role of the "
                  "host)")


def _session(profile):
    """A botocore session of `profile` (None: AWS's default); an unknown profile is BadInput."""
    import botocore.session
    from botocore.exceptions import ProfileNotFound

    session = botocore.session.Session(profile=profile)
    try:
        session.get_scoped_config()  # reads the profile: an unknown one is said now, not at the first use
    except ProfileNotFound:
        named = f"{shown(profile)!r} (awsProfileName)" if profile else \
            f"{shown(os.environ.get(PROFILE_VARIABLE, ''))!r} ({PROFILE_VARIABLE})"
        raise BadInput(f"AWS MSK IAM: AWS profile {named} is in neither the AWS config nor the credentials file"
                       ) from None
    return session


def configured_region(profile):
    """AWS's own region setting, as AWS's SDK for Java (which the Java tools use) reads it: AWS_REGION, then
    botocore's (AWS_DEFAULT_REGION, the profile's `region`); None without one."""
    return os.environ.get(REGION_VARIABLE) or _session(profile).get_config_variable("region")


def credentials(login, timeout_s):
    """The botocore Credentials of `login`, frozen (one access key, secret and session token). None found, an unknown
    profile, a profile without keys: BadInput. STS refusing the role: AuthenticationFailed; STS unreachable:
    Unreachable. Each in one line."""
    from botocore.credentials import Credentials
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError

    session = _session(login.profile)
    try:
        if login.role_arn:
            return _assumed(session, login, timeout_s)
        found = session.get_credentials()
        frozen = found and found.get_frozen_credentials()
    except PartialCredentialsError as error:
        raise BadInput(f"AWS MSK IAM: incomplete AWS credentials in {error.kwargs.get('provider', 'a source')} "
                       f"(no {error.kwargs.get('cred_var', 'secret')})") from None
    except NoCredentialsError:
        raise BadInput(NO_CREDENTIALS) from None
    except ClientError as error:
        raise AuthenticationFailed(f"AWS MSK IAM: AWS refused {_operation(login)} "
                                   f"({error.response.get('Error', {}).get('Code', 'no code')})") from None
    except BotoCoreError as error:
        raise _unavailable(login, error) from None
    if not frozen or not frozen.access_key or not frozen.secret_key:
        raise BadInput(f"AWS MSK IAM: {login.credentials_source} holds no AWS credentials" if login.profile
                       else NO_CREDENTIALS)
    return Credentials(frozen.access_key, frozen.secret_key, frozen.token)


def _operation(login):
    return f"to assume role {login.role_arn} (STS AssumeRole)" if login.role_arn else \
        f"the credentials of {login.credentials_source}"


def _unavailable(login, error):
    """STS (or a credentials endpoint) that could not be asked, or failed otherwise: said by the error's class."""
    from botocore.exceptions import ConnectionError as BotoConnectionError, ReadTimeoutError

    if isinstance(error, (BotoConnectionError, ReadTimeoutError)):
        return Unreachable(f"AWS MSK IAM: AWS unreachable asking {_operation(login)} ({type(error).__name__})")
    return AuthenticationFailed(f"AWS MSK IAM: {_operation(login)} failed ({type(error).__name__})")


def _assumed(session, login, timeout_s):
    """The credentials of `login.role_arn`, assumed through STS with the session's own credentials."""
    from botocore.config import Config
    from botocore.credentials import Credentials

    config = Config(connect_timeout=timeout_s, read_timeout=timeout_s, retries={"total_max_attempts": 1})
    # STS's global endpoint unless awsStsRegion names a region, as AWS's jar; AWS_ENDPOINT_URL_STS overrides both.
    sts = session.create_client("sts", region_name=login.sts_region or aws_region.GLOBAL_STS_REGION, config=config)
    request = {"RoleArn": login.role_arn, "RoleSessionName": login.role_session_name}
    if login.external_id:
        request["ExternalId"] = login.external_id
    answer = sts.assume_role(**request)["Credentials"]
    return Credentials(answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"])


def signed_token(aws_credentials, region):
    """The Token AWS's signer makes of `aws_credentials` (botocore Credentials) for a cluster in `region`, signed now
    (the signer reads botocore's clock)."""
    from aws_msk_iam_sasl_signer import MSKAuthTokenProvider
    from botocore.credentials import CredentialProvider

    class Given(CredentialProvider):
        METHOD = "reassign-monitor"

        def load(self):
            return aws_credentials

    value, expires_ms = MSKAuthTokenProvider.generate_auth_token_from_credentials_provider(region, Given())
    expires = expires_ms / 1000
    return Token(value, TOKEN_PRINCIPAL, expires - MSKAuthTokenProvider.DEFAULT_TOKEN_EXPIRY_SECONDS, expires)


class IamTokens:
    """The current token of one MskIamLogin for the cluster at `bootstrap` ("host:port,..."), its credentials
    resolved within `timeout_s` when one is due (`clock`: Unix seconds). Construction finds the region: none, or one
    that is not a region, is BadInput."""

    def __init__(self, login, bootstrap, timeout_s, clock=time.time):
        self._login = login
        self._timeout_s = timeout_s
        self._clock = clock
        self.region = aws_region.cluster_region(login.region, bootstrap, lambda: configured_region(login.profile))
        self._lock = threading.Lock()
        self._token = None

    def current(self):
        """A token not due for refresh, signed now if the last one is (errors: `credentials`)."""
        with self._lock:
            if self._token is None or refresh_due(self._token, self._clock(), self._login.refresh_factor):
                self._token = signed_token(credentials(self._login, self._timeout_s), self.region)
            return self._token

    def principal(self):
        """None: the principal is the IAM identity of the credentials, which only AWS names."""
        return None
