"""The resources a tool call reads or writes: what supersession follows besides the call's own subject.

A memory's subject (:func:`policy.derive.subject_key`) is its tool and identifying
arguments: a newer result of the same call replaces an older one. That misses
a file read with one tool and rewritten with another, or a record read and then
updated: the resource changed, so what was read of it is no longer current. A
memory therefore also names its **resources**, each with the call's effect:

* declared on the tool spec: ``resource_args`` (the arguments that name it) and
  ``resource_kind`` (``file``, ``record:<table>``, or any word);
* inferred otherwise, for files: an argument called ``path``, ``file``,
  ``file_path``, ``filepath`` or ``filename`` names a file (normalised: ``./a/../b.py``
  is ``b.py``);
* inferred for records: a tool ``<family>.<verb>_<entity>`` with an argument
  ``<entity>_id`` (or ``id``) names the record ``<family>.<entity>``, so
  ``crm.get_account(account_id=A-1)`` and ``crm.update_account(account_id=A-1)`` share
  one while ``billing.list_invoices(account_id=A-1)`` (another entity) does not;
* the effect: ``effect`` on the spec, else inferred from the verb the tool's name
  starts its last segment with (``write``, ``update``, ``set``, ``delete``, ...: a
  write; anything else: a read).

A key is ``r:`` or ``w:`` then a digest of the kind and value, so the value (a
path, a record id: text of the call's arguments) is never stored in clear and
retention has nothing to remove from it. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any

from policy.records import canonical_json
from policy.tools import ToolSpec

FILE_ARGS = ("path", "file", "file_path", "filepath", "filename")
"""Argument names that name a file when the spec declares no resource."""
WRITE_VERBS = ("write", "update", "set", "delete", "remove", "put", "patch", "create", "save", "edit", "replace",
               "move", "rename", "append", "insert", "upsert", "overwrite", "modify", "apply")
"""Verbs a tool's name starts its last segment with when it changes what it names."""
READ, WRITE = "r:", "w:"

_VERB = re.compile(r"^(?P<verb>[a-z]+)_(?P<entity>[a-z][a-z0-9_]*)$")


def writes(spec: ToolSpec) -> bool:
    """Whether a call of ``spec`` changes the resources it names (declared, else inferred from its name)."""
    if spec.effect != "auto":
        return spec.effect == "write"
    last = spec.name.rsplit(".", 1)[-1].lower()
    return any(last == verb or last.startswith(verb + "_") for verb in WRITE_VERBS)


def _normal_path(value: str) -> str:
    path = posixpath.normpath(value.strip().replace("\\", "/"))
    return path.removeprefix("./") if path != "." else path


def _digest(kind: str, value: Any) -> str:
    text = _normal_path(value) if kind == "file" and isinstance(value, str) else canonical_json(value)
    return hashlib.sha256(f"{kind}\x00{text}".encode("utf-8", "surrogatepass")).hexdigest()[:32]


def named_resources(spec: ToolSpec, arguments: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(kind, value)`` of every resource the call names."""
    if spec.resource_args is not None:
        kind = spec.resource_kind or "resource"
        values = [arguments.get(name) for name in spec.resource_args]
        if any(value is None for value in values):
            return []
        return [(kind, values[0] if len(values) == 1 else values)]
    found = [("file", arguments[name]) for name in FILE_ARGS
             if isinstance(arguments.get(name), str) and arguments[name].strip()]
    family, _, last = spec.name.rpartition(".")
    match = _VERB.match(last.lower())
    if family and match:
        entity = match.group("entity").removesuffix("s")
        for name in (f"{entity}_id", "id"):
            value = arguments.get(name)
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                found.append((f"record:{family}.{entity}", value))
                break
    return found


def resource_keys(spec: ToolSpec, arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The keys a memory of this call stores: effect prefix and digest, one per resource, sorted."""
    effect = WRITE if writes(spec) else READ
    return tuple(sorted({effect + _digest(kind, value) for kind, value in named_resources(spec, arguments)}))


def bare(keys: Iterable[str]) -> set[str]:
    """The digests of ``keys`` without their effect."""
    return {key[2:] for key in keys}


def both_effects(keys: Iterable[str]) -> tuple[str, ...]:
    """Every key that names the same resources as ``keys``, read or write (what a lookup matches)."""
    return tuple(sorted({prefix + digest for digest in bare(keys) for prefix in (READ, WRITE)}))


def supersedes_by_resource(new_keys: Iterable[str], old_keys: Iterable[str]) -> bool:
    """Whether a newer result replaces an older one because they name a resource in common.

    A write replaces every earlier result of what it wrote (the resource changed); a read replaces an earlier
    write of it (the read shows what is there now). Two reads replace each other only by subject, as before:
    two different reads of one file (its text, a search in it) are both still true.
    """
    new, old = set(new_keys), set(old_keys)
    shared = bare(new) & bare(old)
    if not shared:
        return False
    return any(WRITE + digest in new or WRITE + digest in old for digest in shared)


__all__ = [
    "FILE_ARGS",
    "READ",
    "WRITE",
    "WRITE_VERBS",
    "bare",
    "both_effects",
    "named_resources",
    "resource_keys",
    "supersedes_by_resource",
    "writes",
]
