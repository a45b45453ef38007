"""Core boundary cases: deferred calls, generated files, stale connected-app data,
skill state, participant-private tools, and contradicting observations.

Payloads are the size and shape the named tools return: a Drive-style search
listing, a warehouse CSV export, file handles, a Calendar events list, a web
search response, CRM and contract-extraction JSON. Required facts are what the
measured call must carry; forbidden facts are in the full replay but must not
reach the model under the policy (dropped detail, stale values, another
participant's scratchpad, a superseded observation, an inactive skill).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from harness.scenarios.model import (
    AddParticipant,
    Ask,
    CallTool,
    Say,
    Scenario,
    SetSkill,
)
from policy.derive import FILE_CONTENT_TYPE
from policy.enums import (
    FreshnessClass,
    PrivacyClass,
    RuntimeKind,
    ToolCallStatus,
    VisibilityScope,
)
from policy.tools import ToolSpec

DAY = 24 * 60
"""Minutes in a day (scenario times are minutes after the start)."""


def _json(value: Any) -> str:
    """A tool's JSON body as an HTTP API or MCP server returns it."""
    return json.dumps(value, ensure_ascii=False)


# --------------------------------------------------------------------------- 1. deferred document picker

_PDF = "application/pdf"
_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
_NORTHWIND_FOLDER = "Legal/Suppliers/Northwind Packaging"


def _drive_file(
    file_id: str,
    title: str,
    mime_type: str,
    owner: str,
    modified: str,
    modified_by: str,
    size_bytes: int,
    snippet: str,
    subfolder: str = "",
) -> dict[str, Any]:
    """One hit of the Drive connector's full-text search."""
    folder = f"{_NORTHWIND_FOLDER}/{subfolder}" if subfolder else _NORTHWIND_FOLDER
    return {
        "id": file_id,
        "title": title,
        "mime_type": mime_type,
        "path": f"/{folder}/{title}",
        "owner": owner,
        "modified": modified,
        "last_modified_by": modified_by,
        "size_bytes": size_bytes,
        "web_link": f"https://drive.haldenfoods.com/file/{file_id}/view",
        "snippet": snippet,
    }


_DRIVE_SEARCH = _json(
    {
        "query": "Northwind supplier agreement",
        "folder": _NORTHWIND_FOLDER,
        "total": 10,
        "files": [
            _drive_file(
                "fil_7QmT2x9KfA", "Northwind Packaging – Master Supply Agreement (executed).pdf", _PDF,
                "legal-ops@haldenfoods.com", "2024-02-06T10:41:22Z", "Hannah Brandt", 1843221,
                "…This Master Supply Agreement is entered into between Halden Foods AB and Northwind Packaging "
                "Ltd. … 9.2 Termination for Convenience. Either party may terminate this Agreement for "
                "convenience on one hundred twenty (120) days' written notice to the other party…",
                "Executed",
            ),
            _drive_file(
                "fil_3VbN8pLs2D", "Northwind MSA – 2027 Renewal – Redline v3.docx", _DOCX,
                "m.osei@haldenfoods.com", "2026-11-26T16:18:05Z", "Marcus Osei", 412877,
                "…Supplier may adjust Unit Prices once per calendar quarter by reference to the PPI resin "
                "index, provided that no single adjustment exceeds 6.5% of the then-current Unit Price … "
                "[MO: Northwind asked for 8%; holding at 6.5% pending volume commitment]…",
                "Renewal 2027",
            ),
            _drive_file(
                "fil_9HcW4rJe6T", "Northwind MSA – 2027 Renewal – Redline v2.docx", _DOCX,
                "m.osei@haldenfoods.com", "2026-11-12T09:03:47Z", "Northwind Legal (external)", 405310,
                "…[Comment from Northwind counsel: we cannot accept a termination right without a wind-down "
                "fee covering dedicated tooling and unused printed film] … 9.2 deleted in its entirety…",
                "Renewal 2027",
            ),
            _drive_file(
                "fil_2KdR7sYu1P", "Amendment No. 1 – Resin Surcharge Schedule.pdf", _PDF,
                "legal-ops@haldenfoods.com", "2025-03-14T13:27:10Z", "Hannah Brandt", 287004,
                "…Effective April 1, 2025, the resin surcharge set out in Schedule C shall be recalculated "
                "monthly using the average of the two preceding months' index values…",
                "Executed",
            ),
            _drive_file(
                "fil_8LtF5gZw3M", "Amendment No. 2 – Delivery SLA and Service Credits.pdf", _PDF,
                "legal-ops@haldenfoods.com", "2025-09-30T08:55:41Z", "Hannah Brandt", 301562,
                "…On-time-in-full performance below 95.0% in any calendar month entitles Buyer to a service "
                "credit of 2% of that month's invoiced amount, up to a cap of 10% per quarter…",
                "Executed",
            ),
            _drive_file(
                "fil_5NpX1aQe7B", "Northwind – Quality Agreement v1.4.pdf", _PDF,
                "qa-team@haldenfoods.com", "2025-06-02T15:12:09Z", "Sofia Lindgren", 655930,
                "…Supplier shall notify Buyer in writing of any change to resin grade, colourant or print ink "
                "no later than sixty (60) days before the change takes effect…",
            ),
            _drive_file(
                "fil_4RsJ9uVc8H", "Supplier Code of Conduct – signed – Northwind.pdf", _PDF,
                "procurement@haldenfoods.com", "2024-01-22T11:40:33Z", "Erik Sand", 198455,
                "…Northwind Packaging Ltd. acknowledges receipt of and agrees to comply with the Halden Foods "
                "Supplier Code of Conduct, including the audit rights in Section 6…",
            ),
            _drive_file(
                "fil_6WeK3mTb0G", "Northwind Packaging – Mutual NDA 2023.pdf", _PDF,
                "legal-ops@haldenfoods.com", "2023-08-09T14:02:58Z", "Hannah Brandt", 143207,
                "…This Mutual Non-Disclosure Agreement shall remain in effect for three (3) years from the "
                "Effective Date unless terminated earlier in writing…",
            ),
            _drive_file(
                "fil_1YgH6nDk4S", "Northwind price increase notice – Oct 2026.pdf", _PDF,
                "procurement@haldenfoods.com", "2026-10-07T07:48:19Z", "Erik Sand", 96118,
                "…we must advise that list prices for thermoformed trays will increase by 8.2% from 1 January "
                "2027 owing to sustained resin and energy costs…",
                "Correspondence",
            ),
            _drive_file(
                "fil_0ZbP2cXr9E", "Packaging suppliers – renewal tracker 2027.xlsx", _XLSX,
                "m.osei@haldenfoods.com", "2026-11-20T17:31:44Z", "Marcus Osei", 58240,
                "…Northwind | MSA expires 31 Jan 2027 | lead: M. Osei | status: redline v3 with supplier | "
                "next step: pricing call…",
            ),
        ],
    }
)

