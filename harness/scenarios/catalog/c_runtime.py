"""Runtime-mode boundary cases: discussion, subagents, scheduled jobs, branch sends.

Each scenario exercises one way a runtime mode changes what a model call may
see: a discussion participant must not read another's private tool results; a
parent must not read its child's workspace until the child's results are
promoted; a scheduled job's new observation supersedes the previous run's; a
branch send sees its lineage up to the fork point and nothing after it.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from typing import Any

from harness.scenarios.model import (
    AddParticipant,
    Ask,
    CallTool,
    Checkpoint,
    Fork,
    Promote,
    Say,
    Scenario,
)
from policy.derive import FILE_CONTENT_TYPE
from policy.enums import FreshnessClass, PrivacyClass, PromotionPolicy, RuntimeKind
from policy.tools import ToolSpec


def _json(value: Any, indent: int | None = None) -> str:
    """A tool payload as the tool returned it (compact, or pretty like the GitHub API)."""
    if indent is None:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(value, ensure_ascii=False, indent=indent)


_DISCUSSION = RuntimeKind.DISCUSSION
_CHILD = RuntimeKind.SUBAGENT_CHILD


# --------------------------------------------------------------------------- 1. discussion

_OPTIMIST_SEARCH = _json(
    {
        "query": "passkeys default sign-in success rate production results",
        "results": [
            {
                "title": "Passkeys in production: 18 months of sign-in data",
                "url": "https://engineering.tallyho.com/passkeys-18-months",
                "description": "After we made passkeys the default on web, first-attempt sign-in success rose "
                "from 71% to 93% and password-reset tickets fell by a third.",
                "age": "2026-06-12",
            },
            {
                "title": "Why we rolled back passkeys for enterprise SSO users",
                "url": "https://blog.northpeak.io/rolling-back-passkeys-sso",
                "description": "Managed Windows fleets without a platform authenticator pushed 1 in 5 of "
                "our enterprise users into the fallback flow; we now offer passkeys per tenant.",
                "age": "2026-03-02",
            },
            {
                "title": "Passkey support matrix (browsers and operating systems)",
                "url": "https://passkeys.dev/device-support/",
                "description": "Current support for passkey creation, synced passkeys and cross-device "
                "sign-in across Chrome, Safari, Edge and Firefox on each platform.",
                "age": "2026-10-28",
            },
            {
                "title": "Designing the passkey-first login page",
                "url": "https://ux.fieldnotes.design/passkey-first-login",
                "description": "Keep the username field, use conditional UI for autofill, and show the "
                "fallback before the user has to ask for it.",
                "age": "2025-11-19",
            },
            {
                "title": "Passkey adoption index, Q3 2026",
                "url": "https://authpulse.org/reports/passkey-index-2026-q3",
                "description": "Share of consumer sign-ins completed with a passkey reached 24% across "
                "the 40 sites in the index, up from 15% a year earlier.",
                "age": "2026-10-07",
            },
        ],
    }
)

_OPTIMIST_PAGE = _json(
    {
        "url": "https://engineering.tallyho.com/passkeys-18-months",
        "status": 200,
        "title": "Passkeys in production: 18 months of sign-in data",
        "content": (
            "# Passkeys in production: 18 months of sign-in data\n\n"
            "*Priya Raman, Identity team — 12 June 2026*\n\n"
            "In January 2025 we started offering passkeys to Tallyho web customers as an opt-in. In "
            "September we made them the default: new accounts create a passkey at sign-up, and existing "
            "customers are asked to add one after their next password sign-in.\n\n"
            "## What changed\n\n"
            "- First-attempt sign-in success went from 71% (password) to 93% (passkey).\n"
            "- Median time to sign in fell from 14.2 s to 4.8 s.\n"
            "- Password-reset tickets fell by 34% quarter over quarter.\n"
            "- Account-takeover reports dropped to near zero for customers with a passkey.\n\n"
            "## How we measured\n\n"
            "We compared the 90 days before the switch with the 90 days after it, for web sign-ins only. "
            "A sign-in counts as a first-attempt success when the customer reaches the dashboard without "
            "a retry, a reset or a support contact. Bots and automated API clients are excluded. Success "
            "rates are per sign-in, not per customer, so frequent users weigh more.\n\n"
            "## Rollout\n\n"
            "We moved in three steps: 5% of new sign-ups for two weeks, then all new sign-ups, then "
            "existing customers in weekly cohorts of 10%. Each step had a rollback switch tied to two "
            "guardrails: first-attempt success below 85% for a day, or support contacts about sign-in "
            "above 1.5 per 1,000 sign-ins. Neither guardrail fired, although the second came close in "
            "the week we reached customers on older Android phones.\n\n"
            "## What we got wrong\n\n"
            "Our first prompt appeared before the customer had finished signing in, and 40% dismissed "
            "it. Moving it to after the dashboard loaded doubled enrolment. We also underestimated "
            "customers on shared family computers; for them we kept a 'Sign in another way' link above "
            "the fold rather than behind a menu.\n\n"
            "## Recovery\n\n"
            "A passkey is only as good as the recovery path behind it. We require a verified email and "
            "let customers register a second passkey from settings; support can reset passkeys after an "
            "ID check, which takes about 10 minutes per case.\n\n"
            "## Next\n\n"
            "We are testing passkeys for the mobile apps and plan to retire SMS codes in 2027."
        ),
    }
)

_OPTIMIST_HYBRID_SEARCH = _json(
    {
        "query": "passkey sign-in from phone QR code Windows 10 Chrome Edge support",
        "results": [
            {
                "title": "Cross-device (hybrid) sign-in with passkeys",
                "url": "https://docs.keystone-id.dev/guides/hybrid-sign-in",
                "description": "When the computer has no passkey for the site, the browser offers to use "
                "a phone instead: scan a QR code, confirm on the phone, done.",
                "age": "2026-09-14",
            },
            {
                "title": "Use a passkey from your phone to sign in on a Windows PC",
                "url": "https://support.microsoft.com/en-us/windows/passkeys-on-another-device",
                "description": "Choose 'iPhone, iPad or Android device', scan the QR code with your phone "
                "and keep Bluetooth on for both devices.",
                "age": "2026-05-02",
            },
            {
                "title": "Hybrid transport explained: caBLE, Bluetooth proximity and tunnel servers",
                "url": "https://blog.webauthn.guide/hybrid-transport-explained",
                "description": "Why cross-device passkey sign-in needs Bluetooth even though the data "
                "travels over the internet, and what that means for locked-down laptops.",
                "age": "2025-12-08",
            },
            {
                "title": "Passkeys on shared and kiosk computers: what works",
                "url": "https://authpulse.org/guides/passkeys-shared-computers",
                "description": "Shared machines should never store a passkey; use the phone-based flow or "
                "a hardware security key, and keep a non-passkey fallback for kiosks.",
                "age": "2026-07-21",
            },
        ],
    }
)

_OPTIMIST_HYBRID = _json(
    {
        "url": "https://docs.keystone-id.dev/guides/hybrid-sign-in",
        "status": 200,
        "title": "Cross-device (hybrid) sign-in with passkeys",
        "content": (
            "# Cross-device (hybrid) sign-in\n\n"
            "When the computer has no passkey for the site, the browser offers to use a phone instead. "
            "The browser shows a QR code; the user scans it with an Android or iOS phone that holds the "
            "passkey, the devices confirm they are close to each other over Bluetooth, and the phone "
            "signs the challenge.\n\n"
            "Supported: Chrome 108+ and Edge 108+ on Windows 10 and 11, Chrome on macOS and ChromeOS, "
            "Safari 16+ on macOS. Firefox on Windows supports hybrid sign-in from version 122.\n\n"
            "Requirements: Bluetooth on both devices; an internet connection on both devices. Managed "
            "Windows machines with Bluetooth disabled by policy cannot use hybrid sign-in and must fall "
            "back to another method."
        ),
    }
)

_SKEPTIC_SEGMENTS = _json(
    {
        "query_id": "q_7f3a21",
        "rows": [
            {"segment": "managed_windows_10", "sign_ins_30d": 412880, "no_platform_auth_pct": 61.4},
            {"segment": "personal_windows_11", "sign_ins_30d": 388102, "no_platform_auth_pct": 8.9},
            {"segment": "macos", "sign_ins_30d": 301554, "no_platform_auth_pct": 2.1},
            {"segment": "shared_kiosk", "sign_ins_30d": 97311, "no_platform_auth_pct": 100.0},
            {"segment": "chromeos", "sign_ins_30d": 41207, "no_platform_auth_pct": 4.6},
        ],
        "row_count": 5,
        "elapsed_ms": 1843,
    }
)

_SKEPTIC_TICKETS = _json(
    {
        "count": 64,
        "next_page": None,
        "results": [
            {
                "id": 48211,
                "subject": "Lost phone, can't sign in - passkey only?",
                "description": (
                    "I lost my phone on Saturday and the login page only offers 'Sign in with passkey'. I "
                    "never set a password after the beta switched me over. How do I get into my account to "
                    "pay rent on Monday?"
                ),
                "status": "open",
                "priority": "high",
                "created_at": "2026-11-24T16:02:11Z",
                "tags": ["passkey", "account_recovery", "beta_default_on"],
            },
            {
                "id": 48307,
                "subject": "QR code sign-in does nothing on office PC",
                "description": (
                    "At work we use locked-down Dell laptops. When I choose 'use a phone' the QR code "
                    "appears, I scan it with my iPhone, it says connecting and then nothing happens. Password "
                    "sign-in works fine."
                ),
                "status": "pending",
                "priority": "normal",
                "created_at": "2026-11-25T08:47:39Z",
                "tags": ["passkey", "hybrid", "managed_device"],
            },
            {
                "id": 48352,
                "subject": "Where did the password box go?",
                "description": (
                    "Since this week the sign-in page asks for a passkey first and I can't find where to type "
                    "my password. Found it under 'Other options' eventually but it took a while."
                ),
                "status": "solved",
                "priority": "low",
                "created_at": "2026-11-25T13:20:05Z",
                "tags": ["passkey", "ux", "beta_default_on"],
            },
            {
                "id": 48390,
                "subject": "IT blocks Bluetooth, passkey via phone fails",
                "description": (
                    "Our IT department disables Bluetooth on all company laptops. The passkey-on-phone option "
                    "fails every time with 'Couldn't connect to your device'. Please keep password sign-in "
                    "available for us."
                ),
                "status": "open",
                "priority": "normal",
                "created_at": "2026-11-26T10:11:52Z",
                "tags": ["passkey", "hybrid", "managed_device"],
            },
            {
                "id": 48412,
                "subject": "Reset passkey took 3 days",
                "description": (
                    "I asked support to reset my passkey on Friday after replacing my phone. It took until "
                    "Monday and I couldn't access invoices in the meantime. The ID check email went to spam."
                ),
                "status": "open",
                "priority": "high",
                "created_at": "2026-11-27T09:31:18Z",
                "tags": ["passkey", "account_recovery", "sla_breach"],
            },
        ],
    }
)

AUTONOMOUS_DISCUSSION_ATTRIBUTION = Scenario(
    name="autonomous_discussion_attribution",
    description=(
        "A moderated two-speaker discussion. Each speaker researches with private tools. The Skeptic's "
        "turn must show who said what (speaker labels, the moderator's directive as a directive) and "
        "its own tool results, but never the Optimist's private tool results, even though a full "
        "replay would send them."
    ),
    steps=(
        AddParticipant(
            key="optimist",
            name="Optimist",
            system_prompt="You are Optimist on a product panel. Argue for the proposal with evidence from your tools.",
        ),
        AddParticipant(
            key="skeptic",
            name="Skeptic",
            system_prompt="You are Skeptic on a product panel. Stress-test the proposal with evidence from your tools.",
        ),
        AddParticipant(key="moderator", name="Moderator", role="moderator"),
        Say(
            at=0,
            text="Panel question: should Lumen Pay make passkeys the default web sign-in in Q1, "
            "with passwords as a fallback only?",
            runtime=_DISCUSSION,
        ),
        Say(
            at=0.5,
            author="moderator",
            speaker_label="Moderator",
            directive=True,
            text="Each speaker: at most 3 sentences, cite a source id for every number.",
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=1,
            key="opt_search",
            participant="optimist",
            name="web.search",
            arguments={"query": "passkeys default sign-in success rate production results", "count": 5},
            result=_OPTIMIST_SEARCH,
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=1.5,
            key="opt_fetch",
            participant="optimist",
            name="web.fetch",
            arguments={"url": "https://engineering.tallyho.com/passkeys-18-months"},
            result=_OPTIMIST_PAGE,
            runtime=_DISCUSSION,
        ),
        Say(
            at=2,
            author="optimist",
            speaker_label="Optimist",
            text="Tallyho made passkeys the default and first-attempt sign-in success rose from 71% to 93% "
            "(engineering.tallyho.com/passkeys-18-months). Passwords stay as the fallback, so nobody is "
            "locked out.",
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=3,
            key="sk_segments",
            participant="skeptic",
            name="analytics.query",
            arguments={"saved_query": "web_sign_ins_by_segment_30d"},
            result=_SKEPTIC_SEGMENTS,
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=3.5,
            key="sk_tickets",
            participant="skeptic",
            name="support.search_tickets",
            arguments={"query": "passkey", "created_after": "2026-09-01", "product": "web"},
            result=_SKEPTIC_TICKETS,
            runtime=_DISCUSSION,
        ),
        Say(
            at=4,
            author="skeptic",
            speaker_label="Skeptic",
            text="Our largest web segment is managed Windows 10, and 61.4% of those sign-ins have no "
            "platform authenticator (q_7f3a21). The default-on beta has drawn 64 passkey tickets since "
            "September, the worst about recovery (#48211, #48412).",
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=4.7,
            key="opt_hybrid_search",
            participant="optimist",
            name="web.search",
            arguments={"query": "passkey sign-in from phone QR code Windows 10 Chrome Edge support", "count": 4},
            result=_OPTIMIST_HYBRID_SEARCH,
            runtime=_DISCUSSION,
        ),
        CallTool(
            at=5,
            key="opt_hybrid",
            participant="optimist",
            name="web.fetch",
            arguments={"url": "https://docs.keystone-id.dev/guides/hybrid-sign-in"},
            result=_OPTIMIST_HYBRID,
            runtime=_DISCUSSION,
        ),
        Say(
            at=5.5,
            author="optimist",
            speaker_label="Optimist",
            text="Those Windows 10 users can sign in with the passkey on their phone by scanning a QR code, "
            "which Chrome and Edge support today (docs.keystone-id.dev/guides/hybrid-sign-in).",
            runtime=_DISCUSSION,
        ),
    ),
    ask=Ask(participant="skeptic", runtime=_DISCUSSION, at=6),
    required=(
        "Optimist: Tallyho made passkeys the default",
        "Optimist: Those Windows 10 users",
        "Moderator directive: Each speaker: at most 3 sentences",
        "Panel question: should Lumen Pay make passkeys the default",
        "[m:{m:sk_segments}]",
        "managed_windows_10|61.4",
        "[m:{m:sk_tickets}]",
        "48390|IT blocks Bluetooth, passkey via phone fails",
    ),
    forbidden=(
        "Why we rolled back passkeys for enterprise SSO users",
        "Sign in another way",
        "Bluetooth disabled by policy",
        "1 in 5 of",
        "Hybrid transport explained",
    ),
)


# --------------------------------------------------------------------------- 2. subagent child capture

_NWE_RELEASE = _json(
    {
        "url": "https://ir.norwind-energy.com/news/2026-11-05-third-quarter-results",
        "status": 200,
        "content_type": "text/html; charset=utf-8",
        "title": "Norwind Energy Reports Third Quarter 2026 Results",
        "fetched_at": "2026-11-30T09:02:14Z",
        "text": (
            "Norwind Energy Reports Third Quarter 2026 Results\n\n"
            "OSLO and HOUSTON, Nov. 5, 2026 — Norwind Energy, Inc. (NYSE: NWE), a supplier of grid-scale "
            "storage and power-conversion systems, today reported financial results for the third quarter "
            "ended September 30, 2026.\n\n"
            "Third quarter highlights\n"
            "- Revenue of $1,271 million, up 9% year over year, driven by utility storage deliveries in Texas "
            "and Germany.\n"
            "- Gross margin of 29.8%, compared with 31.2% in the third quarter of 2025, reflecting an "
            "inventory write-down on legacy inverter stock and higher freight costs.\n"
            "- Adjusted EBITDA of $188 million; net income of $61 million, or $0.54 per diluted share.\n"
            "- Backlog of $6.9 billion at quarter end, up from $6.2 billion at June 30.\n"
            "- Free cash flow of negative $42 million as the company built inventory for fourth-quarter "
            "deliveries.\n\n"
            "\"Demand for long-duration storage remains strong, and our backlog grew for the sixth consecutive "
            "quarter,\" said Ingrid Solheim, Chief Executive Officer. \"We are disappointed with margins this "
            "quarter. We have cleared the legacy inverter inventory and expect the new NW-7 platform to carry "
            "margins above 32% once volumes ramp in 2027.\"\n\n"
            "Full-year 2026 outlook\n"
            "Norwind now expects full-year 2026 revenue of $4.65 billion to $4.75 billion, compared with its "
            "previous outlook of $4.80 billion to $4.95 billion, as two utility projects in Spain move into "
            "2027 at the customers' request. The company now expects gross margin of 30.0% to 30.5% "
            "(previously 31.0% to 32.0%). Capital expenditure guidance of $600 million to $625 million is "
            "unchanged.\n\n"
            "Investor Day\n"
            "Norwind will host its 2026 Investor Day in New York on December 3, 2026 at 10:00 a.m. Eastern "
            "Time, including a strategy update and a first outlook for 2027. A live webcast and replay will "
            "be available at ir.norwind-energy.com.\n\n"
            "Non-GAAP measures\n"
            "Adjusted EBITDA excludes stock-based compensation, restructuring charges and the inventory "
            "write-down described above. A reconciliation to the nearest GAAP measure is included in the "
            "tables accompanying this release.\n\n"
            "Forward-looking statements\n"
            "This release contains forward-looking statements, including statements about our outlook for "
            "2026 and our expectations for the NW-7 platform. Actual results may differ materially because "
            "of risks including project timing, supply-chain disruption, interest rates and changes in "
            "energy policy. These and other risks are described in our most recent Form 10-K and subsequent "
            "quarterly reports. Norwind undertakes no obligation to update these statements.\n\n"
            "Condensed Consolidated Statements of Operations (unaudited, in millions, except per-share data)\n"
            "                                   Three months ended     Nine months ended\n"
            "                                   Sep 30,   Sep 30,      Sep 30,   Sep 30,\n"
            "                                    2026      2025         2026      2025\n"
            "Revenue                            1,271     1,167        3,402     3,118\n"
            "Cost of revenue                      892       803        2,351     2,139\n"
            "Gross profit                         379       364        1,051       979\n"
            "Research and development              88        79          251       228\n"
            "Selling, general and administrative  151       139          437       405\n"
            "Restructuring                         14         —           14         —\n"
            "Operating income                     126       146          349       346\n"
            "Interest expense, net                (31)      (24)         (86)      (71)\n"
            "Income before income taxes            95       122          263       275\n"
            "Provision for income taxes            34        37           79        83\n"
            "Net income                            61        85          184       192\n"
            "Diluted earnings per share          0.54      0.75         1.62      1.70\n"
            "Diluted shares outstanding         113.2     113.6        113.4     113.1\n\n"
            "Investor contact: Marte Lie, investors@norwind-energy.com\n"
            "Media contact: press@norwind-energy.com"
        ),
    }
)

_NWE_10Q = _json(
    {
        "source": "https://ir.norwind-energy.com/filings/NWE-10-Q-2026-Q3.pdf",
        "page_count": 58,
        "pages_requested": "24-27",
        "pages": [
            {
                "page": 24,
                "text": (
                    "Item 2. Management's Discussion and Analysis of Financial Condition and Results of "
                    "Operations\n"
                    "Results of Operations — Three Months Ended September 30, 2026 Compared with 2025\n"
                    "(in millions, except percentages)\n"
                    "                         2026      2025    Change\n"
                    "Revenue:\n"
                    "  Storage systems       $ 918     $ 812      13%\n"
                    "  Power conversion        241       262      (8)%\n"
                    "  Services                112        93      20%\n"
                    "Total revenue          $1,271    $1,167       9%\n"
                    "Cost of revenue           892       803      11%\n"
                    "Gross profit           $  379    $  364       4%\n"
                    "Gross margin            29.8%     31.2%\n"
                    "Operating expenses:\n"
                    "  Research and development  88        79      11%\n"
                    "  Selling, general and\n"
                    "  administrative            151       139       9%\n"
                    "  Restructuring              14         —        n/m\n"
                    "Operating income       $  126    $  146     (14)%\n"
                    "Interest expense, net      (31)      (24)     29%\n"
                    "Income before taxes         95       122    (22)%\n"
                    "Provision for income taxes  34        37     (8)%\n"
                    "Net income             $   61    $   85    (28)%"
                ),
            },
            {
                "page": 25,
                "text": (
                    "Gross margin decreased 1.4 percentage points, primarily because of a $38.6 million "
                    "write-down of legacy NW-5 inverter inventory to net realizable value after a European "
                    "customer cancelled a framework order, and ocean-freight costs that were $11.2 million "
                    "higher than in the prior-year quarter. Excluding the write-down, gross margin would "
                    "have been 32.9%.\n"
                    "Power conversion revenue decreased 8% because of lower NW-5 shipments as customers "
                    "transition to the NW-7 platform, which began volume shipments in August 2026.\n"
                    "Services revenue increased 20% on a larger installed base under long-term service "
                    "agreements, which typically carry higher margins than product sales."
                ),
            },
            {
                "page": 26,
                "text": (
                    "Liquidity and Capital Resources\n"
                    "As of September 30, 2026 we had cash and cash equivalents of $804 million and $750 "
                    "million available under our revolving credit facility, which matures in March 2029. "
                    "Net cash used in operating activities was $9 million for the quarter, as inventories "
                    "increased by $214 million ahead of fourth-quarter deliveries. Capital expenditures "
                    "were $152 million, mainly for the NW-7 line in Monterrey. We were in compliance with "
                    "all covenants, including a maximum net leverage ratio of 3.0x (actual: 1.6x)."
                ),
            },
            {
                "page": 27,
                "text": (
                    "Remaining Performance Obligations\n"
                    "Remaining performance obligations, which we refer to as backlog, were $6.9 billion at "
                    "September 30, 2026, of which we expect to recognize approximately 38% as revenue over "
                    "the next twelve months and the remainder thereafter. Two utility projects in Spain "
                    "with a combined contract value of $212 million were rescheduled at the customers' "
                    "request from the fourth quarter of 2026 to the first half of 2027; the contracts "
                    "were not modified and remain in backlog.\n"
                    "Critical Accounting Estimates\n"
                    "Inventory is stated at the lower of cost and net realizable value. We review "
                    "inventory quarterly for excess and obsolete items based on forecast demand, product "
                    "transitions and customer commitments. The NW-5 write-down recorded this quarter "
                    "reflects our updated forecast after the framework-order cancellation; we do not "
                    "expect further material write-downs of NW-5 inventory. Product warranty reserves "
                    "were $97 million at September 30, 2026, compared with $88 million at December 31, "
                    "2025, reflecting the larger installed base."
                ),
            },
        ],
    }
)

SUBAGENT_CHILD_ARTIFACT_CAPTURE = Scenario(
    name="subagent_child_artifact_capture",
    description=(
        "A parent agent delegates reading an earnings release and a 10-Q to a child subagent. The child's "
        "large raw payloads are captured as artifacts, but until the child finishes and promotes its "
        "results, the parent's next turn sees only its own conversation: no child payload, no child "
        "memory summary."
    ),
    tools=(
        ToolSpec(name="web.fetch", privacy=PrivacyClass.PUBLIC, freshness=FreshnessClass.DURABLE),
        ToolSpec(name="pdf.extract", privacy=PrivacyClass.PUBLIC, freshness=FreshnessClass.DURABLE),
    ),
    steps=(
        AddParticipant(
            key="analyst",
            name="Analyst",
            system_prompt="You are a research assistant for an equity analyst. Delegate long reading to "
            "subagents and cite sources.",
        ),
        Say(
            at=0,
            text="I'm refreshing my Norwind Energy (NWE) model before Thursday's investor day. "
            "Current FY2026 base case: revenue $4.82B, gross margin 31.5%, capex $610M.",
        ),
        Say(at=0.5, author="analyst", text="Noted. What should I check that base case against?"),
        Say(
            at=1,
            text="Their Q3 2026 results release and the 10-Q: revenue, gross margin and any change to "
            "full-year guidance.",
        ),
        Say(
            at=1.5,
            key="handoff",
            author="analyst",
            text="I've started a filings subagent on the Q3 release and the 10-Q. It will report those "
            "figures with page references, and I'll compare them with your base case.",
        ),
        AddParticipant(
            at=1.5,
            key="filings",
            name="Filings reader",
            role="subagent",
            parent="analyst",
            system_prompt="Read the given filings and report revenue, gross margin and guidance with page "
            "references.",
        ),
        CallTool(
            at=2,
            key="fetch_release",
            participant="filings",
            name="web.fetch",
            arguments={"url": "https://ir.norwind-energy.com/news/2026-11-05-third-quarter-results"},
            result=_NWE_RELEASE,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        CallTool(
            at=3,
            key="extract_10q",
            participant="filings",
            name="pdf.extract",
            arguments={"url": "https://ir.norwind-energy.com/filings/NWE-10-Q-2026-Q3.pdf", "pages": "24-27"},
            result=_NWE_10Q,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        Say(
            at=4,
            text="While it reads: the investor day is Thursday 3 Dec, 16:00 CET. What should we ask management "
            "if guidance is cut?",
        ),
    ),
    ask=Ask(participant="analyst", at=4.5),
    required=(
        "revenue $4.82B, gross margin 31.5%, capex $610M",
        "Thursday 3 Dec, 16:00 CET",
        "I've started a filings subagent",
    ),
    forbidden=(
        "Norwind Energy Reports Third Quarter 2026 Results",
        "$4.65 billion",
        "Adjusted EBITDA",
        "$38.6 million",
        "NWE-10-Q-2026-Q3.pdf",
        "Monterrey",
    ),
)


# --------------------------------------------------------------------------- 3. parent resume


def _page(url: str, title: str, text: str) -> str:
    return _json({"url": url, "status": 200, "title": title, "text": text})


_TRACKLY_PRICING = _page(
    "https://trackly.com/pricing",
    "Pricing | Trackly",
    "Plans that grow with your team\n"
    "Monthly | Annual (save 20%)\n\n"
    "Free — $0\nFor individuals and small projects. Up to 3 members, 250 issues, 2 integrations, "
    "community support.\n\n"
    "Standard — $10 per seat/month, billed annually ($12.50 billed monthly)\n"
    "Unlimited issues and projects, roadmaps, cycles, 50 integrations, guest access for up to 5 external "
    "collaborators, 10 GB file storage per seat, email support.\n\n"
    "Enterprise — Contact sales\n"
    "Everything in Standard, plus SAML SSO and SCIM provisioning, audit log, data residency (EU/US), "
    "99.9% uptime SLA, dedicated success manager.\n\n"
    "Compare plans\n"
    "Planning: issues, projects, labels (Free, Standard, Enterprise); roadmaps and cycles (Standard, "
    "Enterprise); portfolio views across teams (Enterprise).\n"
    "Collaboration: comments and mentions (all plans); guest access (Standard: 5 guests, Enterprise: "
    "unlimited); private teams (Standard, Enterprise).\n"
    "Integrations: GitHub, GitLab, Slack (all plans); Zendesk, Intercom, Sentry (Standard, Enterprise); "
    "custom webhooks and API rate limit 1,500 requests/hour (Standard), 6,000 requests/hour (Enterprise).\n"
    "Security: 2FA, Google and Microsoft sign-in (all plans); SAML SSO, SCIM, audit log, IP allow-list "
    "(Enterprise).\n"
    "Support: community (Free), email with 1 business day response (Standard), 24/7 with named contact "
    "(Enterprise).\n\n"
    "FAQ\n"
    "Can I switch between monthly and annual billing? Yes, from Settings > Billing; annual plans are "
    "prorated.\n"
    "Do you offer discounts for nonprofits? Yes, 50% off Standard for registered nonprofits.\n"
    "Is SSO available on Standard? SSO with Google Workspace and Microsoft is included on every plan; "
    "SAML SSO requires Enterprise.",
)

_KANBO_PRICING = _page(
    "https://kanbo.io/pricing",
    "Kanbo pricing — simple plans for every team",
    "Kanbo pricing\n"
    "All prices per user per month. Save 2 months with yearly billing.\n\n"
    "Starter: free forever for up to 10 users. Boards, lists, 100 MB attachments.\n\n"
    "Team: $8 per user / month billed yearly, $10 billed monthly. Unlimited boards, timeline and "
    "workload views, automations (1,000 runs/month), SAML SSO with Okta, Azure AD and OneLogin, "
    "priority support with a 4-hour response target.\n\n"
    "Business: $16 per user / month billed yearly. Everything in Team, SCIM, advanced permissions, "
    "unlimited automations, 3-year history.\n\n"
    "Add-ons: Kanbo AI $6 per user / month (summaries, ticket triage, natural-language search).\n\n"
    "Feature comparison\n"
    "Views — Starter: board, list. Team: board, list, timeline, calendar, workload. Business: all views "
    "plus portfolio dashboards.\n"
    "Automations — Starter: 100 runs/month. Team: 1,000 runs/month. Business: unlimited.\n"
    "Security — Starter: 2FA. Team: 2FA, SAML SSO, session controls. Business: everything in Team plus "
    "SCIM, audit log export, data residency in the EU.\n"
    "Admin — Team: workspace roles (admin, member, guest). Business: custom roles, approval workflows.\n"
    "Support — Starter: help center. Team: priority email. Business: phone support and onboarding "
    "session.\n\n"
    "FAQ\n"
    "Do you charge for guests? No, guests are free on all plans and can access boards they are invited "
    "to.\n"
    "What happens if I exceed my automation runs? Automations pause until the next month; you can upgrade "
    "at any time.\n\n"
    "Minimum 3 seats on paid plans. Prices exclude VAT. Education pricing available on request.",
)

_SPRINTWISE_PRICING = _page(
    "https://www.sprintwise.com/pricing",
    "Sprintwise Pricing",
    "Choose your plan\n\n"
    "Basic — $0 — up to 5 users, 1 project, sprint board.\n\n"
    "Team — $11 /user/month (annual) · $13 monthly\n"
    "Unlimited projects, backlog and sprint planning, velocity and burndown reports, GitHub and GitLab "
    "integrations, 20 GB storage.\n\n"
    "Enterprise — from $19 /user/month (annual)\n"
    "SAML SSO, SCIM, custom roles, audit trail, sandbox workspace, 24/7 support.\n\n"
    "Compare features\n"
    "Projects: 1 (Basic), unlimited (Team, Enterprise). Sprint board and backlog: all plans. Velocity, "
    "burndown and cycle-time reports: Team, Enterprise. Portfolio roll-ups: Enterprise.\n"
    "Integrations: GitHub and GitLab (Team, Enterprise); Jira import (all plans); Slack and Microsoft "
    "Teams notifications (all plans).\n"
    "Security and admin: Google sign-in (all plans); SAML SSO, SCIM, custom roles, audit trail, "
    "sandbox workspace (Enterprise).\n"
    "Storage: 2 GB (Basic), 20 GB (Team), unlimited (Enterprise).\n"
    "Support: community forum (Basic), email (Team), 24/7 phone and chat (Enterprise).\n\n"
    "New: prices for Team changed on October 1, 2026. See the pricing update notice for details.",
)

_SPRINTWISE_NOTICE = _json(
    {
        "source": "https://www.sprintwise.com/legal/pricing-update-2026.pdf",
        "page_count": 2,
        "pages": [
            {
                "page": 1,
                "text": "Sprintwise pricing update — effective October 1, 2026\n"
                "We are changing the list price of the Team plan from $9 to $11 per user per month on "
                "annual billing, and from $11 to $13 on monthly billing. Since 2023 we have added "
                "velocity reports, GitLab integration and four times more storage without changing the "
                "price.\n"
                "Existing customers on annual billing keep their current price until their first renewal "
                "after January 1, 2027. Customers on monthly billing move to the new price on their first "
                "invoice after October 1, 2026.",
            },
            {
                "page": 2,
                "text": "Questions\n"
                "Will Basic change? No. Will Enterprise change? Enterprise pricing is quoted per contract "
                "and is not affected by this update.\n"
                "Contact billing@sprintwise.com or your account manager.",
            },
        ],
    }
)

_SPRINTWISE_SEARCH = _json(
    {
        "query": "Sprintwise pricing update notice October 2026",
        "results": [
            {
                "title": "Sprintwise pricing update — effective October 1, 2026 (PDF)",
                "url": "https://www.sprintwise.com/legal/pricing-update-2026.pdf",
                "description": "We are changing the list price of the Team plan on annual and monthly "
                "billing. Existing customers on annual billing keep their current price until…",
                "age": "2026-08-18",
            },
            {
                "title": "Sprintwise raises Team plan prices, adds GitLab sync",
                "url": "https://www.devtoolsweekly.com/news/sprintwise-price-increase",
                "description": "The sprint-planning tool will charge more for its most popular plan from "
                "October, its first list-price change since 2023.",
                "age": "2026-08-20",
            },
            {
                "title": "r/projectmanagement — Sprintwise price hike, worth it?",
                "url": "https://www.reddit.com/r/projectmanagement/comments/1f3k9qa/sprintwise_price_hike/",
                "description": "We're 40 seats on annual. Got the email about the Team price going up. "
                "Anyone moved to Kanbo or Trackly and regretted it?",
                "age": "2026-08-22",
            },
            {
                "title": "Sprintwise Pricing",
                "url": "https://www.sprintwise.com/pricing",
                "description": "Choose your plan. Basic, Team and Enterprise. Unlimited projects, backlog "
                "and sprint planning, velocity and burndown reports.",
                "age": None,
            },
        ],
    }
)

_PRICING_CSV = (
    "competitor,plan,annual_usd_per_seat_month,monthly_usd_per_seat_month,saml_sso_in_plan,source\n"
    "Trackly,Standard,10,12.50,no,https://trackly.com/pricing\n"
    "Kanbo,Team,8,10,yes,https://kanbo.io/pricing\n"
    "Sprintwise,Team,11,13,no,https://www.sprintwise.com/pricing\n"
    "Relay,Team,12,15,no,internal price list\n"
)

_PRICING_FILE = _json(
    {
        "name": "competitor-pricing-2026-11.csv",
        "bytes": len(_PRICING_CSV.encode()),
        "sha256": hashlib.sha256(_PRICING_CSV.encode()).hexdigest(),
        "uri": "s3://relay-workspace/pricing-research/competitor-pricing-2026-11.csv",
        "content_type": "text/csv",
    }
)

_PRICING_REPORT = (
    "Team tiers, annual billing, per seat per month: Trackly $10, Kanbo $8, Sprintwise $11; Relay's $12 "
    "is the highest. Only Kanbo includes SAML SSO in its team tier; Trackly and Sprintwise keep it on "
    "Enterprise. Sprintwise raised Team from $9 to $11 on 1 Oct 2026. Table: competitor-pricing-2026-11.csv."
)

SUBAGENT_PARENT_RESUME = Scenario(
    name="subagent_parent_resume",
    description=(
        "A child subagent finished competitor pricing research: it fetched pricing pages, extracted a PDF "
        "notice and wrote a comparison CSV. It promotes only the file and its final report. The parent "
        "resumes from its checkpoint and sees the report's findings and the file handle, never the child's "
        "raw pages."
    ),
    tools=(
        ToolSpec(name="web.fetch", privacy=PrivacyClass.PUBLIC, freshness=FreshnessClass.DURABLE),
        ToolSpec(name="pdf.extract", privacy=PrivacyClass.PUBLIC, freshness=FreshnessClass.DURABLE),
        ToolSpec(name="web.search", privacy=PrivacyClass.PUBLIC, freshness=FreshnessClass.BOUNDED),
        ToolSpec(name="files.write", result_kind="file", freshness=FreshnessClass.PERMANENT),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Assistant",
            system_prompt="You are Relay's product-strategy assistant. Delegate web research to subagents.",
        ),
        Say(
            at=0,
            text="We're repricing Relay's Team plan ($12 per seat per month, annual). What do Trackly, "
            "Kanbo and Sprintwise charge for their team tiers, and do those include SSO?",
        ),
        Say(
            at=0.5,
            author="assistant",
            text="I've asked a research subagent to collect the three pricing pages into a comparison "
            "table. I'll summarise when it's back.",
        ),
        AddParticipant(
            at=0.5,
            key="researcher",
            name="Pricing researcher",
            role="subagent",
            parent="assistant",
            system_prompt="Collect list prices and SSO availability from the given competitors' pricing "
            "pages; write a CSV and report the key findings.",
        ),
        CallTool(
            at=1,
            key="fetch_trackly",
            participant="researcher",
            name="web.fetch",
            arguments={"url": "https://trackly.com/pricing"},
            result=_TRACKLY_PRICING,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        CallTool(
            at=1.5,
            key="fetch_kanbo",
            participant="researcher",
            name="web.fetch",
            arguments={"url": "https://kanbo.io/pricing"},
            result=_KANBO_PRICING,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        CallTool(
            at=2,
            key="fetch_sprintwise",
            participant="researcher",
            name="web.fetch",
            arguments={"url": "https://www.sprintwise.com/pricing"},
            result=_SPRINTWISE_PRICING,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        CallTool(
            at=2.2,
            key="search_notice",
            participant="researcher",
            name="web.search",
            arguments={"query": "Sprintwise pricing update notice October 2026", "count": 4},
            result=_SPRINTWISE_SEARCH,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        Say(
            at=2.5,
            text="When it's back, tell me whether $12 still looks defensible if we add SSO to Team.",
        ),
        CallTool(
            at=3,
            key="extract_notice",
            participant="researcher",
            name="pdf.extract",
            arguments={"url": "https://www.sprintwise.com/legal/pricing-update-2026.pdf"},
            result=_SPRINTWISE_NOTICE,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        CallTool(
            at=4,
            key="write_table",
            participant="researcher",
            name="files.write",
            arguments={"path": "pricing-research/competitor-pricing-2026-11.csv", "content": _PRICING_CSV},
            result=_PRICING_FILE,
            content_type=FILE_CONTENT_TYPE,
            runtime=_CHILD,
            promotion=PromotionPolicy.ON_COMPLETION,
        ),
        Promote(at=4.5, child="researcher", tools=("write_table",), to="assistant", report=_PRICING_REPORT),
        Checkpoint(
            at=4.5,
            participant="assistant",
            checkpoint_kind="parent_resume",
            state={
                "child": "Pricing researcher",
                "outcome": "completed",
                "next": "answer whether $12 holds if SSO is added to Team",
            },
            references=("write_table",),
        ),
    ),
    ask=Ask(participant="assistant", runtime=RuntimeKind.PARENT_RESUME, at=5),
    required=(
        "Relay's $12 is the highest",
        "Only Kanbo includes SAML SSO in its team tier",
        "Sprintwise raised Team from $9 to $11 on 1 Oct 2026",
        "generated file competitor-pricing-2026-11.csv",
        "s3://relay-workspace/pricing-research/competitor-pricing-2026-11.csv",
        "tell me whether $12 still looks defensible",
    ),
    forbidden=(
        "guest access for up to 5 external collaborators",
        "Kanbo AI",
        "January 1, 2027",
        "Enterprise — from $19",
        "priority support with a 4-hour response target",
        "Sprintwise price hike, worth it?",
    ),
)


# --------------------------------------------------------------------------- 4. scheduled job

_JOB = RuntimeKind.SCHEDULED_JOB
_DAY = 24 * 60
_PR_ARGS = {"repo": "acme/payments-api", "state": "open", "sort": "updated", "per_page": 30}


def _pr(
    number: int,
    title: str,
    author: str,
    created: str,
    head: str,
    body: str,
    *,
    draft: bool = False,
    labels: tuple[str, ...] = (),
    reviewers: tuple[str, ...] = (),
    review: str | None = None,
    checks: str = "success",
) -> dict[str, Any]:
    """One pull request as the tool's trimmed GitHub API view returns it."""
    return {
        "number": number,
        "title": title,
        "author": author,
        "draft": draft,
        "created_at": created,
        "head": head,
        "base": "main",
        "labels": list(labels),
        "requested_reviewers": list(reviewers),
        "review_decision": review,
        "checks": checks,
        "body": body,
    }


