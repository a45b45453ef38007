"""Evidence and state boundaries: provenance, exact raw slices, branches, failures, privacy routes, subagents.

Each scenario here checks that the assembled context carries exactly the
evidence a turn needs and nothing it must not: a memory whose raw source was
lost is flagged rather than trusted, exact CSV rows come back byte for byte,
a sibling branch stays invisible, a retry-critical failure survives noisy logs,
a Google-derived body stays behind a route that may only see its summary, and
a parent resuming a subagent batch sees the checkpoint and the promoted report
but not the children's workspaces.

Payloads are shaped like what the tools really return (API JSON, CSV exports,
build logs, tracebacks, e-mail). Advisory ids, ARNs, invoice numbers and
people are invented.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from harness.scenarios.model import (
    AddParticipant,
    Ask,
    CallTool,
    Checkpoint,
    Evidence,
    Fork,
    LoseArtifact,
    Promote,
    Say,
    Scenario,
)
from policy.derive import FILE_CONTENT_TYPE
from policy.enums import (
    FreshnessClass,
    PrivacyClass,
    PromotionPolicy,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.tools import ToolSpec


def _json(data: Any) -> str:
    """A tool's JSON response as the tool wrapper returns it (pretty-printed)."""
    return json.dumps(data, indent=2, ensure_ascii=False)


