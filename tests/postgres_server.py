"""A throwaway PostgreSQL server for the tests: ``initdb`` into a temporary directory,
``pg_ctl start`` on a free local port, one database, ``pg_ctl stop`` at the end.

PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` OS user
(created if missing) and the directory is handed to it. Where no PostgreSQL is installed, a
fresh CI machine (root, ``CI`` set) installs Debian's package once; elsewhere the tests
that need it are skipped with the reason."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from servers import free_port, install_on_ci

DATABASE = "sparkload_test"
USER = "postgres"


def _bin_dir() -> Path | None:
    # Debian keeps the server programs out of PATH, each version in a directory of its own.
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    if versions:
        return Path(versions[-1]).parent
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", USER], check=True)
    return ["runuser", "-u", USER, "--", *command]


class Unavailable(Exception):
    """No PostgreSQL to start here (the reason says why)."""


@contextmanager
def postgres_server() -> Iterator[str]:
    """The SQLAlchemy URL of a running server's test database, for as long as it runs."""
    bin_dir = _bin_dir()
    if bin_dir is None:
        install_on_ci("postgresql")
        bin_dir = _bin_dir()
    if bin_dir is None:
        raise Unavailable("PostgreSQL's initdb is not installed (apt-get install postgresql)")
    root = Path(tempfile.mkdtemp(prefix="sparkload_pg_"))
    data = root / "data"
    if os.geteuid() == 0:
        _as_server_user(["true"])  # creates the user when missing
        shutil.chown(root, USER)
        root.chmod(0o700)
    port = free_port()

    def run(*command: str) -> None:
        done = subprocess.run(_as_server_user(list(command)), capture_output=True, text=True)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(command)} failed: {done.stderr or done.stdout}")

    try:
        run(str(bin_dir / "initdb"), "-D", str(data), "-U", USER, "--auth=trust", "-E", "UTF8")
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start")
        try:
            run(str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, DATABASE)
            yield f"postgresql+psycopg2://{USER}@127.0.0.1:{port}/{DATABASE}"
        finally:
            run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