_PR_4102 = _pr(
    4102, "Migrate ledger exports to the v2 reporting API", "mfernandes", "2026-11-18T14:22:09Z",
    "mf/ledger-export-v2",
    "Moves the nightly ledger export off the deprecated /v1/reports endpoint. Output files are "
    "byte-identical on the last 7 days of data (diff attached in the first comment).",
    labels=("reporting",), reviewers=("okafor-j",), review="changes_requested",
)
_PR_4109 = _pr(
    4109, "Add Klarna as a payment method behind a feature flag", "tlindqvist", "2026-11-20T09:05:44Z",
    "tl/klarna-pm",
    "Adds the Klarna payment method type, webhook handling for authorization and capture, and the "
    "`payments.klarna` flag (off by default).",
    labels=("feature", "needs-product"), reviewers=("sasha-k",),
)
_PR_4115 = _pr(
    4115, "Retry idempotent webhook deliveries with jittered backoff", "okafor-j", "2026-11-24T11:40:31Z",
    "jo/webhook-backoff",
    "Replaces the fixed 30 s retry with exponential backoff (base 2 s, cap 10 min, full jitter). "
    "Only deliveries with an idempotency key are retried.",
    labels=("reliability",), reviewers=("mfernandes", "sasha-k"),
)
_PR_4118 = _pr(
    4118, "Bump stripe-python from 11.2.0 to 11.4.1", "dependabot[bot]", "2026-11-26T05:12:03Z",
    "dependabot/pip/stripe-11.4.1",
    "Bumps stripe-python from 11.2.0 to 11.4.1. Release notes: adds `PaymentIntent.amount_details`, "
    "fixes retries on 409 idempotency errors.",
    labels=("dependencies",), review="approved",
)
_PR_4121 = _pr(
    4121, "Reconcile partial refunds across currencies", "sasha-k", "2026-11-27T16:58:20Z",
    "sk/partial-refund-fx",
    "Partial refunds on cross-currency charges used the capture-day rate; this uses the refund-day rate "
    "from the FX table and records the difference in `fx_adjustments`.",
    labels=("bug", "finance"), reviewers=("tlindqvist",),
)
_PR_4124 = _pr(
    4124, "WIP: split settlement worker into per-acquirer queues", "mfernandes", "2026-11-29T20:31:57Z",
    "mf/settlement-queues",
    "Draft. First step towards isolating slow acquirers; no behaviour change yet.",
    draft=True, labels=("infra",), checks="failure",
)
_PR_4127 = _pr(
    4127, "Add idempotency keys to the refunds endpoint", "okafor-j", "2026-11-30T15:03:12Z",
    "jo/refund-idempotency",
    "POST /v1/refunds now accepts an `Idempotency-Key` header; repeats within 24 h return the first "
    "response. Same storage as charges.",
    labels=("reliability", "api"), reviewers=("sasha-k",),
)

