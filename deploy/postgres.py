#!/usr/bin/env python3
"""A throwaway PostgreSQL server: Dagster's production storage, on this machine, without Docker.

    .venv/bin/python deploy/postgres.py up   --dir /tmp/chatetl-pg --port 55432
    .venv/bin/python deploy/postgres.py down --dir /tmp/chatetl-pg

`up` creates the cluster (initdb) on first use, starts the server on 127.0.0.1 only, creates
the database and prints the DAGSTER_PG_* variables that deploy/dagster.yaml reads. The test
of the production instance (tests/test_deploy_postgres.py) uses the same class as a fixture.

It uses the binaries of Debian's `postgresql` package (initdb, postgres under
/usr/lib/postgresql/<version>/bin). `find_bindir()` says where they are; `install()` runs
`apt-get install -y postgresql` when they are missing and this process is root.
PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user,
with the folder handed over to it. Data is throwaway (fsync off): never keep anything here.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_USER = "chatetl"
DEFAULT_DB = "dagster"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
INSTALL_TIMEOUT = 900.0
SERVICE_USER = "postgres"  # the system user the server runs as when we are root


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", path.parent.name)) or (0,)


def find_bindir() -> Path | None:
    """The folder holding initdb and postgres: PATH first, then Debian's versioned folders."""
    initdb, postgres = shutil.which("initdb"), shutil.which("postgres")
    if initdb and postgres:
        bindir = Path(initdb).resolve().parent
        if (bindir / "postgres").is_file():
            return bindir
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    for bindir in candidates:
        if (bindir / "initdb").is_file() and (bindir / "postgres").is_file():
            return bindir
    return None


def install() -> tuple[bool, str]:
    """Install Debian's postgresql package when it is missing. (ok, what happened)."""
    if find_bindir():
        return True, "already installed"
    if os.geteuid() != 0:
        return False, "PostgreSQL is not installed and this is not root (apt-get install -y postgresql)"
    if not shutil.which("apt-get"):
        return False, "PostgreSQL is not installed and apt-get is not available"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", "postgresql"]
    out = ""
    for step in ([cmd], [["apt-get", "update"], cmd]):
        try:
            for c in step:
                done = subprocess.run(c, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False)
                out = (done.stdout + done.stderr)[-2000:]
                if done.returncode != 0:
                    break
        except (OSError, subprocess.TimeoutExpired) as e:
            out = str(e)
        if find_bindir():
            return True, "installed with apt-get"
    return False, f"apt-get install -y postgresql failed:\n{out}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


