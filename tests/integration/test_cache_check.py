"""The billing simulation's slot rule against the real llama.cpp server's prompt-cache reuse.

Marked ``real_model``: the real weights, the real server (one slot,
``cache_prompt``), two short trajectories from the traces fixture imported
through the real graph (Postgres, S3). Two claims, each able to fail:

* exact: :data:`harness.bench.billing.LLAMA_CPP_SLOT` applied to the server's
  own token sequences (its chat template and tokenizer) gives the server's
  ``timings.cache_n`` to the token (tolerance 0) for every request from a
  sequence's second call on. A first call follows another sequence, and there
  the server may restore an older prompt from its RAM prompt cache
  (``cache_ram_mib``) instead of the slot's; its ``cache_n`` then lies
  between the slot rule's and the any-earlier-prompt rule's (the longest
  prefix shared with any earlier prompt; the server keeps only some of them);
* close: on the benchmark's cl100k sequences, the predicted cached share of
  each strategy, from each sequence's second call on, is within
  :data:`SHARE_TOLERANCE` of the observed share. The two tokenizers and chat
  framings differ (the server's template adds a default system prompt and
  about 5 tokens per message), so an exact match is not expected here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.deps import GraphDeps
from activities.tokens import token_encoder
from dossier.services import Endpoints
from dossier.settings import Settings
from harness.bench.cache_check import LlamaServer, check_with
from harness.bench.cache_check_report import STRATEGIES
from harness.bench.traces import load_traces

pytestmark = pytest.mark.real_model

FIXTURE = Path(__file__).parent / "data" / "bench_traces_fixture.jsonl"
SHARE_TOLERANCE = 0.10
"""Largest difference allowed between the observed and predicted cached share of a strategy (from call 2)."""


async def test_the_slot_rule_predicts_the_servers_prompt_cache_reuse(llm: Endpoints, graph_deps: GraphDeps,
                                                                     settings: Settings) -> None:
    assert llm.llm_url is not None and llm.llm_model is not None
    server = LlamaServer(llm.llm_url, llm.llm_model)
    try:
        report = await check_with(graph_deps, server, load_traces(FIXTURE), token_encoder(settings.tiktoken_encoding),
                                  trajectories=2, max_prompt_tokens=2000, max_calls=8)
    finally:
        await server.close()
    assert {r.trajectory for r in report.requests} == {"fixture/multi-turn", "fixture/react"}
    assert len(report.requests) == 2 * (6 + 3)

    for request in report.requests:
        where = (request.trajectory, request.strategy, request.call)
        assert request.tokenized == request.server_tokens, where  # the template + tokenizer is what was evaluated
        assert request.server_cached + request.server_evaluated == request.server_tokens, where
        if request.call >= 1:
            assert request.rule_cached == request.server_cached, where
        else:
            assert request.rule_cached <= request.server_cached <= request.rule_any_cached, where

    summary = report.summary()
    for name in STRATEGIES:
        figures = summary["strategies"][name]
        assert figures["calls_compared"] > 0 and figures["cached_share_observed"] > 0.3, (name, figures)
        assert abs(figures["cached_share_observed"] - figures["cached_share_predicted"]) <= SHARE_TOLERANCE, \
            (name, figures)
    rule = summary["rule_on_server_tokens"]
    assert rule["exact_from_call_2"] == rule["calls_from_call_2"] == 2 * (5 + 2), rule
    assert "| dossier |" in report.to_markdown()
