"""Memory derivation from raw artifacts, subject keys and memory linking."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import json

import pytest

from policy.derive import FILE_CONTENT_TYPE, derive_memory, subject_key
from policy.links import link_memory
from policy.enums import FreshnessClass, ToolCallStatus
from policy.records import Locator
from policy.rehydration import slice_payload
from policy.summarise import BRIEF_KEY, SUMMARY_CHARS, SUMMARY_MAX_CHARS, summary_budget, text_summary
from policy.tools import ToolCatalog, ToolSpec, default_visibility
from policy_builders import NOW

S = ToolCallStatus
OK = S.SUCCEEDED


def derive(raw: bytes, *, spec: ToolSpec | None = None, arguments: dict | None = None,
           status: ToolCallStatus = OK, content_type: str = "application/octet-stream"):
    return derive_memory(spec or ToolSpec(name="tool"), "art-1", arguments or {}, status, raw,
                         content_type=content_type, observed_at=NOW)


# --------------------------------------------------------------------------- CSV


def test_csv_rows_columns_and_exact_decimal_sums():
    memory = derive(b"region,amount,qty\nnorth,0.1,1\nsouth,0.2,2\n", content_type="text/csv",
                    spec=ToolSpec(name="read_csv"), arguments={"path": "sales.csv"})
    assert memory.payload == {"rows": 2, "columns": ["region", "amount", "qty"], "sums": {"amount": "0.3", "qty": "3"},
                              "ranges": {"amount": ["0.1", "0.2"], "qty": ["1", "2"]}}
    assert Decimal(memory.payload["sums"]["amount"]) == Decimal("0.1") + Decimal("0.2")  # not 0.30000000000000004
    assert memory.summary == (
        "read_csv(path=sales.csv) → 2 rows × 3 cols [region,amount,qty]; "
        "amount sum 0.3; qty sum 3"
    )
    assert memory.locators == (Locator(artifact_id="art-1", kind="rows", start=1, end=2),)
    assert memory.confidence_source == "csv deriver"


@pytest.mark.parametrize(
    ("raw", "sums"),
    [
        (b"a,b\n1,x\n2,y\n", {"a": "3"}),
        (b"a,b\n1,\n2,3\n", {"a": "3"}),  # a column with a blank cell is not numeric
        (b'a\n"1,234.50"\n"2,000"\n', {"a": "3234.50"}),  # thousands separators
        (b"a\n-1.5\n1.25\n", {"a": "-0.25"}),
        (b"a\n1e3\n1\n", {"a": "1001"}),
        (b"name,n\nx,1\n\ny,2\n", {"n": "3"}),  # blank lines are not rows
        (b"a\n19.99\n0.01\n" + b"0.10\n" * 10, {"a": "21.00"}),
    ],
)
def test_csv_numeric_columns(raw, sums):
    assert derive(raw, content_type="text/csv").payload["sums"] == sums


@pytest.mark.parametrize("value", [b"NaN", b"nan", b"sNaN", b"Infinity", b"-inf"])
def test_csv_non_finite_values_are_not_numbers(value):
    """Decimal parses 'NaN'; summing or comparing it must not escape as an exception."""
    memory = derive(b"a,b\n" + value + b",1\n" + value + b",2\n", content_type="text/csv")
    assert memory.payload["sums"] == {"b": "3"}
    assert memory.confidence == 0.95


def test_csv_only_three_column_stats_in_the_summary_but_all_sums_in_the_payload():
    memory = derive(b"a,b,c,d\n1,2,3,4\n", content_type="text/csv")
    assert memory.payload["sums"] == {"a": "1", "b": "2", "c": "3", "d": "4"}
    assert "d sum" not in memory.summary and "c sum 3" in memory.summary


def test_csv_rows_locator_addresses_every_data_row():
    raw = b'id,note\n1,"two\nlines"\n2,plain\n\n3,"x,y"\n'
    memory = derive(raw, content_type="text/csv")
    [locator] = memory.locators
    assert (locator.start, locator.end) == (1, memory.payload["rows"]) == (1, 3)
    assert slice_payload(raw, locator) == 'id,note\n1,"two\nlines"\n2,plain\n3,"x,y"'


def test_empty_csv_is_low_confidence():
    memory = derive(b"", spec=ToolSpec(name="t", result_kind="csv"))
    assert memory.confidence == 0.3
    assert "could not parse as csv" in memory.limitations


# --------------------------------------------------------------------------- JSON


def test_json_object():
    memory = derive(b'{"id":"T-1","status":"open","tags":["a","b"],"owner":{"name":"Ann"},"note":null}',
                    spec=ToolSpec(name="get_ticket"), arguments={"id": "T-1"})
    # id=T-1 only echoes the argument the title shows; the rest reads in payload order.
    assert memory.summary == "get_ticket(id=T-1) → status=open; tags: 2 — a, b; owner: name=Ann"
    assert memory.payload == {"facts": {"T-1.id": "T-1", "T-1.status": "open"}}
    assert memory.locators == (Locator(artifact_id="art-1"),)


def test_json_entity_is_the_records_own_id_before_foreign_ids():
    """``id`` names the record; ``customer_id`` names something it points to."""
    memory = derive(b'{"customer_id":"C1","id":"O9","status":"shipped"}')
    assert memory.payload["facts"]["O9.status"] == "shipped"
    assert "C1.status" not in memory.payload["facts"]


def test_json_entity_falls_back_to_an_id_suffix():
    memory = derive(b'{"order_id":"O9","status":"shipped"}')
    assert memory.payload["facts"] == {"O9.order_id": "O9", "O9.status": "shipped"}


def test_json_without_entity_has_no_facts():
    assert derive(b'{"status":"ok","count":3}').payload == {}


@pytest.mark.parametrize(
    ("raw", "summary", "count"),
    [
        (b"[]", "items: none", 0),
        (b"[1,2,3]", "items: 3 — 1, 2, 3", 3),
        (b'["a","b"]', "items: 2 — a, b", 2),
        (b"[0,1,2,3,4,5,6,7,8,9]", "items: 10 — 0, 1, 2, 3, 4, 5, 6, 7, 8, 9", 10),
        (json.dumps(list(range(30))).encode(), "items: 30 — " + ", ".join(map(str, range(16))) + " (+14 more)", 30),
        (b'[{"id":1,"body":"x"},{"id":2,"body":"y"}]', "items: 2 [id] — 1; 2", 2),
        (b'[{"id":1,"t":"x"},{"id":2,"t":"y"},{"id":3,"t":"z"},{"id":4,"t":"w"}]',
         "items: 4 [id|t] — 1|x; 2|y; 3|z; 4|w", 4),
        (b'[{"p":1,"q":2,"r":3,"s":4}]', "items: 1 [p|q|r|s] — 1|2|3|4", 1),
        (b'[{"id":"a|b","n":1},{"id":"c"}]', "items: 2 [id|n] — a/b|1; c|", 2),
    ],
)
def test_json_list(raw, summary, count):
    memory = derive(raw)
    assert memory.summary == f"tool() → {summary}"
    assert memory.payload == {"count": count}


def test_search_results_list():
    raw = (b'[{"title":"Dossier docs","url":"https://a.example","snippet":"a long snippet"},'
           b'{"title":"Temporal","url":"https://b.example","snippet":"another"}]')
    memory = derive(raw, spec=ToolSpec(name="web_search", result_kind="search"), arguments={"q": "durable"})
    assert memory.summary == (
        "web_search(q=durable) → items: 2 [title|url] — Dossier docs|https://a.example; Temporal|https://b.example"
    )
    assert "snippet" not in memory.summary
    assert memory.confidence_source == "search deriver"


def test_long_values_are_clipped_in_summaries():
    memory = derive(b'{"id":"x","code":"' + b"z" * 100 + b'"}')
    assert "z" * 79 + "…" in memory.summary and "z" * 80 not in memory.summary


@pytest.mark.parametrize("raw", [
    b'{"id":"x","note":"' + b"z" * 500 + b'"}',
    b'{"id":"x","note":"two\\nlines"}',
    b'{"id":"x","body":"short but prose"}',
], ids=["long", "multi-line", "prose field name"])
def test_free_text_stays_in_the_raw_artifact(raw):
    memory = derive(raw)
    assert memory.summary == "tool() → id=x (+1 fields in raw)"
    assert memory.payload == {"facts": {"x.id": "x"}}


def test_declared_fields_come_first_and_may_be_prose():
    raw = b'{"id":"M1","from":"Ann","to":"Bo","subject":"Hi","body":"short","labels":["a"]}'
    memory = derive(raw, spec=ToolSpec(name="mail.get", summary_fields=("subject", "body")))
    assert memory.summary == "mail.get() → subject=Hi; body=short; id=M1; from=Ann; to=Bo; labels: 1 — a"


def test_budget_bounds_the_summary_and_counts_what_stayed_in_raw():
    record = {f"field_{i:02d}": f"value number {i}" for i in range(40)}
    memory = derive(json.dumps(record).encode(), spec=ToolSpec(name="t", summary_chars=120))
    body = memory.summary.removeprefix("t() → ")
    assert len(body.split(" (+")[0]) <= 120
    assert body.endswith(" fields in raw)")
    shown = body.count("=")
    assert f"(+{40 - shown} fields in raw)" in body


def test_a_list_of_records_is_a_table_with_its_keys_said_once():
    items = [{"number": n, "title": f"PR {n}", "created_at": f"2026-11-2{n}", "body": "x"} for n in range(1, 6)]
    memory = derive(json.dumps(items).encode())
    assert memory.summary == ("tool() → items: 5 [number|title|created_at] — 1|PR 1|2026-11-21; 2|PR 2|2026-11-22; "
                              "3|PR 3|2026-11-23; 4|PR 4|2026-11-24; 5|PR 5|2026-11-25")


def test_a_long_list_shows_the_rows_its_budget_holds():
    items = [{"number": n, "title": f"pull request number {n}"} for n in range(200)]
    raw = json.dumps(items).encode()
    memory = derive(raw)
    body = memory.summary.removeprefix("tool() → ")
    assert body.startswith("items: 200 [number|title] — 0|pull request number 0; 1|pull request number 1")
    assert len(body.split(" (+")[0]) <= summary_budget(len(raw)) and "more)" in body


def test_summary_budget_grows_with_the_result_between_bounds():
    assert summary_budget(10) == SUMMARY_CHARS
    assert summary_budget(1000) == 500
    assert summary_budget(10_000_000) == SUMMARY_MAX_CHARS


def test_a_map_of_records_keyed_by_id_is_a_table():
    raw = {"payment_methods": {"gift_card_1": {"source": "gift_card", "amount": 22, "id": "gift_card_1"},
                               "card_2": {"source": "credit_card", "last_four": "7803", "id": "card_2"}},
           "by_day": {"2026-11-01": {"visits": 3}, "2026-11-02": {"visits": 5}}}
    memory = derive(json.dumps(raw).encode())
    assert "payment_methods: 2 [id|amount|source|last_four] — gift_card_1|22|gift_card|; card_2||credit_card|7803" \
        in memory.summary
    assert "by_day: 2 [key|visits] — 2026-11-01|3; 2026-11-02|5" in memory.summary


def test_several_lists_share_the_budget():
    raw = {"commits": [{"sha": str(i) * 40, "author": f"dev{i}", "date": "2026-11-2%d" % i} for i in range(6)],
           "files": [{"filename": f"src/module_{i}.py", "status": "modified" if i else "added"} for i in range(6)]}
    memory = derive(json.dumps(raw).encode())
    assert "commits: 6 [date|author] — 2026-11-20|dev0" in memory.summary
    assert "files: 6 [filename|status] — src/module_0.py|added" in memory.summary
    assert "1" * 40 not in memory.summary  # digests rank last


def test_fields_shared_by_every_item_are_said_once():
    raw = [{"id": f"m{i}", "from": "Priya <p@x.io>", "sha": "f" * 40, "subject": f"s{i}"} for i in range(3)]
    memory = derive(json.dumps(raw).encode())
    assert memory.summary == "tool() → items: 3 (all from=Priya <p@x.io>) [id|subject] — m0|s0; m1|s1; m2|s2"


@pytest.mark.parametrize("raw", [b"{not json", b'{"a":', b"[1,2", b"[" * 100_000],
                         ids=["garbage", "truncated object", "truncated list", "nested too deep"])
def test_unparseable_json_is_a_low_confidence_memory(raw):
    """Derivation never raises on a tool's payload, however broken or deeply nested."""
    memory = derive(raw, spec=ToolSpec(name="j", result_kind="json"))
    assert memory.confidence == 0.3
    assert memory.confidence_source == "parse failure"
    assert memory.summary == f"j(): unparsed json result, {len(raw)} bytes"
    assert memory.limitations.startswith("could not parse as json:")
    assert memory.locators == (Locator(artifact_id="art-1"),)


