"""Debian's clickhouse-server started for a test: on loopback, its data, logs and configuration in a temporary
directory, free ports, optionally a remote_servers cluster over other servers; `query()` over its HTTP interface.
Tests that need one skip when clickhouse-server is not installed (SKIP says so). Shared by the SQL export's tests
and any other destination that loads ClickHouse."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SERVER = shutil.which("clickhouse-server") or (
    "/usr/sbin/clickhouse-server" if os.path.exists("/usr/sbin/clickhouse-server") else None)
SKIP = "clickhouse-server is not installed (scripts/install-deps.sh installs it); skipped"
START_TIMEOUT = 60

CONFIG = """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{dir}/server.log</log><errorlog>{dir}/server.err.log</errorlog>
    <size>10M</size><count>1</count></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>{http}</http_port>
  <tcp_port>{tcp}</tcp_port>
  <path>{dir}/data/</path>
  <tmp_path>{dir}/tmp/</tmp_path>
  <user_files_path>{dir}/user_files/</user_files_path>
  <format_schema_path>{dir}/format_schemas/</format_schema_path>
  <users_config>{dir}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <max_concurrent_queries>20</max_concurrent_queries>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <remote_servers>{clusters}</remote_servers>
</yandex>
"""

USERS = """<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile>
    <quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClickHouse:
    """A server; `cluster` maps a cluster name to the ClickHouse objects (or (host, tcp_port) pairs: servers
    started later on ports chosen with free_port(), given as tcp_port) of its shards, one replica each. Call stop()
    (or use addCleanup)."""

    def __init__(self, cluster=None, tcp_port=None, prefix="tracery-clickhouse-"):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.http_port, self.tcp_port = free_port(), tcp_port or free_port()
        clusters = ""
        for name, shards in (cluster or {}).items():
            clusters += f"<{name}>"
            for s in shards:
                host, port = ("127.0.0.1", s.tcp_port) if isinstance(s, ClickHouse) else s
                clusters += f"<shard><replica><host>{host}</host><port>{port}</port></replica></shard>"
            clusters += f"</{name}>"
        for sub in ("data", "tmp", "user_files", "format_schemas"):
            os.makedirs(os.path.join(self.dir, sub))
        with open(os.path.join(self.dir, "config.xml"), "w") as f:
            f.write(CONFIG.format(dir=self.dir, http=self.http_port, tcp=self.tcp_port, clusters=clusters))
        with open(os.path.join(self.dir, "users.xml"), "w") as f:
            f.write(USERS)
        self.log = open(os.path.join(self.dir, "stdout.log"), "wb")
        self.proc = subprocess.Popen([SERVER, "--config-file=" + os.path.join(self.dir, "config.xml")],
                                     stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     cwd=self.dir, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            try:
                if self.query("SELECT 1").strip() == "1":
                    break
            except (OSError, urllib.error.URLError):
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"clickhouse-server did not start: {self.errors()}")
            time.sleep(0.1)

    def url(self, database="default"):
        return f"http://127.0.0.1:{self.http_port}/{database}"

    def query(self, sql, database="default"):
        """The result text of one statement; raises urllib.error.HTTPError with ClickHouse's message."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.http_port}/?database={database}",
                                     data=sql.encode(), method="POST")
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.read().decode()

    def errors(self):
        text = ""
        for name in ("server.err.log", "stdout.log"):
            p = os.path.join(self.dir, name)
            if os.path.exists(p):
                with open(p, errors="replace") as f:
                    text += f.read()[-3000:]
        return text

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, True)
