"""Operations on a real turn: finding it in Temporal, its summaries, its metrics and its trace.

One module-scoped run: a chat turn of the scripted analyst (it lists, reads,
aggregates and writes a file, so graph, S3 and tool steps all happen) and a
multi-model turn (two child workflows), on the real dev server, Postgres and
S3, with an in-process worker whose client carries the SDK's tracing
interceptor, whose metrics are served over HTTP, and whose spans go to an
in-memory exporter. Every test then reads what that run left behind.
"""

from __future__ import annotations

import asyncio
import urllib.request
import uuid
from collections import Counter as Tally
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client.parser import text_string_to_metric_families
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, ScheduleActionStartWorkflow, WorkflowFailureError, WorkflowHandle
from temporalio.converter import PayloadConverter
from temporalio.testing import ActivityEnvironment, WorkflowEnvironment

from activities.providers.factory import ModelProviders
from activities.deps import GraphDeps
from activities.metrics import RuntimeMetrics
from activities.tools.registry import default_registry
from activities.turns import TurnActivities
from contracts import AssembleInput, Scope
from dossier.client import DossierClient, TurnOutcome
from dossier.runtime import SAMPLE_WORKSPACE, build_worker, temporal_client
from dossier.services.process import find_binary, free_ports
from dossier.settings import Settings
from dossier.telemetry import serve_metrics, tracing_interceptor
from dossier.visibility import (
    SEARCH_ATTRIBUTE_NAMES,
    SearchAttributesMissingError,
    ensure_search_attributes,
    knows_search_attribute,
)
from policy.enums import DecisionOutcome
from provider_server import ProviderServer, Reply, openai_completion, openai_error
from provider_turns import provider_dossier
from store import conversations
from store.assemblies import list_context_assemblies
from store.records import StoredContextAssembly

SECRET = "zebra-quartz-7194"
"""A word only the user's messages contain: no summary or search attribute may show it."""

INSPECTOR = "http://127.0.0.1:18234"
VISIBILITY_DEADLINE = 60.0
"""How long a search may take to find a finished run (visibility is eventually consistent): a deadline for
polling, not a timed assertion."""

pytestmark = pytest.mark.asyncio(loop_scope="session")


@dataclass
class Run:
    """What the module's turns left behind."""

    client: DossierClient
    chat: TurnOutcome
    multi: list[TurnOutcome]
    subagents: str
    """The subagent batch's workflow id."""
    child_participants: tuple[str, ...]
    metrics_url: str
    spans: InMemorySpanExporter

    @property
    def conversation_id(self) -> str:
        return self.chat.conversation_id


def _exporter() -> InMemorySpanExporter:
    """An in-memory exporter on the global tracer provider (installed once per process)."""
    exporter = InMemorySpanExporter()
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        trace.set_tracer_provider(provider)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter


@pytest.fixture(scope="module")
async def run(temporal_env: WorkflowEnvironment, graph_deps: GraphDeps) -> AsyncIterator[Run]:
    spans = _exporter()
    task_queue = f"dossier-ops-{uuid.uuid4().hex[:8]}"
    async with graph_deps.sessions() as session, session.begin():
        account_id = await conversations.create_account(session, name="operations test")
    deps = replace(graph_deps, metrics=RuntimeMetrics())  # a registry of this module's own
    # The client carries the tracing interceptor, as dossier.runtime.temporal_client builds it.
    temporal = Client(**{**temporal_env.client.config(), "interceptors": [tracing_interceptor()]})
    worker = build_worker(temporal, deps, task_queue=task_queue, workflow_failure_exception_types=[Exception],
                          providers=ModelProviders())
    port = free_ports(1)[0]
    server = serve_metrics(port, deps.metrics.registry, addr="127.0.0.1")
    assert server is not None
    client = DossierClient(deps=deps, temporal=temporal, account_id=account_id, poll_seconds=0.2,
                           settings=Settings(temporal_task_queue=task_queue, inspector_url=INSPECTOR))
    try:
        async with worker:
            chat = await client.chat(f"Sum the revenue by region in sales.csv, codeword {SECRET}",
                                     model="scripted:analyst")
            multi = await client.multi(f"Which region sold most? codeword {SECRET}",
                                       ["scripted:analyst", "scripted:analyst"],
                                       conversation_id=chat.conversation_id, branch_id=chat.branch_id)
            batch, batch_id, _ = await client.subagents(
                f"Audit the quarter, codeword {SECRET}",
                [("scripted:researcher", f"Analyse sales/2026-q3-orders.csv by region, codeword {SECRET}")],
                conversation_id=chat.conversation_id, branch_id=chat.branch_id)
            yield Run(client, chat, multi, batch_id, tuple(c.participant_id for c in batch.children),
                      f"http://127.0.0.1:{port}/metrics", spans)
    finally:
        server.shutdown()


