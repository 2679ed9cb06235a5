"""A Kerberos KDC for the secured test cluster: MIT krb5kdc from Debian's krb5-kdc, unprivileged, on 127.0.0.1 on a
port of its own (TCP and UDP), in a realm of its own whose database, stash, logs and keytabs live in one temporary
directory. `principal(name)` adds a principal with a random key and writes its keytab; `krb5_conf` is the realm's
krb5.conf, for MIT Kerberos (KRB5_CONFIG) and the brokers' JVM (-Djava.security.krb5.conf). Started by `start()`,
stopped by `stop()` (the one process it started, by its pid)."""

import os
import secrets
import socket
import subprocess
import time
from pathlib import Path

REALM = "REASSIGN.TEST"
BROKER_PRINCIPAL = f"kafka/localhost@{REALM}"  # kafka/<the host clients ask for>: 127.0.0.1 canonicalizes to localhost
START_TIMEOUT_S = 20
READY = "commencing operation"  # what krb5kdc logs once it listens


class Kdc:
    def __init__(self, directory, port, realm=REALM):
        self.dir = Path(directory)
        self.port = port
        self.realm = realm
        self.krb5_conf = self.dir / "krb5.conf"
        self.kdc_conf = self.dir / "kdc.conf"
        self.process = None

    @property
    def env(self):
        """The environment of MIT Kerberos' tools and libraries for this realm."""
        return {**os.environ, "KRB5_CONFIG": str(self.krb5_conf), "KRB5_KDC_PROFILE": str(self.kdc_conf)}

    def _write_configs(self):
        # TCP only (udp_preference_limit = 1): the JVM and MIT Kerberos alike. Reverse DNS left on (rdns), as the
        # JVM's Kafka client resolves an IP-literal broker address to its host name.
        self.krb5_conf.write_text(f"""[libdefaults]
    default_realm = {self.realm}
    dns_lookup_realm = false
    dns_lookup_kdc = false
    udp_preference_limit = 1
    ticket_lifetime = 24h
    forwardable = false
[realms]
    {self.realm} = {{
        kdc = 127.0.0.1:{self.port}
    }}
[domain_realm]
    localhost = {self.realm}
    .localhost = {self.realm}
""")
        self.kdc_conf.write_text(f"""[kdcdefaults]
    kdc_ports = {self.port}
    kdc_tcp_ports = {self.port}
[realms]
    {self.realm} = {{
        database_name = {self.dir / 'principal'}
        key_stash_file = {self.dir / 'stash'}
        acl_file = {self.dir / 'kadm5.acl'}
        kdc_ports = {self.port}
        kdc_tcp_ports = {self.port}
        max_life = 24h
    }}
[logging]
    kdc = FILE:{self.dir / 'kdc.log'}
""")
        (self.dir / "kadm5.acl").write_text("")

    def _run(self, *argv):
        result = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed: {result.stderr.strip()[-500:]}")
        return result.stdout

    def start(self):
        # krb5kdc binds its port with SO_REUSEPORT: a second KDC on a port in use starts, and shares the requests.
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past connections' TIME_WAIT, not a listener
            try:
                probe.bind(("127.0.0.1", self.port))
            except OSError as error:
                raise RuntimeError(f"the KDC's port 127.0.0.1:{self.port} is in use ({error.strerror})") from None
        self.dir.mkdir(parents=True, exist_ok=True)
        self._write_configs()
        self._run("kdb5_util", "create", "-s", "-r", self.realm, "-P", secrets.token_hex(16))
        self.process = subprocess.Popen(["krb5kdc", "-n", "-r", self.realm], env=self.env, stdin=subprocess.DEVNULL,
                                        stdout=(self.dir / "krb5kdc.out").open("w"), stderr=subprocess.STDOUT)
        # Ready when it says so in its log, after binding its port: a port that answers may be another KDC's.
        log, deadline = self.dir / "kdc.log", time.monotonic() + START_TIMEOUT_S
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"krb5kdc exited: {log.read_text()[-500:] if log.exists() else ''}")
            if log.exists() and READY in log.read_text():
                return self
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"krb5kdc not ready on 127.0.0.1:{self.port} within {START_TIMEOUT_S} s")
            time.sleep(0.1)

    def principal(self, name, keytab=None, expires=None):
        """Add `name` (a principal, the realm appended when it has none) with a random key and write its keytab to
        `keytab` (default: DIR/<name>.keytab), mode 600; `expires`: a kadmin date after which the KDC refuses it.
        Returns (the full principal name, the keytab's path)."""
        full = name if "@" in name else f"{name}@{self.realm}"
        path = Path(keytab) if keytab else self.dir / f"{full.split('@')[0].replace('/', '_')}.keytab"
        self._run("kadmin.local", "-r", self.realm, "-q",
                  f"addprinc -randkey {f'-expire {expires} ' if expires else ''}{full}")
        self._run("kadmin.local", "-r", self.realm, "-q", f"ktadd -k {path} {full}")
        path.chmod(0o600)
        return full, path

    def new_key(self, name):
        """Give `name` a new random key in the database (keytabs written before no longer log in)."""
        full = name if "@" in name else f"{name}@{self.realm}"
        self._run("kadmin.local", "-r", self.realm, "-q", f"cpw -randkey {full}")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
