"""Every inspector response carries the security headers the README promises: no script may run."""

from __future__ import annotations

from starlette.testclient import TestClient

from dossier.inspector.app import CSP, create_app


def test_no_page_may_run_a_script() -> None:
    app = create_app(None, secret=b"s" * 32)  # type: ignore[arg-type]  # these pages read no store
    with TestClient(app) as client:
        for path, status in (("/healthz", 200), ("/", 401), ("/runs/x", 401), ("/login?token=forged", 401)):
            response = client.get(path, follow_redirects=False)
            assert response.status_code == status, path
            assert response.headers["content-security-policy"] == CSP, path
            assert response.headers["x-content-type-options"] == "nosniff", path
            assert response.headers["x-frame-options"] == "DENY", path
    directives = dict(part.strip().split(" ", 1) for part in CSP.split(";"))
    assert directives["default-src"] == "'none'" and "script-src" not in directives
