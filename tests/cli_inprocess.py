"""Run ``dossier ARGS`` in this process, through the CLI's own ``main(argv)``, as a subprocess would see it.

A CLI process costs about 4 s to start on 2 cores (interpreter, imports, settings); the refusal matrices
run dozens of commands whose point is what the command does, not how the interpreter starts. Each run
gets its own environment, working directory, stdin, stdout and stderr, and a thread of its own, so the
command's ``asyncio.run`` never meets the test's event loop. The tests that are about the process itself
(exit codes, stderr, argv limits) still start a real one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dossier.cli import main


@contextlib.contextmanager
def _process_state(env: Mapping[str, str], cwd: Path, stdin: bytes) -> Iterator[tuple[io.BytesIO, io.BytesIO]]:
    """The environment, cwd and standard streams of a fresh process, restored afterwards (logging too)."""
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    root = logging.getLogger()
    saved_handlers, saved_level = root.handlers[:], root.level
    out, err = io.BytesIO(), io.BytesIO()
    try:
        os.environ.clear()
        os.environ.update(env)
        os.chdir(cwd)
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
        sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
        yield out, err
    finally:
        wrappers = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for wrapper in wrappers:  # detached, so that collecting a wrapper never closes the bytes it wrote
            if isinstance(wrapper, io.TextIOWrapper):
                wrapper.flush()
                wrapper.detach()
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        root.handlers[:] = saved_handlers
        root.setLevel(saved_level)


def run_cli(args: Sequence[str | bytes], *, env: Mapping[str, str], cwd: Path,
            stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """``dossier *args`` as :func:`subprocess.run` would report it; bytes arguments arrive as the OS decodes them."""
    argv = [os.fsdecode(arg) for arg in args]

    def run() -> subprocess.CompletedProcess[bytes]:
        with _process_state(env, cwd, stdin) as (out, err):
            try:
                code = main(argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
        return subprocess.CompletedProcess(["dossier", *argv], code, out.getvalue(), err.getvalue())

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(run).result()
