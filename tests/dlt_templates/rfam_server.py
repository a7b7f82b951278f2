"""A stand-in for the public Rfam MySQL database dlt's sql_database and default templates
read (``mysql+pymysql://rfamro@mysql-rfam-public.ebi.ac.uk:4497/Rfam``): a throwaway
MariaDB listening on 127.0.0.1:4497 inside a namespace (``netns``) where that host name is
127.0.0.1, with the read-only user ``rfamro`` (no password) and an ``Rfam`` database holding
the tables the templates read (``family``, ``genome``), shaped as Rfam's, filled with a few
hundred made-up rows.

The server is started inside the namespace (its TCP port exists only there); the tests load
the data through its Unix socket, which is a file and reachable from outside. MariaDB runs as
the ``mysql`` OS user its package creates. Where no MariaDB is installed, a fresh CI machine
(root, ``CI`` set) installs Debian's package once; elsewhere ``Unavailable`` says why.
"""

from __future__ import annotations

import datetime
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pymysql
from netns import Namespace, Unavailable, isolated_network
from servers import install_on_ci, stop

HOST = "mysql-rfam-public.ebi.ac.uk"
PORT = 4497
DATABASE = "Rfam"
USER = "rfamro"
SERVER_USER = "mysql"
ROWS = {"family": 120, "genome": 300}

# Rfam's columns for these tables, those the templates' tables are made of: text of several
# lengths, doubles with a declared precision, an enum, big integers, flags, and the
# `created`/`updated` times the templates' incrementals use as cursors.
SCHEMA = (
    """CREATE TABLE `family` (
        `rfam_acc` varchar(7) NOT NULL,
        `rfam_id` varchar(40) NOT NULL,
        `description` varchar(75) DEFAULT NULL,
        `author` tinytext,
        `gathering_cutoff` double(5,2) DEFAULT NULL,
        `trusted_cutoff` double(5,2) DEFAULT NULL,
        `num_seed` bigint(20) DEFAULT NULL,
        `num_full` bigint(20) DEFAULT NULL,
        `type` varchar(50) NOT NULL,
        `clen` int(10) DEFAULT NULL,
        `match_pair_node` tinyint(1) DEFAULT 0,
        `hmm_lambda` double DEFAULT NULL,
        `created` datetime NOT NULL,
        `updated` timestamp NOT NULL DEFAULT current_timestamp(),
        PRIMARY KEY (`rfam_acc`)
    )""",
    """CREATE TABLE `genome` (
        `upid` varchar(20) NOT NULL,
        `assembly_acc` varchar(20) DEFAULT NULL,
        `assembly_version` int(4) DEFAULT NULL,
        `assembly_name` varchar(400) DEFAULT NULL,
        `assembly_level` enum('contig','chromosome','scaffold','complete-genome') DEFAULT NULL,
        `description` mediumtext,
        `total_length` bigint(20) unsigned DEFAULT NULL,
        `circular` tinyint(1) DEFAULT NULL,
        `ncbi_id` int(10) unsigned NOT NULL,
        `scientific_name` varchar(300) DEFAULT NULL,
        `kingdom` varchar(50) DEFAULT NULL,
        `num_families` int(10) DEFAULT NULL,
        `is_reference` tinyint(1) NOT NULL DEFAULT 1,
        `created` datetime NOT NULL,
        `updated` timestamp NOT NULL DEFAULT current_timestamp(),
        PRIMARY KEY (`upid`)
    )""",
)

INSERT_FAMILY = (
    "INSERT INTO `family` (`rfam_acc`, `rfam_id`, `description`, `author`, `gathering_cutoff`, "
    "`trusted_cutoff`, `num_seed`, `num_full`, `type`, `clen`, `match_pair_node`, `hmm_lambda`, "
    "`created`, `updated`) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INSERT_GENOME = (
    "INSERT INTO `genome` (`upid`, `assembly_acc`, `assembly_version`, `assembly_name`, "
    "`assembly_level`, `description`, `total_length`, `circular`, `ncbi_id`, `scientific_name`, "
    "`kingdom`, `num_families`, `is_reference`, `created`, `updated`) "
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)


def _moment(rng: random.Random, start_year: int) -> datetime.datetime:
    start = datetime.datetime(start_year, 1, 1)
    return start + datetime.timedelta(seconds=rng.randrange(3 * 365 * 24 * 3600))


def family_rows(rng: random.Random) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(ROWS["family"]):
        created = _moment(rng, 2013)
        rows.append(
            (
                f"RF{i + 1:05d}",
                f"fam_{i + 1}",
                None if i % 17 == 0 else f"made-up RNA family {i + 1}",
                f"Author {i % 9}; Author {i % 5}",
                round(rng.uniform(20, 80), 2),
                round(rng.uniform(20, 80), 2),
                rng.randrange(2, 400),
                rng.randrange(10, 10**6) if i % 11 else None,
                rng.choice(["Gene; rRNA;", "Gene; tRNA;", "Cis-reg; riboswitch;", "Intron;"]),
                rng.randrange(40, 3000),
                i % 2,
                rng.uniform(0.5, 0.8),
                created,
                created + datetime.timedelta(days=rng.randrange(1, 900)),
            )
        )
    return rows


