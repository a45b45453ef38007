"""Audit commands: `explain`, `why-not`, `what-if`, `diff`.

They read the stored assemblies of this installation's account
(:mod:`dossier.audit`); nothing is written. ``--json`` prints the result
object; the human output passes every stored text (messages, tool output,
reasons) through :func:`printable`, so a tool result cannot send terminal
control sequences. An id that is malformed, unknown or another account's ends
the command with one error line and exit code 2.
"""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

from dossier.client import InvalidInputError, check_id, check_record_ref
from dossier.commands.agent import _refusing, _run, _with_client
from policy.explain import epoch_state
from policy.lines import escape_invisible

MESSAGE_CHARS = 2000
"""Human output shows each provider message up to this many characters (``--json`` shows all)."""
BRIEF_ROWS = 3
"""The brief form of explain (the demo's) shows this many included and omitted records of each."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the audit commands."""
    explain = subparsers.add_parser("explain", help="what a model run saw: included records, omissions, reasons")
    explain.add_argument("model_run_id", metavar="MODEL_RUN_ID")
    explain.add_argument("--trace", action="store_true", help="also every candidate and the rule that decided it")
    explain.add_argument("--json", action="store_true", help="print one JSON object")
    explain.set_defaults(handler=_refusing(_explain))

    why = subparsers.add_parser("why-not", help="why a record was not in a model run's context (or where it was)")
    why.add_argument("record_id", metavar="RECORD_ID", help="a memory, artifact, tool call or message id, bare or as memory:ID (as explain prints it)")
    why.add_argument("model_run_id", metavar="MODEL_RUN_ID")
    why.add_argument("--json", action="store_true", help="print one JSON object")
    why.set_defaults(handler=_refusing(_why_not))

    what_if = subparsers.add_parser("what-if", help="replay stored assemblies under another policy version")
    what_if.add_argument("--policy", required=True, metavar="VERSION",
                         help="a registered policy version (dossier-lean/1) or its full tag")
    scope = what_if.add_mutually_exclusive_group(required=True)
    scope.add_argument("--conversation", metavar="ID")
    scope.add_argument("--account", metavar="ID")
    scope.add_argument("--last", metavar="N", type=int)
    what_if.add_argument("--json", action="store_true", help="print one JSON object")
    what_if.set_defaults(handler=_refusing(_what_if))

    diff = subparsers.add_parser("diff", help="two assemblies compared (consecutive calls, or one under two policies)")
    diff.add_argument("model_run_id", metavar="MODEL_RUN_ID")
    diff.add_argument("other_model_run_id", metavar="MODEL_RUN_ID", nargs="?",
                      help="the second run (default: the participant's previous call before the first)")
    diff.add_argument("--policy", metavar="VERSION", help="compare the run with itself recomputed under VERSION")
    diff.add_argument("--json", action="store_true", help="print one JSON object")
    diff.set_defaults(handler=_refusing(_diff))


def printable(text: Any) -> str:
    """``text`` safe for a terminal: control, format and separator characters (ESC, bidi marks, CR ...)
    shown as ``\\x1b`` / ``\\u202e`` escapes; newlines and tabs kept (:func:`policy.lines.escape_invisible`)."""
    return escape_invisible(str(text))


def _print(text: Any = "") -> None:
    print(printable(text))


def _emit(result: Any, args: argparse.Namespace, human: Any) -> int:
    from dossier.audit import dumps

    if args.json:
        print(dumps(result))
    else:
        human(result)
    return 0


def _explain(args: argparse.Namespace) -> int:
    check_id(args.model_run_id, "model run")  # refused before any service is contacted
    async def work(client: Any) -> int:
        return _emit(await client.runs.explain(args.model_run_id, trace=args.trace), args, _show_explanation)
    return _run(_with_client(work))


def _why_not(args: argparse.Namespace) -> int:
    check_record_ref(args.record_id)
    check_id(args.model_run_id, "model run")
    async def work(client: Any) -> int:
        return _emit(await client.runs.why_not(args.record_id, args.model_run_id), args, _show_why_not)
    return _run(_with_client(work))


