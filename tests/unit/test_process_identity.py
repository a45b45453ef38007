"""A service process is known by pid and start time, and a step of the wall clock does not make it a stranger.

psutil's ``create_time`` is boot time plus the kernel's start ticks; boot time is the wall clock minus the
uptime, so an NTP step or a resumed VM moves every ``create_time`` by the step. Seen here: a SeaweedFS that
was running read as stopped after an 11-second step, the next ``ensure`` started a second one on the same
data folder, and it died on the folder's lock.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import pytest

from dossier.services.process import ProcessHandle, ProcessRecord, is_alive, spawn, start_ticks, terminate

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="start ticks come from /proc (Linux)")


@pytest.fixture
def sleeper(tmp_path):
    handle = spawn(["sleep", "60"], tmp_path / "sleep.log", cwd=tmp_path)
    try:
        yield handle
    finally:
        terminate(handle, grace=1)


def test_a_recorded_process_stays_known_across_a_wall_clock_step(sleeper: ProcessHandle) -> None:
    assert sleeper.start_ticks is not None and sleeper.start_ticks == start_ticks(sleeper.pid)
    stepped = replace(sleeper, create_time=sleeper.create_time - 11.0)  # what psutil said before the step
    assert is_alive(stepped)
    record = ProcessRecord.model_validate(stepped.identity())
    assert record.is_running()


def test_a_recycled_pid_is_still_a_stranger(sleeper: ProcessHandle) -> None:
    assert not is_alive(replace(sleeper, start_ticks=sleeper.start_ticks - 1))
    # A record written before start ticks were kept falls back to create_time, as it always did.
    assert is_alive(replace(sleeper, start_ticks=None))
    assert not is_alive(replace(sleeper, start_ticks=None, create_time=sleeper.create_time - 11.0))


def test_start_ticks_of_a_gone_process_are_unknown() -> None:
    assert start_ticks(2**22 + 12345) is None
