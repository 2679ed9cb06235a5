"""The token source of a `--command-config` whose mechanism sends tokens, shared by both client libraries of a door:
OAUTHBEARER with OIDC (streaming.cluster.oauth) or AWS MSK IAM (streaming.cluster.msk_iam). Either answers
`current()` (a Token not due for refresh) and `principal()`."""

from streaming.cluster import msk_iam, oauth


def token_source(config, bootstrap, timeout_s):
    """The token source of the ClientConfig `config` for the cluster at `bootstrap`, or None for a mechanism without
    tokens. AWS MSK IAM finds the cluster's region here: none found is BadInput."""
    if config.oauth is not None:
        return oauth.Tokens(config.oauth, timeout_s)
    if config.msk_iam is not None:
        return msk_iam.IamTokens(config.msk_iam, bootstrap, timeout_s)
    return None