def _file_handle(name: str, content: str, uri: str) -> str:
    """The handle ``files.write`` returns for ``content`` (size and hash are real)."""
    data = content.encode()
    return json.dumps({"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(), "uri": uri})


# =========================================================================== broken_provenance_repair

_CONTRACT = _json(
    {
        "contract_id": "CTR-2291",
        "title": "Master Freight Services Agreement",
        "counterparty": "Northwind Logistics B.V.",
        "status": "active",
        "start_date": "2024-04-01",
        "end_date": "2027-03-31",
        "auto_renew": True,
        "renewal_term_months": 12,
        "notice_period_days": 90,
        "annual_value_eur": "418000.00",
        "owner": "m.schulz@lumenfreight.de",
        "last_amended": "2025-03-14",
        "clauses": [
            {
                "section": "4.1",
                "title": "Service levels",
                "text": "Supplier shall achieve on-time pickup of at least 96.5% of scheduled consignments "
                "per calendar month, measured at the origin dock against the booked slot.",
            },
            {
                "section": "7.2",
                "title": "Price adjustment",
                "text": "Supplier may adjust rates once per contract year, effective on the anniversary date, "
                "by no more than the Eurostat HICP change for the preceding twelve months plus 2.0 percentage "
                "points, and only with 60 days' written notice to Customer.",
            },
            {
                "section": "9.4",
                "title": "Fuel surcharge",
                "text": "The fuel surcharge is recalculated monthly from the EU Weekly Oil Bulletin diesel price "
                "and is excluded from the cap in clause 7.2.",
            },
            {
                "section": "11.3",
                "title": "Termination and non-renewal",
                "text": "Either party may prevent automatic renewal by written notice received no later than 90 "
                "days before the end of the then-current term; notices to Supplier must be sent to "
                "legal@northwind-logistics.nl with a copy to the account manager.",
            },
            {
                "section": "12.1",
                "title": "Service credits",
                "text": "For each full percentage point below the on-time target, Customer receives a credit of "
                "1.5% of the monthly invoice, capped at 10% per month.",
            },
        ],
        "attachments": [
            {"name": "CTR-2291-signed.pdf", "pages": 34},
            {"name": "CTR-2291-annex-B-rate-card.xlsx", "sheets": 3},
        ],
    }
)

_NORTHWIND_INVOICES = _json(
    {
        "vendor_id": "V-10442",
        "vendor_name": "Northwind Logistics B.V.",
        "year": 2026,
        "currency": "EUR",
        "total_paid_eur": "352614.20",
        "open_eur": "31880.00",
        "invoices": [
            {"invoice_id": "NWL-26-0114", "period": "2026-01", "amount_eur": "30412.50", "status": "paid",
             "paid_date": "2026-02-26", "on_time_pickup_pct": 97.1},
            {"invoice_id": "NWL-26-0209", "period": "2026-02", "amount_eur": "34118.90", "status": "paid",
             "paid_date": "2026-03-27", "on_time_pickup_pct": 96.8},
            {"invoice_id": "NWL-26-0316", "period": "2026-03", "amount_eur": "36904.10", "status": "paid",
             "paid_date": "2026-04-28", "on_time_pickup_pct": 95.2},
            {"invoice_id": "NWL-26-0421", "period": "2026-04", "amount_eur": "33276.40", "status": "paid",
             "paid_date": "2026-05-27", "on_time_pickup_pct": 96.9},
            {"invoice_id": "NWL-26-0518", "period": "2026-05", "amount_eur": "35880.00", "status": "paid",
             "paid_date": "2026-06-26", "on_time_pickup_pct": 97.4},
            {"invoice_id": "NWL-26-0622", "period": "2026-06", "amount_eur": "37012.75", "status": "paid",
             "paid_date": "2026-07-28", "on_time_pickup_pct": 94.6},
            {"invoice_id": "NWL-26-0717", "period": "2026-07", "amount_eur": "29566.30", "status": "paid",
             "paid_date": "2026-08-27", "on_time_pickup_pct": 96.6},
            {"invoice_id": "NWL-26-0820", "period": "2026-08", "amount_eur": "31248.60", "status": "paid",
             "paid_date": "2026-09-28", "on_time_pickup_pct": 97.0},
            {"invoice_id": "NWL-26-0915", "period": "2026-09", "amount_eur": "41620.15", "status": "paid",
             "paid_date": "2026-10-27", "on_time_pickup_pct": 96.5},
            {"invoice_id": "NWL-26-1019", "period": "2026-10", "amount_eur": "42574.50", "status": "paid",
             "paid_date": "2026-11-26", "on_time_pickup_pct": 93.9},
            {"invoice_id": "NWL-26-1124", "period": "2026-11", "amount_eur": "31880.00", "status": "open",
             "paid_date": None, "on_time_pickup_pct": None},
        ],
    }
)

_NORTHWIND_SEARCH = _json(
    {
        "query": "Northwind Logistics rate increase 2027",
        "results": [
            {
                "title": "Northwind Logistics announces general rate increase of 6.5% for 2027",
                "url": "https://www.northwind-logistics.nl/en/newsroom/2026-11-12-general-rate-increase-2027",
                "published_date": "2026-11-12",
                "snippet": "Northwind Logistics will raise its road freight tariffs by an average of 6.5% from "
                "1 February 2027, citing driver wages, Eurovignette toll changes and fleet electrification costs.",
            },
            {
                "title": "European road freight rates: Q4 2026 outlook",
                "url": "https://www.ti-insight.com/briefs/european-road-freight-rates-q4-2026",
                "published_date": "2026-10-30",
                "snippet": "Contract rates rose 1.8% quarter on quarter while spot rates softened; carriers "
                "expect 2027 general rate increases between 4% and 7% across Benelux lanes.",
            },
            {
                "title": "Shippers push back on 2027 GRIs as diesel prices ease",
                "url": "https://theloadstar.com/shippers-push-back-on-2027-gris-as-diesel-prices-ease/",
                "published_date": "2026-11-18",
                "snippet": "Procurement heads say index-linked caps in multi-year contracts leave little room "
                "for the headline increases carriers announced this month.",
            },
            {
                "title": "Northwind Logistics Q3 2026 trading update",
                "url": "https://www.northwind-logistics.nl/en/investors/q3-2026-trading-update",
                "published_date": "2026-10-22",
                "snippet": "Revenue up 4.1% year on year; operating margin 5.2%; contract renewals for 2027 to "
                "reflect the full-year effect of the Dutch truck toll introduced in July 2026.",
            },
        ],
    }
)

BROKEN_PROVENANCE_REPAIR = Scenario(
    name="broken_provenance_repair",
    description=(
        "The raw contract payload behind a memory was lost from the object store; the repair pass marks "
        "the memory MISSING_SOURCE. The assembled context still carries its summary, flagged UNVERIFIED "
        "with the real artifact id, while the healthy invoice and search memories read normally and no "
        "raw clause text comes back."
    ),
    tools=(
        ToolSpec(name="contracts.get", freshness=FreshnessClass.DURABLE, key_args=("contract_id",)),
        ToolSpec(name="billing.list_invoices", key_args=("vendor_id", "year")),
        ToolSpec(name="web.search", result_kind="search", privacy=PrivacyClass.PUBLIC),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Procurement Assistant",
            system_prompt=(
                "You are the procurement assistant for Lumen Freight GmbH. Use the contract, billing and "
                "web tools, and cite the result ids you rely on."
            ),
        ),
        Say(at=0, text="Our Northwind Logistics contract is up for renewal soon. Can you pull up CTR-2291 and "
            "give me the key terms?"),
        CallTool(at=1, key="contract", participant="assistant", name="contracts.get",
                 arguments={"contract_id": "CTR-2291"}, result=_CONTRACT),
        Say(at=2, author="assistant", text=(
            "CTR-2291 is the Master Freight Services Agreement with Northwind Logistics B.V. It started on "
            "1 Apr 2024, runs to 31 Mar 2027 and renews automatically for another 12 months unless we give "
            "notice 90 days ahead. Annual value is €418,000. The clauses that matter for the renewal are 7.2 "
            "(a cap on yearly price adjustments), 11.3 (how to stop the auto-renewal) and 12.1 (service "
            "credits when on-time pickup drops below target)."
        )),
        Say(at=5, text="What have we paid them so far this year? And have they announced anything about 2027 "
            "prices?"),
        CallTool(at=6, key="invoices", participant="assistant", name="billing.list_invoices",
                 arguments={"vendor_id": "V-10442", "year": 2026}, result=_NORTHWIND_INVOICES),
        CallTool(at=6.5, key="search", participant="assistant", name="web.search",
                 arguments={"query": "Northwind Logistics rate increase 2027", "num_results": 4},
                 result=_NORTHWIND_SEARCH),
        Say(at=7, author="assistant", text=(
            "We've paid €352,614.20 across ten invoices in 2026; November's invoice for €31,880.00 is still "
            "open. On pricing, Northwind announced a 6.5% general rate increase on 12 November, effective "
            "1 February 2027."
        )),
        Say(at=9, text="6.5% sounds like more than our contract allows."),
        Say(at=10, author="assistant", text=(
            "It may well be. Clause 7.2 ties any yearly adjustment to an index-linked cap and requires written "
            "notice in advance, so whether 6.5% is allowed depends on the cap and on when they notified us. "
            "I'd check the exact wording before we push back."
        )),
        LoseArtifact(at=30, tool="contract"),
        Say(at=45, text="Okay. Draft a short renewal recommendation for Martin: what's the last day we can give "
            "notice, and can we refuse the 6.5%?"),
    ),
    ask=Ask(participant="assistant", at=46),
    required=(
        "UNVERIFIED: source artifact a:{a:contract} missing",
        "[m:{m:contract}]",
        "notice_period_days=90",
        "end_date=2027-03-31",
        "[m:{m:invoices}]",
        "total_paid_eur=352614.20",
        "[m:{m:search}]",
        "Northwind Logistics announces general rate increase of 6.5% for 2027",
        "can we refuse the 6.5%?",
    ),
    forbidden=(
        "Eurostat HICP change for the preceding twelve months",
        "legal@northwind-logistics.nl",
        "EU Weekly Oil Bulletin",
        "citing driver wages, Eurovignette toll changes",
    ),
)


# =========================================================================== exact_raw_csv_rehydration

_INVOICE_LINES_CSV = """\
line,invoice_number,contact,description,qty,unit_amount,line_amount,account_code
1,INV-88412,Staples,Copy paper A4 80gsm case of 5 reams,6,41.90,251.40,6110
2,INV-88412,Staples,HP 59X toner black,3,189.00,567.00,6110
3,INV-88412,Staples,Heavy duty stapler,2,34.50,69.00,6110
4,INV-88412,Staples,Whiteboard markers assorted 12pk,5,14.25,71.25,6110
5,AWS-0929-4471,AWS EMEA,EC2 m6i.xlarge on-demand hours,1488,0.192,285.70,6420
6,AWS-0929-4471,AWS EMEA,RDS db.r6g.large Multi-AZ hours,744,0.450,334.80,6420
7,AWS-0929-4471,AWS EMEA,S3 Standard storage GB-month,8820,0.023,202.86,6420
8,AWS-0929-4471,AWS EMEA,Data transfer out GB,2760,0.090,248.40,6420
9,AWS-0929-4471,AWS EMEA,CloudFront requests per 10k,41200,0.0100,412.00,6420
10,AWS-0929-4471,AWS EMEA,Business support plan,1,1140.00,1140.00,6420
11,RGS-DE-204417,Regus,Private office 6 desks October,1,4850.00,4850.00,6210
12,RGS-DE-204417,Regus,Meeting room hours,14,38.00,532.00,6210
13,RGS-DE-204417,Regus,Printing pages colour,620,0.18,111.60,6110
14,RGS-DE-204417,Regus,Mail handling monthly,1,45.00,45.00,6210
15,KDC-1187,Kestrel Data,Senior data engineer hours wk 39 (J. Okafor),38.5,145.00,5582.50,6530
16,KDC-1187,Kestrel Data,Senior data engineer hours wk 40 (J. Okafor),40,145.00,5800.00,6530
17,KDC-1187,Kestrel Data,Data engineer hours wk 40 (L. Brandt),36,110.00,3960.00,6530
18,KDC-1187,Kestrel Data,Data engineer hours wk 40 (L. Brandt) - pipeline backfill,12,110.00,1320.00,6530
19,KDC-1187,Kestrel Data,Milestone 2: warehouse cutover sign-off,1,6500.00,6500.00,6530
20,KDC-1187,Kestrel Data,Travel expenses Hamburg on-site (receipts attached),1,612.40,612.40,6530
21,KDC-1187,Kestrel Data,Senior data engineer hours wk 41 (J. Okafor),24,145.00,3480.00,6530
22,KDC-1187,Kestrel Data,Volume discount 3% on hours,1,-604.28,-604.28,6530
23,DD-2026-10-5519,Datadog,Infrastructure Pro hosts,42,15.00,630.00,6430
24,DD-2026-10-5519,Datadog,APM hosts,18,31.00,558.00,6430
25,DD-2026-10-5519,Datadog,Indexed log events per million,310,1.70,527.00,6430
26,DD-2026-10-5519,Datadog,Log ingestion GB,1940,0.10,194.00,6430
27,DD-2026-10-5519,Datadog,Synthetic API tests per 10k,22,5.00,110.00,6430
28,DD-2026-10-5519,Datadog,RUM sessions per 1k,95,1.50,142.50,6430
29,SLK-77310452,Slack,Business+ seats monthly,64,12.50,800.00,6440
30,GWS-C01b9x2,Google,Business Standard seats,64,14.00,896.00,6440
31,GWS-C01b9x2,Google,Vault add-on seats,12,6.00,72.00,6440
32,1PW-TEAM-8831,1Password,Business seats,64,7.99,511.36,6440
33,FIG-INV-22041,Figma,Professional editor seats,9,15.00,135.00,6440
34,LIN-0093321,Linear,Business seats,38,14.00,532.00,6440
35,TRV-DL-55021,Delta,BER-JFK return economy (M. Schulz),1,1184.60,1184.60,6610
36,TRV-DL-55021,Delta,Comfort+ seat upgrade,2,89.00,178.00,6610
37,TRV-MAR-7710,Marriott,Room nights,4,389.00,1556.00,6610
38,TRV-MAR-7710,Marriott,NYC hotel occupancy tax,1,228.71,228.71,6610
39,TRV-DB-300981,DB,BahnCard 50 2nd class renewal,1,244.00,244.00,6610
40,TRV-DB-300982,DB,ICE Berlin-Munich flex fare,3,139.90,419.70,6610
41,TRV-UBR-10-26,Uber,Rides October (11 trips),1,312.47,312.47,6610
42,TRV-LH-88120,Lufthansa,MUC-LHR return premium economy (A. Novak),1,742.30,742.30,6610
43,CAT-2026-118,Kaffeeklatsch,Team offsite lunch buffet per person,28,24.50,686.00,6710
44,CAT-2026-118,Kaffeeklatsch,Coffee and pastries per person,28,8.90,249.20,6710
45,CAT-2026-118,Kaffeeklatsch,Service staff hours,6,42.00,252.00,6710
46,EVT-BCC-0412,bcc Berlin,Booth space 3x3m Data Summit,1,3900.00,3900.00,6710
47,EVT-BCC-0412,bcc Berlin,Booth power connection 3kW,1,185.00,185.00,6710
48,EVT-BCC-0412,bcc Berlin,Dedicated booth Wi-Fi,1,240.00,240.00,6710
49,PRT-5531,Moo Print,Business cards 200pk,6,39.00,234.00,6710
50,PRT-5532,Moo Print,Roll-up banner 85x200cm,2,129.00,258.00,6710
51,DELL-DE-8841203,Dell,Latitude 7450 i7 32GB 1TB,4,1689.00,6756.00,1520
52,DELL-DE-8841203,Dell,UltraSharp 27 monitor U2724D,6,389.00,2334.00,1520
53,DELL-DE-8841203,Dell,Thunderbolt dock WD22TB4,4,279.00,1116.00,1520
54,DELL-DE-8841203,Dell,ProSupport 3 years Latitude,4,214.00,856.00,1520
55,APL-W7731902,Apple,MacBook Pro 14 M4 Pro 48GB,2,2899.00,5798.00,1520
56,APL-W7731902,Apple,AppleCare+ MacBook Pro 14,2,279.00,558.00,1520
57,LOG-33019,Logitech,MX Keys S keyboard,10,109.99,1099.90,6120
58,LOG-33019,Logitech,MX Master 3S mouse,10,99.99,999.90,6120
59,LOG-33019,Logitech,Brio 500 webcam,8,129.99,1039.92,6120
60,TEL-O2-2610,O2,Mobile unlimited plans,14,35.00,490.00,6450
"""

EXACT_RAW_CSV_REHYDRATION = Scenario(
    name="exact_raw_csv_rehydration",
    description=(
        "A 60-line accounts-payable CSV export is summarised as counts and sums; when the user asks for "
        "rows 17-19 verbatim, exactly those rows come back from the raw artifact with the header, and no "
        "neighbouring or distant row does."
    ),
    tools=(ToolSpec(name="files.read_csv", freshness=FreshnessClass.DURABLE, key_args=("path",)),),
    steps=(
        AddParticipant(
            key="assistant",
            name="AP Assistant",
            system_prompt=(
                "You are the accounts-payable assistant for Lumen Freight GmbH. Work from the exported "
                "ledger files and quote figures exactly as exported."
            ),
        ),
        Say(at=0, text="Load the October invoice-lines export, exports/ap/invoice_lines_2026-10.csv. I'm "
            "reconciling the Kestrel Data invoice."),
        CallTool(at=1, key="read_csv", participant="assistant", name="files.read_csv",
                 arguments={"path": "exports/ap/invoice_lines_2026-10.csv"},
                 result=_INVOICE_LINES_CSV, content_type="text/csv"),
        Say(at=2, author="assistant", text=(
            "Loaded 60 lines from 24 invoices. Kestrel Data's invoice KDC-1187 is lines 15 to 22 and nets to "
            "€26,650.62 after their 3% volume discount on hours."
        )),
        Say(at=6, text="Their week 40 looks off. Brandt is down for 48 hours in one week, and the milestone "
            "wasn't supposed to be billed until November. Which lines are those?"),
        Say(at=7, author="assistant", text=(
            "Lines 17 and 18 are L. Brandt's week-40 hours, 36 h and 12 h at €110.00, and line 19 is the "
            "Milestone 2 fee of €6,500.00. Together that's €11,780.00 of the invoice."
        )),
        Say(at=9, text="Quote rows 17 to 19 exactly as they appear in the export, with the header. I'm pasting "
            "them into the dispute email to Kestrel."),
    ),
    ask=Ask(participant="assistant", at=10, evidence=(Evidence(tool="read_csv", rows=(17, 19)),)),
    required=(
        "[m:{m:read_csv}]",
        "[a:{a:read_csv}] rows 17-19:",
        "line,invoice_number,contact,description,qty,unit_amount,line_amount,account_code",
        "17,KDC-1187,Kestrel Data,Data engineer hours wk 40 (L. Brandt),36,110.00,3960.00,6530",
        "18,KDC-1187,Kestrel Data,Data engineer hours wk 40 (L. Brandt) - pipeline backfill,12,110.00,1320.00,6530",
        "19,KDC-1187,Kestrel Data,Milestone 2: warehouse cutover sign-off,1,6500.00,6500.00,6530",
    ),
    forbidden=(
        "16,KDC-1187,Kestrel Data,Senior data engineer hours wk 40 (J. Okafor)",
        "20,KDC-1187,Kestrel Data,Travel expenses Hamburg on-site",
        "TRV-DB-300982",
        "ICE Berlin-Munich flex fare",
        "Latitude 7450 i7 32GB 1TB",
    ),
)


# =========================================================================== branch_isolation

_ORDERS_DB = _json(
    {
        "cluster": "orders-db-prod",
        "engine": "postgres",
        "engine_version": "13.14",
        "instance_class": "db.r6g.2xlarge",
        "multi_az": True,
        "status": "available",
        "extended_support": "enabled since 2026-03-01",
        "storage": {"type": "gp3", "allocated_gb": 1500, "iops": 12000, "throughput_mbps": 500},
        "db_size_gb": 871.4,
        "parameter_group": "orders-pg13-custom",
        "maintenance_window": "sun:01:00-sun:03:00 UTC",
        "backup_retention_days": 14,
        "read_replicas": ["orders-db-replica-1"],
        "connections_p95": 412,
        "extensions": [
            {"name": "postgis", "version": "3.1.4"},
            {"name": "pg_partman", "version": "4.5.1"},
            {"name": "pg_stat_statements", "version": "1.8"},
            {"name": "pgcrypto", "version": "1.3"},
            {"name": "btree_gist", "version": "1.5"},
        ],
        "largest_tables": [
            {"name": "order_events", "size_gb": 412.8, "rows": 1934021877, "partitioned": True},
            {"name": "orders", "size_gb": 188.2, "rows": 96400312, "partitioned": False},
            {"name": "shipment_legs", "size_gb": 121.5, "rows": 241880940, "partitioned": False},
            {"name": "depot_geofences", "size_gb": 3.9, "rows": 18244, "partitioned": False},
        ],
    }
)

_PLAN_A = """\
# orders-db-prod: PostgreSQL 13.14 to 16.4 with RDS Blue/Green Deployments

## Approach
Create a Blue/Green deployment from orders-db-prod. RDS builds a green copy, upgrades it to 16.4 and keeps it
in sync through logical replication. Production keeps running on blue until the switchover.

## Prerequisites
1. Set rds.logical_replication = 1 in orders-pg13-custom (needs a reboot; do it in the Sunday window).
2. Every replicated table needs a primary key. depot_geofences has none: add one, or set REPLICA IDENTITY FULL.
3. Update PostGIS to 3.4 and pg_partman to 4.7 on blue first; green inherits the extension versions.
4. Freeze DDL from green creation until switchover; pg_partman premake must cover the freeze.

## Switchover
- Switchover timeout 300 s; RDS blocks writes on blue, waits for replication lag to reach zero, renames endpoints.
- Expected write interruption under one minute; the application keeps its endpoint names.
- Keep blue for 48 hours as the rollback target, then delete it.

## Cost
Green runs at full size for about three days: roughly EUR 410 extra on top of the Extended Support charge.
"""

_PLAN_B = """\
# orders-db-prod: PostgreSQL 13.14 to 16.4 (in-place major version upgrade)

## Approach
In-place major version upgrade of the existing Multi-AZ instance in an announced maintenance window,
Sunday 6 December, 01:00-03:00 UTC. RDS runs pg_upgrade on the primary and upgrades orders-db-replica-1
with it. The orders API and the tracking workers are stopped for the duration.

## Before the window
1. Update PostGIS from 3.1.4 to 3.4 on 13 (ALTER EXTENSION postgis UPDATE); 3.1 is not available on 16.
2. Update pg_partman from 4.5.1 to 4.7.4 on 13. The move to pg_partman 5 is a separate task.
3. Create parameter group orders-pg16-custom with the settings of orders-pg13-custom
   (max_connections 600, work_mem 32MB, shared_preload_libraries pg_stat_statements).
4. Run the upgrade prechecks on a snapshot restore and fix what they report (reg* columns, unknown types).
5. Rehearse: restore snapshot orders-db-prod-pre-pg16-rehearsal to a scratch instance, upgrade it and time it.
6. Announce the window to customer support and the carrier integrations team by Wednesday 2 December.

## In the window
1. 00:55 stop the orders API and the tracking workers; confirm no open transactions.
2. 01:00 take manual snapshot orders-db-prod-pre-pg16.
3. 01:10 start the upgrade to 16.4 with parameter group orders-pg16-custom.
4. After it completes, run vacuumdb --analyze-in-stages; start the API and the workers after the first stage.
5. Smoke tests: create an order, post a tracking event, run the depot geofence query.

## Downtime
Expect 25-40 minutes for the upgrade itself at 871 GB; the rehearsal gives the real figure. Plan for 60 minutes
of write downtime including the snapshot and the smoke tests. The first analyze stage adds about 10 minutes of
degraded query plans after the API is back.

## Rollback
If the upgrade fails or the smoke tests do not pass, restore snapshot orders-db-prod-pre-pg16 to a new instance
and repoint the orders-db CNAME (about 50 minutes at this size). Nothing is written while the API is stopped,
so no orders are lost; the window would overrun to about 04:00 UTC.
"""

_PLAN_A_HANDLE = _file_handle(
    "migration-plan-A.md", _PLAN_A, "s3://lumen-eng-docs/plans/orders-db/migration-plan-A.md"
)
_PLAN_B_HANDLE = _file_handle(
    "migration-plan-B.md", _PLAN_B, "s3://lumen-eng-docs/plans/orders-db/migration-plan-B.md"
)

BRANCH_ISOLATION = Scenario(
    name="branch_isolation",
    description=(
        "Two sibling branches fork from the same message and each writes its own migration plan. The call "
        "on plan_b sees the main-branch facts from before the fork and plan B's file handle, never "
        "plan A's file or the words of its branch."
    ),
    tools=(
        ToolSpec(
            name="db.describe_cluster",
            key_args=("cluster",),
            # What a migration plan is written against; sizing details stay in the raw result.
            summary_fields=("engine_version", "status", "maintenance_window", "extensions.name", "extensions.version"),
        ),
        ToolSpec(name="files.write", result_kind="file", key_args=("name",)),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Platform Assistant",
            system_prompt=(
                "You are the platform engineering assistant for the Lumen Freight orders team. Write plans "
                "as Markdown files with files.write."
            ),
        ),
        Say(at=0, text="orders-db is still on Postgres 13 and we've been paying RDS Extended Support for it "
            "since March. I want it on 16 before the end of the year. What are we working with?"),
        CallTool(at=1, key="describe", participant="assistant", name="db.describe_cluster",
                 arguments={"cluster": "orders-db-prod"}, result=_ORDERS_DB),
        Say(at=2, author="assistant", text=(
            "orders-db-prod is PostgreSQL 13.14 on a Multi-AZ db.r6g.2xlarge with about 871 GB of data, one "
            "read replica and a custom parameter group. order_events is the big one at 413 GB, partitioned "
            "with pg_partman."
        )),
        Say(at=4, text="Anything in there that blocks going straight to 16?"),
        Say(at=5, key="fork_point", author="assistant", text=(
            "Two things to handle first. PostGIS 3.1.4 isn't available on 16, so it has to be updated to 3.4 "
            "while we're still on 13, and pg_partman 4.5.1 should go to 4.7 in the same step. The custom "
            "parameter group also needs a Postgres 16 copy. Beyond that it's a question of how much downtime "
            "you can accept; tell me the approach and I'll write the plan."
        )),
        Fork(at=6, key="plan_a", at_message="fork_point"),
        Fork(at=6, key="plan_b", at_message="fork_point"),
        Say(at=7, branch="plan_a", text="Let's use an RDS Blue/Green deployment so the cutover is under a "
            "minute. Write it up."),
        CallTool(at=8, key="write_a", branch="plan_a", participant="assistant", name="files.write",
                 arguments={"name": "migration-plan-A.md", "content": _PLAN_A},
                 result=_PLAN_A_HANDLE, content_type=FILE_CONTENT_TYPE),
        Say(at=9, branch="plan_a", author="assistant", text=(
            "Wrote migration-plan-A.md. The green copy syncs through logical replication, so depot_geofences "
            "needs a primary key first, and we freeze DDL until the switchover. The switchover itself should "
            "interrupt writes for under a minute, and blue stays around for 48 hours as the rollback."
        )),
        Say(at=12, branch="plan_b", text="Keep it simple: in-place upgrade in the Sunday maintenance window. "
            "We can live with some downtime on a Sunday night. Write it up."),
        CallTool(at=13, key="write_b", branch="plan_b", participant="assistant", name="files.write",
                 arguments={"name": "migration-plan-B.md", "content": _PLAN_B},
                 result=_PLAN_B_HANDLE, content_type=FILE_CONTENT_TYPE),
        Say(at=14, branch="plan_b", author="assistant", text=(
            "Wrote migration-plan-B.md for Sunday 6 December, 01:00-03:00 UTC. The extension updates and a "
            "timed rehearsal on a snapshot restore come first; the plan budgets 60 minutes of write downtime, "
            "and rollback is a restore of the pre-upgrade snapshot."
        )),
        Say(at=16, branch="plan_b", text="Good. Which teams do we need to warn, and what's the rollback if the "
            "upgrade fails halfway?"),
    ),
    ask=Ask(participant="assistant", branch="plan_b", at=17),
    required=(
        "[m:{m:write_b}] generated file migration-plan-B.md",
        "s3://lumen-eng-docs/plans/orders-db/migration-plan-B.md",
        "[m:{m:describe}]",
        "engine_version=13.14",
        "maintenance_window=sun:01:00-sun:03:00 UTC",
        "paying RDS Extended Support",
        "PostGIS 3.1.4 isn't available on 16",
        "60 minutes of write downtime",
    ),
    forbidden=(
        "migration-plan-A.md",
        "Blue/Green",
        "switchover",
        "logical replication",
        "REPLICA IDENTITY FULL",
        "48 hours as the rollback",
    ),
)


