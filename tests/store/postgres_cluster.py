"""A throwaway PostgreSQL cluster for the tests: started once per test session on 127.0.0.1 (a free port, a
temporary folder, trust auth, fsync off), one fresh database per test, stopped at the end whatever happens.

The server refuses to run as root, and CI runs as root: there the server programs run as the `postgres` user
(`runuser`), in a folder that user owns. Without PostgreSQL installed, `PostgresMissing` says how to get it; the
tests that need it fail with that message rather than skip.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SERVER_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)  # Debian's layout, newest first
INSTALL_HINT = (
    "PostgreSQL is not installed: the PostgreSQL store's tests start their own throwaway server. "
    "Install it with `apt-get install postgresql` (Debian/Ubuntu; the server programs initdb and pg_ctl "
    "are looked up on PATH and in /usr/lib/postgresql/*/bin)."
)


class PostgresMissing(RuntimeError):
    pass


def server_program(name: str) -> str:
    """The path of a server program (initdb, pg_ctl, ...): Debian keeps them off PATH."""
    found = shutil.which(name) or next((str(d / name) for d in SERVER_DIRS if (d / name).is_file()), None)
    if found is None:
        raise PostgresMissing(INSTALL_HINT)
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Cluster:
    """A running cluster: `url(name)` is the address of one of its databases."""

    folder: Path
    port: int
    as_postgres: bool  # running as root: the server programs run as the postgres user
    _names: itertools.count[int] = field(default_factory=itertools.count)

    def _run(self, program: str, *args: str) -> None:
        command = [server_program(program), *args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.folder / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout}{done.stderr}{tail}")

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def start(self) -> None:
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self.resume()

    def _options(self) -> str:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        return options + " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"

    def resume(self) -> None:
        """Start the server of an existing data folder."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "log"),
            "-w",
            "-o",
            self._options(),
            "start",
        )

    def restart(self) -> None:
        """Restart the server (fast: sessions are ended, as when an operator restarts it), with its options. The
        new server would hold captured pipes open forever: pg_ctl's output goes to the cluster's log."""
        command = [server_program("pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "log")]
        command += ["-m", "fast", "-w", "restart"]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    def halt(self) -> None:
        """Stop the server, keeping its data."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(RuntimeError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def psql(self, database: str, sql: str) -> None:
        """Run SQL in one of the cluster's databases."""
        self._run(
            "psql",
            "-h",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-U",
            "postgres",
            "-d",
            database,
            "-v",
            "ON_ERROR_STOP=1",
            "-q",
            "-c",
            sql,
        )

    def emptied(self, database: str) -> str:
        """The URL of `database` with every row of paperwatch's tables gone (ids restart), its schema and
        migration records kept: much cheaper than a new database for tests that run the whole bot."""
        self.psql(database, _TRUNCATE_ALL)
        return self.url(database)

    def database(self, name: str) -> str:
        """The URL of database `name`, created when missing (a kept cluster's store)."""
        try:
            self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        except RuntimeError as exc:
            if "already exists" not in str(exc):
                raise
        return self.url(name)

    def new_database(self) -> str:
        """A fresh, empty database's URL."""
        name = f"test_{os.getpid()}_{next(self._names)}"
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return self.url(name)


_TRUNCATE_ALL = """DO $$ DECLARE tables text; BEGIN
    SELECT string_agg(quote_ident(tablename), ', ') INTO tables FROM pg_tables
     WHERE schemaname = current_schema() AND tablename <> 'schema_migrations';
    IF tables IS NOT NULL THEN EXECUTE 'TRUNCATE ' || tables || ' RESTART IDENTITY CASCADE'; END IF;
END $$"""


def kept_cluster(folder: Path, port: int) -> Cluster:
    """A cluster whose data stays in `folder` between runs (bench/: a store built once): created on first use,
    started now; the caller stops it (`Cluster.halt`), keeping its data."""
    server_program("initdb")
    as_postgres = os.geteuid() == 0
    folder.mkdir(parents=True, exist_ok=True)
    if as_postgres:
        shutil.chown(folder, user="postgres")
    cluster = Cluster(folder, port, as_postgres)
    if not (cluster.data / "PG_VERSION").exists():
        cluster.start()
    else:
        cluster.resume()
    return cluster


def start_cluster() -> Cluster:
    """Start a cluster (stopped by `Cluster.stop`, and at exit should the caller never get to it)."""
    server_program("initdb")
    as_postgres = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp(prefix="paperwatch-pg-"))
    if as_postgres:
        shutil.chown(folder, user="postgres")
    cluster = Cluster(folder, _free_port(), as_postgres)
    atexit.register(cluster.stop)  # an interrupted session (Ctrl-C, a crash) still stops its server
    try:
        cluster.start()
    except BaseException:
        cluster.stop()
        raise
    return cluster