DEFERRED_DOCUMENT_PICKER = Scenario(
    name="deferred_document_picker",
    description=(
        "The agent searched Drive and opened a document picker (a deferred call) for the user to choose "
        "which supplier contract to review. Three days later nothing was picked: the open call must "
        "still be in the context, marked deferred with what it waits for, while the search result's "
        "clause snippets stay in the artifact (the agent has reviewed no document yet)."
    ),
    tools=(
        ToolSpec(name="drive.search", privacy=PrivacyClass.OAUTH, freshness=FreshnessClass.DURABLE),
        ToolSpec(name="drive.pick_document", privacy=PrivacyClass.OAUTH, freshness=FreshnessClass.SESSION),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Assistant",
            system_prompt=(
                "You are a contract-review assistant for the procurement team at Halden Foods. "
                "You can search and open files in the team's connected Drive. Only review a document "
                "the user has confirmed."
            ),
        ),
        Say(
            at=0,
            text=(
                "Before the Northwind call I need you to review the supplier contract I'll pick. There are "
                "several versions floating around the Legal drive and I want to choose the right one myself. "
                "Focus on price adjustment and termination."
            ),
        ),
        CallTool(
            at=1,
            key="search",
            participant="assistant",
            name="drive.search",
            arguments={
                "query": "Northwind supplier agreement",
                "folder": _NORTHWIND_FOLDER,
                "page_size": 10,
            },
            result=_DRIVE_SEARCH,
        ),
        CallTool(
            at=2,
            key="pick",
            participant="assistant",
            name="drive.pick_document",
            arguments={
                "prompt": "Choose the Northwind supplier contract to review",
                "start_folder": _NORTHWIND_FOLDER,
                "file_types": ["pdf", "docx"],
            },
            status=ToolCallStatus.DEFERRED,
            waiting_for="the user to choose a file in the document picker",
        ),
        Say(
            at=2.5,
            author="assistant",
            text=(
                "I found ten files in Legal/Suppliers/Northwind Packaging: the executed master supply "
                "agreement, two 2027 renewal redlines, two amendments and some related documents. I've "
                "opened the document picker; choose the contract you want reviewed and I'll start as soon "
                "as it comes through."
            ),
        ),
        Say(at=6, text="Thanks. I'll probably go with the latest redline, but let me check with Marcus first."),
        Say(
            at=6.5,
            author="assistant",
            text="Sounds good. The picker stays open until you choose a file.",
        ),
        Say(
            at=3 * DAY + 5,
            text=(
                "Sorry, the year-end audit ate my week and I haven't picked anything yet. The Northwind "
                "call moved to Monday. Where are we on this, what's still pending?"
            ),
        ),
    ),
    ask=Ask(participant="assistant", at=3 * DAY + 6),
    required=(
        "[t:{t:pick}] drive.pick_document",
        "DEFERRED",
        "the user to choose a file in the document picker",
        "Northwind MSA – 2027 Renewal – Redline v3.docx",
    ),
    forbidden=(
        "no single adjustment exceeds 6.5%",
        "one hundred twenty (120) days' written notice",
        "wind-down fee covering dedicated tooling",
        "increase by 8.2% from 1 January 2027",
    ),
)


# --------------------------------------------------------------------------- 2. multi-tool file generation

_Q3_SALES_CSV = """region,product_line,orders,revenue_usd,gross_margin_usd,units,avg_discount_pct,return_rate_pct
US West,Tents,3588,1593491.67,691348.32,4919,13.2,1.9
US West,Sleeping Bags,4128,1028393.29,427025.78,6004,12.4,8.5
US West,Backpacks,6922,977353.11,444626.89,7643,12.9,6.4
US West,Footwear,9123,1313019.52,512067.50,10908,10.1,9.2
US West,Shell Jackets,4455,1201254.29,649712.54,5647,6.0,3.0
US West,Insulated Jackets,4573,1225591.36,633243.85,5034,13.2,6.1
US West,Climbing Hardware,6695,452884.08,172382.54,8041,4.7,6.7
US West,Camp Cookware,4652,274238.57,123132.29,5712,7.0,4.2
US East,Tents,2916,1485530.70,603681.93,3950,5.9,7.2
US East,Sleeping Bags,2868,549703.96,255461.42,3669,11.4,1.7
US East,Backpacks,6337,1115872.98,527130.96,8316,6.8,9.0
US East,Footwear,7581,967419.38,357710.23,8776,13.3,1.6
US East,Shell Jackets,5204,1247709.15,676790.96,5848,4.2,8.8
US East,Insulated Jackets,4625,1621172.91,797003.31,6923,10.6,4.8
US East,Climbing Hardware,5077,381529.15,143492.38,6724,8.2,5.9
US East,Camp Cookware,4467,286674.45,128871.44,6655,8.0,5.9
Canada,Tents,1143,543391.97,214835.52,1409,9.7,5.2
Canada,Sleeping Bags,1315,294814.32,130372.92,1764,6.1,2.9
Canada,Backpacks,2162,397453.83,187332.17,3141,6.8,8.0
Canada,Footwear,3040,344308.61,140471.65,3324,13.8,1.7
Canada,Shell Jackets,1796,529661.75,260514.80,2385,4.2,1.5
Canada,Insulated Jackets,1803,487590.30,248344.44,2089,9.9,7.1
Canada,Climbing Hardware,2110,207656.40,75079.09,3367,9.7,8.1
Canada,Camp Cookware,1904,104193.88,47073.93,2418,9.9,6.5
Europe,Tents,1887,782816.10,330028.55,2170,8.1,8.9
Europe,Sleeping Bags,2552,551867.78,229933.11,3667,13.1,3.7
Europe,Backpacks,4430,665676.85,313610.33,5686,9.2,4.0
Europe,Footwear,5501,726068.74,291666.39,6605,14.4,5.6
Europe,Shell Jackets,3846,1274083.79,610272.59,5439,5.6,7.0
Europe,Insulated Jackets,3181,929802.47,447039.27,4231,10.8,3.4
Europe,Climbing Hardware,3492,236730.16,86225.54,4225,6.3,3.1
Europe,Camp Cookware,3972,245067.83,97450.79,5934,5.4,1.6
APAC,Tents,1509,781629.81,298853.77,1969,5.9,5.0
APAC,Sleeping Bags,1584,258197.76,109107.65,1674,11.9,2.5
APAC,Backpacks,3252,648500.24,315296.80,5196,7.9,6.0
APAC,Footwear,3138,493377.04,179963.05,4906,13.2,1.6
APAC,Shell Jackets,2099,617487.87,305599.91,2691,4.1,4.3
APAC,Insulated Jackets,1812,439448.71,222434.87,2032,9.8,2.0
APAC,Climbing Hardware,2139,177280.32,61491.44,2981,9.4,3.7
APAC,Camp Cookware,2491,137130.75,60771.82,3298,10.9,7.0
"""

_Q3_SQL = """SELECT r.region, p.product_line,
       COUNT(DISTINCT ol.order_id)          AS orders,
       ROUND(SUM(ol.net_revenue_usd), 2)    AS revenue_usd,
       ROUND(SUM(ol.gross_margin_usd), 2)   AS gross_margin_usd,
       SUM(ol.units)                        AS units,
       ROUND(AVG(ol.discount_pct), 1)       AS avg_discount_pct,
       ROUND(100.0 * SUM(ol.returned_units) / NULLIF(SUM(ol.units), 0), 1) AS return_rate_pct
FROM finance.order_lines ol
JOIN finance.dim_region r USING (region_id)
JOIN finance.dim_product_line p USING (product_line_id)
WHERE ol.fiscal_quarter = '2026-Q3' AND ol.channel IN ('dtc', 'wholesale')
GROUP BY r.region, r.sort_order, p.product_line, p.sort_order
ORDER BY r.sort_order, p.sort_order"""