_PRS_YESTERDAY = _json([_PR_4124, _PR_4121, _PR_4118, _PR_4115, _PR_4109, _PR_4102], indent=2)
_PRS_TODAY = _json(
    [
        _PR_4127,
        {**_PR_4121, "review_decision": "approved"},
        {**_PR_4124, "checks": "success"},
        {**_PR_4115, "requested_reviewers": ["sasha-k"], "review_decision": "changes_requested"},
        _PR_4102,
    ],
    indent=2,
)

_DIGEST_MONDAY = (
    "*Morning PR digest · acme/payments-api · Mon 30 Nov*\n"
    "6 open · 3 waiting on review for more than 24 h\n\n"
    ":hourglass: *Waiting on review >24 h*\n"
    "• #4109 Add Klarna as a payment method behind a feature flag (tlindqvist, 10 days, @sasha-k)\n"
    "• #4115 Retry idempotent webhook deliveries with jittered backoff (okafor-j, 6 days, "
    "@mfernandes @sasha-k)\n"
    "• #4121 Reconcile partial refunds across currencies (sasha-k, 3 days, @tlindqvist)\n\n"
    ":white_check_mark: *Ready to merge*\n"
    "• #4118 Bump stripe-python from 11.2.0 to 11.4.1 (approved, checks green)\n\n"
    ":pencil2: *In progress*\n"
    "• #4102 Migrate ledger exports to the v2 reporting API (changes requested)\n"
    "• #4124 WIP: split settlement worker into per-acquirer queues (draft, checks failing)"
)

