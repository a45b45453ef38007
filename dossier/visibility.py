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
  it adds the missing ones through the operator service, and logs, instead
  of failing, where the server does not allow that (a hosted namespace whose
  attributes are managed elsewhere).
"""

from __future__ import annotations

import logging

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.client import Client
from temporalio.service import RPCError

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

    Args:
        client: a connected client.
        namespace: the namespace the workflows run in.

    Returns:
        The names added (empty when all were there, or when the server refused to add them).
    """
    try:
        listed = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    except RPCError as error:
        logger.warning("temporal: cannot list search attributes (%s); register %s as Keyword by hand",
                       error, ", ".join(SEARCH_ATTRIBUTE_NAMES))
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
        logger.warning("temporal: cannot add search attributes %s (%s); register them as Keyword by hand",
                       ", ".join(missing), error)
        return []
    logger.info("temporal: registered search attributes %s", ", ".join(missing))
    return missing


__all__ = ["SEARCH_ATTRIBUTE_NAMES", "dev_server_args", "ensure_search_attributes"]