class ThrowawayPostgres:
    """One PostgreSQL cluster in `root`, listening on 127.0.0.1:`port` (TCP, password auth)."""

    def __init__(self, root: str | Path, port: int, user: str = DEFAULT_USER, db: str = DEFAULT_DB,
                 password: str | None = None, bindir: Path | None = None):
        self.root = Path(root).resolve()
        self.data = self.root / "data"
        self.sockets = self.root / "run"
        self.log_file = self.root / "postgres.log"
        self.password_file = self.root / ".password"
        self.port = port
        self.user = user
        self.db = db
        found = bindir or find_bindir()
        if found is None:
            raise RuntimeError("PostgreSQL binaries (initdb, postgres) not found; install Debian's postgresql package")
        self.bindir: Path = found
        self._password = password
        self.proc: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ identity
    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    def _service_account(self) -> tuple[int, int] | None:
        if not self.as_root:
            return None
        for name in (SERVICE_USER, "nobody"):
            try:
                pw = pwd.getpwnam(name)
                return pw.pw_uid, pw.pw_gid
            except KeyError:
                continue
        raise RuntimeError("running as root but neither a 'postgres' nor a 'nobody' user exists")

    def _drop(self) -> dict[str, Any]:
        """Popen arguments that run a child as the service account when we are root."""
        account = self._service_account()
        if account is None:
            return {}
        uid, gid = account
        return {"user": uid, "group": gid, "extra_groups": []}

    def _chown(self, path: Path) -> None:
        account = self._service_account()
        if account is None:
            return
        for p in [path, *path.rglob("*")]:
            os.chown(p, *account)

    @property
    def password(self) -> str:
        if self._password is None:
            if self.password_file.is_file():
                self._password = self.password_file.read_text().strip()
            else:
                self._password = secrets.token_urlsafe(18)
        return self._password

    # ------------------------------------------------------------------ lifecycle
    def initialized(self) -> bool:
        return (self.data / "PG_VERSION").is_file()

    def init(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        self.sockets.mkdir(exist_ok=True)
        # kept beside the cluster (mode 0600) so `up` after `down` knows it; throwaway data only
        password = self.password
        fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(password + "\n")
        self._chown(self.root)
        cmd = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", self.user, "-E", "UTF8",
               "--no-locale", f"--pwfile={self.password_file}",
               "--auth-local=trust", "--auth-host=scram-sha-256"]
        proc = subprocess.Popen(cmd, cwd=self.root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, **self._drop())
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            self._signal(proc.pid, signal.SIGKILL)  # initdb and the postgres --check it runs
            out, _ = proc.communicate()
            raise RuntimeError(f"initdb did not finish within 120 s:\n{out}")
        if proc.returncode != 0:
            raise RuntimeError(f"initdb failed ({proc.returncode}):\n{out}")

    def command(self) -> list[str]:
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.sockets),
            "max_connections": "200",  # webserver, daemon, code server, run workers each pool connections
            "fsync": "off",  # throwaway: speed over durability
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        cmd = [str(self.bindir / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        for key, value in settings.items():
            cmd += ["-c", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = START_TIMEOUT) -> None:
        """Start the server (own process group) and wait until the database answers."""
        if _port_answers(self.port):
            raise RuntimeError(f"port {self.port} on 127.0.0.1 is already taken")
        if not self.initialized():
            self.init()
        with open(self.log_file, "ab") as log:  # the server writes to its own copy of the descriptor
            self.proc = subprocess.Popen(
                self.command(), cwd=self.root, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, close_fds=True, **self._drop(),
            )
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited with status {self.proc.returncode}; end of {self.log_file}:\n{self.log_tail()}")
            try:
                self.ensure_database()
                return
            except Exception as e:  # not accepting connections yet
                last = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                if "password" in last or "authentication" in last:
                    self.stop()
                    raise RuntimeError(f"postgres refused our credentials: {last}") from e
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"postgres did not answer on 127.0.0.1:{self.port} within {timeout:.0f} s ({last}); end of log:\n{self.log_tail()}")

    def connect(self, db: str | None = None) -> Any:  # a psycopg2 connection
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user=self.user, password=self.password,
                                dbname=db or "postgres", connect_timeout=3)

    def ensure_database(self) -> None:
        conn = self.connect("postgres")
        try:
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (self.db,))
                if cur.fetchone() is None:
                    # identifiers cannot be parameters; the name is ours and checked
                    if not re.fullmatch(r"[a-z_][a-z0-9_]*", self.db):
                        raise ValueError(f"bad database name {self.db!r}")
                    cur.execute(f'CREATE DATABASE "{self.db}"')
        finally:
            conn.close()

    def _pid(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc.pid
        try:
            pid = int((self.data / "postmaster.pid").read_text().splitlines()[0])
        except (OSError, ValueError, IndexError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            pass
        return pid

    def stop(self, timeout: float = STOP_TIMEOUT) -> bool:
        """Fast shutdown (SIGINT), then SIGKILL to the whole process group. True when stopped."""
        pid = self._pid()
        if pid is None:
            return True
        self._signal(pid, signal.SIGINT)
        if self._wait_gone(pid, timeout):
            return True
        self._signal(pid, signal.SIGKILL)
        return self._wait_gone(pid, 10)

    def _signal(self, pid: int, sig: int) -> None:
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            pass

    def _wait_gone(self, pid: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.pid == pid:
                if self.proc.poll() is not None:
                    return True
            else:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return True
            time.sleep(0.1)
        return False

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def env(self) -> dict[str, str]:
        """The variables deploy/dagster.yaml reads for its PostgreSQL storage."""
        return {
            "DAGSTER_PG_USERNAME": self.user,
            "DAGSTER_PG_PASSWORD": self.password,
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": self.db,
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A throwaway PostgreSQL on 127.0.0.1 for Dagster's storage.")
    parser.add_argument("command", choices=["up", "down", "install"])
    parser.add_argument("--dir", default="/tmp/chatetl-postgres", help="cluster folder (default %(default)s)")
    parser.add_argument("--port", type=int, default=55432)
    args = parser.parse_args(argv)

    if args.command == "install":
        ok, what = install()
        print(what, file=sys.stdout if ok else sys.stderr)
        return 0 if ok else 1
    bindir = find_bindir()
    if bindir is None:
        print("PostgreSQL binaries not found: `deploy/postgres.py install` (as root) or apt-get install -y postgresql",
              file=sys.stderr)
        return 1
    pg = ThrowawayPostgres(args.dir, args.port, bindir=bindir)
    if args.command == "down":
        stopped = pg.stop()
        print("postgres: stopped" if stopped else "postgres: did not stop", file=sys.stdout if stopped else sys.stderr)
        return 0 if stopped else 1
    if pg._pid() is not None and _port_answers(args.port):
        print(f"postgres: already running on 127.0.0.1:{args.port} (data {pg.data})")
        return 0
    try:
        pg.start()
    except RuntimeError as e:
        print(f"postgres: {e}", file=sys.stderr)
        return 1
    print(f"postgres: ready on 127.0.0.1:{args.port} (data {pg.data}); for deploy/dagster.yaml:")
    for key, value in pg.env().items():
        if key == "DAGSTER_PG_PASSWORD":  # never print a credential: point at its file
            value = f'"$(cat {pg.password_file})"'
        print(f"export {key}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