async def _find(temporal: Client, query: str, expected: set[str]) -> dict[str, dict[str, object]]:
    """Poll a visibility query until every expected workflow id is listed (or the deadline passes)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + VISIBILITY_DEADLINE
    while True:
        found = {wf.id: {key.name: value for key, value in wf.typed_search_attributes
                         if key.name.startswith("Dossier")}  # the server adds its own (BuildIds)
                 async for wf in temporal.list_workflows(query)}
        if expected <= set(found) or loop.time() > deadline:
            return found
        await asyncio.sleep(0.5)


async def _activity_summaries(handle: WorkflowHandle) -> list[str]:
    history = await handle.fetch_history()
    summaries = []
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            assert event.user_metadata.HasField("summary"), "an activity without a summary"
            summaries.append(PayloadConverter.default.from_payload(event.user_metadata.summary, str))
    return summaries


async def _assemblies(run: Run) -> list[StoredContextAssembly]:
    """Every assembly of the module's conversation (all its turns ran on this worker)."""
    async with run.client.deps.sessions() as session:
        return await list_context_assemblies(session, run.client.account_id, conversation_id=run.conversation_id,
                                             limit=10_000)


# ---------------------------------------------------------------- search attributes and summaries


async def test_runs_are_found_by_conversation_and_tagged_with_ids_and_kinds(run: Run) -> None:
    temporal = run.client.temporal
    children = {f"{run.multi[0].workflow_id}/model-{index}" for index in range(2)}
    expected = {run.chat.workflow_id, run.multi[0].workflow_id, *children}
    found = await _find(temporal, f'DossierConversationId="{run.conversation_id}"', expected)
    assert expected <= set(found), f"not found by conversation: {expected - set(found)}"

    chat = found[run.chat.workflow_id]
    assert chat == {"DossierConversationId": run.conversation_id, "DossierBranchId": run.chat.branch_id,
                    "DossierParticipantId": run.chat.participant_id, "DossierRuntimeKind": "chat"}
    # The parent of several participants names none; each child (tagged by the parent) names its own.
    assert "DossierParticipantId" not in found[run.multi[0].workflow_id]
    assert found[run.multi[0].workflow_id]["DossierRuntimeKind"] == "multi_model"
    assert {found[child]["DossierParticipantId"] for child in children} == {t.participant_id for t in run.multi}
    assert {found[child]["DossierRuntimeKind"] for child in children} == {"multi_model"}

    # A subagent batch: the parent tags its children and its resume with their own participant and kind.
    child = f"{run.subagents}/child-{run.child_participants[0]}"
    resume, resume_turn = f"{run.subagents}/resume", f"{run.subagents}/resume/turn"
    found = await _find(temporal, f'DossierConversationId="{run.conversation_id}"',
                        {run.subagents, child, resume, resume_turn})
    parent = found[run.subagents]["DossierParticipantId"]
    assert "DossierRuntimeKind" not in found[run.subagents]  # a batch is no model turn of its own
    assert found[child]["DossierParticipantId"] == run.child_participants[0] != parent
    assert found[child]["DossierRuntimeKind"] == "subagent_child"
    assert found[resume]["DossierParticipantId"] == found[resume_turn]["DossierParticipantId"] == parent
    assert found[resume]["DossierRuntimeKind"] == found[resume_turn]["DossierRuntimeKind"] == "parent_resume"

    by_kind = await _find(temporal, f'DossierConversationId="{run.conversation_id}" AND '
                                    f'DossierRuntimeKind="multi_model"', set(children))
    assert run.chat.workflow_id not in by_kind and children <= set(by_kind)