def genome_rows(rng: random.Random) -> list[tuple[Any, ...]]:
    rows = []
    for i in range(ROWS["genome"]):
        created = _moment(rng, 2017)
        rows.append(
            (
                f"UP{i + 1:09d}",
                f"GCA_{rng.randrange(10**8, 10**9)}",
                rng.randrange(1, 4),
                f"ASM{i + 1}v1" if i % 13 else None,
                rng.choice(["contig", "chromosome", "scaffold", "complete-genome", None]),
                f"genome {i + 1} of a made-up organism, sequenced whole" * (1 + i % 3),
                rng.randrange(10**5, 10**10),
                rng.choice([0, 1, None]),
                rng.randrange(1, 4 * 10**9),
                f"Organism {i + 1}",
                rng.choice(["bacteria", "archaea", "eukaryota", "viruses"]),
                rng.randrange(0, 300),
                i % 4 != 0,
                created,
                created + datetime.timedelta(hours=rng.randrange(1, 20000)),
            )
        )
    return rows


def load(connection: pymysql.connections.Connection) -> None:
    """The Rfam database, its tables and rows, and its read-only user."""
    rng = random.Random(4497)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE `{DATABASE}`")
        cursor.execute(f"USE `{DATABASE}`")
        for statement in SCHEMA:
            cursor.execute(statement)
        cursor.executemany(INSERT_FAMILY, family_rows(rng))
        cursor.executemany(INSERT_GENOME, genome_rows(rng))
        cursor.execute("CREATE USER %s@'%%'", (USER,))
        cursor.execute(f"GRANT SELECT ON `{DATABASE}`.* TO %s@'%%'", (USER,))
    connection.commit()


def _programs() -> tuple[str, str] | None:
    server, install_db = shutil.which("mariadbd") or "/usr/sbin/mariadbd", shutil.which("mariadb-install-db")
    if install_db is None or not Path(server).exists():
        return None
    return server, install_db


def _connect(socket: Path, deadline: float, server: subprocess.Popen[bytes], log: Path) -> Any:
    """root's connection through the Unix socket (MariaDB lets the OS user root in as root)."""
    while True:
        if server.poll() is not None:
            raise Unavailable(f"mariadbd exited ({server.returncode}): {_tail(log)}")
        try:
            return pymysql.connect(unix_socket=str(socket), user="root")
        except pymysql.err.OperationalError:
            if time.monotonic() > deadline:
                raise Unavailable(f"mariadbd did not answer within 60s: {_tail(log)}") from None
            time.sleep(0.1)


def _tail(log: Path) -> str:
    try:
        return log.read_text()[-2000:]
    except FileNotFoundError:
        return "(no log)"


@contextmanager
def rfam_namespace() -> Iterator[Namespace]:
    """A namespace where the Rfam host name is a local MariaDB holding Rfam-like tables."""
    root = Path(tempfile.mkdtemp(prefix="sparkload_rfam_"))
    try:
        data, socket, log = root / "data", root / "mysqld.sock", root / "mysqld.log"
        # The namespace first: where none can be made, installing MariaDB would not help.
        with isolated_network((HOST,), root) as namespace:
            programs = _programs()
            if programs is None:
                install_on_ci("mariadb-server")
                programs = _programs()
            if programs is None:
                raise Unavailable("MariaDB is not installed (apt-get install mariadb-server)")
            server_program, install_db = programs
            # The namespace takes root: the server's user is handed its folder.
            shutil.chown(root, SERVER_USER)
            installed = subprocess.run(
                [install_db, "--no-defaults", f"--datadir={data}", f"--user={SERVER_USER}", "--skip-test-db"],
                capture_output=True,
                text=True,
            )
            if installed.returncode != 0:
                raise Unavailable(f"mariadb-install-db failed: {installed.stderr or installed.stdout}")
            # mariadbd started as root drops to --user itself; nsenter execs it, so this
            # process is the server.
            server = subprocess.Popen(
                namespace.command(
                    [
                        server_program,
                        "--no-defaults",
                        f"--datadir={data}",
                        f"--user={SERVER_USER}",
                        f"--socket={socket}",
                        f"--port={PORT}",
                        "--bind-address=127.0.0.1",
                        f"--pid-file={root / 'mysqld.pid'}",
                        f"--log-error={log}",
                        "--skip-name-resolve",
                    ]
                ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                with closing(_connect(socket, time.monotonic() + 60, server, log)) as connection:
                    load(connection)
                yield namespace
            finally:
                stop(server, grace=30)
    finally:
        shutil.rmtree(root, ignore_errors=True)