# =========================================================================== retry_critical_errors

_BUILD_LOG = """\
Build #8812 web@a41c9e2 (release/2026.11.30-1) on runner ci-linux-07
$ node --version
v20.18.1
$ npm ci --no-audit --no-fund
added 1184 packages in 21.4s
$ npm run build

> lumen-web@2026.11.30-1 build
> tsc -b && vite build

vite v5.4.11 building for production...
transforming...
✓ 1418 modules transformed.
rendering chunks...
computing gzip size...
dist/index.html                                      1.42 kB │ gzip:   0.61 kB
dist/assets/inter-latin-400-normal-BoQqJVVP.woff2   23.66 kB
dist/assets/index-9c1d44e7.css                      88.35 kB │ gzip:  14.02 kB
dist/assets/vendor-react-5b1e0a93.js               141.72 kB │ gzip:  45.38 kB
dist/assets/vendor-charts-d83f2c61.js              402.19 kB │ gzip: 118.77 kB
dist/assets/app-4f9c2e1b.js                        612.38 kB │ gzip: 187.04 kB

(!) Some chunks are larger than 500 kB after minification. Consider:
- Using dynamic import() to code-split the application
- Use build.rollupOptions.output.manualChunks to improve chunking: https://rollupjs.org/configuration-options/#output-manualchunks
- Adjust chunk size limit for this warning via build.chunkSizeWarningLimit.
✓ built in 38.21s
$ tar -czf web-2026.11.30-1.tar.gz -C dist .
artifact web-2026.11.30-1.tar.gz (1.31 MB) stored at ci-artifacts/web/8812/
Build #8812 succeeded in 1m 12s
"""