_CHART_ARGS = {
    "kind": "bar",
    "title": "Q3 FY2026 net revenue by region (USD)",
    "x": {"field": "region", "sort": "-y"},
    "y": {"field": "revenue_usd", "format": "$,.0f"},
    "data": [
        {"region": "US West", "revenue_usd": 8066225.89},
        {"region": "US East", "revenue_usd": 7655612.68},
        {"region": "Europe", "revenue_usd": 5412113.72},
        {"region": "APAC", "revenue_usd": 3553052.50},
        {"region": "Canada", "revenue_usd": 2909071.06},
    ],
    "width": 1600,
    "height": 900,
    "format": "png",
    "filename": "q3-fy2026-revenue-by-region.png",
}

_CHART_HANDLE = _json(
    {
        "name": "q3-fy2026-revenue-by-region.png",
        "bytes": 61874,
        "sha256": "b7e41c09d2a65f3e8c17a90b4d6f2e58c3a1097be46d25f0c8e7a3b19d54f6e2",
        "uri": "s3://corvane-finance-reports/board/2026-q3/q3-fy2026-revenue-by-region.png",
    }
)

_BOARD_PAGE_MARKDOWN = """## Regional revenue, Q3 FY2026

Net revenue for the quarter was **$27.6M** across five regions and eight product lines,
with gross margin of $12.4M (45.0%).

![Q3 FY2026 net revenue by region](s3://corvane-finance-reports/board/2026-q3/q3-fy2026-revenue-by-region.png)

**Highlights**
- US West remained the largest region at $8.1M, led by Tents ($1.59M) and Footwear ($1.31M).
- US East Insulated Jackets reached $1.62M, the single largest region/line combination this quarter.
- Europe delivered $5.4M; Shell Jackets ($1.27M) carried the region despite heavier discounting in Footwear (14.4%).
- APAC and Canada together contributed $6.5M; Camp Cookware remains sub-scale in both.

**Watch items**
- Return rates above 8% in six region/line combinations, highest in US West Footwear (9.2%)
  and US East Backpacks (9.0%).
- Average discount above 13% in seven region/line combinations, four of them Footwear; pricing review proposed for Q4.

*Source: finance.order_lines, fiscal quarter 2026-Q3, DTC and wholesale channels.
Prepared by the reporting agent for review by Ingrid Holm.*"""

_DOC_HANDLE = _json(
    {
        "name": "Q3-FY2026-Board-Pack-Regional-Revenue.docx",
        "bytes": 184306,
        "sha256": "4f09ad2c71e3b85d6a0e92c4f17b3d8e05a6c29f84e1d73b60a5c8e2f9d14b07",
        "uri": "s3://corvane-finance-reports/board/2026-q3/Q3-FY2026-Board-Pack-Regional-Revenue.docx",
    }
)

MULTI_TOOL_FILE_GENERATION = Scenario(
    name="multi_tool_file_generation",
    description=(
        "A board-report page built from three tools: a warehouse query (40-row CSV), a rendered chart "
        "and a generated Word document. The follow-up needs the file handles (names and URIs), the "
        "export's row count and a column total, not the 40 rows themselves."
    ),
    tools=(
        ToolSpec(name="warehouse.sql_query", result_kind="csv", freshness=FreshnessClass.DURABLE),
        ToolSpec(name="charts.render", result_kind="file", freshness=FreshnessClass.PERMANENT),
        ToolSpec(name="docs.create", result_kind="file", freshness=FreshnessClass.PERMANENT),
    ),
    steps=(
        AddParticipant(
            key="analyst",
            name="Reporting agent",
            system_prompt=(
                "You are the finance reporting agent at Corvane Outdoor. You query the finance warehouse, "
                "render charts and assemble documents. Cite generated files by name and URI."
            ),
        ),
        Say(
            at=0,
            text=(
                "Can you put together the board pack page on regional revenue for Q3? Pull revenue by region "
                "and product line from the warehouse, chart it by region, and put it in a Word doc for Ingrid "
                "to review."
            ),
        ),
        CallTool(
            at=1,
            key="query",
            participant="analyst",
            name="warehouse.sql_query",
            arguments={"database": "finance_dw", "sql": _Q3_SQL, "max_rows": 5000},
            result=_Q3_SALES_CSV,
            content_type="text/csv",
        ),
        CallTool(
            at=2,
            key="chart",
            participant="analyst",
            name="charts.render",
            arguments=_CHART_ARGS,
            result=_CHART_HANDLE,
            content_type=FILE_CONTENT_TYPE,
        ),
        CallTool(
            at=4,
            key="doc",
            participant="analyst",
            name="docs.create",
            arguments={
                "title": "Q3 FY2026 Board Pack – Regional Revenue",
                "template": "corvane-board-pack",
                "format": "docx",
                "body_markdown": _BOARD_PAGE_MARKDOWN,
                "folder": "s3://corvane-finance-reports/board/2026-q3/",
            },
            result=_DOC_HANDLE,
            content_type=FILE_CONTENT_TYPE,
        ),
        Say(
            at=4.5,
            author="analyst",
            text=(
                "The page is drafted: one bar chart of net revenue by region plus highlights and watch items "
                "(return rates above 8%, discounts above 13%). Want me to share it with Ingrid?"
            ),
        ),
        Say(at=9, text="Not yet, I'll read it tonight. Keep the watch items, the board asked for them last quarter."),
        Say(
            at=9.5,
            author="analyst",
            text="Will do. The watch items stay, with the Q4 pricing review as the follow-up action.",
        ),
        Say(
            at=14,
            text=(
                "Ingrid wants to tie it out herself. Send me the exact file names and links for the doc and "
                "the chart, how many rows the warehouse export had, and the total revenue figure it sums to."
            ),
        ),
    ),
    ask=Ask(participant="analyst", at=15),
    required=(
        "Q3-FY2026-Board-Pack-Regional-Revenue.docx",
        "s3://corvane-finance-reports/board/2026-q3/Q3-FY2026-Board-Pack-Regional-Revenue.docx",
        "q3-fy2026-revenue-by-region.png",
        "s3://corvane-finance-reports/board/2026-q3/q3-fy2026-revenue-by-region.png",
        "40 rows",
        "revenue_usd sum 27596075.85",
    ),
    forbidden=(
        "Europe,Footwear,5501,726068.74",
        "1247709.15",
        "Canada,Camp Cookware",
    ),
)


# --------------------------------------------------------------------------- 3. stale connected-app memory


