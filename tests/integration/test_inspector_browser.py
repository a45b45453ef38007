"""The inspector end to end in a real browser: Debian's Chromium driven by Playwright.

A real agent turn runs first (Temporal dev server, in-process worker, the
scripted analyst calling real tools over Postgres and S3), then a follow-up on
a branch forked from its answer. The inspector is served by uvicorn on a free
port over the same store, and Chromium walks it as the account's viewer: the
login URL, the conversation, a model run, a provenance link down to the raw
artifact, why-not, then diff and what-if, saving a screenshot of each page under
``tests/output/inspector/`` (git-ignored; docs/ holds two of them for the README).

The browser is ``/usr/bin/chromium`` (``make test`` installs it when missing),
never one Playwright downloads. Without it this test fails; it never skips.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import uvicorn
from playwright.async_api import Page, async_playwright, expect
from temporalio.testing import WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from dossier.client import DossierClient
from dossier.inspector.app import create_app
from dossier.inspector.auth import issue_token
from dossier.runtime import build_worker
from dossier.services.process import free_ports
from dossier.settings import Settings
from store import conversations

pytestmark = pytest.mark.slow  # the full tier only: drives Chromium

CHROMIUM = Path("/usr/bin/chromium")
OUTPUT = Path(__file__).resolve().parents[1] / "output" / "inspector"
SECRET = b"inspector-browser-test-secret-0123456789"
TEMPORAL_UI = "http://127.0.0.1:8233"
QUESTION = "Which region drove Q3 2026 revenue? Write me a short report."


@pytest.fixture(scope="module")
async def turn(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> dict[str, str]:
    """A real turn, and a follow-up on a branch forked from its answer, in a fresh account."""
    task_queue = f"inspector-browser-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="inspector browser test")
    client = DossierClient(deps=graph_deps, temporal=temporal_env.client,
                           settings=Settings(temporal_task_queue=task_queue), account_id=account_id,
                           poll_seconds=0.2)
    async with build_worker(temporal_env.client, graph_deps, task_queue=task_queue,
                            workflow_failure_exception_types=[Exception], providers=ModelProviders()):
        first = await client.chat(QUESTION)
        assert first.result and first.result.status == "answered"
        branch = await client.fork(first.conversation_id, first.result.message_id, name="follow-up")
        second = await client.chat("And which region grew least?", conversation_id=first.conversation_id,
                                   branch_id=branch)
        assert second.result and second.result.status == "answered"
    return {"account": account_id, "conversation": first.conversation_id, "branch": branch,
            "run": second.result.model_run_ids[-1]}


@pytest.fixture
async def served(graph_deps: GraphDeps) -> AsyncIterator[str]:
    """The inspector under uvicorn on a free port, in this event loop (it shares the test's store)."""
    port = free_ports(1)[0]
    app = create_app(graph_deps, secret=SECRET, temporal_ui=TEMPORAL_UI)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        assert not task.done(), "uvicorn stopped before it started"
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


async def _shot(page: Page, name: str) -> Path:
    path = OUTPUT / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000, f"{path} looks empty"
    return path


async def test_a_viewer_walks_from_a_conversation_to_a_run_its_provenance_and_why_not(
        served: str, turn: dict[str, str]) -> None:
    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: `make test` installs it (apt-get install chromium)"
    OUTPUT.mkdir(parents=True, exist_ok=True)
    for old in OUTPUT.glob("*.png"):
        old.unlink()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1440, "height": 900})
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

            # Without a token nothing is shown; the login URL signs the viewer in.
            await page.goto(served + "/")
            await expect(page.locator("h1")).to_have_text("Sign in needed")
            errors.clear()  # the 401 just now was expected; from here on, nothing may fail to load
            await page.goto(f"{served}/login?token={issue_token(SECRET, turn['account'])}")
            await expect(page.locator("h1")).to_have_text("Conversations")
            await _shot(page, "1-conversations")

            # The conversation: its branch tree, the human transcript, the model runs.
            await page.click(f'a.conversation[href="/conversations/{turn["conversation"]}"]')
            await expect(page.locator("ol.transcript")).to_contain_text(QUESTION)
            await expect(page.locator("ul.tree a.branch")).to_have_count(2)
            await page.locator("ul.tree a.branch").filter(has_text="follow-up").click()
            await expect(page.locator("ol.transcript")).to_contain_text("And which region grew least?")
            await _shot(page, "2-conversation")

            # A model run: assembled context beside the replay, decisions, the Temporal link.
            await page.click(f'a.run[href="/runs/{turn["run"]}"]')
            await expect(page.locator("h1")).to_contain_text("Model run")
            await expect(page.locator("h2").filter(has_text="What the model saw")).to_be_visible()
            await expect(page.locator("h2").filter(has_text="What transcript replay would have sent")).to_be_visible()
            assert await page.locator("table.decisions.included tbody tr").count() > 0
            temporal = await page.locator("a.temporal").first.get_attribute("href")
            assert temporal and temporal.startswith(f"{TEMPORAL_UI}/namespaces/default/workflows/turn-")
            await _shot(page, "3-run")

            # A provenance link from an included record, down to the artifact's raw bytes.
            await page.locator('table.decisions.included a.record[href^="/records/memory/"]').first.click()
            await expect(page.locator("section.memory")).to_be_visible()
            await expect(page.locator("section.artifact")).to_be_visible()
            await expect(page.locator("section.tool-call")).to_be_visible()
            await _shot(page, "4-provenance")
            await page.locator("section.artifact a.artifact").first.click()
            await expect(page.locator("h3").filter(has_text="Raw bytes")).to_be_visible()
            await expect(page.locator("pre.raw").first).not_to_be_empty()
            await _shot(page, "5-artifact")

            # Why-not, asked from the run page about an omitted record.
            await page.go_back()
            await page.go_back()
            why = page.locator("table.decisions.omitted a.why-not").first
            if await why.count() == 0:
                why = page.locator("table.decisions a.why-not").first
            await why.click()
            await expect(page.locator("h1")).to_have_text("Why not?")
            await expect(page.locator("section.answer td.reason")).not_to_be_empty()
            await _shot(page, "6-why-not")

            # Diff against another run, and what-if under the other registered policy.
            await page.goto(f"{served}/runs/{turn['run']}")
            await page.locator("select[name=against]").select_option(index=1)  # the first turn's first call
            await page.locator("form", has_text="Diff against").get_by_role("button", name="Diff").click()
            await expect(page.locator("h1")).to_have_text("Diff")
            await expect(page.locator("table.figures th").filter(has_text="Shared prefix")).to_be_visible()
            await _shot(page, "7-diff")
            await page.goto(f"{served}/conversations/{turn['conversation']}")
            await page.locator(f'a[href="/what-if?conversation={turn["conversation"]}"]').click()
            await page.locator("select[name=policy]").select_option(index=1)
            await page.get_by_role("button", name="Replay").click()
            await expect(page.locator("table.figures th").filter(has_text="Assemblies")).to_be_visible()
            await _shot(page, "8-what-if")
            assert not errors, errors  # nothing failed to load, and the CSP blocked nothing the pages need
        finally:
            await browser.close()
    assert sorted(p.name for p in OUTPUT.glob("*.png")) == [
        "1-conversations.png", "2-conversation.png", "3-run.png", "4-provenance.png", "5-artifact.png",
        "6-why-not.png", "7-diff.png", "8-what-if.png"]
