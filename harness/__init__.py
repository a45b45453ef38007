"""Development harnesses: the seed scenarios and the benchmarks.

They drive the runtime from outside, through the same I/O steps, client and
worker a deployment uses, and may import anything; nothing in the runtime
(``policy``, ``contracts``, ``store``, ``activities``, ``workflows``) or the
application (``dossier``) imports them. They ship as their own distribution
(``harness/pyproject.toml``), never in the runtime wheel.
"""