def _event(
    event_id: str,
    summary: str,
    start: str,
    end: str,
    *,
    attendees: tuple[str, ...] = (),
    location: str | None = None,
    organizer: str = "maja.lindqvist@fjordlabs.io",
    meet: str | None = None,
) -> dict[str, Any]:
    """One item of a Google Calendar ``events.list`` response, with the fields the connector passes through."""
    event: dict[str, Any] = {
        "id": event_id,
        "status": "confirmed",
        "summary": summary,
        "organizer": {"email": organizer},
        "start": {"dateTime": start, "timeZone": "Europe/Berlin"},
        "end": {"dateTime": end, "timeZone": "Europe/Berlin"},
    }
    if location:
        event["location"] = location
    if meet:
        event["hangoutLink"] = f"https://meet.google.com/{meet}"
    if attendees:
        event["attendees"] = [{"email": email, "responseStatus": "accepted"} for email in attendees]
    return event


_CALENDAR_EVENTS = _json(
    {
        "kind": "calendar#events",
        "summary": "maja.lindqvist@fjordlabs.io",
        "timeZone": "Europe/Berlin",
        "updated": "2026-11-30T08:52:17.412Z",
        "items": [
            _event("1hn4c8d2lu", "Lunch with Carla", "2026-11-30T12:30:00+01:00", "2026-11-30T13:30:00+01:00",
                   location="Osteria Nonna, Bergmannstraße 12"),
            _event("7af3kq0e9p", "Vendor review – Lumen Analytics", "2026-11-30T16:00:00+01:00",
                   "2026-11-30T17:00:00+01:00",
                   attendees=("maja.lindqvist@fjordlabs.io", "d.fischer@lumen-analytics.de"),
                   meet="pzr-hnqa-fco"),
            _event("0mgt5r2w6c", "Q1 planning workshop", "2026-12-01T10:00:00+01:00", "2026-12-01T12:00:00+01:00",
                   location="Room Fjord 3", organizer="henrik.olsen@fjordlabs.io",
                   attendees=("henrik.olsen@fjordlabs.io", "maja.lindqvist@fjordlabs.io", "aylin.demir@fjordlabs.io")),
            _event("3ki8vd1nqs", "Hiring panel – Senior Data Engineer", "2026-12-01T14:00:00+01:00",
                   "2026-12-01T15:30:00+01:00", organizer="talent@fjordlabs.io", meet="ujd-ptbe-xsa"),
            _event("6ty2bn8hxa", "1:1 Maja / Tomasz", "2026-12-02T11:00:00+01:00", "2026-12-02T11:30:00+01:00",
                   attendees=("maja.lindqvist@fjordlabs.io", "tomasz.nowak@fjordlabs.io"), meet="rcv-awkq-mde"),
            _event("2pd9xe4fjm", "Design review: checkout v2", "2026-12-02T15:00:00+01:00",
                   "2026-12-02T16:00:00+01:00", organizer="aylin.demir@fjordlabs.io", meet="bno-qzxe-tlp"),
            _event("8rw1mc6ojz", "Board deck dry run", "2026-12-03T10:30:00+01:00", "2026-12-03T11:30:00+01:00",
                   organizer="henrik.olsen@fjordlabs.io", location="Room Skagerrak"),
            _event("4vx0gh7ueb", "Budget sync with Henrik Olsen", "2026-12-03T15:00:00+01:00",
                   "2026-12-03T16:00:00+01:00", organizer="henrik.olsen@fjordlabs.io",
                   attendees=("henrik.olsen@fjordlabs.io", "maja.lindqvist@fjordlabs.io"), meet="yfa-hmsd-qwo"),
            _event("9bq3tl5spd", "Team dinner", "2026-12-03T18:30:00+01:00", "2026-12-03T21:00:00+01:00",
                   location="Brauhaus am Markt"),
            _event("1cz6wa9ktf", "All-hands", "2026-12-04T12:00:00+01:00", "2026-12-04T13:00:00+01:00",
                   organizer="office@fjordlabs.io", meet="hsn-vkdr-ozq"),
        ],
    }
)

STALE_CONNECTED_APP_MEMORY = Scenario(
    name="stale_connected_app_memory",
    description=(
        "A calendar listing from two days ago (volatile, 15-minute lifetime, OAuth data) is the only "
        "calendar knowledge when the user asks whether they are free tomorrow at 3. The context must "
        "mark it stale with the tool that refreshes it, and must not present its events as current."
    ),
    tools=(
        ToolSpec(
            name="calendar.list_events",
            privacy=PrivacyClass.OAUTH,
            freshness=FreshnessClass.VOLATILE,
            ttl=timedelta(minutes=15),
            revalidate_with=("calendar.list_events",),
        ),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Assistant",
            system_prompt=(
                "You are Maja's personal assistant with access to her Google Calendar and Gmail through "
                "connected apps. Her time zone is Europe/Berlin."
            ),
        ),
        Say(at=0, text="What does my week look like? I need to fit in a dentist appointment somewhere."),
        CallTool(
            at=1,
            key="events",
            participant="assistant",
            name="calendar.list_events",
            arguments={
                "calendar_id": "primary",
                "time_min": "2026-11-30T00:00:00+01:00",
                "time_max": "2026-12-05T00:00:00+01:00",
                "single_events": True,
                "order_by": "startTime",
            },
            result=_CALENDAR_EVENTS,
        ),
        Say(
            at=1.5,
            author="assistant",
            text=(
                "Your week is fairly full: 10 events, most of them Monday to Thursday. The clearest windows "
                "for a dentist visit are Tuesday between 12:00 and 14:00 and Friday from 13:00, which is "
                "completely free. Monday after 17:00 works too if they have late slots."
            ),
        ),
        Say(at=4, text="Friday afternoon it is, I'll call them."),
        Say(
            at=4.5,
            author="assistant",
            text="Great. Tell me the time once it's booked and I'll add it to your calendar.",
        ),
        Say(
            at=2 * DAY + 310,
            text="Quick one: am I free tomorrow at 3? Lena wants a call about the Q1 roadmap.",
        ),
    ),
    ask=Ask(participant="assistant", at=2 * DAY + 311),
    required=(
        "STALE",
        "re-run calendar.list_events",
    ),
    forbidden=(
        "Budget sync with Henrik Olsen",
        "2026-12-03T15:00:00+01:00",
        "Board deck dry run",
    ),
)


# --------------------------------------------------------------------------- 4. multi-skill runtime state

_COHORT_SQL = """SELECT date_trunc('week', s.signup_at)::date AS signup_week, s.plan,
       COUNT(*) AS signups,
       COUNT(*) FILTER (WHERE e.active_on_d30) AS retained_d30,
       COUNT(*) FILTER (WHERE e.active_on_d60) AS retained_d60,
       ROUND(100.0 * COUNT(*) FILTER (WHERE e.active_on_d60) / COUNT(*), 1) AS d60_retention_pct
FROM analytics.subscription_events s JOIN analytics.activity_flags e USING (account_id)
WHERE s.signup_at >= '2026-07-06' AND s.signup_at < '2026-10-05'
  AND s.plan IN ('Starter', 'Team', 'Business') AND NOT s.is_internal
GROUP BY 1, 2 ORDER BY 1, array_position(ARRAY['Starter', 'Team', 'Business'], s.plan)"""