_TEST_LOG = """\
 RUN  v2.1.5 /builds/lumen/web

 ✓ src/lib/money.test.ts (18 tests) 41ms
 ✓ src/lib/dates.test.ts (23 tests) 57ms
 ✓ src/lib/units.test.ts (12 tests) 19ms
 ✓ src/lib/format.test.ts (14 tests) 22ms
 ✓ src/lib/csv.test.ts (8 tests) 36ms
 ✓ src/lib/i18n.test.ts (11 tests) 64ms
 ✓ src/api/client.test.ts (27 tests) 188ms
 ✓ src/api/retry.test.ts (9 tests) 1204ms
 ✓ src/api/errors.test.ts (7 tests) 15ms
 ✓ src/api/pagination.test.ts (6 tests) 28ms
 ✓ src/auth/session.test.ts (21 tests) 142ms
 ✓ src/auth/permissions.test.ts (16 tests) 31ms
 ✓ src/auth/LoginForm.test.tsx (8 tests) 912ms
 ✓ src/checkout/coupon.test.ts (31 tests) 212ms
 ✓ src/checkout/totals.test.ts (22 tests) 96ms
 ✓ src/checkout/vat.test.ts (13 tests) 18ms
 ✓ src/checkout/CheckoutForm.test.tsx (17 tests) 1873ms
 ✓ src/orders/OrderTable.test.tsx (24 tests) 2410ms
 ✓ src/orders/filters.test.ts (35 tests) 74ms
 ✓ src/orders/OrderDetail.test.tsx (9 tests) 1188ms
 ✓ src/orders/status.test.ts (12 tests) 9ms
 ✓ src/orders/export.test.ts (5 tests) 143ms
 ✓ src/shipments/ShipmentTimeline.test.tsx (14 tests) 1122ms
 ✓ src/shipments/eta.test.ts (19 tests) 33ms
 ✓ src/shipments/legs.test.ts (8 tests) 12ms
 ✓ src/shipments/ShipmentCard.test.tsx (6 tests) 604ms
 ✓ src/tracking/events.test.ts (10 tests) 21ms
 ✓ src/tracking/geofence.test.ts (7 tests) 48ms
 ↓ src/tracking/LiveMap.test.tsx (3 tests | 3 skipped)
 ✓ src/invoices/InvoiceList.test.tsx (16 tests) 1568ms
 ✓ src/invoices/InvoicePdfLink.test.tsx (3 tests) 377ms
 ✓ src/invoices/dunning.test.ts (9 tests) 17ms
 ✓ src/customers/CustomerSearch.test.tsx (7 tests) 966ms
 ✓ src/customers/addresses.test.ts (11 tests) 26ms
 ✓ src/carriers/rates.test.ts (4 tests) 44ms
 ✓ src/carriers/CarrierPicker.test.tsx (5 tests) 702ms
 ✓ src/settings/NotificationSettings.test.tsx (6 tests) 831ms
 ✓ src/settings/ApiKeys.test.tsx (4 tests) 519ms
 ✓ src/components/DataTable.test.tsx (9 tests) 1047ms
 ✓ src/components/DateRangePicker.test.tsx (7 tests) 888ms
 ✓ src/components/Toast.test.tsx (3 tests) 211ms
 ✓ src/components/Modal.test.tsx (4 tests) 356ms
 ✓ src/hooks/useDebounce.test.ts (3 tests) 1012ms
 ✓ src/hooks/usePolling.test.ts (4 tests) 2033ms
 ✓ src/hooks/useFeatureFlag.test.ts (3 tests) 8ms
 ✓ src/routes/guards.test.ts (5 tests) 14ms
 ✓ src/routes/redirects.test.ts (3 tests) 6ms
 ✓ src/app.test.tsx (2 tests) 1436ms

 Test Files  47 passed | 1 skipped (48)
      Tests  520 passed | 3 skipped (523)
   Start at  09:04:12
   Duration  19.84s (transform 2.31s, setup 4.02s, collect 11.70s, tests 9.46s, environment 14.10s, prepare 3.88s)
"""