# --------------------------------------------------------------------------- errors, files, text


def test_failed_call_keeps_the_last_error_line():
    memory = derive(b"Traceback (most recent call last):\n  File x\nValueError: bad date\n",
                    spec=ToolSpec(name="parse"), arguments={"d": "2026-13-01"}, status=S.FAILED)
    assert memory.summary == "parse(d=2026-13-01) FAILED: ValueError: bad date"
    assert memory.payload == {"error": "ValueError: bad date", "lines": 3}
    assert memory.freshness is FreshnessClass.VOLATILE
    assert memory.confidence == 1.0


def test_failed_call_without_text():
    memory = derive(b"  \n", status=S.FAILED)
    assert memory.summary == "tool() FAILED: no error text"
    assert memory.payload == {}


def test_file_handle_is_permanent():
    raw = b'{"name":"report.pdf","bytes":2048,"sha256":"abcdef0123456789","uri":"s3://bucket/report.pdf"}'
    memory = derive(raw, content_type=FILE_CONTENT_TYPE, spec=ToolSpec(name="export_pdf"))
    assert memory.summary == "generated file report.pdf, 2048 bytes at s3://bucket/report.pdf"
    assert memory.freshness is FreshnessClass.PERMANENT
    assert memory.stale_after is None
    assert memory.payload == {"file": {"name": "report.pdf", "bytes": 2048, "sha256": "abcdef0123456789",
                                       "uri": "s3://bucket/report.pdf"}}


