"""Offline tools for Dossier agents and the registry that offers and runs them.

``activities.tools.registry`` is the entry point (:func:`~activities.tools.registry.default_registry`,
:class:`~activities.tools.registry.ToolRegistry`); the other modules each hold one
family of tools: ``workspace`` (list and read the sample data), ``table``
(exact group sums), ``files`` (generated files in object storage), ``human``
(deferred calls a user answers) and ``diag`` (retries and heartbeats on purpose).
"""
