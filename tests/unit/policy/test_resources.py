"""Which resources a call names, and when one result replaces another because of them."""

from __future__ import annotations

from policy.resources import READ, WRITE, resource_keys, supersedes_by_resource, writes
from policy.tools import ToolSpec


def test_a_path_names_a_file_normalised_and_the_verb_says_whether_the_call_writes_it() -> None:
    read = resource_keys(ToolSpec(name="fs.read_file"), {"path": "./src/../src/app.py"})
    write = resource_keys(ToolSpec(name="editor.write_file"), {"file_path": "src/app.py", "content": "x"})
    assert len(read) == len(write) == 1 and read[0].startswith(READ) and write[0].startswith(WRITE)
    assert read[0][2:] == write[0][2:]
    assert "app.py" not in read[0]  # a digest: the path is text of the arguments, never stored in clear
    assert resource_keys(ToolSpec(name="fs.read_file"), {"path": "src/other.py"})[0][2:] != read[0][2:]


def test_a_record_is_its_family_and_entity_so_another_entity_of_the_same_id_is_another_resource() -> None:
    get = resource_keys(ToolSpec(name="crm.get_account"), {"account_id": "A-1"})
    update = resource_keys(ToolSpec(name="crm.update_account"), {"account_id": "A-1", "tier": "gold"})
    invoices = resource_keys(ToolSpec(name="billing.list_invoices"), {"account_id": "A-1"})
    other_family = resource_keys(ToolSpec(name="erp.get_account"), {"account_id": "A-1"})
    assert get[0][2:] == update[0][2:]
    assert not invoices and other_family[0][2:] != get[0][2:]


def test_a_declared_resource_and_effect_win_over_inference() -> None:
    spec = ToolSpec(name="db.run", resource_args=("table", "key"), resource_kind="row", effect="write")
    assert writes(spec) and resource_keys(spec, {"table": "t", "key": 1, "sql": "..."})[0].startswith(WRITE)
    assert resource_keys(spec, {"table": "t"}) == ()  # a resource argument missing: names nothing
    assert not writes(ToolSpec(name="fs.write_file", effect="read"))


def test_a_write_replaces_reads_and_a_read_replaces_a_write_but_two_reads_do_not_replace_each_other() -> None:
    digest = "0" * 32
    assert supersedes_by_resource([WRITE + digest], [READ + digest])
    assert supersedes_by_resource([READ + digest], [WRITE + digest])
    assert not supersedes_by_resource([READ + digest], [READ + digest])
    assert not supersedes_by_resource([WRITE + digest], [WRITE + "1" * 32])