_DEPLOY_ERROR = """\
deploy web 2026.11.30-1 -> prod: attempt 3/3 failed (attempts 1 and 2 failed with the same error)
Traceback (most recent call last):
  File "/opt/deployer/deployer/cli.py", line 212, in run
    result = pipeline.execute(plan)
  File "/opt/deployer/deployer/pipeline.py", line 96, in execute
    step.apply(ctx)
  File "/opt/deployer/deployer/steps/assets.py", line 77, in apply
    self.s3.upload_file(str(path), ctx.bucket, key, ExtraArgs=extra)
  File "/opt/deployer/.venv/lib/python3.11/site-packages/boto3/s3/inject.py", line 145, in upload_file
    return transfer.upload_file(
  File "/opt/deployer/.venv/lib/python3.11/site-packages/boto3/s3/transfer.py", line 378, in upload_file
    raise S3UploadFailedError(
boto3.exceptions.S3UploadFailedError: Failed to upload dist/assets/app-4f9c2e1b.js to prod-assets/web/2026.11.30-1/assets/app-4f9c2e1b.js: An error occurred (AccessDenied) when calling the PutObject operation: User: arn:aws:sts::441729305518:assumed-role/deployer/ci-run-8812 is not authorized to perform: s3:PutObject on resource: "arn:aws:s3:::prod-assets/web/2026.11.30-1/assets/app-4f9c2e1b.js" because no identity-based policy allows the s3:PutObject action
"""

