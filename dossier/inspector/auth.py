"""Who may look: per-account viewer tokens for the inspector.

The inspector serves one account per viewer. A viewer proves which account
with a token that names the account and an expiry and is signed (HMAC-SHA256)
with a secret kept under ``$DOSSIER_HOME`` (``inspector-secret``, created once,
readable by its owner only). ``dossier inspector --account ID`` prints a login
URL carrying a fresh token; ``/login`` checks it and keeps it in an HttpOnly,
SameSite=Strict cookie. Every page then reads with the token's account and no
other: there is no way to name an account in a URL.

    secret = load_secret(settings.dossier_home)
    token = issue_token(secret, account_id)             # "v1.<account>.<expires>.<signature>"
    verify_token(secret, token)                         # -> account id, or None
    issue_token(secret, account_id, reveal=True)        # "v1.<account>.<expires>.reveal.<signature>"
    verify_viewer(secret, token)                        # -> Viewer(account_id, reveal), or None

A token may also carry ``reveal`` (``dossier inspector --url --reveal``): only
its holder can ask to see the raw bytes of a secret-class artifact, and each
such reveal is logged. The flag is under the signature, so it cannot be added
to a token that lacks it.

Anyone holding a token sees its account until it expires; rotating the secret
(deleting the file) revokes every token at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

SECRET_FILE = "inspector-secret"
"""Under ``DOSSIER_HOME``: the key viewer tokens are signed with."""

COOKIE = "dossier_inspector"
"""The cookie ``/login`` sets with the viewer's token."""

TOKEN_TTL_SECONDS = 7 * 24 * 3600
"""How long a printed login URL stays valid (a week)."""

_VERSION = "v1"
_REVEAL = "reveal"


@dataclass(frozen=True)
class Viewer:
    """Who a valid token lets in."""

    account_id: str
    """The one account the viewer reads."""
    reveal: bool = False
    """The viewer may ask to see secret-class raw payloads (each reveal is logged)."""


def load_secret(home: Path) -> bytes:
    """The signing secret under ``home``, created (0600, 32 random bytes) on first use.

    Creation is atomic: processes loading it at once all get the first writer's secret, never an empty file.

    Args:
        home: the ``DOSSIER_HOME`` folder.
    """
    path = home / SECRET_FILE
    home.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        _create_secret(path)
    value = path.read_text().strip()
    if len(value) < 32:
        raise ValueError(f"{path} holds no usable secret; delete it to create a new one")
    return value.encode()


def _create_secret(path: Path) -> None:
    """Write a fresh secret to ``path`` unless another process already has: the first writer wins.

    The secret is written whole to a private (0600) temporary file next to ``path`` and then
    hard-linked to ``path``; the link fails if ``path`` exists. So ``path`` appears with its
    complete content or not at all, and a concurrent reader never sees it empty or half written.
    """
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mkstemp: mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process created it first; everyone uses that one
    finally:
        os.unlink(temporary)


def _sign(secret: bytes, body: str) -> str:
    digest = hmac.new(secret, body.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def issue_token(secret: bytes, account_id: str, *, ttl_seconds: int = TOKEN_TTL_SECONDS,
                now: float | None = None, reveal: bool = False) -> str:
    """A viewer token for ``account_id``.

    Args:
        secret: the signing secret (:func:`load_secret`).
        account_id: the account the viewer may read.
        ttl_seconds: how long the token is valid.
        now: the current time (default: the clock).
        reveal: the viewer may ask to see secret-class raw payloads.

    Returns:
        ``v1.<account>.<expires>.<signature>``, with ``.reveal`` before the signature when ``reveal``.

    Raises:
        ValueError: an account id that is not a UUID.
    """
    account = str(uuid.UUID(account_id))
    expires = int((time.time() if now is None else now) + ttl_seconds)
    body = f"{_VERSION}.{account}.{expires}" + (f".{_REVEAL}" if reveal else "")
    return f"{body}.{_sign(secret, body)}"


def verify_viewer(secret: bytes, token: str | None, *, now: float | None = None) -> Viewer | None:
    """The viewer a token names, if it is well formed, signed with ``secret`` and not expired.

    Args:
        token: the token as presented (may be ``None`` or anything).
        now: the current time (default: the clock).

    Returns:
        The viewer, or ``None`` for any token that does not check out.
    """
    if not token or len(token) > 200:
        return None
    parts = token.split(".")
    if len(parts) not in (4, 5) or parts[0] != _VERSION or (len(parts) == 5 and parts[3] != _REVEAL):
        return None
    body, signature = ".".join(parts[:-1]), parts[-1]
    if not hmac.compare_digest(_sign(secret, body), signature):
        return None
    try:
        account = str(uuid.UUID(parts[1]))
        expires = int(parts[2])
    except ValueError:
        return None
    if expires < (time.time() if now is None else now):
        return None
    return Viewer(account, reveal=len(parts) == 5)


def verify_token(secret: bytes, token: str | None, *, now: float | None = None) -> str | None:
    """The account a token names (:func:`verify_viewer`), or ``None`` for any token that does not check out."""
    viewer = verify_viewer(secret, token, now=now)
    return viewer.account_id if viewer else None


__all__ = ["COOKIE", "SECRET_FILE", "TOKEN_TTL_SECONDS", "Viewer", "issue_token", "load_secret", "verify_token",
           "verify_viewer"]
