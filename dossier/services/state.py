"""The services state file: what runs, where, with which credentials.

`$DOSSIER_HOME/services.json` maps a service name to its record (pid, ports,
URL, credentials). Every change happens inside `locked_state()`, which holds an
exclusive `flock` on `$DOSSIER_HOME/services.lock` for the whole
read-start-write cycle, so two processes running `ensure_services` at once
start each service only once: the second one waits, then finds the first one's
records alive and reuses them.

Writes go to a temporary file that is renamed over the old one, so a reader
without the lock (`services_status`) never sees half a file. The file holds
S3 credentials and is therefore readable by its owner only.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dossier.services.errors import ServiceConfigError

STATE_FILE = "services.json"
LOCK_FILE = "services.lock"

#: One record per service name; each service module owns the shape of its record.
State = dict[str, dict[str, Any]]


def read_state(home: Path) -> State:
    """Read the state file without taking the lock.

    Args:
        home: The `DOSSIER_HOME` folder.

    Returns:
        The records by service name; empty when the file does not exist yet.

    Raises:
        ServiceConfigError: If the file exists but is not valid JSON.
    """
    path = home / STATE_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ServiceConfigError(f"{path} is not valid JSON ({e}); delete it to start afresh") from e
    if not isinstance(data, dict):
        raise ServiceConfigError(f"{path} should hold a JSON object; delete it to start afresh")
    return data


def write_state(home: Path, state: State) -> None:
    """Replace the state file atomically (temporary file, fsync, rename).

    Call it only inside `locked_state()`.

    Args:
        home: The `DOSSIER_HOME` folder.
        state: The records by service name.
    """
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".services.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(state, f, indent=2, sort_keys=True)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        # mkstemp already created the file 0600: the credentials inside stay private.
        os.replace(tmp, home / STATE_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked_state(home: Path) -> Iterator[State]:
    """Hold the services lock and yield the current state for changes.

    Changes are written back when the block exits, also when it raises: a
    service that did start before a later one failed stays recorded, so it is
    reused (or stopped) next time instead of leaking.

    Args:
        home: The `DOSSIER_HOME` folder; created if missing.

    Yields:
        The records by service name, to be changed in place.

    Raises:
        ServiceConfigError: If `home` cannot be created or locked.
    """
    try:
        home.mkdir(parents=True, exist_ok=True)
        lock = open(home / LOCK_FILE, "a")  # noqa: SIM115 - closed in the finally below
    except OSError as e:
        raise ServiceConfigError(f"cannot use DOSSIER_HOME {home}: {e}") from e
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read_state(home)
        before = json.dumps(state, sort_keys=True)
        try:
            yield state
        finally:
            if json.dumps(state, sort_keys=True) != before:
                write_state(home, state)
    finally:
        # Closing the file releases the flock.
        lock.close()
