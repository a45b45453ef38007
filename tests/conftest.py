"""Session-wide fixtures shared by every test folder.

Services start lazily: only a test that asks for `endpoints` (directly or
through `database_url` / `s3_bucket` in tests/integration) starts them, so unit
tests run without any. The embedded services are left running at the end of
the session on purpose: the next run reuses them (`make services-down` stops
them). Services configured in the environment (`DATABASE_URL`, `S3_ENDPOINT`,
`TEMPORAL_ADDRESS`) are used instead of embedded ones.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings as settings_profiles

from dossier.services import Endpoints, ensure_services
from dossier.settings import Settings


@pytest.fixture(scope="session")
def settings() -> Settings:
    """Settings from the environment, as the CLI and worker would build them."""
    return Settings()


@pytest.fixture(scope="session")
def endpoints(settings: Settings) -> Endpoints:
    """Postgres and S3 endpoints, starting the embedded services when not configured."""
    return ensure_services(settings, ("postgres", "s3"))


# Hypothesis: `dev` (the everyday `make test`) runs a tenth of the examples; `ci` (`make test-all`, CI) the full
# counts each property names. HYPOTHESIS_PROFILE picks one; the default is dev.
settings_profiles.register_profile("dev", max_examples=20, deadline=None)
settings_profiles.register_profile("ci", max_examples=100, deadline=None, print_blob=True)
settings_profiles.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
