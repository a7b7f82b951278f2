"""A network of its own for programs that name public hosts: a new network and mount
namespace where only the loopback exists and a hosts file of ours maps the names given to
127.0.0.1.

dlt's sql_database and default templates connect to a public MySQL host by its name and port
(in their text, which is run unchanged). Inside the namespace that name is a server of the
tests on 127.0.0.1 at the same port, and nothing reaches the internet. The namespace is held
open by a process that sleeps (``unshare``); programs join it with ``nsenter``. Making one
takes root (CAP_SYS_ADMIN): elsewhere ``Unavailable`` says why not.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

TOOLS = ("unshare", "nsenter", "ip", "mount")
# setns(2)'s flag for a network namespace (linux/sched.h).
CLONE_NEWNET = 0x40000000


class Unavailable(Exception):
    """No namespace can be made here (the reason says why)."""


class Namespace:
    """A running namespace: ``command`` runs a program inside it."""

    def __init__(self, holder: subprocess.Popen[bytes]) -> None:
        self._holder = holder

    def command(self, argv: list[str], cwd: Path | None = None) -> list[str]:
        """``argv`` as a command that runs inside the namespace (its network and mounts), in
        ``cwd`` if given: entering a mount namespace otherwise leaves it in ``/``."""
        wd = [f"--wdns={cwd}"] if cwd is not None else []
        return ["nsenter", "--target", str(self._holder.pid), "--net", "--mount", *wd, "--", *argv]

    def inside(self, make: Callable[[], T]) -> T:
        """``make()`` called on a thread of this process that joined the namespace's network:
        the sockets it opens are the namespace's (a server listening there), and they stay
        the namespace's when other threads use them. Only that thread joins (setns(2) moves
        the calling thread), and it ends once ``make`` returned."""
        outcome: list[T] = []
        failure: list[BaseException] = []

        def joined() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                with open(f"/proc/{self._holder.pid}/ns/net") as net:
                    if libc.setns(net.fileno(), CLONE_NEWNET) != 0:
                        errno = ctypes.get_errno()
                        raise Unavailable(f"setns into the network namespace failed: {os.strerror(errno)}")
                outcome.append(make())
            except BaseException as error:  # handed to the caller's thread
                failure.append(error)

        thread = threading.Thread(target=joined, name="in-namespace")
        thread.start()
        thread.join()
        if failure:
            raise failure[0]
        return outcome[0]

    def run(self, argv: list[str]) -> None:
        done = subprocess.run(self.command(argv), capture_output=True, text=True)
        if done.returncode != 0:
            raise Unavailable(f"{' '.join(argv)} failed in the namespace: {done.stderr or done.stdout}")


def _hosts(names: tuple[str, ...]) -> str:
    lines = ["127.0.0.1 localhost", "::1 localhost", *(f"127.0.0.1 {name}" for name in names)]
    return "".join(f"{line}\n" for line in lines)


@contextmanager
def isolated_network(names: tuple[str, ...], folder: Path) -> Iterator[Namespace]:
    """A namespace where each of ``names`` resolves to 127.0.0.1, for as long as it runs."""
    if os.geteuid() != 0:
        raise Unavailable("a network namespace takes root (unshare --net)")
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise Unavailable(f"{', '.join(missing)} not installed (util-linux, iproute2)")
    hosts = folder / "hosts"
    hosts.write_text(_hosts(names))
    # Private propagation: the hosts file mounted over /etc/hosts stays inside.
    holder = subprocess.Popen(
        ["unshare", "--net", "--mount", "--propagation", "private", "--", "sleep", "infinity"],
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_apart(holder)
        namespace = Namespace(holder)
        namespace.run(["ip", "link", "set", "lo", "up"])
        namespace.run(["mount", "--bind", str(hosts), "/etc/hosts"])
        yield namespace
    finally:
        holder.kill()
        holder.wait()


def _wait_until_apart(holder: subprocess.Popen[bytes]) -> None:
    """Wait until the holder sleeps in namespaces of its own (unshare made them and made its
    mounts private before it became ``sleep``): joined any earlier, ``nsenter`` would enter
    this process's own, and the hosts file would be mounted over the machine's."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if holder.poll() is not None:
            _, error = holder.communicate()
            raise Unavailable(f"unshare --net --mount failed: {error.decode().strip()}")
        try:
            apart = Path(f"/proc/{holder.pid}/comm").read_text().strip() == "sleep" and all(
                os.readlink(f"/proc/{holder.pid}/ns/{kind}") != os.readlink(f"/proc/self/ns/{kind}")
                for kind in ("net", "mnt")
            )
        except FileNotFoundError:
            apart = False
        if apart:
            return
        time.sleep(0.05)
    raise Unavailable("unshare --net --mount made no namespace within 10s")
