"""ShortIds: unique prefixes of the real ids, lengthened on collision, order-independent."""

from __future__ import annotations

import itertools
import random
import uuid

import pytest

from policy.lines import ShortIds
from policy_builders import candidates, memory, system_text

A = "3f2a91c0-1111-4aaa-8000-000000000001"
B = "3f2a91c0-2222-4bbb-8000-000000000002"
C = "3f2a91c0-2222-4ccc-8000-000000000003"
D = "3f2a91c0-2222-4ccc-8000-000000000004"
E = "77777777-0000-4000-8000-000000000000"

SHORT_TABLE = [
    # (case, ids, expected short forms)
    ("distinct at 8", [A, E], {A: "3f2a91c0", E: "77777777"}),
    ("collision at 8 lengthens to 12", [A, B, E], {A: "3f2a91c01111", B: "3f2a91c02222", E: "77777777"}),
    ("collision at 12 lengthens to 16", [B, C], {B: "3f2a91c022224bbb", C: "3f2a91c022224ccc"}),
    ("collision at 16 falls back to the whole id", [C, D],
     {C: "3f2a91c022224ccc8000000000000003", D: "3f2a91c022224ccc8000000000000004"}),
    ("each id as short as its own collisions allow", [A, B, C, D, E], {
        A: "3f2a91c01111", B: "3f2a91c022224bbb", C: "3f2a91c022224ccc8000000000000003",
        D: "3f2a91c022224ccc8000000000000004", E: "77777777",
    }),
    ("ids shorter than 8 chars", ["m1", "m2", "a-b"], {"m1": "m1", "m2": "m2", "a-b": "ab"}),
    ("duplicates are harmless", [A, A, E], {A: "3f2a91c0", E: "77777777"}),
]


@pytest.mark.parametrize(("ids", "expected"), [r[1:] for r in SHORT_TABLE], ids=[r[0] for r in SHORT_TABLE])
def test_short_ids(ids, expected):
    short = ShortIds(ids)
    assert {full: short(full) for full in expected} == expected


@pytest.mark.parametrize("seed", range(5))
def test_short_ids_are_unique_prefixes_for_random_uuids(seed):
    rng = random.Random(seed)
    # Force collisions: many ids share their first 8 or 12 hex digits.
    stems = [f"{rng.getrandbits(32):08x}" for _ in range(4)]
    ids = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(200)]
    ids += [stem + str(uuid.UUID(int=rng.getrandbits(128)))[8:] for stem in stems for _ in range(20)]
    short = ShortIds(ids)
    forms = {full: short(full) for full in ids}
    assert len(set(forms.values())) == len(set(ids)), "short ids must be unique"
    for full, form in forms.items():
        plain = full.replace("-", "")
        assert plain.startswith(form), "a short id is a prefix of the real id, never invented"
        others = [o.replace("-", "") for o in ids if o != full]
        assert not any(o.startswith(form) for o in others), "a short id resolves to exactly one id"


def test_short_ids_do_not_depend_on_input_order():
    ids = [A, B, C, D, E, "m1", "m2"]
    expected = {full: ShortIds(ids)(full) for full in ids}
    for permutation in itertools.permutations(ids):
        short = ShortIds(permutation)
        assert {full: short(full) for full in ids} == expected


def test_unregistered_id_renders_as_itself_without_dashes():
    assert ShortIds([A])("not-registered-id") == "notregisteredid"


def test_rendered_ids_never_collide_in_an_assembly(run):
    """Two memories whose ids share 8 hex digits get distinguishable citations."""
    result = run(candidates(tool_memories=[memory(A, 20, summary="first"), memory(B, 21, summary="second")]))
    text = system_text(result)
    assert "[m:3f2a91c01111] first" in text
    assert "[m:3f2a91c02222] second" in text
    assert {f"memory:{A}", f"memory:{B}"} <= set(result.record.selected_refs)
