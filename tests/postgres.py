"""A throwaway PostgreSQL server for the session tests, and the skip reasons when there can be none.

`postgres_server` (a pytest fixture, session scope) finds `initdb` and `pg_ctl` (on PATH, or where Debian puts
them: /usr/lib/postgresql/<version>/bin), creates a data directory in a new temporary folder, starts the server
on a free loopback port with its socket in that folder, and stops it and deletes the folder at the end of the
test session. PostgreSQL refuses to run as root: when the tests run as root, the folder is given to the
`postgres` user and initdb/pg_ctl run as that user. Durability is switched off (fsync, synchronous_commit): the
data is thrown away. Test modules import the fixture (`from postgres import postgres_server`) and call
`server.schema_dsn(name)` for a DSN whose search_path is a fresh schema, so each test starts from empty tables.
"""
from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import socket
import subprocess
import tempfile

import pytest


def find_tool(name: str):
    """The path of a PostgreSQL server program, newest version first, or None."""
    found = shutil.which(name)
    if found:
        return found
    candidates = glob.glob(f"/usr/lib/postgresql/*/bin/{name}")
    version = lambda path: [int(n) for n in re.findall(r"\d+", path.split("/")[3])]  # noqa: E731
    return max(candidates, key=version) if candidates else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """One server in a temporary folder; `dsn` reaches its `postgres` database as the `postgres` superuser."""

    def __init__(self, initdb: str, pg_ctl: str):
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.folder = tempfile.mkdtemp(prefix="miniagents-pg-")
        self.data = os.path.join(self.folder, "data")
        self.user = None
        if os.geteuid() == 0:
            try:
                self.user = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.folder)
                raise RuntimeError("running as root and there is no 'postgres' user to run PostgreSQL as") from None
            os.chown(self.folder, self.user.pw_uid, self.user.pw_gid)
        self.port = free_port()
        self.dsn = self.dsn_for()
        self._schemas = 0

    def _run(self, *args: str) -> None:
        as_user = {} if self.user is None else {"user": self.user.pw_uid, "group": self.user.pw_gid}
        done = subprocess.run(args, cwd=self.folder, capture_output=True, text=True, timeout=120, **as_user)
        if done.returncode != 0:
            raise RuntimeError(f"{os.path.basename(args[0])} failed: {done.stdout[-2000:]}{done.stderr[-2000:]}")

    def start(self) -> None:
        self._run(self.initdb, "-D", self.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off "
                   "-c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run(self.pg_ctl, "-D", self.data, "-l", os.path.join(self.folder, "server.log"), "-w", "-t", "60",
                  "-o", options, "start")

    def stop(self) -> None:
        try:
            if os.path.exists(os.path.join(self.data, "postmaster.pid")):
                self._run(self.pg_ctl, "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def dsn_for(self, schema=None, user="postgres") -> str:
        """A DSN for `user`, with `schema` first on the search_path when given."""
        dsn = f"host=127.0.0.1 port={self.port} user={user} dbname=postgres connect_timeout=10"
        return dsn if schema is None else f"{dsn} options='-csearch_path={schema}'"

    def create_schema(self, driver) -> str:
        """A new empty schema's name (created through `driver`, as the superuser)."""
        self._schemas += 1
        name = f"t{os.getpid()}_{self._schemas}"
        self.run_sql(driver, f"CREATE SCHEMA {name}")
        return name

    def schema_dsn(self, driver) -> str:
        """A DSN whose search_path is a new empty schema: each test starts from no tables."""
        return self.dsn_for(self.create_schema(driver))

    def run_sql(self, driver, statement: str) -> None:
        conn = driver.connect(self.dsn)
        try:
            conn.autocommit = True
            conn.cursor().execute(statement)
        finally:
            conn.close()


def postgres_unavailable():
    """Why no PostgreSQL server can be started here, or None."""
    if os.name != "posix":
        return "the PostgreSQL fixture needs a POSIX system"
    if find_tool("initdb") is None or find_tool("pg_ctl") is None:
        return "PostgreSQL is not installed (no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin)"
    return None


@pytest.fixture(scope="session")
def postgres_server():
    reason = postgres_unavailable()
    if reason:
        pytest.skip(reason)
    try:
        server = PostgresServer(find_tool("initdb"), find_tool("pg_ctl"))
    except RuntimeError as exc:
        pytest.skip(str(exc))
    try:
        server.start()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        server.stop()
        pytest.skip(f"PostgreSQL did not start: {exc}")
    yield server
    server.stop()