_SLACK_POSTED = _json(
    {
        "ok": True,
        "channel": "C05Q8PAYENG",
        "ts": "1796029231.004519",
        "message": {
            "type": "message",
            "subtype": "bot_message",
            "bot_id": "B07DIGEST01",
            "username": "PR Digest",
            "ts": "1796029231.004519",
        },
    }
)

SCHEDULED_JOB = Scenario(
    name="scheduled_job",
    description=(
        "A recurring morning PR digest. Yesterday's run listed six open pull requests; today's run lists "
        "them again with the same arguments. Today's observation supersedes yesterday's, so today's digest "
        "call sees only the current list, not pull requests that were merged or closed since."
    ),
    tools=(
        ToolSpec(
            name="github.list_pull_requests",
            privacy=PrivacyClass.OAUTH,
            freshness=FreshnessClass.VOLATILE,
            ttl=timedelta(hours=6),
            # The digest is the list: every open PR by number and title.
            summary_fields=("items.number", "items.title"),
            summary_chars=480,
        ),
        ToolSpec(name="slack.post_message", privacy=PrivacyClass.OAUTH, freshness=FreshnessClass.PERMANENT),
    ),
    steps=(
        AddParticipant(
            key="digest",
            name="PR Digest",
            system_prompt="You run the scheduled morning PR digest for acme/payments-api: list open pull "
            "requests, flag those waiting on review for more than 24 hours, and post to #payments-eng.",
        ),
        Say(at=0, text="Scheduled run 2026-11-30 09:00 UTC: morning PR digest.", runtime=_JOB),
        CallTool(
            at=0.2,
            key="prs_yesterday",
            participant="digest",
            name="github.list_pull_requests",
            arguments=_PR_ARGS,
            result=_PRS_YESTERDAY,
            runtime=_JOB,
        ),
        CallTool(
            at=0.5,
            key="post_yesterday",
            participant="digest",
            name="slack.post_message",
            arguments={"channel": "#payments-eng", "text": _DIGEST_MONDAY},
            result=_SLACK_POSTED,
            runtime=_JOB,
        ),
        Say(
            at=0.6,
            author="digest",
            text="Posted the 30 Nov digest to #payments-eng: 6 open pull requests, 3 waiting on review for "
            "more than 24 hours.",
            runtime=_JOB,
        ),
        Say(at=_DAY, text="Scheduled run 2026-12-01 09:00 UTC: morning PR digest.", runtime=_JOB),
        CallTool(
            at=_DAY + 0.2,
            key="prs_today",
            participant="digest",
            name="github.list_pull_requests",
            arguments=_PR_ARGS,
            result=_PRS_TODAY,
            runtime=_JOB,
        ),
    ),
    ask=Ask(participant="digest", runtime=_JOB, at=_DAY + 0.3),
    required=(
        "[m:{m:prs_today}]",
        "items: 5",
        "4127|Add idempotency keys to the refunds endpoint",
        "4121|Reconcile partial refunds across currencies",
        "4115|Retry idempotent webhook deliveries with jittered backoff",
        "4102|Migrate ledger exports to the v2 reporting API",
        "Scheduled run 2026-12-01 09:00 UTC",
    ),
    forbidden=(
        "Add Klarna as a payment method behind a feature flag",
        "Bump stripe-python from 11.2.0 to 11.4.1",
        "#4109",
        "#4118",
    ),
)


