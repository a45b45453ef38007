"""The inspector's printed URLs name an address a browser can open, never the bind-all address."""

from __future__ import annotations

import pytest

from dossier.services.process import http_base


@pytest.mark.parametrize(("host", "url"), [
    ("0.0.0.0", "http://127.0.0.1:8234"),  # what the compose service binds
    ("", "http://127.0.0.1:8234"),
    ("::", "http://[::1]:8234"),
    ("127.0.0.1", "http://127.0.0.1:8234"),
    ("inspector.example", "http://inspector.example:8234"),
    ("fd00::5", "http://[fd00::5]:8234"),
])
def test_a_bind_address_becomes_a_url_a_browser_can_open(host: str, url: str) -> None:
    assert http_base(host, 8234) == url
