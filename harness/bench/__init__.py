"""Benchmarks: context economy and fidelity against peer strategies, and cost as the graph grows.

``dossier bench ...`` runs them (see harness/commands/bench.py); results go to
``bench-results/`` as Markdown tables and PNG plots. Benchmarks measure; they
never assert timings (tests only check that they run on a tiny input).
"""