@pytest.mark.parametrize("raw", [b'{"bytes": 3}', b'["report.pdf"]', b"not json"])
def test_malformed_file_handle_is_a_low_confidence_memory(raw):
    memory = derive(raw, content_type=FILE_CONTENT_TYPE)
    assert memory.confidence == 0.3
    assert memory.limitations.startswith("could not parse as file:")


@pytest.mark.parametrize(
    ("raw", "summary"),
    [
        (b"single line", "single line"),
        (b"line one\nline two\n", "line one | line two"),
        (b"  spaced   out  \n", "spaced out"),
        (b"", ""),
    ],
)
def test_text(raw, summary):
    assert derive(raw, content_type="text/plain").summary == f"tool() → {summary}"


KIND_TABLE = [
    # (case, declared, content type, raw, confidence source)
    ("declared csv wins over json bytes", "csv", "application/json", b"[1]", "csv deriver"),
    ("file content type", "auto", FILE_CONTENT_TYPE, b'{"name":"f"}', "file handle"),
    ("csv content type", "auto", "text/csv; charset=utf-8", b"a\n1\n", "csv deriver"),
    ("json content type", "auto", "application/json", b' {"a":1}', "json deriver"),
    ("sniffed object", "auto", "application/octet-stream", b'  {"a":1}', "json deriver"),
    ("sniffed list", "auto", "text/plain", b"[1]", "json deriver"),
    ("plain text", "auto", "text/plain", b"hello", "text deriver"),
    ("declared text", "text", "application/json", b'{"a":1}', "text deriver"),
]