# --------------------------------------------------------------------------- 5. branch send

_ARCHIVE_LOG = "\n".join(
    (
        "2026-11-30T01:00:00.412Z INFO  orders-archive starting run_id=ar-20261130-0100 build=2026.11.25-3 "
        "batch_size=5000 cutoff=2026-08-31",
        "2026-11-30T01:00:00.655Z INFO  db connected host=orders-primary.internal pool=4 "
        "statement_timeout=120s",
        "2026-11-30T01:00:01.020Z INFO  candidates counted rows=1,842,310 window=[2026-06-01,2026-08-31)",
        "2026-11-30T01:00:42.871Z INFO  batch 1/369 archived rows=5000 elapsed=41.8s",
        "2026-11-30T01:01:24.190Z INFO  batch 2/369 archived rows=5000 elapsed=41.3s",
        "2026-11-30T01:02:05.932Z INFO  batch 3/369 archived rows=5000 elapsed=41.7s",
        "2026-11-30T01:02:06.004Z WARN  slow query duration=40.9s query=select_archive_batch "
        "plan_hash=9f1c7e2a",
        "2026-11-30T01:02:47.558Z INFO  batch 4/369 archived rows=5000 elapsed=41.6s",
        "2026-11-30T01:03:28.417Z INFO  batch 5/369 archived rows=5000 elapsed=40.9s",
        "2026-11-30T01:10:21.802Z INFO  batch 15/369 archived rows=5000 elapsed=41.2s",
        "2026-11-30T01:10:21.840Z WARN  slow query duration=40.6s query=select_archive_batch "
        "plan_hash=9f1c7e2a",
        "2026-11-30T01:17:15.114Z INFO  batch 25/369 archived rows=5000 elapsed=41.4s",
        "2026-11-30T01:17:15.160Z INFO  progress rows=125000/1842310 (6.8%) eta=3h57m",
        "2026-11-30T01:24:08.633Z INFO  batch 35/369 archived rows=5000 elapsed=41.0s",
        "2026-11-30T01:24:08.671Z WARN  slow query duration=40.4s query=select_archive_batch "
        "plan_hash=9f1c7e2a",
        "2026-11-30T01:29:40.027Z INFO  batch 43/369 archived rows=5000 elapsed=41.5s",
        "2026-11-30T01:30:00.000Z ERROR job deadline exceeded limit=30m0s batch=44/369 "
        "rows_archived=215000",
        "2026-11-30T01:30:00.214Z ERROR batch 44/369 rolled back: context canceled",
        "2026-11-30T01:30:00.301Z INFO  checkpoint saved last_order_id=88412977 next_run=2026-12-01T01:00:00Z",
        "2026-11-30T01:30:00.350Z INFO  orders-archive finished status=timeout duration=30m0s "
        "rows_archived=215000",
        "--- previous successful run (build 2026.11.25-2) ---",
        "2026-11-26T01:00:00.388Z INFO  orders-archive starting run_id=ar-20261126-0100 build=2026.11.25-2 "
        "batch_size=1000 cutoff=2026-08-27",
        "2026-11-26T01:00:01.304Z INFO  batch 1/1790 archived rows=1000 elapsed=0.9s",
        "2026-11-26T01:00:02.215Z INFO  batch 2/1790 archived rows=1000 elapsed=0.9s",
        "2026-11-26T01:00:03.121Z INFO  batch 3/1790 archived rows=1000 elapsed=0.9s",
        "2026-11-26T01:26:51.020Z INFO  batch 1790/1790 archived rows=644 elapsed=0.7s",
        "2026-11-26T01:26:51.146Z INFO  orders-archive finished status=ok duration=26m51s "
        "rows_archived=1789644",
    )
)