_COHORT_CSV = """signup_week,plan,signups,retained_d30,retained_d60,d60_retention_pct
2026-07-06,Starter,445,263,181,40.7
2026-07-06,Team,212,156,134,63.2
2026-07-06,Business,95,80,72,75.8
2026-07-13,Starter,600,337,278,46.3
2026-07-13,Team,289,226,169,58.5
2026-07-13,Business,74,59,59,79.7
2026-07-20,Starter,602,367,250,41.5
2026-07-20,Team,243,170,155,63.8
2026-07-20,Business,100,81,77,77.0
2026-07-27,Starter,544,322,248,45.6
2026-07-27,Team,223,170,147,65.9
2026-07-27,Business,104,92,76,73.1
2026-08-03,Starter,479,276,212,44.3
2026-08-03,Team,284,201,190,66.9
2026-08-03,Business,90,73,73,81.1
2026-08-10,Starter,522,315,224,42.9
2026-08-10,Team,219,166,142,64.8
2026-08-10,Business,84,68,64,76.2
2026-08-17,Starter,511,306,213,41.7
2026-08-17,Team,233,173,137,58.8
2026-08-17,Business,83,74,64,77.1
2026-08-24,Starter,506,290,223,44.1
2026-08-24,Team,271,212,166,61.3
2026-08-24,Business,104,84,84,80.8
2026-08-31,Starter,647,356,267,41.3
2026-08-31,Team,297,211,197,66.3
2026-08-31,Business,97,88,81,83.5
2026-09-07,Starter,532,307,216,40.6
2026-09-07,Team,259,178,167,64.5
2026-09-07,Business,86,71,69,80.2
2026-09-14,Starter,506,297,232,45.8
2026-09-14,Team,248,185,165,66.5
2026-09-14,Business,110,90,82,74.5
2026-09-21,Starter,577,329,253,43.8
2026-09-21,Team,306,223,183,59.8
2026-09-21,Business,93,80,72,77.4
2026-09-28,Starter,690,388,315,45.7
2026-09-28,Team,295,203,192,65.1
2026-09-28,Business,100,86,72,72.0
"""

_CHURN_SQL = """SELECT s.plan, c.cancel_reason, COUNT(*) AS cancellations,
       ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (PARTITION BY s.plan), 1) AS share_of_plan_pct,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY c.tenure_days)::int AS median_tenure_days
FROM analytics.subscription_events s JOIN analytics.cancellations c USING (account_id)
WHERE s.signup_at >= '2026-07-06' AND s.signup_at < '2026-10-05'
  AND s.plan IN ('Starter', 'Team', 'Business') AND NOT s.is_internal
GROUP BY 1, 2 ORDER BY array_position(ARRAY['Starter', 'Team', 'Business'], s.plan), 3 DESC"""

_CHURN_CSV = """plan,cancel_reason,cancellations,share_of_plan_pct,median_tenure_days
Starter,low_usage,691,25.7,36
Starter,too_expensive,675,25.1,89
Starter,billing_failure,457,17.0,98
Starter,missing_integration,356,13.2,96
Starter,switched_competitor,298,11.1,48
Starter,team_downsized,213,7.9,89
Team,team_downsized,155,24.2,67
Team,billing_failure,149,23.3,60
Team,too_expensive,129,20.2,42
Team,low_usage,105,16.4,41
Team,switched_competitor,72,11.2,124
Team,missing_integration,30,4.7,82
Business,switched_competitor,28,29.2,43
Business,team_downsized,21,21.9,107
Business,too_expensive,15,15.6,28
Business,low_usage,12,12.5,89
Business,billing_failure,11,11.5,133
Business,missing_integration,8,8.3,126
"""

_DECK_ID = "1pQ8vZr3KcX0mWy7LbN2sT5uHdE9gJ4aF6oRkV1iYw"

_SLIDES_RESULT = _json(
    {
        "presentation_id": _DECK_ID,
        "revision_id": "ALm37BVx1QmE2c0sTgH8kWzR",
        "created_slide_ids": ["g31a7c0e52b_0_0", "g31a7c0e52b_0_14", "g31a7c0e52b_0_27"],
    }
)

_OUTLINE = [
    "Q3 2026 cohort retention review",
    "Day-60 retention by plan",
    "Weekly cohorts: Starter vs Team vs Business",
    "Churn drivers by plan",
    "Where Starter loses users in the first 30 days",
    "Recommendations and Q4 experiments",
]

_EMAIL_STATE = {
    "recipient": "priya.raman@loomly.io",
    "subject": "Cohort dashboard delayed to Thursday",
    "tone": "brief, apologetic",
    "draft_version": 1,
}

