"""The artifact store: raw tool payloads in any S3-compatible object store.

Objects are content-addressed per account::

    accounts/<account_id>/sha256/<hex digest>

so a put is idempotent (an existing object whose bytes hash to its address is
not uploaded again; one that does not, whatever its size or metadata, is
replaced) and a read can prove it returns the bytes that were stored: every read re-hashes
and raises :class:`ArtifactIntegrityError` on a mismatch instead of
returning the bytes. The sha256 is computed here, never taken from the
ETag (multipart ETags are not content hashes).

The ``minio`` client is synchronous; every call runs in a worker thread
(``asyncio.to_thread``) so the event loop is never blocked. MinIO, AWS S3
and SeaweedFS all work: only the endpoint configuration differs.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import logging
import tempfile
from collections.abc import Callable
from typing import IO, TypeVar

import urllib3
from minio import Minio
from minio.error import InvalidResponseError, S3Error, ServerError

from policy.enums import PrivacyClass
from store.errors import (
    ArtifactIntegrityError,
    ArtifactNotFoundError,
    ArtifactStoreError,
    ArtifactStoreUnavailableError,
    PayloadTooLargeError,
)
from store.records import StoreRecord
from store.tracing import tracer

logger = logging.getLogger(__name__)

T = TypeVar("T")

CHUNK_SIZE = 1024 * 1024
"""Read and hash granularity for streams."""
SPOOL_MAX_BYTES = 8 * 1024 * 1024
"""Streams larger than this are spooled to a temporary file, not held in memory."""
PART_SIZE = 16 * 1024 * 1024
"""Multipart upload part size (objects above it upload in parts)."""

META_SHA256 = "sha256"
META_PRIVACY = "privacy"
META_ACCOUNT = "account"
_NOT_FOUND_CODES = {"NoSuchKey", "NoSuchObject", "ResourceNotFound"}


class ObjectRef(StoreRecord):
    """Where a payload lives and what it is."""

    key: str
    """The object key (``accounts/<account>/sha256/<hex>``)."""
    sha256: str
    """Hex sha256 of the bytes."""
    size: int
    """Size in bytes."""
    content_type: str
    """MIME type stored with the object."""


def object_key(account_id: str, sha256: str) -> str:
    """The content address of ``sha256`` in ``account_id``.

    Args:
        sha256: hex digest of the payload.

    Returns:
        ``accounts/<account_id>/sha256/<hex>``.
    """
    return f"accounts/{account_id}/sha256/{sha256.lower()}"


def _meta(headers: dict[str, str] | None, name: str) -> str | None:
    # Servers return metadata as X-Amz-Meta-<Name>; the case varies.
    wanted = f"x-amz-meta-{name}"
    for key, value in (headers or {}).items():
        if key.lower() in (wanted, name):
            return value
    return None


class _Discard(io.RawIOBase):
    """A sink that keeps nothing (hashing an existing object only to verify it)."""

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        return len(data)


class ArtifactStore:
    """Content-addressed payload storage over the S3 API.

    Args:
        endpoint: ``host:port`` of the S3 endpoint (no scheme).
        bucket: the bucket holding every account's objects.
        region: the bucket region (given explicitly to skip a location lookup).
        max_payload_bytes: refuse larger payloads (``None``: no limit).
        client: a preconfigured client (tests, custom TLS); overrides the
            connection arguments.
    """

    def __init__(
        self,
        *,
        endpoint: str,
        access_key: str | None,
        secret_key: str | None,
        bucket: str,
        region: str = "us-east-1",
        secure: bool = False,
        max_payload_bytes: int | None = None,
        client: Minio | None = None,
    ) -> None:
        self.bucket = bucket
        self.max_payload_bytes = max_payload_bytes
        self._client = client or Minio(
            endpoint,
            access_key=access_key,
            secret_key=secret_key,
            secure=secure,
            region=region,
            http_client=urllib3.PoolManager(
                timeout=urllib3.Timeout(connect=5.0, read=60.0),
                maxsize=16,
                # A few fast retries for dropped connections; Temporal owns the real retry policy.
                retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=[500, 502, 503, 504]),
            ),
        )
        self._region = region

    # ------------------------------------------------------------------ plumbing

    async def _call(self, fn: Callable[[], T], key: str | None = None, *, operation: str) -> T:
        # One span per S3 request, beneath the caller's (an activity's) span; no key: it names the account.
        with tracer().start_as_current_span(f"s3 {operation}", attributes={
            "rpc.system": "s3", "rpc.method": operation, "s3.bucket": self.bucket,
        }):
            return await self._request(fn, key)

    async def _request(self, fn: Callable[[], T], key: str | None) -> T:
        try:
            return await asyncio.to_thread(fn)
        except S3Error as error:
            if error.code in _NOT_FOUND_CODES and key is not None:
                raise ArtifactNotFoundError(key) from error
            raise ArtifactStoreError(f"S3 {error.code}: {error.message}") from error
        except (ServerError, InvalidResponseError, urllib3.exceptions.HTTPError, OSError) as error:
            raise ArtifactStoreUnavailableError(f"S3 endpoint unavailable: {error}") from error

    def _check_account(self, account_id: str, key: str) -> None:
        # A key outside the caller's prefix reads as missing: no probing across accounts.
        if not key.startswith(f"accounts/{account_id}/"):
            raise ArtifactNotFoundError(key)

    def _check_size(self, size: int) -> None:
        if self.max_payload_bytes is not None and size > self.max_payload_bytes:
            raise PayloadTooLargeError(f"{size} bytes; maximum {self.max_payload_bytes}")

    # ------------------------------------------------------------------ bucket

    async def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (safe to call concurrently)."""

        def ensure() -> None:
            if self._client.bucket_exists(self.bucket):
                return
            try:
                self._client.make_bucket(self.bucket, location=self._region)
            except S3Error as error:
                if error.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    raise

        await self._call(ensure, operation="EnsureBucket")

    # ------------------------------------------------------------------ writes

    def ref_for(self, account_id: str, data: bytes, *,
                content_type: str = "application/octet-stream") -> ObjectRef:
        """The reference :meth:`put` would return for ``data``, computed without any request.

        A caller that records a write before making it (``store.objects.record_object``) knows the key first.

        Raises:
            PayloadTooLargeError: over ``max_payload_bytes``.
        """
        self._check_size(len(data))
        digest = hashlib.sha256(data).hexdigest()
        return ObjectRef(key=object_key(account_id, digest), sha256=digest, size=len(data), content_type=content_type)

    async def put(
        self,
        account_id: str,
        data: bytes,
        *,
        content_type: str = "application/octet-stream",
        privacy: PrivacyClass = PrivacyClass.USER,
    ) -> ObjectRef:
        """Store ``data``; idempotent (an object already present is not re-uploaded).

        Args:
            privacy: its privacy class, stored as object metadata.

        Raises:
            PayloadTooLargeError: over ``max_payload_bytes``.
            ArtifactStoreUnavailableError: the endpoint failed (retry).
        """
        self._check_size(len(data))
        digest = hashlib.sha256(data).hexdigest()
        return await self._upload(account_id, io.BytesIO(data), digest, len(data), content_type, privacy)

    async def put_stream(
        self,
        account_id: str,
        stream: IO[bytes],
        *,
        content_type: str = "application/octet-stream",
        privacy: PrivacyClass = PrivacyClass.USER,
    ) -> ObjectRef:
        """Store a payload read from a binary stream, without holding it in memory.

        The stream is hashed while it is spooled to a temporary file (in
        memory up to :data:`SPOOL_MAX_BYTES`), so the upload has a known
        length and a content address.

        Args:
            stream: a readable binary file-like object; read to its end.
            privacy: its privacy class, stored as object metadata.

        Raises:
            PayloadTooLargeError: over ``max_payload_bytes``.
            ArtifactStoreUnavailableError: the endpoint failed (retry).
        """
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX_BYTES)  # noqa: SIM115 - closed below

        def spool_and_hash() -> tuple[str, int]:
            digest, size = hashlib.sha256(), 0
            while chunk := stream.read(CHUNK_SIZE):
                digest.update(chunk)
                spool.write(chunk)
                size += len(chunk)
                self._check_size(size)
            return digest.hexdigest(), size

        try:
            digest, size = await asyncio.to_thread(spool_and_hash)
            return await self._upload(account_id, spool, digest, size, content_type, privacy)
        finally:
            spool.close()

    async def _upload(
        self,
        account_id: str,
        spool: IO[bytes],
        digest: str,
        size: int,
        content_type: str,
        privacy: PrivacyClass,
    ) -> ObjectRef:
        key = object_key(account_id, digest)
        ref = ObjectRef(key=key, sha256=digest, size=size, content_type=content_type)
        try:
            existing = await self._call(lambda: self._client.stat_object(self.bucket, key), key, operation="HeadObject")
        except ArtifactNotFoundError:
            existing = None
        if existing is not None and existing.size == size:
            # Size and metadata prove nothing (a same-size object with copied metadata passes both): only
            # bytes that hash to the address may stand in for this upload. Read them back and hash them.
            try:
                stored: str | None = await self._call(lambda: self._read_into(key, _Discard()), key, operation="GetObject")
            except ArtifactNotFoundError:  # removed since the stat: upload it
                stored = None
            if stored == digest:
                return ref
            logger.warning("artifact %s holds bytes hashing to %s, not its address: uploading again", key, stored)
        elif existing is not None:
            logger.warning("artifact %s has %s bytes, expected %s: uploading again", key, existing.size, size)

        def upload() -> None:
            spool.seek(0)
            self._client.put_object(
                self.bucket,
                key,
                spool,  # type: ignore[arg-type]
                length=size,
                content_type=content_type,
                metadata={
                    META_SHA256: digest,
                    META_PRIVACY: PrivacyClass(privacy).value,
                    META_ACCOUNT: account_id,
                },
                part_size=PART_SIZE,
            )

        await self._call(upload, key, operation="PutObject")
        return ref

    # ------------------------------------------------------------------ reads

    async def stat(self, account_id: str, key: str) -> ObjectRef:
        """The reference of a stored object, from its metadata (no content read).

        Returns:
            The reference (``sha256`` as recorded at upload).

        Raises:
            ArtifactNotFoundError: no such object in the account.
        """
        self._check_account(account_id, key)
        info = await self._call(lambda: self._client.stat_object(self.bucket, key), key, operation="HeadObject")
        return ObjectRef(
            key=key,
            sha256=_meta(dict(info.metadata or {}), META_SHA256) or key.rsplit("/", 1)[-1],
            size=info.size or 0,
            content_type=info.content_type or "application/octet-stream",
        )

    async def privacy_of(self, account_id: str, key: str) -> PrivacyClass | None:
        """The privacy class recorded with an object, if any.

        Raises:
            ArtifactNotFoundError: no such object in the account.
        """
        self._check_account(account_id, key)
        info = await self._call(lambda: self._client.stat_object(self.bucket, key), key, operation="HeadObject")
        value = _meta(dict(info.metadata or {}), META_PRIVACY)
        return PrivacyClass(value) if value else None

    async def exists(self, account_id: str, key: str) -> bool:
        """Whether an object exists under ``key`` in the account."""
        try:
            await self.stat(account_id, key)
        except ArtifactNotFoundError:
            return False
        return True

    def _read_into(self, key: str, sink: IO[bytes]) -> str:
        response = self._client.get_object(self.bucket, key)
        try:
            digest = hashlib.sha256()
            for chunk in response.stream(CHUNK_SIZE):
                digest.update(chunk)
                sink.write(chunk)
            return digest.hexdigest()
        finally:
            response.close()
            response.release_conn()

    async def get(self, account_id: str, key: str, expected_sha256: str) -> bytes:
        """The verified bytes of an object.

        Args:
            expected_sha256: the hash the caller recorded for it.

        Returns:
            The bytes, only if they hash to ``expected_sha256``.

        Raises:
            ArtifactNotFoundError: no such object in the account.
            ArtifactIntegrityError: the bytes do not match the hash.
        """
        self._check_account(account_id, key)
        buffer = io.BytesIO()
        actual = await self._call(lambda: self._read_into(key, buffer), key, operation="GetObject")
        if actual != expected_sha256.lower():
            raise ArtifactIntegrityError(key, expected_sha256, actual)
        return buffer.getvalue()

    async def get_file(self, account_id: str, key: str, expected_sha256: str) -> IO[bytes]:
        """The verified content of an object as a file, for large payloads.

        The object is streamed into a temporary file (in memory up to
        :data:`SPOOL_MAX_BYTES`) while it is hashed; the file is returned,
        rewound, only after the hash matched. The caller closes it.

        Args:
            expected_sha256: the hash the caller recorded for it.

        Returns:
            A readable binary file positioned at the start.

        Raises:
            ArtifactNotFoundError: no such object in the account.
            ArtifactIntegrityError: the bytes do not match the hash.
        """
        self._check_account(account_id, key)
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MAX_BYTES)  # noqa: SIM115 - returned to the caller
        try:
            actual = await self._call(lambda: self._read_into(key, spool), key, operation="GetObject")
            if actual != expected_sha256.lower():
                raise ArtifactIntegrityError(key, expected_sha256, actual)
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool  # type: ignore[return-value]

    async def put_at(self, account_id: str, key: str, data: bytes, *,
                     content_type: str = "application/octet-stream") -> ObjectRef:
        """Store ``data`` under a key of the account's own choosing (the retention archive prefix).

        Args:
            account_id: the owning account; ``key`` must be under its prefix.

        Raises:
            ArtifactNotFoundError: ``key`` lies outside the account's prefix.
            ArtifactStoreUnavailableError: the endpoint failed (retry).
        """
        self._check_account(account_id, key)
        digest = hashlib.sha256(data).hexdigest()

        def upload() -> None:
            self._client.put_object(self.bucket, key, io.BytesIO(data), length=len(data), content_type=content_type,
                                    metadata={META_SHA256: digest, META_ACCOUNT: account_id}, part_size=PART_SIZE)

        await self._call(upload, key, operation="PutObject")
        return ObjectRef(key=key, sha256=digest, size=len(data), content_type=content_type)

    async def list_keys(self, account_id: str, *, limit: int = 1000) -> list[str]:
        """Up to ``limit`` object keys under the account's prefix (live and archived), in key order.

        Args:
            limit: the most keys returned.
        """
        prefix = f"accounts/{account_id}/"

        def keys() -> list[str]:
            found: list[str] = []
            for entry in self._client.list_objects(self.bucket, prefix=prefix, recursive=True):
                found.append(entry.object_name)
                if len(found) >= limit:
                    break
            return found

        return await self._call(keys, operation="ListObjects")

    # ------------------------------------------------------------------ deletes

    async def delete(self, account_id: str, key: str) -> None:
        """Remove an object (retention, account deletion, fault injection).

        Content addressing means the object may back several artifacts of the
        same account; the caller decides that none still needs it. Removing a
        missing object is not an error (S3 semantics), so a retried delete is safe.

        Raises:
            ArtifactNotFoundError: ``key`` lies outside the account's prefix.
        """
        self._check_account(account_id, key)
        await self._call(lambda: self._client.remove_object(self.bucket, key), key, operation="DeleteObject")
