"""What the fixtures that start a real server share: a free port, Debian's package installed
on a fresh CI machine, and a process stopped for good.

A server the tests need (PostgreSQL, MariaDB) is installed by the fixture itself on CI,
because nothing installed by hand survives to a new machine; elsewhere the tests that need it
skip, saying why."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

LOCALHOST = "127.0.0.1"


def free_port(host: str = LOCALHOST) -> int:
    """A TCP port nothing listens on now at ``host``."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def install_on_ci(package: str) -> None:
    """Install Debian's ``package`` where that is a fresh CI machine's job: as root, with
    ``CI`` set and apt-get there. A failure is left to the caller, which finds the program
    still missing and says so."""
    if os.geteuid() != 0 or not os.environ.get("CI") or not shutil.which("apt-get"):
        return
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # Test runs side by side (`nox -s ci`'s lanes) may install at once: the second waits
    # for dpkg's lock instead of failing on it.
    wait = ["-o", "DPkg::Lock::Timeout=600"]
    subprocess.run(["apt-get", *wait, "update"], check=False, env=env, capture_output=True)
    subprocess.run(["apt-get", *wait, "install", "-y", package], check=False, env=env, capture_output=True)


def stop(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """Ask ``process`` to end, and kill it if it has not within ``grace`` seconds."""
    process.terminate()
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