MULTI_SKILL_RUNTIME_STATE = Scenario(
    name="multi_skill_runtime_state",
    description=(
        "Two active skills (a SQL analyst tracking dataset, filters and its last query; a slide writer "
        "tracking outline progress) and one skill used for a detour and then deactivated (an email "
        "drafter). Resuming the deck needs both active states; the finished email's details are not "
        "continuation state."
    ),
    tools=(
        ToolSpec(name="warehouse.sql_query", result_kind="csv", freshness=FreshnessClass.DURABLE),
        ToolSpec(name="slides.append_slides", privacy=PrivacyClass.OAUTH, freshness=FreshnessClass.SESSION),
    ),
    steps=(
        AddParticipant(
            key="analyst",
            name="Analyst",
            system_prompt=(
                "You are the analytics assistant for Loomly's growth team. Skills load task-specific state; "
                "when continuing work, follow the state of the active skills."
            ),
        ),
        Say(
            at=0,
            text=(
                "I'm building the Q3 cohort retention review for Tuesday's growth meeting. Start with day-30 "
                "and day-60 retention by plan for the July to September signups, weekly cohorts."
            ),
        ),
        SetSkill(
            at=0.5,
            participant="analyst",
            skill="sql-analyst",
            state={
                "dataset": "analytics.subscription_events",
                "filters": {"signup_cohort": "2026-Q3", "plans": ["Starter", "Team", "Business"],
                            "exclude_internal": True},
                "last_query_id": None,
            },
        ),
        CallTool(
            at=1,
            key="cohorts",
            participant="analyst",
            name="warehouse.sql_query",
            arguments={"database": "loomly_dw", "sql": _COHORT_SQL},
            result=_COHORT_CSV,
            content_type="text/csv",
        ),
        SetSkill(
            at=1.2,
            participant="analyst",
            skill="sql-analyst",
            state={
                "dataset": "analytics.subscription_events",
                "filters": {"signup_cohort": "2026-Q3", "plans": ["Starter", "Team", "Business"],
                            "exclude_internal": True},
                "last_query_id": "qry_01JE7M2W9R",
            },
        ),
        Say(
            at=1.5,
            author="analyst",
            text=(
                "Here are the Q3 signups as 39 weekly cohorts (13 weeks × 3 plans, internal accounts excluded).\n\n"
                "- Business keeps the most users: 72 to 84% are still active at day 60.\n"
                "- Team sits at 59 to 67%, with no clear trend across the quarter.\n"
                "- Starter drops to 41 to 46%, and most of that loss happens before day 30 (only 55 to 61% "
                "of Starter signups are active at day 30).\n\n"
                "Starter is also the biggest cohort by far (445 to 690 signups a week), so it drives the "
                "blended number. Want me to break Starter down by acquisition channel next?"
            ),
        ),
        Say(
            at=8,
            text=(
                "Quick detour: Priya needs to know the retention dashboard will be late because of the event "
                "backfill. Draft her a short email from me."
            ),
        ),
        SetSkill(at=8.2, participant="analyst", skill="email-drafter", state=_EMAIL_STATE),
        Say(
            at=8.5,
            author="analyst",
            text=(
                "To: priya.raman@loomly.io\n"
                "Subject: Cohort dashboard delayed to Thursday\n\n"
                "Hi Priya,\n\n"
                "Quick heads-up: the retention dashboard won't be ready on Monday as planned. We're "
                "backfilling two weeks of activity events that were dropped during the pipeline migration, "
                "and I'd rather not publish numbers we'd have to correct. I expect to share it on Thursday. "
                "Sorry for the delay, and happy to walk you through the preliminary Q3 cohorts before then.\n\n"
                "Best,\nDaniel"
            ),
        ),
        Say(at=12, text="Perfect, I'll send it myself. Back to the deck: outline it and start on the slides."),
        SetSkill(
            at=12.1,
            participant="analyst",
            skill="email-drafter",
            state={**_EMAIL_STATE, "handed_off": True},
            active=False,
        ),
        SetSkill(
            at=12.2,
            participant="analyst",
            skill="slide-writer",
            state={"deck": "Q3 2026 cohort retention review", "outline": _OUTLINE, "slides_done": 0},
        ),
        Say(
            at=12.5,
            author="analyst",
            text=(
                "Six slides: title, day-60 retention by plan, weekly cohorts, churn drivers, Starter's first "
                "30 days, and recommendations. I'll pull cancellation reasons for the churn slide too."
            ),
        ),
        CallTool(
            at=13,
            key="churn",
            participant="analyst",
            name="warehouse.sql_query",
            arguments={"database": "loomly_dw", "sql": _CHURN_SQL},
            result=_CHURN_CSV,
            content_type="text/csv",
        ),
        SetSkill(
            at=13.2,
            participant="analyst",
            skill="sql-analyst",
            state={
                "dataset": "analytics.subscription_events",
                "filters": {"signup_cohort": "2026-Q3", "plans": ["Starter", "Team", "Business"],
                            "exclude_internal": True},
                "last_query_id": "qry_01JE7Q4N5B",
            },
        ),
        CallTool(
            at=15,
            key="slides",
            participant="analyst",
            name="slides.append_slides",
            arguments={
                "presentation_id": _DECK_ID,
                "slides": [
                    {
                        "layout": "TITLE",
                        "title": _OUTLINE[0],
                        "subtitle": "Growth meeting, Tuesday",
                    },
                    {
                        "layout": "TITLE_AND_BODY",
                        "title": _OUTLINE[1],
                        "body": [
                            "Business: 72–84% of each weekly cohort still active at day 60",
                            "Team: 59–67%",
                            "Starter: 41–46%, most of the loss before day 30",
                        ],
                        "notes": "Ranges are min–max across the 13 weekly cohorts from 6 July to 28 September. "
                        "Internal and test accounts excluded.",
                    },
                    {
                        "layout": "TITLE_AND_CHART",
                        "title": _OUTLINE[2],
                        "chart": {"type": "line", "x": "signup_week", "y": "d60_retention_pct", "series": "plan",
                                  "y_axis": {"min": 30, "max": 90, "format": "0'%'"}},
                        "notes": "No trend within the quarter; the gap between plans is stable week to week.",
                    },
                ],
            },
            result=_SLIDES_RESULT,
        ),
        SetSkill(
            at=15.2,
            participant="analyst",
            skill="slide-writer",
            state={
                "deck": "Q3 2026 cohort retention review",
                "presentation_id": _DECK_ID,
                "outline": _OUTLINE,
                "slides_done": 3,
                "next_slide": "4. Churn drivers by plan",
            },
        ),
        Say(
            at=15.5,
            author="analyst",
            text="Slides 1 to 3 are in the deck. The cancellation-reason data for the churn slide is ready.",
        ),
        Say(
            at=40,
            text=(
                "Back from my meeting. Pick up where we left off: next slide, same filters as before. If you "
                "need more data, build on the last query."
            ),
        ),
    ),
    ask=Ask(participant="analyst", at=41),
    required=(
        "analytics.subscription_events",
        "qry_01JE7Q4N5B",
        '"signup_cohort":"2026-Q3"',
        '"slides_done":3',
        "4. Churn drivers by plan",
    ),
    forbidden=(
        "priya.raman@loomly.io",
        "Cohort dashboard delayed to Thursday",
    ),
)


# --------------------------------------------------------------------------- 5. participant visibility

_SCRATCH_TEXT = (
    "Sizing, before answering: 40M x 768 float32 = 40e6 * 3072 B = 122.9 GB raw vectors. halfvec(768) halves "
    "that to ~61.4 GB. HNSW m=16 adds roughly 40e6 * 16 * 2 * 8 B = ~10 GB of neighbour lists. So with "
    "halfvec the index alone is ~72 GB, fits a 128 GB box with shared_buffers=32GB if we accept OS cache for "
    "the rest. Build: parallel build since 0.6, maintenance_work_mem must hold the graph or it spills "
    "and gets 5-10x slower; guess 3-5 h on 16 cores. Open question for the user: can support search "
    "tolerate a rebuild window, or do we need a blue/green index swap? Draft verdict: pgvector + halfvec, "
    "revisit past 100M."
)

_SCRATCH_RESULT = _json(
    {
        "note_id": "scr_a41f0c",
        "action": "append",
        "chars": 1204,
        "content": (
            "[turn 1] Asked: pgvector vs dedicated vector DB, 40M x 768, already on Postgres. Answered: pgvector "
            "is viable at this size; dedicated service only if QPS > ~2k or multi-region needed.\n[turn 2] "
            + _SCRATCH_TEXT
        ),
        "updated_at": "2026-11-30T09:06:12Z",
    }
)

