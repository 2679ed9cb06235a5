"""TLS material of a `--command-config`, loaded into memory as PEM text: the certificates to trust and the
client's certificate chain and key, from PEM files, PKCS12 stores (read with `cryptography`) or Java
keystores (JKS, JCEKS: converted by the JDK's `keytool` to PKCS12 in a private temporary directory, mode
0700, removed as soon as it is read; passwords reach keytool through its environment or stdin, never its command line).

Java reads a store of either binary type whatever `ssl.*store.type` says (keystore.type.compat), so the
binary type is told from the file's first bytes; PEM must be declared PEM, as Kafka requires.

The client key is kept as PKCS#8 PEM encrypted with a passphrase made for this process, so neither the
memory handed to librdkafka nor the moment's file kafka-python's SSLContext is loaded from (see
`client_config.ssl_context`) holds the key in clear. Messages name settings and paths, never a password.
"""

import os
import re
import secrets
import shutil
import ssl
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache

from streaming.vocabulary.errors import BadInput

JKS_MAGIC, JCEKS_MAGIC = b"\xfe\xed\xfe\xed", b"\xce\xce\xce\xce"
PEM_MARK = b"-----BEGIN "
CERTIFICATE_BLOCK = re.compile(rb"-----BEGIN CERTIFICATE-----[A-Za-z0-9+/=\s]*?-----END CERTIFICATE-----")
KEY_BLOCK = re.compile(rb"-----BEGIN ([A-Z ]*)PRIVATE KEY-----.*?-----END \1PRIVATE KEY-----", re.DOTALL)
STORE_TYPES = ("JKS", "PKCS12", "PEM")
MAX_STORE_BYTES = 10 * 1024 * 1024  # a store holds a few certificates; a cap keeps a wrong path out of memory
KEYTOOL_TIMEOUT_S = 60
KEY_ENTRIES_ANSWERED = 8  # a client keystore holds one key entry; a few more answers cost nothing


@dataclass(frozen=True)
class Identity:
    """The client's certificate chain (PEM) and key (PKCS#8 PEM encrypted with `key_password`)."""
    chain: str
    key: str
    key_password: str


def _read(path, setting):
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_STORE_BYTES + 1)
    except OSError as error:
        raise BadInput(f"{setting}: {error.strerror or error}") from error
    if len(data) > MAX_STORE_BYTES:
        raise BadInput(f"{setting}: larger than {MAX_STORE_BYTES} bytes: not a key or trust store")
    return data


def _binary_kind(data, setting, declared):
    if data.startswith((JKS_MAGIC, JCEKS_MAGIC)):
        return "JCEKS" if data.startswith(JCEKS_MAGIC) else "JKS"
    if data[:1] == b"\x30":  # a DER SEQUENCE: PKCS12
        return "PKCS12"
    if PEM_MARK in data:
        raise BadInput(f"{setting} is a PEM file but its type is {declared}: set the matching .type=PEM")
    raise BadInput(f"{setting} is neither a JKS, a PKCS12 nor a PEM store")


def _pem_certificates(data, setting):
    """The certificate blocks of a PEM file, checked by OpenSSL as the clients will load them (not parsed
    with `cryptography`, which refuses some certificates of the systems' CA bundles)."""
    blocks = CERTIFICATE_BLOCK.findall(data)
    if not blocks:
        raise BadInput(f"{setting} holds no PEM certificate (a PEM file starts with -----BEGIN CERTIFICATE-----)")
    text = "\n".join(b.decode("ascii", "replace") for b in blocks) + "\n"
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=text)
    except ssl.SSLError as error:
        raise BadInput(f"{setting} holds a PEM certificate that cannot be read ({error.reason or 'damaged'})") from error
    return text


def _encrypted(key, passphrase):
    from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, Encoding, PrivateFormat

    return key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(passphrase.encode())).decode()


def _pem_key(data, password, setting, password_setting):
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    block = KEY_BLOCK.search(data)
    if block is None:
        raise BadInput(f"{setting} holds no PEM private key")
    try:
        return load_pem_private_key(block.group(0), password.encode() if password is not None else None)
    except TypeError as error:
        if password is not None:  # a password for a key in clear: both client libraries ignore it
            return load_pem_private_key(block.group(0), None)
        raise BadInput(f"{setting}: the key is encrypted: set {password_setting}") from error
    except ValueError as error:
        raise BadInput(f"{setting}: the key cannot be read with {password_setting} (wrong password, or not a PEM key)") from error


def _pkcs12(data, password, setting, password_setting):
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        return pkcs12.load_pkcs12(data, password.encode() if password is not None else None)
    except ValueError as error:
        raise BadInput(f"{setting} cannot be read as PKCS12 with {password_setting} "
                       f"(wrong or missing password, or not a PKCS12 store)") from error


def _keytool():
    found = shutil.which("keytool")
    if found is None and os.environ.get("JAVA_HOME"):
        candidate = os.path.join(os.environ["JAVA_HOME"], "bin", "keytool")
        found = candidate if os.access(candidate, os.X_OK) else None
    return found