RETRY_CRITICAL_ERRORS = Scenario(
    name="retry_critical_errors",
    description=(
        "A production deploy failed on all three attempts with an S3 AccessDenied traceback, between a "
        "long build log and a test run that both succeeded. The failure stays in the context verbatim and "
        "marked retry-critical; the noisy logs are reduced to one-line memories."
    ),
    tools=(
        ToolSpec(name="ci.build", result_kind="text", key_args=("ref", "target")),
        ToolSpec(name="ci.test", result_kind="text", key_args=("ref", "suite")),
        ToolSpec(name="deploy.run", result_kind="text", retry_critical=True, key_args=("env", "release")),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Release Assistant",
            system_prompt=(
                "You are the release assistant for the Lumen Freight web app. You build, test and deploy "
                "with the ci.* and deploy.* tools."
            ),
        ),
        Say(at=0, text="Please ship web release 2026.11.30-1 (commit a41c9e2) to production."),
        CallTool(at=1, key="build", participant="assistant", name="ci.build",
                 arguments={"ref": "a41c9e2", "target": "web"}, result=_BUILD_LOG, content_type="text/plain"),
        CallTool(at=3, key="test", participant="assistant", name="ci.test",
                 arguments={"ref": "a41c9e2", "suite": "web"}, result=_TEST_LOG, content_type="text/plain"),
        CallTool(at=4, key="deploy", participant="assistant", name="deploy.run",
                 arguments={"env": "prod", "release": "2026.11.30-1", "artifact": "ci-artifacts/web/8812/"},
                 result=_DEPLOY_ERROR, content_type="text/plain", status=ToolCallStatus.FAILED, attempts=3,
                 retry_critical=True),
        Say(at=7, author="assistant", text=(
            "Build and tests passed, but the production deploy failed on all three attempts: the deployer "
            "role was denied write access to the prod-assets bucket while uploading the JavaScript bundle. "
            "Nothing was published, so production is still on the previous release."
        )),
        Say(at=9, text="Weird, that worked on Thursday. Platform rotated the IAM roles yesterday, could that "
            "be it?"),
        Say(at=10, author="assistant", text=(
            "Very likely. The error says no identity-based policy allows the upload, which is what you'd see "
            "if the rotated role lost its statement for the bucket. I wouldn't retry until that's fixed; a "
            "fourth attempt will fail the same way."
        )),
        Say(at=12, text="Agreed. Write the message for #platform-oncall with the exact error and the resource "
            "so they can fix the policy."),
    ),
    ask=Ask(participant="assistant", at=13),
    required=(
        "FAILED after 3 attempt(s), retry-critical",
        "[t:{t:deploy}]",
        "arn:aws:sts::441729305518:assumed-role/deployer/ci-run-8812 is not authorized to perform: "
        's3:PutObject on resource: "arn:aws:s3:::prod-assets/web/2026.11.30-1/assets/app-4f9c2e1b.js"',
        "because no identity-based policy allows the s3:PutObject action",
        "[m:{m:build}]",
        "Build #8812 web@a41c9e2",
    ),
    forbidden=(
        "1418 modules transformed",
        "Some chunks are larger than 500 kB",
        "vendor-charts-d83f2c61.js",
        "src/checkout/coupon.test.ts",
        "520 passed",
    ),
)


# =========================================================================== google_derived_route

_GMAIL_SEARCH = _json(
    {
        "messages": [
            {
                "id": "18d2f6a9c41be7a3",
                "threadId": "18d1f2c07be95a10",
                "from": "Priya Raman <priya.raman@halvorsen-eng.com>",
                "subject": "Re: SOW-114 amendment: revised milestone payments",
                "date": "2026-11-26T16:42:10Z",
                "snippet": "Hi Martin, Thanks for the call on Tuesday. As promised, attached is Amendment 2 to "
                "SOW-114 covering the revised milestone payments for the Hamburg terminal integration.",
            },
            {
                "id": "18d1c0e27f9a4410",
                "threadId": "18cf9b3d02e61a7c",
                "from": "Priya Raman <priya.raman@halvorsen-eng.com>",
                "subject": "Re: Invoice HAL-2026-0311",
                "date": "2026-11-20T09:15:44Z",
                "snippet": "Thanks, payment received. I've asked our AR team to update the remittance "
                "reference on their side so it matches your PO number 4500187723.",
            },
            {
                "id": "18d0a7b5e3c28d91",
                "threadId": "18d0a7b5e3c28d91",
                "from": "Priya Raman <priya.raman@halvorsen-eng.com>",
                "subject": "CR-07 scope question",
                "date": "2026-11-17T13:02:37Z",
                "snippet": "Quick one before Thursday: does the change request need to cover the test "
                "environment for the terminal gate system as well, or only production?",
            },
            {
                "id": "18cf9e41a6d07b25",
                "threadId": "18cf1d6c5b8e0f33",
                "from": "Priya Raman <priya.raman@halvorsen-eng.com>",
                "subject": "Re: Hamburg terminal integration: test plan",
                "date": "2026-11-12T10:27:05Z",
                "snippet": "Attached is v3 of the test plan with the carrier EDI cases added. We'd like to "
                "run the first end-to-end tests in week 49.",
            },
        ],
        "resultSizeEstimate": 4,
    }
)

_SOW_EMAIL_BODY = """\
Hi Martin,

Thanks for the call on Tuesday. As promised, attached is Amendment 2 to SOW-114 covering the revised milestone payments for the Hamburg terminal integration.

The short version on payment terms: we would invoice 30% on signature of the amendment instead of on acceptance of Milestone 2, and move the remaining 40% to net-45 from acceptance of Milestone 3 rather than net-30 from delivery. In exchange we hold the day rates at 2026 levels through June 2027, which absorbs the 4.5% increase we had planned for January.

On scope, Milestone 3 now includes the customs pre-clearance interface we discussed as CR-07, so the change request can be closed without a separate invoice. The acceptance criteria in section 3.2 of the amendment are updated accordingly; the test plan we shared on 12 November still applies.

Our finance team needs the countersigned amendment by Friday 4 December to issue the first invoice this quarter. If it's easier, I can send it through DocuSign to Erik as well.

Best regards,
Priya

Priya Raman
Head of Delivery, Halvorsen Engineering AS
+47 22 41 87 30

On Tue, 24 Nov 2026 at 15:12, Martin Schulz <m.schulz@lumenfreight.de> wrote:
> Hi Priya,
>
> Thanks for walking us through the new milestone plan today. Before I take it to our CFO, could you send
> the payment changes in writing as an amendment to SOW-114? Please also say how CR-07 is handled, since
> finance still has it open as a separate accrual.
>
> Best,
> Martin
"""

_SOW_EMAIL = _json(
    {
        "id": "18d2f6a9c41be7a3",
        "threadId": "18d1f2c07be95a10",
        "labelIds": ["INBOX", "IMPORTANT", "CATEGORY_PERSONAL"],
        "from": "Priya Raman <priya.raman@halvorsen-eng.com>",
        "to": "Martin Schulz <m.schulz@lumenfreight.de>",
        "cc": "Erik Lund <erik.lund@halvorsen-eng.com>",
        "subject": "Re: SOW-114 amendment: revised milestone payments",
        "date": "Thu, 26 Nov 2026 16:42:10 +0000",
        "body": _SOW_EMAIL_BODY,
        "attachments": [
            {"filename": "SOW-114_Amendment-2.pdf", "mimeType": "application/pdf", "size": 184320},
        ],
    }
)

_CRM_CONTACT = _json(
    {
        "contact_id": "C-20931",
        "name": "Priya Raman",
        "title": "Head of Delivery",
        "email": "priya.raman@halvorsen-eng.com",
        "phone": "+47 22 41 87 30",
        "account": "Halvorsen Engineering AS",
        "account_id": "A-3318",
        "is_signatory": False,
        "account_signatory": "Erik Lund (CFO)",
        "owner": "m.schulz@lumenfreight.de",
        "last_activity_date": "2026-11-26",
    }
)