_WEB_SEARCH = _json(
    {
        "query": "pgvector 0.8 HNSW index build time 40 million vectors memory maintenance_work_mem",
        "results": [
            {
                "title": "pgvector 0.8.0 Released! – PostgreSQL",
                "url": "https://www.postgresql.org/about/news/pgvector-080-released-2952/",
                "content": "pgvector 0.8.0 adds iterative index scans, which help prevent overfiltering when "
                "using WHERE clauses with approximate indexes, and improves cost estimation so the query "
                "planner chooses an index more often when filters are present. This release also improves "
                "HNSW index build and search performance for some workloads, and adds support for casting "
                "between halfvec and sparsevec types. pgvector 0.8.0 supports PostgreSQL 13 and later.",
                "score": 0.91,
            },
            {
                "title": "pgvector: README – HNSW",
                "url": "https://github.com/pgvector/pgvector#hnsw",
                "content": "An HNSW index creates a multilayer graph. It has better query performance than "
                "IVFFlat (in terms of speed-recall tradeoff), but has slower build times and uses more memory. "
                "Index build time: indexes build significantly faster when the graph fits into "
                "maintenance_work_mem. A notice is shown when the graph no longer fits: 'hnsw graph no longer "
                "fits into maintenance_work_mem after 100000 tuples'. Do not set maintenance_work_mem so high "
                "that it exhausts the memory of the server. Like other index types, it's faster to create an "
                "index after loading your initial data. You can also speed up index creation by increasing the "
                "number of parallel workers (max_parallel_maintenance_workers, 2 by default).",
                "score": 0.89,
            },
            {
                "title": "Load vector embeddings up to 67x faster with pgvector and Amazon Aurora",
                "url": "https://aws.amazon.com/blogs/database/"
                "load-vector-embeddings-up-to-67x-faster-with-pgvector-and-amazon-aurora/",
                "content": "Parallel HNSW index builds, introduced in pgvector 0.6.0, let PostgreSQL use "
                "multiple workers to build the graph. In our tests on a 1536-dimension dataset, build time "
                "dropped from many hours to well under an hour once the graph fit in maintenance_work_mem and "
                "enough parallel maintenance workers were available. Build time grows with m and "
                "ef_construction; the defaults (16 and 64) are a reasonable starting point.",
                "score": 0.84,
            },
            {
                "title": "HNSW indexes with Postgres and pgvector | Crunchy Data Blog",
                "url": "https://www.crunchydata.com/blog/hnsw-indexes-with-postgres-and-pgvector",
                "content": "HNSW indexes take longer to build and use more memory than IVFFlat, but provide "
                "better speed-recall tradeoffs and, unlike IVFFlat, can be created before any data is loaded "
                "because there is no training step. The index parameters m (maximum connections per layer) "
                "and ef_construction (size of the candidate list while building) trade build time and index "
                "size against recall; ef_search controls recall at query time.",
                "score": 0.8,
            },
            {
                "title": "Scaling vector search with halfvec and binary quantization – Neon",
                "url": "https://neon.tech/blog/dont-use-vector-use-halvec-instead-and-save-50-of-your-storage-cost",
                "content": "Storing embeddings as halfvec (16-bit floats) instead of vector halves table and "
                "index size with negligible loss in recall for most embedding models. Because more of the "
                "graph fits in maintenance_work_mem, HNSW builds are also faster. You can keep full-precision "
                "vectors in the table and build the index on an expression cast to halfvec.",
                "score": 0.77,
            },
            {
                "title": "Hacker News: Ask HN – pgvector at 50M+ rows in production?",
                "url": "https://news.ycombinator.com/item?id=41873302",
                "content": "We run ~60M 768-d vectors on a single r6i.8xlarge. Initial HNSW build took about "
                "four hours with 12 parallel workers and maintenance_work_mem at 48GB; before we raised it the "
                "build spilled and was on track for a day and a half. Rebuilding is the painful part, we do it "
                "on a replica and fail over. Query latency is fine, p95 around 20 ms with ef_search=60.",
                "score": 0.71,
            },
        ],
        "response_time": 1.84,
    }
)

_PARALLEL = RuntimeKind.MULTI_MODEL

PARTICIPANT_VISIBILITY = Scenario(
    name="participant_visibility",
    description=(
        "Two models answer the same prompts side by side. On the second prompt Model A writes private "
        "working notes to a scratchpad tool while Model B runs its own web search. Model B's context "
        "must carry its own search and the user's prompt, never A's scratchpad: full replay leaks it."
    ),
    tools=(
        ToolSpec(name="notes.scratch", freshness=FreshnessClass.SESSION),
        ToolSpec(name="web.search", result_kind="search", privacy=PrivacyClass.PUBLIC,
                 freshness=FreshnessClass.BOUNDED),
    ),
    steps=(
        AddParticipant(
            key="model_a",
            name="Model A",
            model="scripted:model-a",
            system_prompt=(
                "You are Model A, one of two assistants answering side by side. Be concrete about trade-offs."
            ),
        ),
        AddParticipant(
            key="model_b",
            name="Model B",
            model="scripted:model-b",
            system_prompt=(
                "You are Model B, one of two assistants answering side by side. Cite sources for factual claims."
            ),
        ),
        Say(
            at=0,
            runtime=_PARALLEL,
            text=(
                "We're choosing a vector store for support-ticket search: about 40M embeddings, 768 dimensions, "
                "and we already run Postgres 16. Is pgvector good enough or should we use a dedicated service?"
            ),
        ),
        Say(
            at=0.5,
            author="model_a",
            runtime=_PARALLEL,
            text=(
                "pgvector is viable at 40M vectors if you use an HNSW index and size memory for it. A dedicated "
                "service starts paying off with very high query rates, multi-region replication, or heavy "
                "filtered search. Since you already operate Postgres, start there and benchmark recall and "
                "p95 latency on your own tickets."
            ),
        ),
        Say(
            at=0.6,
            author="model_b",
            runtime=_PARALLEL,
            text=(
                "Probably good enough. Keeping vectors next to your ticket rows gives you transactional "
                "updates and SQL filters for free. Watch index build time and memory at this scale; those are "
                "the usual pain points. A managed vector database mainly buys you operational headroom."
            ),
        ),
        Say(
            at=5,
            runtime=_PARALLEL,
            text=(
                "Follow-up for both of you: what does HNSW index build time look like at that scale with "
                "pgvector 0.8, and how much memory should we plan for?"
            ),
        ),
        CallTool(
            at=5.5,
            key="scratch",
            participant="model_a",
            runtime=_PARALLEL,
            visibility=VisibilityScope.PARTICIPANT_PRIVATE,
            name="notes.scratch",
            arguments={"action": "append", "text": _SCRATCH_TEXT},
            result=_SCRATCH_RESULT,
        ),
        CallTool(
            at=5.6,
            key="search",
            participant="model_b",
            runtime=_PARALLEL,
            name="web.search",
            arguments={
                "query": "pgvector 0.8 HNSW index build time 40 million vectors memory maintenance_work_mem",
                "max_results": 6,
            },
            result=_WEB_SEARCH,
        ),
    ),
    ask=Ask(participant="model_b", runtime=_PARALLEL, at=6),
    required=(
        "what does HNSW index build time look like at that scale",
        "https://github.com/pgvector/pgvector#hnsw",
        "pgvector 0.8.0 Released!",
    ),
    forbidden=(
        "122.9 GB raw vectors",
        "fits a 128 GB box",
        "Draft verdict: pgvector + halfvec",
        "blue/green index swap",
    ),
)


# --------------------------------------------------------------------------- 6. contradiction and supersession