_BUILD_COMPARE = _json(
    {
        "status": "ahead",
        "ahead_by": 3,
        "behind_by": 0,
        "total_commits": 3,
        "commits": [
            {
                "sha": "4be81c0f2d7a9e35c1a08b6f7d2e49a1c3f5b870",
                "author": "Nadia Haddad",
                "date": "2026-11-24T15:12:40Z",
                "message": "Reorder orders indexes for the status dashboard (migration 0142)",
            },
            {
                "sha": "a91d3e6b07c2f84d5e1b9a3c6f2087d4b5e1c932",
                "author": "Tomás Ruiz",
                "date": "2026-11-25T09:48:02Z",
                "message": "orders-archive: raise batch size to 5000 to cut round trips",
            },
            {
                "sha": "c07f5a2e98d14b3a6e2c1d0b7f9a8e53d4c2b161",
                "author": "release-bot",
                "date": "2026-11-25T16:30:11Z",
                "message": "Release 2026.11.25-3",
            },
        ],
        "files": [
            {
                "filename": "migrations/0142_reorder_orders_indexes.py",
                "status": "added",
                "additions": 19,
                "deletions": 0,
                "patch": "@@ -0,0 +1,19 @@\n+\"\"\"Reorder orders indexes for the status dashboard.\"\"\"\n+"
                "from alembic import op\n+\n+revision = \"0142\"\n+down_revision = \"0141\"\n+\n+\n+"
                "def upgrade():\n+    op.create_index(\n+        \"ix_orders_status_created_at\", \"orders\", "
                "[\"status\", \"created_at\"],\n+        postgresql_concurrently=True,\n+    )\n+    "
                "op.drop_index(\"ix_orders_created_at_status\", table_name=\"orders\")\n+\n+\n+"
                "def downgrade():\n+    op.create_index(\"ix_orders_created_at_status\", \"orders\", "
                "[\"created_at\", \"status\"])\n+    op.drop_index(\"ix_orders_status_created_at\", "
                "table_name=\"orders\")\n",
            },
            {
                "filename": "services/archive/config/archive.yaml",
                "status": "modified",
                "additions": 1,
                "deletions": 1,
                "patch": "@@ -3,7 +3,7 @@ job:\n   schedule: \"0 1 * * *\"\n   deadline: 30m\n-  batch_size: "
                "1000\n+  batch_size: 5000\n   retention_days: 90\n   target_bucket: "
                "s3://acme-orders-archive/prod\n",
            },
            {
                "filename": "services/archive/queries.sql",
                "status": "modified",
                "additions": 2,
                "deletions": 2,
                "patch": "@@ -12,9 +12,9 @@\n -- name: select_archive_batch\n SELECT id, customer_id, status, "
                "total_cents, created_at\n FROM orders\n WHERE created_at < :cutoff\n   AND id > :last_id\n"
                "-ORDER BY created_at, id\n-LIMIT 1000;\n+ORDER BY created_at, id\n+LIMIT :batch_size;\n",
            },
            {
                "filename": "CHANGELOG.md",
                "status": "modified",
                "additions": 4,
                "deletions": 0,
                "patch": "@@ -1,3 +1,7 @@\n # Changelog\n+\n+## 2026.11.25-3\n+- Reorder orders indexes "
                "for the status dashboard (#2291)\n+- orders-archive: configurable batch size, default 5000 "
                "(#2296)\n",
            },
        ],
    },
    indent=2,
)