GOOGLE_DERIVED_ROUTE = Scenario(
    name="google_derived_route",
    description=(
        "An e-mail read from Gmail is google_derived. On the openai route its compact summary may be sent "
        "but its raw body may not: the user's request for the exact paragraph gets the summary, a note "
        "that the raw body was withheld and how to re-read it, and none of the body's later sentences."
    ),
    tools=(
        ToolSpec(
            name="gmail.search",
            privacy=PrivacyClass.GOOGLE_DERIVED,
            freshness=FreshnessClass.VOLATILE,
            revalidate_with=("gmail.search",),
        ),
        ToolSpec(
            name="gmail.get_message",
            privacy=PrivacyClass.GOOGLE_DERIVED,
            freshness=FreshnessClass.DURABLE,
            revalidate_with=("gmail.get_message",),
            key_args=("id",),
        ),
        ToolSpec(name="crm.get_contact", key_args=("email",)),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Executive Assistant",
            system_prompt=(
                "You are the executive assistant of Martin Schulz at Lumen Freight GmbH. You can read his "
                "Gmail and the CRM."
            ),
        ),
        Say(at=0, text="Did Priya from Halvorsen send anything about the SOW amendment?"),
        CallTool(at=1, key="search", participant="assistant", name="gmail.search",
                 arguments={"q": "from:priya.raman@halvorsen-eng.com newer_than:30d", "max_results": 10},
                 result=_GMAIL_SEARCH),
        CallTool(at=2, key="get_message", participant="assistant", name="gmail.get_message",
                 arguments={"id": "18d2f6a9c41be7a3", "format": "full"}, result=_SOW_EMAIL),
        Say(at=3, author="assistant", text=(
            "Yes. On Thursday 26 November she replied to your \"SOW-114 amendment\" thread with "
            "Amendment 2 attached as a PDF. It changes the payment schedule and the Milestone 3 scope, and "
            "she needs the countersigned amendment by Friday 4 December."
        )),
        Say(at=6, text="Is she the one who signs for Halvorsen?"),
        CallTool(at=7, key="contact", participant="assistant", name="crm.get_contact",
                 arguments={"email": "priya.raman@halvorsen-eng.com"}, result=_CRM_CONTACT),
        Say(at=8, author="assistant", text=(
            "No. She's Head of Delivery and isn't marked as a signatory in the CRM; the signatory on file for "
            "Halvorsen Engineering is Erik Lund, their CFO, who is on copy."
        )),
        Say(at=10, text="Quote me the paragraph where she explains the new payment terms, word for word, so I "
            "can forward it to finance."),
    ),
    ask=Ask(participant="assistant", at=11, provider_route="openai",
            evidence=(Evidence(tool="get_message"),)),
    required=(
        "[m:{m:get_message}]",
        "subject=Re: SOW-114 amendment: revised milestone payments",
        "from=Priya Raman <priya.raman@halvorsen-eng.com>",
        "[a:{a:get_message}] raw google_derived body withheld",
        "withheld",
        "re-run gmail.get_message to verify",
        "account_signatory=Erik Lund (CFO)",
    ),
    forbidden=(
        "move the remaining 40% to net-45 from acceptance of Milestone 3",
        "hold the day rates at 2026 levels through June 2027",
        "customs pre-clearance interface",
        "finance still has it open as a separate accrual",
        "PO number 4500187723",
        "carrier EDI cases",
    ),
)


# =========================================================================== subagent_continuation_state

_OSV_BATCH = _json(
    {
        "source": "osv.dev",
        "lockfile": "services/invoicing/requirements.lock",
        "scanned": 7,
        "results": [
            {
                "name": "pdfminer.six",
                "version": "20231228",
                "vulns": [
                    {
                        "id": "GHSA-4m3q-x7cv-2p9f",
                        "aliases": ["CVE-2026-28114"],
                        "severity": "HIGH",
                        "fixed": "20251107",
                        "summary": "Arbitrary code execution when loading CMap files from a writable CMAP_PATH",
                    }
                ],
            },
            {
                "name": "jinja2",
                "version": "3.1.4",
                "vulns": [
                    {
                        "id": "GHSA-h8r2-5wq6-jj4v",
                        "aliases": ["CVE-2026-30871"],
                        "severity": "MODERATE",
                        "fixed": "3.1.6",
                        "summary": "Sandbox escape through str.format_map on attribute lookups",
                    }
                ],
            },
            {"name": "reportlab", "version": "4.2.5", "vulns": []},
            {"name": "pymupdf", "version": "1.24.14", "vulns": []},
            {"name": "python-stdnum", "version": "1.20", "vulns": []},
            {"name": "babel", "version": "2.16.0", "vulns": []},
            {"name": "weasyprint", "version": "63.1", "vulns": []},
        ],
    }
)

_OSV_ADVISORY = _json(
    {
        "id": "GHSA-4m3q-x7cv-2p9f",
        "aliases": ["CVE-2026-28114"],
        "summary": "Arbitrary code execution when loading CMap files from a writable CMAP_PATH",
        "details": (
            "pdfminer.six resolves CMap names against every directory on CMAP_PATH and loads the matching "
            ".pickle.gz file with pickle.loads. A PDF that references a crafted CMap name makes the "
            "extractor load an attacker-supplied pickle from any writable directory on that path, which "
            "executes arbitrary code in the extracting process. Services that extract text from "
            "user-uploaded PDFs are exposed when a shared upload or temp directory is on CMAP_PATH. "
            "Version 20251107 loads bundled CMaps only and rejects names containing path separators."
        ),
        "published": "2026-09-03T18:22:41Z",
        "modified": "2026-10-14T07:10:02Z",
        "affected": [
            {
                "package": {"ecosystem": "PyPI", "name": "pdfminer.six", "purl": "pkg:pypi/pdfminer.six"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "20251107"}]}],
            }
        ],
        "references": [
            {
                "type": "ADVISORY",
                "url": "https://github.com/pdfminer/pdfminer.six/security/advisories/GHSA-4m3q-x7cv-2p9f",
            },
            {"type": "PACKAGE", "url": "https://pypi.org/project/pdfminer.six/"},
        ],
        "database_specific": {"severity": "HIGH", "cwe_ids": ["CWE-502"], "github_reviewed": True},
    }
)

_PYPI_REPORTLAB = _json(
    {
        "name": "reportlab",
        "version": "4.2.5",
        "summary": "The Reportlab Toolkit",
        "license": "BSD license (see license.txt for details), Copyright (c) 2000-2024, ReportLab Inc.",
        "classifiers": [
            "License :: OSI Approved :: BSD License",
            "Programming Language :: Python :: 3",
            "Topic :: Printing",
        ],
        "requires_python": ">=3.7,<4",
        "home_page": "https://www.reportlab.com/",
    }
)

_PYPI_PYMUPDF = _json(
    {
        "name": "PyMuPDF",
        "version": "1.24.14",
        "summary": "A high performance Python library for data extraction, analysis, conversion & manipulation "
        "of PDF (and other) documents.",
        "license": "Dual Licensed - GNU AFFERO GPL 3.0 or Artifex Commercial License",
        "classifiers": [
            "License :: OSI Approved :: GNU Affero General Public License v3",
            "License :: Other/Proprietary License",
            "Programming Language :: Python :: 3",
            "Topic :: Multimedia :: Graphics",
        ],
        "requires_python": ">=3.9",
        "home_page": "https://github.com/pymupdf/PyMuPDF",
    }
)

