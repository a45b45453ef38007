"""What machine and software a benchmark ran on: every results file says so."""

from __future__ import annotations

import os
from pathlib import Path
import platform
import sys
from datetime import UTC, datetime
from importlib import metadata

import psutil

PACKAGES = (
    "temporalio", "sqlalchemy", "asyncpg", "minio", "tiktoken", "pydantic",
    "langchain-core", "langchain", "openai-agents", "matplotlib",
)


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_machine() -> dict[str, object]:
    """CPU, cores, memory, OS, Python and the versions of the packages that matter."""
    return {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "logical_cores": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0],
        "packages": {package: _version(package) for package in PACKAGES},
    }


def machine_markdown(machine: dict[str, object]) -> str:
    """The machine description as a short Markdown paragraph."""
    packages = ", ".join(f"{name} {version}" for name, version in machine["packages"].items())  # type: ignore[union-attr]
    return (
        f"Measured {machine['measured_at']} on this machine: {machine['cpu']}, {machine['logical_cores']} logical "
        f"cores, {machine['memory_gib']} GiB RAM, {machine['os']}, Python {machine['python']}; embedded PostgreSQL "
        f"18, SeaweedFS S3 and the Temporal dev server on the same host. Packages: {packages}."
    )


def repo_relative(path: str | Path) -> str:
    """``path`` as committed outputs name it: relative to the repository, never a path of this machine."""
    root = Path(__file__).resolve().parents[2]
    return os.path.relpath(Path(path).resolve(), root)
