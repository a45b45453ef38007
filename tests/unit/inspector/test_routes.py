"""Every inspector page that reads by id is listed in READ_PATHS (what the isolation prober must cover)."""

from __future__ import annotations

from starlette.routing import Route

from dossier.inspector.app import READ_PATHS, create_app
from dossier.inspector.reads import RECORD_KINDS


def test_every_page_with_an_id_or_a_query_is_a_read_path() -> None:
    app = create_app(None, secret=b"0" * 32)  # type: ignore[arg-type] - no request is made
    listed = {path.split("?")[0] for path in READ_PATHS}
    pages = {route.path for route in app.routes if isinstance(route, Route)}
    # The provenance page takes the record's kind in its path: each kind is a read path of its own.
    pages = {p for p in pages if "{kind}" not in p} | {
        p.replace("{kind}", kind).replace("{record_id}", f"{{{kind}_id}}") for p in pages if "{kind}" in p
        for kind in RECORD_KINDS}
    assert {p for p in pages if "{" in p} <= listed
    # Pages without ids but with id parameters in their query string.
    assert "/what-if" in listed
    assert pages - listed == {"/healthz", "/login", "/logout", "/"}