_EXPLAIN_PLAN = _json(
    {
        "database": "orders-replica",
        "plan": [
            {
                "Plan": {
                    "Node Type": "Limit",
                    "Actual Rows": 5000,
                    "Actual Total Time": 40812.4,
                    "Plans": [
                        {
                            "Node Type": "Gather Merge",
                            "Workers Launched": 2,
                            "Plans": [
                                {
                                    "Node Type": "Sort",
                                    "Sort Key": ["created_at", "id"],
                                    "Sort Method": "top-N heapsort",
                                    "Plans": [
                                        {
                                            "Node Type": "Seq Scan",
                                            "Relation Name": "orders",
                                            "Filter": "((created_at < '2026-08-31') AND (id > 88197977))",
                                            "Rows Removed by Filter": 6135720,
                                            "Actual Rows": 614103,
                                        }
                                    ],
                                }
                            ],
                        }
                    ],
                },
                "Planning Time": 0.41,
                "Execution Time": 40815.9,
            }
        ],
    }
)

BRANCH_SEND = Scenario(
    name="branch_send",
    description=(
        "The user forks a debugging conversation at an earlier answer and sends a new message on the fork "
        "to a different model. The fork sees main's lineage up to the fork point, including the tool "
        "results from before it, and nothing main did afterwards."
    ),
    tools=(
        ToolSpec(name="logs.query", result_kind="text", privacy=PrivacyClass.USER, freshness=FreshnessClass.DURABLE),
        ToolSpec(
            name="github.compare",
            privacy=PrivacyClass.OAUTH,
            freshness=FreshnessClass.DURABLE,
            summary_fields=("status", "ahead_by", "files.filename", "files.status"),
        ),
        ToolSpec(name="db.explain", privacy=PrivacyClass.USER, freshness=FreshnessClass.SESSION),
    ),
    steps=(
        AddParticipant(
            key="assistant",
            name="Assistant",
            system_prompt="You are a senior backend engineer helping debug production issues.",
        ),
        Say(
            at=0,
            text="Our nightly orders-archive job has timed out every night since Thursday's deploy. Can you "
            "check last night's logs?",
        ),
        CallTool(
            at=0.5,
            key="logs",
            participant="assistant",
            name="logs.query",
            arguments={"service": "orders-archive", "since": "2026-11-30T01:00:00Z", "limit": 200},
            result=_ARCHIVE_LOG,
            content_type="text/plain",
        ),
        Say(
            at=1,
            author="assistant",
            text="Each 5,000-row batch now takes about 41 s, so the run hits its 30-minute deadline at batch "
            "44 of 369. The last good run, on build 2026.11.25-2, did 1,000-row batches in 0.9 s.",
        ),
        Say(at=2, text="What changed between those two builds?"),
        CallTool(
            at=2.5,
            key="compare",
            participant="assistant",
            name="github.compare",
            arguments={"repo": "acme/orders", "base": "2026.11.25-2", "head": "2026.11.25-3"},
            result=_BUILD_COMPARE,
        ),
        Say(
            at=3,
            key="cause",
            author="assistant",
            text="Migration 0142 replaced ix_orders_created_at_status with ix_orders_status_created_at. The "
            "archive query filters and sorts on created_at with no status filter, so it can no longer use "
            "an index.",
        ),
        Say(at=4, text="Can you confirm with EXPLAIN on the replica?"),
        CallTool(
            at=4.5,
            key="explain",
            participant="assistant",
            name="db.explain",
            arguments={"database": "orders-replica", "query": "select_archive_batch", "analyze": True},
            result=_EXPLAIN_PLAN,
        ),
        Say(
            at=5,
            author="assistant",
            text="Confirmed: each batch is a parallel Seq Scan on orders that discards 6.1M rows. I'd restore "
            "a (created_at, id) index in migration 0143.",
        ),
        Fork(at=10, key="alt", parent="main", at_message="cause"),
        AddParticipant(
            at=10,
            key="reviewer",
            name="Claude-like reviewer",
            model="scripted:claude-like",
            system_prompt="You are a careful reviewer giving an independent second opinion.",
        ),
        Say(
            at=10.5,
            branch="alt",
            text="Second opinion before we touch the schema: could the batch size going from 1000 to 5000 in "
            "the same build explain the timeouts instead of migration 0142?",
            runtime=RuntimeKind.BRANCH_SEND,
        ),
    ),
    ask=Ask(participant="reviewer", branch="alt", runtime=RuntimeKind.BRANCH_SEND, at=11),
    required=(
        "[m:{m:logs}]",
        "build=2026.11.25-3 batch_size=5000",
        "[m:{m:compare}]",
        "services/archive/config/archive.yaml|modified",
        "migrations/0142_reorder_orders_indexes.py|added",
        "could the batch size going from 1000 to 5000",
        "Migration 0142 replaced ix_orders_created_at_status",
    ),
    forbidden=(
        "EXPLAIN on the replica",
        "Seq Scan",
        "6.1M rows",
        "migration 0143",
        "db.explain",
        "plan_hash=9f1c7e2a",
    ),
)


SCENARIOS = (
    AUTONOMOUS_DISCUSSION_ATTRIBUTION,
    SUBAGENT_CHILD_ARTIFACT_CAPTURE,
    SUBAGENT_PARENT_RESUME,
    SCHEDULED_JOB,
    BRANCH_SEND,
)
