"""The S3 artifact store: content addressing, idempotence, integrity, streaming."""

from __future__ import annotations

import hashlib
import io
import os

import pytest
from minio import Minio

from policy.enums import PrivacyClass
from store.artifacts import ArtifactStore, object_key
from store.errors import ArtifactIntegrityError, ArtifactNotFoundError, PayloadTooLargeError

pytestmark = pytest.mark.integration


async def test_round_trip_with_metadata(artifact_store: ArtifactStore) -> None:
    data = b'{"rows": 3}'
    ref = await artifact_store.put(
        "acct-rt", data, content_type="application/json", privacy=PrivacyClass.GOOGLE_DERIVED
    )
    assert ref.key == object_key("acct-rt", hashlib.sha256(data).hexdigest())
    assert ref.key.startswith("accounts/acct-rt/sha256/")
    assert (ref.size, ref.content_type) == (len(data), "application/json")
    assert await artifact_store.get("acct-rt", ref.key, ref.sha256) == data
    assert await artifact_store.stat("acct-rt", ref.key) == ref
    assert await artifact_store.privacy_of("acct-rt", ref.key) is PrivacyClass.GOOGLE_DERIVED


async def test_put_is_idempotent(artifact_store: ArtifactStore, s3: Minio, s3_bucket: str) -> None:
    data = os.urandom(1024)
    first = await artifact_store.put("acct-idem", data)
    stamp = s3.stat_object(s3_bucket, first.key).last_modified
    second = await artifact_store.put("acct-idem", data)
    assert second == first
    assert s3.stat_object(s3_bucket, first.key).last_modified == stamp
    assert [o.object_name for o in s3.list_objects(s3_bucket, prefix="accounts/acct-idem/", recursive=True)] == [
        first.key
    ]


async def test_tampered_object_is_refused(artifact_store: ArtifactStore, s3: Minio, s3_bucket: str) -> None:
    ref = await artifact_store.put("acct-tamper", b"the real bytes")
    forged = b"forged bytes!!"
    s3.put_object(s3_bucket, ref.key, io.BytesIO(forged), len(forged))
    with pytest.raises(ArtifactIntegrityError) as caught:
        await artifact_store.get("acct-tamper", ref.key, ref.sha256)
    assert caught.value.actual == hashlib.sha256(forged).hexdigest()
    with pytest.raises(ArtifactIntegrityError):
        (await artifact_store.get_file("acct-tamper", ref.key, ref.sha256)).close()


async def test_a_same_size_tampered_object_is_replaced_on_the_next_put(
    artifact_store: ArtifactStore, s3: Minio, s3_bucket: str
) -> None:
    # Content addressing skips the upload when the object already exists; only bytes that hash to the
    # address may count as "already there". A forged object of the same size (metadata copied too)
    # must not make every later identical result unreadable: the put re-verifies and replaces it.
    data = b"the real bytes"
    ref = await artifact_store.put("acct-poison", data, privacy=PrivacyClass.USER)
    forged = b"forged bytes!!"
    assert len(forged) == len(data)
    s3.put_object(s3_bucket, ref.key, io.BytesIO(forged), len(forged),
                  metadata={"sha256": ref.sha256, "privacy": "user", "account": "acct-poison"})
    again = await artifact_store.put("acct-poison", data, privacy=PrivacyClass.USER)
    assert again == ref
    assert await artifact_store.get("acct-poison", ref.key, ref.sha256) == data
    spooled = await artifact_store.put_stream("acct-poison", io.BytesIO(forged))  # the forger's own address
    s3.put_object(s3_bucket, spooled.key, io.BytesIO(data), len(data))
    await artifact_store.put_stream("acct-poison", io.BytesIO(forged))
    assert await artifact_store.get("acct-poison", spooled.key, spooled.sha256) == forged


async def test_missing_object_and_foreign_account(artifact_store: ArtifactStore) -> None:
    missing = object_key("acct-missing", "0" * 64)
    with pytest.raises(ArtifactNotFoundError):
        await artifact_store.get("acct-missing", missing, "0" * 64)
    assert not await artifact_store.exists("acct-missing", missing)
    ref = await artifact_store.put("acct-owner", b"mine")
    with pytest.raises(ArtifactNotFoundError):
        await artifact_store.get("acct-thief", ref.key, ref.sha256)


async def test_fifty_megabytes_stream_in_and_out(artifact_store: ArtifactStore, tmp_path) -> None:  # noqa: ANN001
    size = 50 * 1024 * 1024
    source = tmp_path / "payload.bin"
    digest = hashlib.sha256()
    with source.open("wb") as out:
        for _ in range(size // (1024 * 1024)):
            chunk = os.urandom(1024 * 1024)
            digest.update(chunk)
            out.write(chunk)
    with source.open("rb") as stream:
        ref = await artifact_store.put_stream("acct-big", stream, content_type="application/octet-stream")
    assert (ref.size, ref.sha256) == (size, digest.hexdigest())

    downloaded = await artifact_store.get_file("acct-big", ref.key, ref.sha256)
    try:
        back = hashlib.sha256()
        read = 0
        while chunk := downloaded.read(1024 * 1024):
            back.update(chunk)
            read += len(chunk)
    finally:
        downloaded.close()
    assert (read, back.hexdigest()) == (size, ref.sha256)


async def test_payload_limit(endpoints, s3_bucket: str) -> None:  # noqa: ANN001
    small = ArtifactStore(
        endpoint=endpoints.s3_endpoint, access_key=endpoints.s3_access_key, secret_key=endpoints.s3_secret_key,
        region=endpoints.s3_region, secure=endpoints.s3_secure, bucket=s3_bucket, max_payload_bytes=10,
    )
    with pytest.raises(PayloadTooLargeError):
        await small.put("acct-limit", b"x" * 11)
    with pytest.raises(PayloadTooLargeError):
        await small.put_stream("acct-limit", io.BytesIO(b"x" * 11))
