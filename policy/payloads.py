"""Reading a captured result's bytes: as text, and as JSON or a Python literal.

Derivation, rendering, compaction and exact slicing all read a payload through
this module, so a row a summary counts is the row a locator slices and the
bytes a tool message shows.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any


def decode_payload(raw: bytes) -> str:
    """Raw bytes as text; undecodable bytes become U+FFFD rather than vanish.

    Derivation, exact slicing and capture all read bytes this one way, so a
    row a summary counts is the row a locator slices.
    """
    return raw.decode("utf-8", errors="replace")



LITERAL_MAX_BYTES = 1024 * 1024
"""Python-literal results above this size are not parsed (``ast`` trees cost
far more memory than the text); they get the unparsed-result memory."""

_NUMPY_REPR = re.compile(r"^array\((?P<body>.*?)(?:,\s*dtype=[\w.<>']+)?\)$", re.DOTALL)


class NumberText(str):
    """A number exactly as the result wrote it (``5.50``, ``1e3``), for renderings that must not reformat it."""


def parse_structured(text: str, allow_literal: bool = True, exact_numbers: bool = False) -> tuple[Any, str]:
    """Parse a structured result: JSON, else (when allowed) a Python literal.

    Agents built on Python frameworks often hand the model ``str()`` of a
    list or dict (``[{'id': '0007'}]``) or of a NumPy array
    (``array(['a@b.com'], dtype=object)``). ``ast.literal_eval`` reads those
    without executing anything; the value is converted to JSON types.

    Args:
        allow_literal: also try a Python literal when it is not JSON.
        exact_numbers: numbers come back as :class:`NumberText`, their text in
            the result, instead of ``int``/``float``.

    Returns:
        ``(data, source)`` where source is ``"json"`` or ``"python-literal"``.

    Raises:
        ValueError: neither parses (json.JSONDecodeError is a ValueError).
    """
    try:
        if exact_numbers:
            return json.loads(text, parse_float=NumberText, parse_int=NumberText, parse_constant=NumberText), "json"
        return json.loads(text), "json"
    except ValueError:
        stripped = text.strip()
        if not allow_literal or len(stripped) > LITERAL_MAX_BYTES:
            raise
        match = _NUMPY_REPR.match(stripped)
        source = match.group("body") if match else stripped
        if not source.startswith(("[", "{", "(")):  # only a container is wanted; shell output is not one
            raise ValueError("neither JSON nor a Python container literal") from None
        try:
            with warnings.catch_warnings(action="ignore"):  # the compiler warns on `1st` etc. in stray text
                tree = ast.parse(source, mode="eval")
            data = _literal(tree.body, source if exact_numbers else None)
        except (SyntaxError, ValueError, TypeError, MemoryError) as exc:
            raise ValueError(f"neither JSON nor a Python literal: {exc}") from None
        if not isinstance(data, (dict, list)):
            raise ValueError("not a JSON document or a Python container literal") from None
        return data, "python-literal"


_MISSING_NAMES = frozenset({"nan", "NaN", "inf", "NaT", "None"})
"""Bare names a repr of tabular data writes for missing values (pandas ``nan``, ``NaT``); read as null."""


def _literal(node: ast.AST, source: str | None = None) -> Any:
    """A Python literal's value in JSON types, like ``ast.literal_eval`` plus missing-value names.

    Only constants, containers, signed numbers and the names in
    :data:`_MISSING_NAMES` are accepted; anything else (a call, an
    attribute, an operator) is rejected, so nothing is ever executed.
    Tuples and sets become lists, dict keys strings, bytes their repr.
    With ``source`` (the parsed text), numbers are their :class:`NumberText`.
    """
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, (bytes, complex)) or value is Ellipsis:
            return repr(value)
        if source is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            return NumberText(ast.get_source_segment(source, node) or repr(value))
        return value
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item, source) for item in node.elts]
    if isinstance(node, ast.Set):
        return sorted((_literal(item, source) for item in node.elts), key=repr)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ValueError("dict unpacking is not a literal")
        return {str(_literal(key, source)): _literal(value, source)
                for key, value in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        if source is not None:
            operand = _literal(node.operand, source)
            if isinstance(operand, NumberText):
                return NumberText(ast.get_source_segment(source, node) or operand)
            if operand is None:
                return None
        operand = _literal(node.operand)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
        if operand is None:
            return None  # -inf, -nan
    if isinstance(node, ast.Name) and node.id in _MISSING_NAMES:
        return None
    raise ValueError(f"not a literal: {type(node).__name__}")