@pytest.mark.parametrize(("declared", "content_type", "raw", "source"), [r[1:] for r in KIND_TABLE],
                         ids=[r[0] for r in KIND_TABLE])
def test_result_kind_detection(declared, content_type, raw, source):
    memory = derive(raw, spec=ToolSpec(name="t", result_kind=declared), content_type=content_type)
    assert memory.confidence_source == source


# --------------------------------------------------------------------------- spec-driven fields


@pytest.mark.parametrize(
    ("key_args", "arguments", "expected"),
    [
        (None, {"q": "x", "limit": 5}, 'search:{"limit":5,"q":"x"}'),
        (("q",), {"q": "x", "limit": 5}, 'search:{"q":"x"}'),
        (("q", "folder"), {"q": "x"}, 'search:{"folder":null,"q":"x"}'),
        ((), {"q": "x"}, "search:{}"),
        (None, {}, "search:{}"),
    ],
)
def test_subject_key(key_args, arguments, expected):
    assert subject_key(ToolSpec(name="search", key_args=key_args), arguments) == expected


def test_subject_key_ignores_non_identifying_arguments_and_order():
    spec = ToolSpec(name="search", key_args=("q",))
    a = derive(b"[]", spec=spec, arguments={"q": "x", "limit": 5})
    b = derive(b"[]", spec=spec, arguments={"limit": 50, "q": "x"})
    assert a.subject_key == b.subject_key == 'search:{"q":"x"}'


