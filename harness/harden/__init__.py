"""The hardening suite of ``dossier harden``: one module per part."""