async def test_summaries_show_kinds_counts_and_links_never_user_text(run: Run) -> None:
    temporal = run.client.temporal
    chat = temporal.get_workflow_handle(run.chat.workflow_id)
    summary = await (await chat.describe()).static_summary()
    assert summary == f"agent turn · chat · {INSPECTOR}/conversations/{run.conversation_id}"

    multi = temporal.get_workflow_handle(run.multi[0].workflow_id)
    assert await (await multi.describe()).static_summary() == (
        f"multi-model turn · multi_model · 2 participants · {INSPECTOR}/conversations/{run.conversation_id}")
    child = temporal.get_workflow_handle(f"{run.multi[0].workflow_id}/model-1")
    assert await (await child.describe()).static_summary() == (
        f"agent turn · multi_model · participant 2 of 2 · {INSPECTOR}/conversations/{run.conversation_id}")

    summaries = await _activity_summaries(chat)
    assert summaries, "the turn scheduled no activity"
    for text in summaries:
        assert SECRET not in text and "sales.csv" not in text and "revenue" not in text, text
    runs = run.chat.model_run_ids
    for index, run_id in enumerate(runs):
        link = f"{INSPECTOR}/runs/{run_id}"
        assert f"start model run · chat · model call {index + 1} · run {run_id} · {link}" in summaries
        assert f"assemble context · chat · model call {index + 1} · {link}" in summaries
    # The model call's summary carries the assembly's token counts.
    assemblies = {a.model_run_id: a.record for a in await _assemblies(run)}
    first = assemblies[runs[0]]
    assert (f"call model · chat · model call 1 · {first.assembled_tokens} assembled tokens · "
            f"{first.legacy_tokens} replay tokens · {INSPECTOR}/runs/{runs[0]}") in summaries
    tool_steps = [text for text in summaries if text.startswith("execute tool · chat · ")]
    assert len(tool_steps) == len(run.chat.result.tool_call_ids) >= 3


async def test_no_workflow_or_activity_summary_of_the_conversation_shows_user_text(run: Run) -> None:
    temporal = run.client.temporal
    expected = {run.chat.workflow_id, run.multi[0].workflow_id, *(f"{run.multi[0].workflow_id}/model-{i}" for i in (0, 1)),
                run.subagents, f"{run.subagents}/child-{run.child_participants[0]}", f"{run.subagents}/resume",
                f"{run.subagents}/resume/turn"}
    workflow_ids = set(await _find(temporal, f'DossierConversationId="{run.conversation_id}"', expected))
    assert workflow_ids == expected
    for workflow_id in workflow_ids:
        handle = temporal.get_workflow_handle(workflow_id)
        texts = [await (await handle.describe()).static_summary(), *await _activity_summaries(handle)]
        assert texts[0] is not None and texts[0].endswith(f"{INSPECTOR}/conversations/{run.conversation_id}")
        for text in texts:
            assert SECRET not in text and "codeword" not in text, (workflow_id, text)


# ---------------------------------------------------------------- metrics