@pytest.mark.parametrize(
    ("spec", "status", "freshness", "stale_after"),
    [
        (ToolSpec(name="t"), OK, FreshnessClass.SESSION, None),
        (ToolSpec(name="t", freshness=FreshnessClass.VOLATILE, ttl=timedelta(minutes=5)), OK,
         FreshnessClass.VOLATILE, NOW + timedelta(minutes=5)),
        (ToolSpec(name="t", freshness=FreshnessClass.DURABLE, ttl=timedelta(days=2)), OK,
         FreshnessClass.DURABLE, NOW + timedelta(days=2)),
        (ToolSpec(name="t", ttl=timedelta(hours=1)), S.FAILED, FreshnessClass.VOLATILE, NOW + timedelta(hours=1)),
    ],
)
def test_freshness_and_stale_after_from_spec(spec, status, freshness, stale_after):
    memory = derive(b"ok", spec=spec, status=status)
    assert memory.freshness is freshness
    assert memory.stale_after == stale_after


@pytest.mark.parametrize(
    ("revalidate_with", "expected"),
    [((), ("gmail_search",)), (("gmail_list", "gmail_get"), ("gmail_list", "gmail_get"))],
)
def test_revalidation_tools(revalidate_with, expected):
    memory = derive(b"x", spec=ToolSpec(name="gmail_search", revalidate_with=revalidate_with))
    assert memory.revalidate_with == expected


def test_catalog_default_spec_is_conservative():
    catalog = ToolCatalog(tools=(ToolSpec(name="known", privacy="public"),))
    assert catalog.spec("known").privacy.value == "public"
    unknown = catalog.spec("unknown")
    # An unknown tool fails closed: nothing says its data is only the user's own.
    assert (unknown.name, unknown.privacy.value, unknown.freshness, unknown.result_kind) == (
        "unknown", "secret_adjacent", FreshnessClass.SESSION, "auto")


@pytest.mark.parametrize(
    ("kind", "scope"),
    [("chat", "branch"), ("branch_send", "branch"), ("scheduled_job", "branch"), ("parent_resume", "branch"),
     ("multi_model", "participant_private"), ("discussion", "participant_private"),
     ("subagent_child", "participant_private")],
)
def test_default_visibility(kind, scope):
    assert default_visibility(kind).value == scope


def test_derivation_is_deterministic():
    raw = b'{"b":[{"id":2},{"id":1}],"a":{"y":1,"x":2},"id":"r"}'
    first = derive(raw, arguments={"z": 1, "a": 2})
    assert all(derive(raw, arguments={"a": 2, "z": 1}) == first for _ in range(3))


# --------------------------------------------------------------------------- linking