def _account(renewal_date: str, modified_at: str, modified_by: str, health: int) -> str:
    """A CRM account record as the CRM's REST API returns it."""
    return _json(
        {
            "account_id": "ACME-114",
            "name": "Acme Logistics GmbH",
            "segment": "Enterprise",
            "account_owner": "Jonas Berg",
            "csm": "Lea Hoffmann",
            "status": "Active",
            "arr_eur": 412800,
            "renewal_date": renewal_date,
            "health_score": health,
            "open_opportunities": [
                {"opportunity_id": "OPP-5521", "name": "Telematics add-on, Hamburg depot", "stage": "Proposal",
                 "amount_eur": 86000, "close_date": "2026-12-19"},
                {"opportunity_id": "OPP-5608", "name": "Seat expansion, Poland", "stage": "Discovery",
                 "amount_eur": 41500, "close_date": "2027-02-15"},
            ],
            "open_cases": [
                {"case_number": "CS-20931", "priority": "P2", "subject": "ETA predictions lag for cross-border "
                 "routes since route-engine upgrade; customer reports 40-60 min drift on PL-DE lanes"},
                {"case_number": "CS-21004", "priority": "P3", "subject": "SSO group mapping drops dispatcher role "
                 "for users provisioned after 10 Nov"},
            ],
            "recent_activity": [
                {"activity_id": "ACT-88120", "type": "meeting", "body": "Ops review with Stefan Krüger (VP "
                 "Operations). Hamburg depot go-live confirmed for January; asked for a consolidated invoice."},
                {"activity_id": "ACT-88342", "type": "email", "body": "Procurement (Anja Wolf) asked for the "
                 "renewal quote to include the Hamburg seats and the telematics add-on as one line."},
                {"activity_id": "ACT-88397", "type": "call", "body": "Escalation call on CS-20931 with their "
                 "dispatch lead. Customer frustrated but constructive; wants a fix date before the QBR."},
                {"activity_id": "ACT-88455", "type": "note", "body": "Usage dip in week 46 explained by the "
                 "Poland depot switching to the mobile app; web logins down, mobile up 38%."},
            ],
            "last_modified_at": modified_at,
            "last_modified_by": modified_by,
        }
    )


_CONTRACT_TERMS = _json(
    {
        "account_id": "ACME-114",
        "document_id": "CTR-2024-0387",
        "effective_date": "2024-04-01",
        "initial_term_months": 36,
        "renewal_date": "2027-03-31",
        "auto_renew": True,
        "renewal_term_months": 12,
        "notice_period_days": 90,
        "price_escalator": "CPI (Destatis VPI), capped at 5% per renewal term",
        "termination_for_convenience": False,
        "governing_law": "Germany (Munich courts)",
        "source_clauses": [
            {"clause_id": "3.1", "page": 4, "text": "This Agreement commences on the Effective Date and continues "
             "for an initial term of thirty-six (36) months."},
            {"clause_id": "3.2", "page": 4, "text": "Thereafter it renews automatically for successive twelve "
             "(12) month terms unless either party gives notice of non-renewal at least ninety (90) days "
             "before the end of the then-current term."},
            {"clause_id": "7.4", "page": 9, "text": "Fees for any renewal term may be increased by the change in "
             "the consumer price index (VPI) published by Destatis, not to exceed five percent (5%)."},
            {"clause_id": "12.2", "page": 15, "text": "Neither party may terminate this Agreement for convenience "
             "during the initial term or any renewal term."},
            {"clause_id": "18.3", "page": 21, "text": "This Agreement is governed by the laws of the Federal "
             "Republic of Germany; the courts of Munich have exclusive jurisdiction."},
        ],
        "extraction_model": "terms-extractor-2026-09",
        "extraction_confidence": 0.93,
    }
)

CONTRADICTION_AND_SUPERSESSION = Scenario(
    name="contradiction_and_supersession",
    description=(
        "The same CRM account is read twice: the second read (renewal moved to 2027-02-28) supersedes the "
        "first. The signed contract's extracted terms then give a third renewal date for the same "
        "account: a real conflict between sources, so both current values stay, with a CONFLICTS note, "
        "and the superseded value does not."
    ),
    tools=(
        ToolSpec(name="crm.get_account", key_args=("account_id",), freshness=FreshnessClass.SESSION),
        ToolSpec(name="contracts.extract_terms", key_args=("document_id",), freshness=FreshnessClass.DURABLE),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Assistant",
            system_prompt=(
                "You are an account-management copilot for Brightline's customer success team, with read "
                "access to the CRM and the contract repository."
            ),
        ),
        Say(
            at=0,
            text="Prep me for the ACME-114 QBR on Thursday. When is their renewal and how is the account doing?",
        ),
        CallTool(
            at=1,
            key="crm_first",
            participant="assistant",
            name="crm.get_account",
            arguments={"account_id": "ACME-114"},
            result=_account("2027-01-31", "2026-11-12T14:03:51Z", "lea.hoffmann@brightline.io", 72),
        ),
        Say(
            at=1.5,
            author="assistant",
            text=(
                "Here's the QBR prep for ACME-114 (Acme Logistics GmbH):\n\n"
                "- Renewal: 2027-01-31, €412,800 ARR. Account owner Jonas Berg, CSM Lea Hoffmann.\n"
                "- Health: 72. Stable, but the open P2 case is weighing on it.\n"
                "- Pipeline: the Hamburg depot telematics add-on (€86k, Proposal, closing 19 Dec) and a Poland "
                "seat expansion (€41.5k, Discovery).\n"
                "- Open cases: CS-20931 (P2, ETA drift on cross-border routes) and CS-21004 (P3, SSO role "
                "mapping).\n"
                "- Recent: procurement wants the renewal quote to bundle the Hamburg seats and the "
                "telematics add-on, and their dispatch lead escalated CS-20931 and wants a fix date before "
                "the QBR."
            ),
        ),
        Say(at=6, text="What's the P2 case about exactly? I don't want to be surprised in the meeting."),
        Say(
            at=6.5,
            author="assistant",
            text=(
                "CS-20931: since the route-engine upgrade, ETA predictions on cross-border lanes (PL to DE) "
                "drift by 40 to 60 minutes. It's open at P2; worth asking support for a status before Thursday."
            ),
        ),
        Say(
            at=30,
            text=(
                "Jonas just told me they agreed to push the renewal back a month when Acme added the Hamburg "
                "depot. Can you check the account again?"
            ),
        ),
        CallTool(
            at=31,
            key="crm_second",
            participant="assistant",
            name="crm.get_account",
            arguments={"account_id": "ACME-114"},
            result=_account("2027-02-28", "2026-11-30T09:24:10Z", "jonas.berg@brightline.io", 74),
        ),
        Say(
            at=31.5,
            author="assistant",
            text=(
                "Confirmed: the CRM now shows a renewal date of 2027-02-28, updated by Jonas this morning. "
                "Everything else is unchanged apart from the health score, now 74."
            ),
        ),
        Say(
            at=35,
            text=(
                "Can you also check what the signed contract says? Then tell me which renewal date I should "
                "put in the QBR deck."
            ),
        ),
        CallTool(
            at=36,
            key="terms",
            participant="assistant",
            name="contracts.extract_terms",
            arguments={
                "document_id": "CTR-2024-0387",
                "fields": ["effective_date", "initial_term_months", "renewal_date", "auto_renew",
                           "renewal_term_months", "notice_period_days", "price_escalator"],
            },
            result=_CONTRACT_TERMS,
        ),
    ),
    ask=Ask(participant="assistant", at=37),
    required=(
        "2027-02-28",
        "renewal_date=2027-03-31",
        "CONFLICTS with m:{m:crm_second}",
    ),
    forbidden=("2027-01-31",),
)


SCENARIOS = (
    DEFERRED_DOCUMENT_PICKER,
    MULTI_TOOL_FILE_GENERATION,
    STALE_CONNECTED_APP_MEMORY,
    MULTI_SKILL_RUNTIME_STATE,
    PARTICIPANT_VISIBILITY,
    CONTRADICTION_AND_SUPERSESSION,
)
