"""An AWS environment of the test's own for AWS MSK IAM: no AWS_* variable of the machine, AWS's shared files replaced
by files in a test directory, and the instance-metadata lookup turned off (the default credentials chain would ask
169.254.169.254 otherwise: tests only ever talk to 127.0.0.1). Its one profile, PROFILE, holds AWS's documented
example keys, which sign tokens offline and open nothing."""

import os

PROFILE = "corpus"
EMPTY_PROFILE = "no-keys"  # a profile that exists and holds no credentials
ACCESS_KEY, SECRET_KEY = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"  # AWS's documented examples


def isolate(monkeypatch, directory):
    """Set the process's AWS environment to the test's: PROFILE and EMPTY_PROFILE in files under `directory`."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "credentials").write_text(f"[{PROFILE}]\naws_access_key_id = {ACCESS_KEY}\n"
                                           f"aws_secret_access_key = {SECRET_KEY}\n")
    (directory / "config").write_text(f"[profile {EMPTY_PROFILE}]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(directory / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(directory / "config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
