"""Scenario definitions, one module per theme; each exports ``SCENARIOS``."""