LINK_TABLE = [
    # (case, new subject, new facts, existing, supersedes, conflicts)
    ("same subject supersedes", "s:1", {}, [("m1", "s:1", {})], ["m1"], []),
    ("every same-subject memory, oldest first", "s:1", {}, [("m1", "s:1", {}), ("m2", "s:2", {}), ("m3", "s:1", {})],
     ["m1", "m3"], []),
    ("other subject, different value", "s:1", {"T-9.status": "open"},
     [("m1", "s:2", {"T-9.status": "closed"})], [], ["m1"]),
    ("other subject, same value", "s:1", {"T-9.status": "open"}, [("m1", "s:2", {"T-9.status": "open"})], [], []),
    ("other subject, disjoint facts", "s:1", {"T-9.status": "open"}, [("m1", "s:2", {"T-8.status": "x"})], [], []),
    ("same subject never conflicts", "s:1", {"T-9.status": "open"}, [("m1", "s:1", {"T-9.status": "closed"})],
     ["m1"], []),
    ("one differing fact is enough", "s:1", {"a.x": "1", "a.y": "2"},
     [("m1", "s:2", {"a.x": "1", "a.y": "3"})], [], ["m1"]),
    ("nothing to link", "s:1", {"a.x": "1"}, [], [], []),
]


@pytest.mark.parametrize(("subject", "facts", "existing", "supersedes", "conflicts"), [r[1:] for r in LINK_TABLE],
                         ids=[r[0] for r in LINK_TABLE])
def test_link_memory(subject, facts, existing, supersedes, conflicts):
    assert link_memory(subject, facts, existing) == (supersedes, conflicts)


def test_derived_facts_drive_conflicts():
    spec = ToolSpec(name="get_ticket", key_args=("id",))
    old = derive(b'{"id":"T-9","status":"open"}', spec=ToolSpec(name="list_tickets"), arguments={"q": "mine"})
    new = derive(b'{"id":"T-9","status":"closed"}', spec=spec, arguments={"id": "T-9"})
    existing = [("m-old", old.subject_key, old.payload["facts"])]
    assert link_memory(new.subject_key, new.payload["facts"], existing) == ([], ["m-old"])


def _ci_log(lines: int = 133) -> str:
    """A CI log: a header, progress lines, one failing test with its assertion in the middle, the totals."""
    out = ["ci run 4711 on runner linux-x64 (python 3.12)"]
    for i in range(1, lines - 3):
        out.append(f"tests/test_api.py::test_case_{i} PASSED [{i * 100 // lines:3d}%]")
        if i == lines // 2:
            out.append("tests/test_billing.py::test_invoice_total_rounds_half_up FAILED")
            out.append("E   AssertionError: assert Decimal('10.04') == Decimal('10.05')")
    out.append("==== 1 failed, 129 passed in 12.31s ====")
    return "\n".join(out) + "\n"


def test_a_text_result_that_fits_its_room_is_its_memory_whole():
    listing = "django/db/backends/oracle/operations.py\ndjango/db/backends/sqlite3/operations.py\n"
    memory = derive(listing.encode(), content_type="text/plain", spec=ToolSpec(name="find"))
    assert memory.summary == ("find() → django/db/backends/oracle/operations.py | "
                              "django/db/backends/sqlite3/operations.py")
    assert memory.payload == {}  # as short as a brief: nothing shorter to show on a small budget


def test_a_long_log_keeps_its_first_line_its_failure_and_its_totals():
    memory = derive(_ci_log().encode(), content_type="text/plain", spec=ToolSpec(name="ci_logs"))
    for line in ("ci run 4711 on runner linux-x64", "test_invoice_total_rounds_half_up FAILED",
                 "AssertionError: assert Decimal('10.04') == Decimal('10.05')", "1 failed, 129 passed in 12.31s"):
        assert line in memory.summary
    assert memory.summary.endswith("(133 lines, 31 shown)"), memory.summary[-40:]
    assert len(memory.summary) <= summary_budget(len(_ci_log())) + 60
    assert memory.payload[BRIEF_KEY] == (
        "ci_logs() → ci run 4711 on runner linux-x64 (python 3.12) | "
        "tests/test_billing.py::test_invoice_total_rounds_half_up FAILED | "
        "E AssertionError: assert Decimal('10.04') == Decimal('10.05') (133 lines)")


