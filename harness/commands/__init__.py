"""The harness's CLI commands, added to ``dossier`` through the ``dossier.commands`` entry points."""