def _jks_to_pkcs12(path, kind, store_password, key_password, setting, password_setting):
    """The store at `path` as PKCS12 bytes, by keytool, and the password they are protected with."""
    keytool = _keytool()
    if keytool is None:
        raise BadInput(f"{setting} is a {kind} store: reading it needs the JDK's keytool (not on PATH nor in "
                       f"JAVA_HOME/bin); or convert it to PKCS12 or PEM")
    passphrase = secrets.token_hex(16)
    env = {**os.environ, "RM_DEST_PASS": passphrase}
    args = [keytool, "-importkeystore", "-noprompt", "-srckeystore", path, "-srcstoretype", kind,
            "-deststoretype", "PKCS12", "-deststorepass:env", "RM_DEST_PASS"]
    if store_password is not None:
        env["RM_SRC_PASS"] = store_password
        args += ["-srcstorepass:env", "RM_SRC_PASS"]
    # A key whose password differs from the store's is asked for on stdin, once per key entry (keytool takes
    # -srckeypass only with -srcalias).
    answers = (key_password + "\n").encode() * KEY_ENTRIES_ANSWERED if key_password is not None else b""
    with tempfile.TemporaryDirectory(prefix="reassign-monitor-store-") as private:  # mode 0700
        target = os.path.join(private, "store.p12")
        try:
            done = subprocess.run([*args, "-destkeystore", target], env=env, input=answers,
                                  capture_output=True, timeout=KEYTOOL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise BadInput(f"{setting}: keytool could not run ({type(error).__name__})") from error
        if done.returncode != 0 or not os.path.exists(target):  # keytool's output is not echoed: it may name secrets
            raise BadInput(f"{setting} cannot be read as {kind} with {password_setting} (wrong or missing password, "
                           f"or a damaged store)")
        with open(target, "rb") as handle:
            return handle.read(), passphrase


def _binary_store(path, declared, store_password, key_password, setting, password_setting):
    data = _read(path, setting)
    kind = _binary_kind(data, setting, declared)
    if kind == "PKCS12":
        return _pkcs12(data, store_password, setting, password_setting)
    converted, passphrase = _jks_to_pkcs12(path, kind, store_password, key_password, setting, password_setting)
    return _pkcs12(converted, passphrase, setting, password_setting)


def _version(path):
    """What tells one version of a file from another, for the caches below: a store replaced on disk (a
    rotated certificate) is read again when a client is next made; an unchanged one is not (keytool
    costs a JVM start)."""
    try:
        info = os.stat(path)
    except OSError:
        return None  # reading it says what is wrong
    return info.st_ino, info.st_mtime_ns, info.st_size


def trusted(path, store_type, password, setting="ssl.truststore.location", password_setting="ssl.truststore.password"):
    """PEM text of every certificate in the trust store `path` of `store_type` (JKS, PKCS12 or PEM)."""
    return _trusted(path, _version(path), store_type, password, setting, password_setting)


def identity(path, store_type, store_password, key_password, key_path=None, setting="ssl.keystore.location",
             password_setting="ssl.keystore.password"):
    """The client Identity of the key store `path` (JKS, PKCS12, or PEM: the key and its chain in one file,
    Kafka's PEM keystore), or of a PEM certificate file `path` with its key in `key_path`."""
    return _identity(path, _version(path), store_type, store_password, key_password, key_path,
                     key_path and _version(key_path), setting, password_setting)


@lru_cache(maxsize=16)
def _trusted(path, _version, store_type, password, setting, password_setting):
    if store_type == "PEM":
        return _pem_certificates(_read(path, setting), setting)
    from cryptography.hazmat.primitives.serialization import Encoding

    store = _binary_store(path, store_type, password, None, setting, password_setting)
    certificates = ([store.cert] if store.cert else []) + list(store.additional_certs)
    if not certificates:
        raise BadInput(f"{setting} holds no certificate")
    return "".join(c.certificate.public_bytes(Encoding.PEM).decode() for c in certificates)


@lru_cache(maxsize=16)
def _identity(path, _version, store_type, store_password, key_password, key_path, _key_version, setting,
              password_setting):
    from cryptography.hazmat.primitives.serialization import Encoding

    passphrase = secrets.token_hex(16)
    if store_type == "PEM":
        chain = _pem_certificates(_read(path, setting), setting)
        key_setting = "ssl.key.location" if key_path else setting
        key = _pem_key(_read(key_path or path, key_setting), key_password, key_setting, "ssl.key.password")
        return Identity(chain, _encrypted(key, passphrase), passphrase)
    store = _binary_store(path, store_type, store_password, key_password, setting, password_setting)
    if store.key is None or store.cert is None:
        raise BadInput(f"{setting} holds no private key with its certificate")
    chain = [store.cert] + list(store.additional_certs)
    return Identity("".join(c.certificate.public_bytes(Encoding.PEM).decode() for c in chain),
                    _encrypted(store.key, passphrase), passphrase)
