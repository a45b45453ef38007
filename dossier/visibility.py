"""Registering Dossier's search attributes on a Temporal server.

A server refuses to start a workflow that names a search attribute it does
not know, so every server Dossier talks to must know the four Keyword
attributes of :data:`workflows.visibility.SEARCH_ATTRIBUTES`:

* the embedded dev server gets them on its command line
  (:func:`dev_server_args`, used by :mod:`dossier.services.temporal` and the
  test and harness environments);
* the compose stack registers them with a one-shot ``temporal-search-attributes``
  service (docker-compose.yml);
* any other server is brought up to date by :func:`ensure_search_attributes`
  whenever the runtime connects (:func:`dossier.runtime.temporal_client`):
  it adds the missing ones through the operator service. Where the server
  does not allow that (a hosted namespace whose attributes are managed
  elsewhere) and they are not already there, it raises
  :class:`~dossier.services.errors.SearchAttributesMissingError` naming them
  and the command that registers them, so the runtime stops at connect
  rather than at every workflow start.
"""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from dossier.services.errors import SearchAttributesMissingError
from workflows.visibility import SEARCH_ATTRIBUTES

logger = logging.getLogger(__name__)

SEARCH_ATTRIBUTE_NAMES: tuple[str, ...] = tuple(key.name for key in SEARCH_ATTRIBUTES)
"""``DossierConversationId``, ``DossierBranchId``, ``DossierParticipantId``, ``DossierRuntimeKind``."""


def dev_server_args() -> list[str]:
    """``temporal server start-dev`` flags registering every Dossier search attribute as Keyword."""
    args: list[str] = []
    for name in SEARCH_ATTRIBUTE_NAMES:
        args += ["--search-attribute", f"{name}=Keyword"]
    return args


async def ensure_search_attributes(client: Client, namespace: str) -> list[str]:
    """Add whichever Dossier search attributes the server lacks (idempotent).

    Where the operator service may not be used (listing refused), the attributes are checked with a
    visibility query instead (the workflow service refuses a query naming an unknown attribute).

    Args:
        namespace: the namespace the workflows run in.

    Returns:
        The names added (empty when all were there).

    Raises:
        SearchAttributesMissingError: some are missing and the server would not add them.
    """
    try:
        listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    except RPCError as error:
        missing = [name for name in SEARCH_ATTRIBUTE_NAMES if not await knows_search_attribute(client, name)]
        if missing:
            raise SearchAttributesMissingError(namespace, missing, f"cannot list search attributes: {error}") from error
        return []
    missing = [name for name in SEARCH_ATTRIBUTE_NAMES if name not in listed.custom_attributes]
    if not missing:
        return []
    try:
        await client.operator_service.add_search_attributes(AddSearchAttributesRequest(
            namespace=namespace,
            search_attributes={name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for name in missing},
        ))
    except RPCError as error:
        raise SearchAttributesMissingError(namespace, missing, str(error)) from error
    logger.info("temporal: registered search attributes %s", ", ".join(missing))
    return missing


async def knows_search_attribute(client: Client, name: str) -> bool:
    """Whether the client's namespace knows search attribute ``name`` (a visibility query naming it is accepted)."""
    try:
        await client.count_workflows(f"{name} = ''")
    except RPCError as error:
        if error.status == RPCStatusCode.INVALID_ARGUMENT:
            return False
        raise
    return True


__all__ = [
    "SEARCH_ATTRIBUTE_NAMES", "SearchAttributesMissingError", "dev_server_args", "ensure_search_attributes",
    "knows_search_attribute",
]