_CVE_FINDINGS = """\
# invoicing-service 3.2: OSV scan of new pins

Lockfile: services/invoicing/requirements.lock (7 new pins), scanned 2026-11-30.

| package | pinned | advisory | severity | fixed in | action |
|---|---|---|---|---|---|
| pdfminer.six | 20231228 | GHSA-4m3q-x7cv-2p9f | high | 20251107 | bump before release |
| jinja2 | 3.1.4 | GHSA-h8r2-5wq6-jj4v | moderate | 3.1.6 | bump before release |
| reportlab | 4.2.5 | none | | | |
| pymupdf | 1.24.14 | none | | | |
| python-stdnum | 1.20 | none | | | |
| babel | 2.16.0 | none | | | |
| weasyprint | 63.1 | none | | | |
"""

_CVE_FINDINGS_HANDLE = _file_handle(
    "osv-findings.md", _CVE_FINDINGS, "s3://lumen-ci-audits/invoicing/3.2/osv-findings.md"
)

_CVE_REPORT = (
    "Checked the 7 new pins in services/invoicing/requirements.lock against OSV; 2 are "
    "affected. pdfminer.six 20231228 has GHSA-4m3q-x7cv-2p9f (high, code execution via CMap loading, fixed "
    "in 20251107) and jinja2 3.1.4 has GHSA-h8r2-5wq6-jj4v (moderate, sandbox escape, fixed in 3.1.6). The "
    "other 5 have no known advisories. Recommend bumping both pins before the 3.2 release. Table in "
    "osv-findings.md."
)

SUBAGENT_CONTINUATION_STATE = Scenario(
    name="subagent_continuation_state",
    description=(
        "A parent resumes a batch of two subagents. It sees its latest batch checkpoint (who finished, who "
        "is still running, what comes next) and the finished child's promoted report and findings file, "
        "but neither the running child's private results nor the finished child's raw OSV workspace."
    ),
    tools=(
        ToolSpec(name="osv.query_batch", key_args=("lockfile",)),
        ToolSpec(name="osv.get_vuln", freshness=FreshnessClass.DURABLE, key_args=("id",)),
        ToolSpec(name="pypi.get_metadata", freshness=FreshnessClass.DURABLE, key_args=("package", "version")),
        ToolSpec(name="files.write", result_kind="file", key_args=("path",)),
    ),
    steps=(
        AddParticipant(
            key="coordinator",
            name="Coordinator",
            system_prompt=(
                "You coordinate release checks for the Lumen Freight invoicing service. Delegate to "
                "subagents and report their findings."
            ),
        ),
        AddParticipant(
            key="cve_scanner",
            name="cve_scanner",
            role="subagent",
            parent="coordinator",
            system_prompt="Check the given Python pins for known vulnerabilities with the osv.* tools.",
        ),
        AddParticipant(
            key="license_auditor",
            name="license_auditor",
            role="subagent",
            parent="coordinator",
            system_prompt="Check each given package's licence against the allow-list: MIT, BSD, Apache-2.0, "
            "ISC, PSF, MPL-2.0.",
        ),
        Say(at=0, text="Before we cut invoicing-service 3.2, check the seven new dependencies in "
            "requirements.lock for known CVEs and licence problems."),
        Say(at=1, author="coordinator", text=(
            "I'll run two subagents in parallel: cve_scanner checks the new pins against OSV, and "
            "license_auditor checks each package's licence against our allow-list. I'll report back when "
            "they're done."
        )),
        Checkpoint(at=1.5, participant="coordinator", checkpoint_kind="subagent_batch", state={
            "batch": "dep-audit-3.2",
            "children": [
                {"name": "cve_scanner", "status": "running"},
                {"name": "license_auditor", "status": "running"},
            ],
            "next_step": "wait for both children",
        }),
        CallTool(at=2, key="osv_scan", participant="cve_scanner", name="osv.query_batch",
                 arguments={"lockfile": "services/invoicing/requirements.lock", "only_new": True},
                 result=_OSV_BATCH, runtime=RuntimeKind.SUBAGENT_CHILD,
                 visibility=VisibilityScope.PARTICIPANT_PRIVATE, promotion=PromotionPolicy.ON_COMPLETION),
        CallTool(at=3, key="osv_advisory", participant="cve_scanner", name="osv.get_vuln",
                 arguments={"id": "GHSA-4m3q-x7cv-2p9f"}, result=_OSV_ADVISORY,
                 runtime=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                 promotion=PromotionPolicy.ON_COMPLETION),
        CallTool(at=3.5, key="meta_reportlab", participant="license_auditor", name="pypi.get_metadata",
                 arguments={"package": "reportlab", "version": "4.2.5"}, result=_PYPI_REPORTLAB,
                 runtime=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                 promotion=PromotionPolicy.ON_COMPLETION),
        CallTool(at=4, key="meta_pymupdf", participant="license_auditor", name="pypi.get_metadata",
                 arguments={"package": "pymupdf", "version": "1.24.14"}, result=_PYPI_PYMUPDF,
                 runtime=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                 promotion=PromotionPolicy.ON_COMPLETION),
        CallTool(at=4.5, key="findings", participant="cve_scanner", name="files.write",
                 arguments={"path": "audits/invoicing/3.2/osv-findings.md", "content": _CVE_FINDINGS},
                 result=_CVE_FINDINGS_HANDLE, content_type=FILE_CONTENT_TYPE,
                 runtime=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                 promotion=PromotionPolicy.ON_COMPLETION),
        Promote(at=5, child="cve_scanner", tools=("findings",), to="coordinator", report=_CVE_REPORT),
        CallTool(at=5.5, key="meta_weasyprint", participant="license_auditor", name="pypi.get_metadata",
                 arguments={"package": "weasyprint", "version": "63.1"}, status=ToolCallStatus.PENDING,
                 runtime=RuntimeKind.SUBAGENT_CHILD, visibility=VisibilityScope.PARTICIPANT_PRIVATE,
                 promotion=PromotionPolicy.ON_COMPLETION),
        Checkpoint(at=6, participant="coordinator", checkpoint_kind="subagent_batch", state={
            "batch": "dep-audit-3.2",
            "children": [
                {"name": "cve_scanner", "status": "completed", "outcome": "report promoted, 2 of 7 pins affected"},
                {"name": "license_auditor", "status": "running", "checked": "2/7"},
            ],
            "next_step": "wait for license_auditor, then merge both findings into the 3.2 release checklist",
        }, references=("findings",)),
        Say(at=8, text="Where are we on the dependency audit? Is anything blocking 3.2 yet?"),
    ),
    ask=Ask(participant="coordinator", runtime=RuntimeKind.PARENT_RESUME, at=9),
    required=(
        '"name":"cve_scanner","outcome":"report promoted, 2 of 7 pins affected","status":"completed"',
        '"checked":"2/7","name":"license_auditor","status":"running"',
        "wait for license_auditor, then merge both findings into the 3.2 release checklist",
        "pdfminer.six 20231228 has GHSA-4m3q-x7cv-2p9f",
        "jinja2 3.1.4 has GHSA-h8r2-5wq6-jj4v",
        "Recommend bumping both pins before the 3.2 release",
        "generated file osv-findings.md",
    ),
    forbidden=(
        "GNU AFFERO GPL 3.0",
        "GNU Affero General Public License",
        "The Reportlab Toolkit",
        "crafted CMap name",
        "CWE-502",
        "CVE-2026-28114",
    ),
)


SCENARIOS = (
    BROKEN_PROVENANCE_REPAIR,
    EXACT_RAW_CSV_REHYDRATION,
    BRANCH_ISOLATION,
    RETRY_CRITICAL_ERRORS,
    GOOGLE_DERIVED_ROUTE,
    SUBAGENT_CONTINUATION_STATE,
)
