"""Viewer tokens: signed per account, expiring, revoked with their secret; the secret file is private."""

from __future__ import annotations

import multiprocessing
import secrets
import stat
import uuid
from pathlib import Path

import pytest

from dossier.inspector import auth
from dossier.inspector.auth import (
    SECRET_FILE,
    TOKEN_TTL_SECONDS,
    Viewer,
    issue_token,
    load_secret,
    verify_token,
    verify_viewer,
)

# Fixed, not random: it appears in test ids, which pytest-xdist workers must agree on.
ACCOUNT = "4b0b4709-115a-40b9-a2ae-d4160ec85b0d"


def test_the_secret_is_created_once_and_readable_by_its_owner_only(tmp_path: Path) -> None:
    first = load_secret(tmp_path)
    assert load_secret(tmp_path) == first and len(first) >= 32
    assert stat.S_IMODE((tmp_path / SECRET_FILE).stat().st_mode) == 0o600


def test_a_reader_while_the_secret_is_being_written_gets_the_complete_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Deterministic interleaving: while the first process is generating its secret, a second one loads it.
    seen: list[bytes] = []
    token_hex = secrets.token_hex

    def token_hex_with_a_concurrent_reader(nbytes: int) -> str:
        monkeypatch.setattr(auth.secrets, "token_hex", token_hex)
        seen.append(load_secret(tmp_path))
        return token_hex(nbytes)

    monkeypatch.setattr(auth.secrets, "token_hex", token_hex_with_a_concurrent_reader)
    first = load_secret(tmp_path)
    assert seen == [first] and len(first) >= 32
    assert stat.S_IMODE((tmp_path / SECRET_FILE).stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == [SECRET_FILE]


def _load_after(barrier: "multiprocessing.synchronize.Barrier", home: str, results: "multiprocessing.Queue[bytes | str]") -> None:
    barrier.wait()
    try:
        results.put(load_secret(Path(home)))
    except ValueError as e:
        results.put(str(e))


def test_processes_creating_the_secret_at_once_all_get_the_same_one(tmp_path: Path) -> None:
    processes = 8
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=_load_after, args=(barrier, str(tmp_path), results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    loaded = [results.get() for _ in workers]
    for worker in workers:
        worker.join()
    assert loaded == [load_secret(tmp_path)] * processes


def test_a_token_names_its_account_for_a_week(tmp_path: Path) -> None:
    secret = load_secret(tmp_path)
    token = issue_token(secret, ACCOUNT, now=1_000_000)
    assert TOKEN_TTL_SECONDS == 7 * 24 * 3600
    assert verify_token(secret, token, now=1_000_000 + TOKEN_TTL_SECONDS - 1) == ACCOUNT
    assert verify_token(secret, token, now=1_000_000 + TOKEN_TTL_SECONDS + 1) is None


def test_deleting_the_secret_revokes_every_token(tmp_path: Path) -> None:
    token = issue_token(load_secret(tmp_path), ACCOUNT)
    (tmp_path / SECRET_FILE).unlink()
    assert verify_token(load_secret(tmp_path), token) is None


@pytest.mark.parametrize("token", [None, "", "v1", "v2." + ACCOUNT + ".9999999999.sig", "x" * 500,
                                   f"v1.not-a-uuid.9999999999.sig", f"v1.{ACCOUNT}.soon.sig"])
def test_malformed_tokens_name_no_account(tmp_path: Path, token: str | None) -> None:
    assert verify_token(load_secret(tmp_path), token) is None


def test_a_token_changed_in_any_part_is_refused(tmp_path: Path) -> None:
    secret = load_secret(tmp_path)
    token = issue_token(secret, ACCOUNT)
    version, account, expires, signature = token.split(".")
    for changed in (f"{version}.{uuid.uuid4()}.{expires}.{signature}", f"{version}.{account}.{int(expires) + 1}."
                    f"{signature}", f"{version}.{account}.{expires}.{signature[:-1]}{'B' if signature.endswith('A') else 'A'}"):
        assert verify_token(secret, changed) is None
    assert verify_token(b"another secret of enough length, 123", token) is None


def test_only_a_token_issued_to_reveal_may_reveal_and_the_flag_cannot_be_added(tmp_path: Path) -> None:
    secret = load_secret(tmp_path)
    plain, revealing = issue_token(secret, ACCOUNT), issue_token(secret, ACCOUNT, reveal=True)
    assert verify_viewer(secret, plain) == Viewer(ACCOUNT, reveal=False)
    assert verify_viewer(secret, revealing) == Viewer(ACCOUNT, reveal=True)
    assert verify_token(secret, revealing) == ACCOUNT
    body, signature = plain.rsplit(".", 1)
    assert verify_viewer(secret, f"{body}.reveal.{signature}") is None  # the flag is under the signature
    body, signature = revealing.rsplit(".", 1)
    assert verify_viewer(secret, f"{body.removesuffix('.reveal')}.{signature}") is None
    assert verify_viewer(secret, f"{body.removesuffix('reveal')}peek.{signature}") is None
