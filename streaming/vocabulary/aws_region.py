"""AWS regions as AWS MSK IAM needs them (docs/security.md "AWS MSK IAM"): a token is signed for the region of the
cluster, which its broker host names say (`b-1.NAME.ID.c2.kafka.us-east-1.amazonaws.com`, MSK Serverless's
`boot-ID.c1.kafka-serverless.us-east-1.amazonaws.com`, a VPC endpoint's `...us-east-1.vpce.amazonaws.com`, China's
`...amazonaws.com.cn`), or the operator says it. Pure: the AWS configuration files and environment are read by
streaming.cluster.msk_iam.

A region is checked by its form (`us-east-1`, `us-gov-west-1`, `cn-northwest-1`, `eusc-de-east-1`), not against a
list: a region newer than the installed AWS library is still a region.
"""

import re

from streaming.vocabulary.echo import shown
from streaming.vocabulary.errors import BadInput

REGION = re.compile(r"[a-z]{2,4}(-[a-z]+)+-\d{1,2}")
# The label before amazonaws.com (or before vpce.amazonaws.com) of an AWS host name.
AWS_HOST = re.compile(r"(?:^|\.)([a-z0-9-]+)\.(?:vpce\.)?amazonaws\.com(?:\.cn)?\.?$")
# The STS region that means STS's global endpoint (AWS's aws-msk-iam-auth: awsStsRegion's default).
GLOBAL_STS_REGION = "aws-global"


def is_region(text):
    return REGION.fullmatch(text) is not None


def region_of_host(host):
    """The region an AWS host name carries, or None (an IP address, a name of the operator's own)."""
    match = AWS_HOST.search(host.lower())
    return match.group(1) if match and is_region(match.group(1)) else None


def region_of_bootstrap(bootstrap):
    """The one region the AWS hosts of `bootstrap` ("host:port,...") carry, or None when none carries one. Hosts
    naming two regions: BadInput."""
    hosts = [address.strip().rpartition(":")[0].strip("[]") for address in bootstrap.split(",") if address.strip()]
    regions = sorted({region for region in map(region_of_host, hosts) if region})
    if len(regions) > 1:
        raise BadInput(f"the bootstrap servers are in different AWS regions ({', '.join(regions)}): one cluster is in "
                       f"one region")
    return regions[0] if regions else None


def cluster_region(given, bootstrap, configured):
    """The region to sign for: `given` (the file's aws.region), else the bootstrap hosts', else `configured()` (AWS's
    own setting: AWS_REGION, AWS_DEFAULT_REGION or the profile's region; asked only then). A region given that is not
    a region or that differs from the hosts', or none found at all: BadInput."""
    if given is not None and not is_region(given):
        raise BadInput(f"aws.region {shown(given, 40)!r} is not an AWS region (like us-east-1)")
    from_hosts = region_of_bootstrap(bootstrap)
    if given is not None and from_hosts is not None and given != from_hosts:
        raise BadInput(f"aws.region {given} differs from the region of the bootstrap servers ({from_hosts})")
    region = given or from_hosts or configured()
    if region is None:
        raise BadInput("AWS MSK IAM: no region for the cluster: the bootstrap servers are not MSK host names "
                       "(...kafka.REGION.amazonaws.com) and neither aws.region, AWS_REGION nor the AWS profile names one")
    if not is_region(region):
        raise BadInput(f"AWS MSK IAM: the region of the AWS configuration, {shown(region, 40)!r}, is not an AWS region "
                       f"(like us-east-1)")
    return region
