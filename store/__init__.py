"""Persistence: the runtime graph in Postgres and raw payloads in S3.

Modules::

    store.graph        every graph function in one namespace (re-exports)
    store.conversations, store.branches, store.messages, store.tools,
    store.tool_memories, store.user_memories, store.skills, store.checkpoints,
    store.candidates, store.assemblies   the functions, by entity
    store.bulk         GraphBatch: many nodes of a conversation in one seq block
                       and one COPY per table; account deletion; ANALYZE
    store.payloads     inline-or-S3 capture and verified reads of tool payloads
    store.artifacts    ArtifactStore: content-addressed objects over the S3 API
    store.records      records for what the policy core does not model
    store.errors       the StoreError tree
    store.db           engine and session factories
    store.migrate      alembic upgrade, programmatically
    store.models       SQLAlchemy models (ORM objects never leave store/)

Callers own the session and the transaction: every graph function takes an
``AsyncSession`` and an ``account_id`` and never commits. Importing this
package has no side effects.
"""
