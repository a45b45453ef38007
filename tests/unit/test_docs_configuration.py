"""The docs' Configuration page names the environment variable of every setting."""

from __future__ import annotations

import re
from pathlib import Path

from dossier.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _named() -> set[str]:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    return set(re.findall(r"`([A-Z][A-Z0-9_]+)`", text))


def test_every_setting_is_in_the_configuration_section() -> None:
    variables = {name.upper() for name in Settings.model_fields}
    missing = sorted(variables - _named())
    assert not missing, f"settings missing from the docs' Configuration page: {missing}"


def test_the_section_names_no_setting_that_is_gone() -> None:
    gone = sorted(_named() - {name.upper() for name in Settings.model_fields})
    assert not gone, f"the docs' Configuration page names variables no setting reads: {gone}"
