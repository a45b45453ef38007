"""The inspector: a server-rendered web app for reading the audit trail of one account.

`dossier inspector` serves it (and `dossier services up` starts it as a service):
conversations and their branch tree, the human transcript, each model run with
its assembled context beside what transcript replay would have sent, the
included and omitted records with their reasons, provenance down to the raw
artifact, why-not, what-if and diff, and links to the Temporal UI.

Modules: `auth` (per-account viewer tokens), `reads` (account-scoped reads for
the pages), `audit_views` (why-not, what-if and diff on `dossier.audit`), `app`
(routes, templates, security headers), `__main__` (the service process).
"""