def _scrape(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def _total(samples: dict, name: str, **labels: str) -> float:
    return sum(value for (sample, sample_labels), value in samples.items()
               if sample == name and all((k, v) in sample_labels for k, v in labels.items()))


async def test_metrics_count_what_the_stored_assemblies_record(run: Run) -> None:
    samples = _scrape(run.metrics_url)
    assemblies = await _assemblies(run)
    chat = [a for a in assemblies if a.runtime_kind.value == "chat"]
    multi = [a for a in assemblies if a.runtime_kind.value == "multi_model"]
    assert chat and multi

    for kind, group in (("chat", chat), ("multi_model", multi)):
        labels = {"route": "scripted", "runtime_kind": kind}
        assert _total(samples, "dossier_assemblies_total", **labels) == len(group)
        assert _total(samples, "dossier_assembled_tokens_total", **labels) == sum(
            a.record.assembled_tokens for a in group)
        assert _total(samples, "dossier_replay_tokens_total", **labels) == sum(a.record.legacy_tokens for a in group)

    omitted = Tally[str]()
    for assembly in assemblies:
        omitted.update(assembly.record.omitted_counts)
    assert +omitted, "the turns omitted nothing: the test would prove nothing"
    for reason, count in omitted.items():
        assert _total(samples, "dossier_omissions_total", reason=reason) == count, reason
    assert _total(samples, "dossier_omissions_total") == sum(omitted.values())
    assert _total(samples, "dossier_rehydrations_total") == sum(len(a.record.rehydrated_refs) for a in assemblies)
    denied = sum(1 for a in assemblies for d in a.decisions if d.outcome is DecisionOutcome.DENIED)
    assert _total(samples, "dossier_policy_denials_total") == denied

    for phase in ("graph_query", "policy", "serialise"):
        assert _total(samples, "dossier_assembly_phase_seconds_count", phase=phase) == len(assemblies)
    # Every run called the model once; the scripted model reports no usage, so the estimate bills the
    # assembled tokens uncached.
    assert _total(samples, "dossier_provider_request_seconds_count", route="scripted") == len(assemblies)
    assert _total(samples, "dossier_billed_input_units_total", route="scripted") == sum(
        a.record.assembled_tokens for a in assemblies)
    assert _total(samples, "dossier_provider_errors_total") == 0
    assert _total(samples, "dossier_model_calls_total", route="scripted", outcome="answered") == len(assemblies)
    assert _total(samples, "dossier_model_calls_total", outcome="failed") == 0
    # Low cardinality: no label value is an id of this run.
    ids = {run.conversation_id, run.client.account_id, run.chat.participant_id, run.chat.branch_id}
    assert not ids & {value for _, labels in samples for _, value in labels}


async def test_a_retried_assembly_is_counted_once(run: Run) -> None:
    """An assemble attempt that finds the first attempt's assembly stored (Temporal retried it after the write)
    counts nothing again: the assembly figures are per stored assembly, not per attempt."""
    [first] = [a for a in await _assemblies(run) if a.model_run_id == run.chat.model_run_ids[0]]
    deps = replace(run.client.deps, metrics=RuntimeMetrics())
    activities = TurnActivities(deps=deps, tools=default_registry(), workspace=SAMPLE_WORKSPACE,
                                providers=ModelProviders())
    retry = ActivityEnvironment()
    retry.info = replace(retry.info, attempt=2)
    again = await retry.run(activities.assemble_context, AssembleInput(
        scope=Scope(account_id=run.client.account_id, conversation_id=first.conversation_id,
                    branch_id=first.branch_id),
        participant_id=first.participant_id, model_run_id=run.chat.model_run_ids[0], assembly_id=first.id,
        runtime_kind=first.runtime_kind, now=first.generation_at))
    assert again.assembly_id == first.id
    samples = _scrape_registry(deps.metrics)
    for name in ("dossier_assemblies_total", "dossier_assembled_tokens_total", "dossier_replay_tokens_total",
                 "dossier_omissions_total", "dossier_assembly_phase_seconds_count"):
        assert _total(samples, name) == 0, name


def _scrape_registry(metrics: RuntimeMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in metrics.registry.collect() for sample in family.samples}


@pytest.mark.slow  # the full tier only: starts two worker services
async def test_two_worker_services_on_one_host_both_export_metrics_and_say_where(
        temporal_env: WorkflowEnvironment, database_url: str, endpoints, s3_bucket: str, tmp_path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Two embedded workers with the default METRICS_PORT: each serves /metrics on a port of its own, and the
    services state (``dossier services status``) names the one each took."""
    from dossier.services import ensure_services, services_status, stop_services
    from dossier.services.state import read_state
    from dossier.services.worker import WorkerRecord

    monkeypatch.delenv("METRICS_PORT", raising=False)  # the default: workers share it
    target = temporal_env.client.service_client.config.target_host
    homes = [Settings(_env_file=None, dossier_home=tmp_path / f"worker-{n}", database_url=database_url,
                      s3_endpoint=endpoints.s3_endpoint, s3_access_key=endpoints.s3_access_key,
                      s3_secret_key=endpoints.s3_secret_key, s3_bucket=s3_bucket, temporal_address=target,
                      temporal_namespace="default", temporal_task_queue=f"ops-metrics-{uuid.uuid4().hex[:8]}")
             for n in (1, 2)]
    try:
        for settings in homes:
            await asyncio.to_thread(ensure_services, settings, ["worker"])
        records = [WorkerRecord.model_validate(read_state(settings.dossier_home)["worker"]) for settings in homes]
        urls = [record.metrics_url for record in records]
        assert all(urls) and urls[0] != urls[1], urls
        for url in urls:
            assert "dossier_assemblies_total" in urllib.request.urlopen(url, timeout=10).read().decode()
        for settings, url in zip(homes, urls, strict=True):
            [row] = [row for row in services_status(settings) if row.name == "worker"]
            assert row.state == "running" and row.endpoint == url
    finally:
        for settings in homes:
            await asyncio.to_thread(stop_services, settings, ["worker"])


# ---------------------------------------------------------------- traces


def _chain(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    """The names from ``span`` up to its root."""
    names = [span.name]
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        names.append(span.name)
    return names


async def test_the_trace_runs_from_the_workflow_through_activities_to_graph_and_s3(run: Run) -> None:
    finished = run.spans.get_finished_spans()
    by_id = {span.context.span_id: span for span in finished}
    starts = [s for s in finished if s.name.startswith("StartWorkflow:") and
              s.attributes.get("temporalWorkflowID") == run.chat.workflow_id]
    assert len(starts) == 1, [s.name for s in finished if s.name.startswith("StartWorkflow")]
    trace_id = starts[0].context.trace_id
    mine = [s for s in finished if s.context.trace_id == trace_id]

    graph = [s for s in mine if s.name.startswith("graph ")]
    s3 = [s for s in mine if s.name.startswith("s3 ")]
    assert graph and s3
    for span in graph + s3:
        # statement/request -> RunActivity -> StartActivity (scheduled by the workflow) -> StartWorkflow
        chain = _chain(span, by_id)
        activity = chain[1].removeprefix("RunActivity:")
        assert chain[1:] == [f"RunActivity:{activity}", f"StartActivity:{activity}", "StartWorkflow:AgentTurn"], chain
    # The workflow's own span sits beside its activities' under the start (the SDK's TracingInterceptor
    # ends workflow spans at once, so it parents nothing).
    run_spans = [s for s in mine if s.name == "RunWorkflow:AgentTurn"]
    assert run_spans and all(s.parent.span_id == starts[0].context.span_id for s in run_spans)
    activities = {_chain(span, by_id)[1] for span in graph}
    assert "RunActivity:assemble_context" in activities, activities
    assert "RunActivity:execute_tool" in {_chain(span, by_id)[1] for span in s3}
    assert {span.attributes["rpc.method"] for span in s3} >= {"PutObject"}
    # Spans name operations, never payloads.
    for span in mine:
        assert SECRET not in str(dict(span.attributes or {})), span.name


async def test_provider_errors_latency_and_billed_estimate_from_reported_usage(
        temporal_env: WorkflowEnvironment, graph_deps: GraphDeps, server: ProviderServer) -> None:
    """A real OpenAI-format endpoint: one 503 (retried by Temporal), then an answer that reports cache reads;
    then a turn whose key is refused (401, not retried)."""
    deps = replace(graph_deps, metrics=RuntimeMetrics())
    metrics = serve_metrics(free_ports(1)[0], deps.metrics.registry, addr="127.0.0.1")
    assert metrics is not None
    url = f"http://127.0.0.1:{metrics.server_port}/metrics"
    server.reply(Reply(openai_error(503, "overloaded", type_="server_error"), status=503,
                       headers={"retry-after": "0"}),
                 Reply(openai_completion("done", prompt_tokens=1500, cached_tokens=1024)))
    try:
        async with provider_dossier(temporal_env, deps, server, "ops provider") as client:
            outcome = await client.chat(f"hello {SECRET}", model="openai:gpt-test")
            assert outcome.result is not None and outcome.result.status == "answered"
            samples = _scrape(url)
            server.reply(Reply(openai_error(401, "Incorrect API key provided: sk-test."), status=401))
            refused = await client.chat(f"again {SECRET}", model="openai:gpt-test", wait=False)
            with pytest.raises(WorkflowFailureError):
                await client.temporal.get_workflow_handle(refused.workflow_id).result()
            after = _scrape(url)
    finally:
        metrics.shutdown()
    # Per provider request: the 503 and the answer.
    assert _total(samples, "dossier_provider_errors_total", route="openai",
                  error="ProviderUnavailableError") == 1
    assert _total(samples, "dossier_provider_errors_total") == 1
    assert _total(samples, "dossier_provider_request_seconds_count", route="openai") == 2
    # Per model call: one call, answered on its second attempt; the retry is counted as a retry.
    assert _total(samples, "dossier_model_calls_total", route="openai", outcome="answered") == 1
    assert _total(samples, "dossier_model_calls_total", outcome="failed") == 0
    assert _total(samples, "dossier_activity_retries_total", activity="call_model") == 1
    # The refused key ends its call at once: one failed call, one more failed request, no retry.
    assert _total(after, "dossier_model_calls_total", route="openai", outcome="failed") == 1
    assert _total(after, "dossier_model_calls_total", route="openai", outcome="answered") == 1
    assert _total(after, "dossier_provider_errors_total", route="openai", error="ProviderRequestError") == 1
    assert _total(after, "dossier_activity_retries_total", activity="call_model") == 1
    # OpenAI's prompt tokens include the cached ones: 476 uncached at 1.0 and 1024 cached at 0.5
    # (policy.pricing's cache-read price for the openai route).
    assert _total(samples, "dossier_billed_input_units_total", route="openai") == 476 + 1024 * 0.5


async def test_a_server_without_the_search_attributes_gets_them_on_connect() -> None:
    """What ``dossier.runtime.temporal_client`` does for a server nobody registered them on (idempotent)."""
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(find_binary("temporal")), ui=False)
    try:
        assert await ensure_search_attributes(env.client, "default") == list(SEARCH_ATTRIBUTE_NAMES)
        assert await ensure_search_attributes(env.client, "default") == []
        listed = await env.client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace="default"))
        assert all(listed.custom_attributes[name] == IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
                   for name in SEARCH_ATTRIBUTE_NAMES)
    finally:
        await env.shutdown()


KEYWORD_LIMIT = 10
"""The dev server's (SQLite visibility) limit on custom Keyword attributes per namespace: a server started with
this many of its own has no room left, and refuses to register Dossier's."""


async def test_a_server_that_refuses_the_search_attributes_stops_the_runtime_at_connect() -> None:
    """A real refusal (the Keyword slots are full): a typed error naming them and how to register them."""
    others = [arg for i in range(KEYWORD_LIMIT) for arg in ("--search-attribute", f"Other{i}=Keyword")]
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(find_binary("temporal")), ui=False,
                                                dev_server_extra_args=others)
    try:
        settings = Settings(_env_file=None, temporal_address=env.client.service_client.config.target_host,
                            temporal_namespace="default")
        with pytest.raises(SearchAttributesMissingError) as refused:
            await temporal_client(settings)
        assert refused.value.missing == SEARCH_ATTRIBUTE_NAMES and refused.value.namespace == "default"
        message = str(refused.value)
        assert "cannot have more than 10 search attribute of type Keyword" in message  # the server's own reason
        assert ("temporal operator search-attribute create --namespace default --name DossierConversationId "
                "--name DossierBranchId --name DossierParticipantId --name DossierRuntimeKind --type Keyword") in message
        # The visibility-query check (used where listing is refused) agrees: none of them is known.
        assert [await knows_search_attribute(env.client, name) for name in SEARCH_ATTRIBUTE_NAMES] == [False] * 4
    finally:
        await env.shutdown()


async def test_a_server_that_already_has_the_search_attributes_connects_without_registering() -> None:
    """Full Keyword slots do not matter when Dossier's attributes are among them: nothing is added, no error."""
    ours = [arg for name in SEARCH_ATTRIBUTE_NAMES for arg in ("--search-attribute", f"{name}=Keyword")]
    others = [arg for i in range(KEYWORD_LIMIT - len(SEARCH_ATTRIBUTE_NAMES))
              for arg in ("--search-attribute", f"Other{i}=Keyword")]
    env = await WorkflowEnvironment.start_local(dev_server_existing_path=str(find_binary("temporal")), ui=False,
                                                dev_server_extra_args=ours + others)
    try:
        assert await ensure_search_attributes(env.client, "default") == []
        assert [await knows_search_attribute(env.client, name) for name in SEARCH_ATTRIBUTE_NAMES] == [True] * 4
        client = await temporal_client(Settings(_env_file=None,
                                                temporal_address=env.client.service_client.config.target_host))
        assert client.namespace == "default"
    finally:
        await env.shutdown()


async def test_a_schedule_starts_its_jobs_tagged_and_summarised(run: Run) -> None:
    """What a schedule starts carries the same attributes and summary (read from the schedule's action)."""
    schedule_id = f"ops-{uuid.uuid4().hex[:8]}"
    handle = await run.client.schedules.create(schedule_id, f"Digest, codeword {SECRET}", every=timedelta(hours=1),
                                              model="scripted:digest", conversation_id=run.conversation_id,
                                              branch_id=run.chat.branch_id, paused=True)
    try:
        action = (await handle.describe()).schedule.action
        assert isinstance(action, ScheduleActionStartWorkflow)
        tags = {key.name: value for key, value in action.typed_search_attributes}
        assert tags["DossierConversationId"] == run.conversation_id
        assert tags["DossierRuntimeKind"] == "scheduled_job"
        summary = action.static_summary  # a raw payload when read back from the server
        assert PayloadConverter.default.from_payload(summary, str) == (
            f"scheduled job · scheduled_job · {INSPECTOR}/conversations/{run.conversation_id}")
    finally:
        await handle.delete()