def _what_if(args: argparse.Namespace) -> int:
    check_id(args.conversation, "conversation")
    check_id(args.account, "account")
    if args.last is not None and args.last < 1:
        raise InvalidInputError(f"--last takes a positive number of runs, not {args.last}")
    async def work(client: Any) -> int:
        report = await client.runs.what_if(args.policy, conversation_id=args.conversation, account_id=args.account,
                                      last=args.last)
        return _emit(report, args, _show_what_if)
    return _run(_with_client(work))


def _diff(args: argparse.Namespace) -> int:
    check_id(args.model_run_id, "model run")
    check_id(args.other_model_run_id, "model run")
    async def work(client: Any) -> int:
        result = await client.runs.diff(args.model_run_id, args.other_model_run_id, policy_version=args.policy)
        return _emit(result, args, _show_diff)
    return _run(_with_client(work))


# --------------------------------------------------------------------------- human output


def _show_explanation(result: Any, *, brief: bool = False) -> None:
    """Explain's human form; ``brief`` leaves out the messages and the trace and shows :data:`BRIEF_ROWS` records
    of each list (the counts stay whole)."""
    _print(f"model run     {result.model_run_id or '-'}  (assembly {result.assembly_id})")
    _print(f"policy        {result.policy_version}  assembler {result.assembler_version}")
    _print(f"route         {result.provider_route}  kind {result.runtime_kind}  snapshot seq {result.snapshot_seq}")
    _print(f"tokens        {result.assembled_tokens} of budget {result.token_budget} "
           f"(full replay would be {result.legacy_tokens})")
    if result.epoch:
        started = bool(result.epoch.get("started"))
        state = epoch_state(started, str(result.epoch.get("reason", "")))
        appended = int(result.epoch.get("appended_tokens") or 0)
        # What a restart costs: the new prefix is written to the provider's cache once (1.25x input at
        # Anthropic's prices); a continued call reads it at 0.1x and pays only for what it appends.
        cost = (f"  (new prefix ~{max(0, result.assembled_tokens - appended)} tokens to cache)" if started
                else f"  (~{appended} tokens appended since the epoch began)")
        _print(f"epoch         {result.epoch.get('epoch_id', '')} {state}{cost}")
    if brief:
        _print(f"context       {len(result.messages)} messages as sent (`dossier explain` prints them)")
    else:
        _print()
        _print(f"== context as sent ({len(result.messages)} messages)")
    for index, message in enumerate(() if brief else result.messages):
        _print(f"[{index}] {message.get('role')}:")
        body = str(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            body += f"\n  -> {function.get('name')}({function.get('arguments')})"
        if len(body) > MESSAGE_CHARS:
            body = body[:MESSAGE_CHARS] + f"\n  [... {len(body) - MESSAGE_CHARS} more characters; --json shows all]"
        _print(textwrap.indent(body, "    "))
    _print()
    _print(f"== included ({len(result.included)})")
    for row in _rows(result.included, brief):
        where = f" in message(s) {', '.join(map(str, row.messages))}" if row.messages else ""
        _print(f"{row.ref}  {row.outcome} by {row.rule}: {row.reason}{where}")
        chain = " <- ".join(f"{link.kind} {link.label or link.id[:8]}".strip() for link in row.provenance)
        if chain:
            _print(f"    provenance: {chain}")
    if brief and len(result.included) > BRIEF_ROWS:
        _print(f"... and {len(result.included) - BRIEF_ROWS} more")
    if result.rehydrations and not brief:
        _print()
        _print(f"== rehydrations and first reads ({len(result.rehydrations)})")
        for row in result.rehydrations:
            _print(f"{row.ref}  {row.kind}{' ' + row.slice if row.slice else ''}: {row.reason}")
    _print()
    _print(f"== omitted ({len(result.omitted)})")
    for row in _rows(result.omitted, brief):
        _print(f"{row.ref}  {row.omission or row.outcome} by {row.rule}: {row.reason}")
    if brief and len(result.omitted) > BRIEF_ROWS:
        _print(f"... and {len(result.omitted) - BRIEF_ROWS} more")
    counts = ", ".join(f"{reason} {count}" for reason, count in sorted(result.omission_counts.items()))
    _print(f"omission counts: {counts or 'none'}")
    epoch_ref = f"epoch:{result.epoch.get('epoch_id', '')}" if result.epoch else None
    for note in result.notes:
        if note.ref != epoch_ref:  # the epoch line above says it already
            _print(f"note: {note.ref} {note.outcome}: {note.reason}")
    if result.trace is not None and not brief:
        _print()
        _print(f"== trace ({len(result.trace)} rows)")
        if result.trace_note:
            _print(result.trace_note)
        for row in result.trace:
            _print(f"{row.ref}  {row.rule} -> {row.outcome}{' (' + row.omission + ')' if row.omission else ''}: "
                   f"{row.reason}")


def _rows(rows: list[Any], brief: bool) -> list[Any]:
    return rows[:BRIEF_ROWS] if brief else rows


def _show_why_not(result: Any) -> None:
    if result.included:
        where = f" in message(s) {', '.join(map(str, result.messages))}" if result.messages else ""
        _print(f"{result.ref} WAS included in model run {result.model_run_id}{where}")
        _print(f"  {result.outcome} by rule {result.rule}: {result.reason}")
    else:
        _print(f"{result.ref} was NOT included in model run {result.model_run_id}")
        _print(f"  rule {result.rule}{' (' + result.omission + ')' if result.omission else ''}: {result.reason}")
    _print(f"  policy version {result.policy_version}")
    for name, value in sorted(result.inputs.items()):
        _print(f"  input {name}: {value}")
    if len(result.decisions) > 1:
        for row in result.decisions:
            _print(f"  decision {row.rule} -> {row.outcome}: {row.reason}")
    chain = " <- ".join(f"{link.kind} {link.label or link.id[:8]}".strip() for link in result.provenance)
    if chain:
        _print(f"  provenance: {chain}")


def _show_changes(result: Any) -> None:
    for title, rows in (("added", result.added), ("dropped", result.dropped), ("changed", result.changed)):
        for row in rows:
            before = f"{row.before_outcome} by {row.before_rule}" if row.before_outcome else "not decided"
            after = f"{row.after_outcome} by {row.after_rule}" if row.after_outcome else "not decided"
            why = row.after_reason if row.after_reason else row.before_reason or ""
            _print(f"  {title:<8} {row.ref}  {before} -> {after}: {why}")
    for rule in result.newly_fired:
        _print(f"  fires    {rule.family}: {rule.ref} {rule.rule} -> {rule.outcome}: {rule.reason}")


def _show_diff(result: Any) -> None:
    _print(f"before  {result.before.model_run_id or '-'} assembly {result.before.assembly_id or '(recomputed)'} "
           f"policy {result.before.policy_version}")
    _print(f"after   {result.after.model_run_id or '-'} assembly {result.after.assembly_id or '(recomputed)'} "
           f"policy {result.after.policy_version}")
    _print(f"tokens  {result.tokens_before} -> {result.tokens_after} ({result.token_change:+d}); billed "
           f"{result.billed_before} -> {result.billed_after} ({result.billed_change:+}) input-price units")
    _print(f"records added {len(result.added)}, dropped {len(result.dropped)}, changed {len(result.changed)}; "
           f"{result.shared_prefix_messages} leading message(s) identical")
    _show_changes(result)
    for change in result.messages:
        sign = "+" if change.side == "added" else "-"
        _print(f"  {sign} [{change.index}] {change.role}: {' '.join(change.text.split())}")


def _show_what_if(result: Any) -> None:
    totals = result.totals
    _print(f"what-if {result.policy_version} (from {', '.join(result.baseline_versions) or '-'}) over "
           f"{totals.assemblies} assembl{'y' if totals.assemblies == 1 else 'ies'}, {totals.changed_assemblies} changed")
    _print(f"records added {totals.added}, dropped {totals.dropped}; tokens {totals.tokens_before} -> "
           f"{totals.tokens_after} ({totals.token_change:+d}); billed {totals.billed_before} -> "
           f"{totals.billed_after} ({totals.billed_change:+}) input-price units")
    fired = ", ".join(f"{family} {count}" for family, count in totals.newly_fired.items())
    _print(f"guarded rules newly firing: {fired or 'none'}")
    for run in result.runs:
        if not (run.added or run.dropped or run.changed or run.newly_fired):
            continue
        _print()
        _print(f"model run {run.before.model_run_id or '-'} (assembly {run.before.assembly_id}): tokens "
               f"{run.tokens_before} -> {run.tokens_after} ({run.token_change:+d})")
        _show_changes(run)