def test_repeated_progress_lines_give_way_to_lines_that_say_something_new():
    log = ("job 42 starting\n" + "".join(f"step {i} ok\n" for i in range(60))
           + "config: region=eu-west-3 bucket=invoices-2026\n" + "".join(f"step {i} ok\n" for i in range(60, 120))
           + "job 42 done\n")
    summary = text_summary(log, 120)
    assert summary.startswith("job 42 starting | ")
    assert "| … | config: region=eu-west-3 bucket=invoices-2026 | … |" in summary
    assert summary.endswith("| job 42 done (123 lines, 6 shown)")


def test_repeated_lines_are_said_once_and_do_not_crowd_out_the_failure():
    """45 retry errors are 'failure' lines too: said once with their count, each distinct one once."""
    log = "\n".join(["pytest -x tests", *["ERROR: connection refused, retrying"] * 40,
                     *[f"tests/test_{i}.py::test_case_{i} PASSED" for i in range(30)],
                     "FAILED tests/test_payment.py::test_refund - AssertionError: 3 != 4",
                     *["ERROR: connection refused, retrying"] * 5, "1 failed, 30 passed in 2.1s"])
    summary = text_summary(log, 240)
    assert summary.startswith("pytest -x tests | ERROR: connection refused, retrying (×40) | ")
    assert "FAILED tests/test_payment.py::test_refund - AssertionError: 3 != 4" in summary
    assert summary.count("connection refused") == 1
    assert "| 1 failed, 30 passed in 2.1s (78 lines, " in summary


def test_a_source_file_keeps_an_outline_of_what_it_defines():
    source = "\n".join(["import os", "", *[f"x{i} = {i}" for i in range(200)], "class Ledger:",
                        "    def post(self, entry):", "        return entry", "async def settle(batch):",
                        "    pass"])
    summary = text_summary(source, 200)
    assert summary.startswith("import os | ")
    assert "| class Ledger: | def post(self, entry): |" in summary
    assert "| async def settle(batch): |" in summary


def test_echoed_arguments_are_not_repeated_in_the_summary():
    memory = derive(b'{"query":"pgvector","folder":"docs","total":2}', spec=ToolSpec(name="search"),
                    arguments={"query": "pgvector", "folder": "other"})
    assert memory.summary == "search(folder=other, query=pgvector) → folder=docs; total=2"


def test_results_above_the_parse_limit_get_a_metadata_memory():
    raw = b"first line of a huge log\n" + b"x" * 200
    memory = derive(raw, content_type="text/plain", spec=ToolSpec(name="logs"))
    assert memory.confidence_source != "size limit"
    from policy.derive import derive_memory
    big = derive_memory(ToolSpec(name="logs"), "art-1", {}, S.SUCCEEDED, raw, content_type="text/plain",
                        observed_at=NOW, parse_max_bytes=64)
    assert big.summary == f"logs() → large text result, {len(raw)} bytes; starts: first line of a huge log"
    assert big.confidence == 0.5 and "parse limit" in big.limitations
    assert big.locators == (Locator(artifact_id="art-1"),)


def test_python_literal_results_are_summarised_like_json():
    """Python agent frameworks often send str() of a list or dict: read it without executing it."""
    memory = derive(b"[{'event_id': '00000075', 'event_name': 'annual summary'}, {'event_id': '00000265'}]")
    assert memory.summary.startswith("tool() → items: 2 [event_id|event_name] — 00000075|annual summary; 00000265|")
    assert "00000265" in memory.summary
    assert memory.confidence_source == "python-literal deriver"
    array = derive(b"array(['aisha.chen@atlas.com'], dtype=object)")
    assert "aisha.chen@atlas.com" in array.summary and array.confidence >= 0.9


def test_code_is_never_evaluated_as_a_literal():
    memory = derive(b"[__import__('os').system('true')]")
    assert memory.confidence < 0.5 and "could not parse" in memory.limitations


def test_missing_values_in_a_python_repr_read_as_null():
    memory = derive(b"[{'customer_id': '00000135', 'notes': nan, 'score': -inf}, {'customer_id': '00000026'}]")
    assert "00000135" in memory.summary and "00000026" in memory.summary
    assert memory.confidence_source == "python-literal deriver"
