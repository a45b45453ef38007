"""Agent commands: `chat`, `branch fork`, `multi`, `subagents`, `discuss`, `answer`, `runs`, `worker`.

Each opens a :class:`~dossier.client.DossierClient` (starting the embedded
Postgres, S3 and Temporal when nothing is configured) and prints the ids a
user needs to find the work again: conversation, branch, model runs,
workflow and its Temporal UI link. A worker must be running
(`dossier worker`, or `dossier services up` with the worker service).

A message (or topic, or answer) given as ``-`` is read from stdin, so it may
be longer than a command line allows; one trailing newline is dropped. Text
and ids are checked before any service is contacted, and again by the client.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable

from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from dossier.cli import error_line, fail
from dossier.client import (
    USAGE_KEYS,
    ClientError,
    DossierClient,
    InvalidInputError,
    TurnOutcome,
    check_id,
    check_text,
)
from dossier.settings import Settings

STDIN = "-"
"""A text argument that means: read it from stdin."""


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the agent commands."""
    chat = subparsers.add_parser("chat", help="say something and run one agent turn")
    _scope_args(chat)
    chat.add_argument("--model", default="scripted:analyst", metavar="SPEC",
                      help="a model SPEC (scripted:NAME, default analyst; local:NAME, openai:NAME, anthropic:NAME) "
                           "or an agent's NAME")
    chat.add_argument("--tools", metavar="NAME,NAME", type=_names,
                      help="the tools the participant is offered, e.g. workspace.list_files,workspace.read_csv "
                           "(default: all for scripted models, all but the diag.* drills for real ones)")
    chat.add_argument("--system", default="", metavar="TEXT", help="the participant's system prompt")
    chat.add_argument("--no-wait", action="store_true", help="start the turn and print its ids without waiting")
    chat.add_argument("message", help="what to say; '-' reads it from stdin")
    chat.set_defaults(handler=_refusing(_chat))

    branch = subparsers.add_parser("branch", help="fork a branch at a message (then chat on it)")
    branch_actions = branch.add_subparsers(title="actions", metavar="ACTION", required=True)
    fork = branch_actions.add_parser("fork", help="fork at a message; with MESSAGE, send it on the new branch")
    fork.add_argument("--conversation", required=True, metavar="ID")
    fork.add_argument("--branch", metavar="ID", help="the branch to fork from (default: the root)")
    fork.add_argument("--at", required=True, metavar="MESSAGE_ID", help="the message the new branch continues from")
    fork.add_argument("--name", help="branch name")
    fork.add_argument("--model", default="scripted:analyst", metavar="SPEC")
    fork.add_argument("message", nargs="?",
                      help="send this on the new branch (runtime kind branch_send); '-' reads it from stdin")
    fork.set_defaults(handler=_refusing(_fork))

    multi = subparsers.add_parser("multi", help="several models answer the same message, side by side")
    _scope_args(multi)
    multi.add_argument("--model", action="append", required=True, metavar="SPEC", help="repeat for each model")
    multi.add_argument("message", help="what to say; '-' reads it from stdin")
    multi.set_defaults(handler=_refusing(_multi))

    subagents = subparsers.add_parser("subagents", help="delegate tasks to subagents, then resume the parent")
    _scope_args(subagents)
    subagents.add_argument("--parent-model", default="scripted:coordinator", metavar="SPEC")
    subagents.add_argument("--task", action="append", required=True, metavar="SPEC=TASK",
                           help="a child: model spec and its task, e.g. 'scripted:researcher=Analyse Q3 orders'")
    subagents.add_argument("--child-timeout", type=float, default=600.0, metavar="SECONDS")
    subagents.add_argument("message", help="the parent's request; '-' reads it from stdin")
    subagents.set_defaults(handler=_refusing(_subagents))

    discuss = subparsers.add_parser("discuss", help="an autonomous discussion under a moderator")
    _scope_args(discuss)
    discuss.add_argument("--model", action="append", required=True, metavar="SPEC", help="repeat per panelist")
    discuss.add_argument("--rounds", type=int, default=2)
    discuss.add_argument("--directive", help="the moderator's directive, e.g. 'At most 3 sentences each.'")
    discuss.add_argument("topic", help="the question; '-' reads it from stdin")
    discuss.set_defaults(handler=_refusing(_discuss))

    answer = subparsers.add_parser("answer", help="answer a deferred tool call (e.g. a file picker)")
    answer.add_argument("tool_call_id")
    answer.add_argument("answer", help="the answer, usually JSON such as '{\"path\": \"sales/2026-q3-orders.csv\"}'; "
                                       "'-' reads it from stdin")
    answer.set_defaults(handler=_refusing(_answer))

    runs = subparsers.add_parser("runs", help="list model runs with workflow ids and context assemblies")
    runs.add_argument("--conversation", metavar="ID")
    runs.add_argument("--json", action="store_true", help="print one JSON list")
    runs.set_defaults(handler=_refusing(_runs))

    worker = subparsers.add_parser("worker", help="run a Temporal worker with every workflow and activity")
    worker.set_defaults(handler=_worker)


def _scope_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conversation", metavar="ID", help="continue this conversation (default: a new one)")
    parser.add_argument("--branch", metavar="ID", help="on this branch (default: the conversation's root)")


def _run(work: Awaitable[int]) -> int:
    try:
        return asyncio.run(work)
    except ClientError as error:
        return fail(error, 2)
    except RPCError as error:  # e.g. an unknown schedule id, a workflow id already in use
        return fail(f"temporal: {error_line(error.message)}", 2)
    except WorkflowFailureError as error:
        return fail(f"the workflow failed: {_root_cause(error)}", 1)


def _refusing(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """The handler, with a refused input (its own checks, before any service) as a one-line error, exit 2."""
    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except ClientError as error:
            return fail(error, 2)
    return run


def _text(value: str, what: str = "message") -> str:
    """A text argument, read from stdin when it is ``-``, checked under ``MESSAGE_MAX_BYTES``.

    Raises:
        InvalidInputError: stdin is not UTF-8, or the text is refused by :func:`check_text`.
    """
    limit = Settings().message_max_bytes
    if value == STDIN:
        # Read one line ending past the limit: enough to tell "too long" without reading it all.
        raw = sys.stdin.buffer.read(limit + 3)
        raw = raw.removesuffix(b"\n").removesuffix(b"\r") if raw.endswith(b"\n") else raw
        if len(raw) > limit:  # checked before decoding: the read may have cut a character in two
            raise InvalidInputError(f"the {what} on stdin is over the limit of {limit:,} bytes (MESSAGE_MAX_BYTES)")
        try:
            value = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidInputError(f"the {what} on stdin is not valid UTF-8 text (byte {error.start})") from None
    return check_text(value, what, max_bytes=limit)


def _root_cause(error: BaseException) -> str:
    """The innermost cause's message: what actually went wrong, without the wrapping layers."""
    while error.__cause__ is not None:
        error = error.__cause__
    return str(error)


def _progress(line: str) -> None:
    print(f"… {line}", file=sys.stderr, flush=True)


async def _with_client(work: Callable[[DossierClient], Awaitable[int]]) -> int:
    async with DossierClient.connect(Settings()) as client:
        return await work(client)


def _print_turn(outcome: TurnOutcome) -> None:
    print(outcome.answer if outcome.answer is not None else f"(no answer: {outcome.result.status if outcome.result else 'running'})")
    print()
    print(f"conversation  {outcome.conversation_id}")
    print(f"branch        {outcome.branch_id}")
    print(f"participant   {outcome.participant} ({outcome.participant_id})")
    print(f"model runs    {' '.join(outcome.model_run_ids) or '-'}")
    print(f"workflow      {outcome.workflow_id}")
    if outcome.ui_url:
        print(f"temporal ui   {outcome.ui_url}")


def _names(text: str) -> list[str]:
    """``a,b`` -> ``["a", "b"]`` (an empty string offers no tools)."""
    return [name.strip() for name in text.split(",") if name.strip()]


def _scope_ids(args: argparse.Namespace) -> None:
    args.conversation = check_id(args.conversation, "conversation")
    args.branch = check_id(args.branch, "branch")


def _chat(args: argparse.Namespace) -> int:
    args.message = _text(args.message)
    _scope_ids(args)

    async def work(client: DossierClient) -> int:
        outcome = await client.chat(args.message, conversation_id=args.conversation, branch_id=args.branch,
                                    model=args.model, wait=not args.no_wait, progress=_progress,
                                    tools=args.tools, system_prompt=args.system)
        _print_turn(outcome)
        return 0 if args.no_wait or (outcome.result and outcome.result.status == "answered") else 1
    return _run(_with_client(work))


def _fork(args: argparse.Namespace) -> int:
    _scope_ids(args)
    args.at = check_id(args.at, "message")
    if args.message is not None:
        args.message = _text(args.message)

    async def work(client: DossierClient) -> int:
        branch_id = await client.fork(args.conversation, args.at, branch_id=args.branch, name=args.name)
        print(f"branch        {branch_id}")
        if args.message:
            outcome = await client.send_on_branch(args.message, conversation_id=args.conversation,
                                                  branch_id=branch_id, model=args.model, progress=_progress)
            _print_turn(outcome)
        return 0
    return _run(_with_client(work))


def _multi(args: argparse.Namespace) -> int:
    args.message = _text(args.message)
    _scope_ids(args)

    async def work(client: DossierClient) -> int:
        outcomes = await client.multi(args.message, args.model, conversation_id=args.conversation,
                                      branch_id=args.branch, progress=_progress)
        for outcome in outcomes:
            print(f"=== {outcome.participant}")
            _print_turn(outcome)
            print()
        return 0
    return _run(_with_client(work))


def _subagents(args: argparse.Namespace) -> int:
    args.message = _text(args.message)
    _scope_ids(args)
    children = []
    for item in args.task:
        spec, sep, task = item.partition("=")
        if not sep or not task.strip():
            raise ClientError(f"--task needs SPEC=TASK, got {item!r}")
        children.append((spec.strip(), _text(task.strip(), "subagent task")))

    async def work(client: DossierClient) -> int:
        result, workflow_id, resume = await client.subagents(
            args.message, children, parent_model=args.parent_model, conversation_id=args.conversation,
            branch_id=args.branch, child_timeout_seconds=args.child_timeout, progress=_progress)
        for child in result.children:
            print(f"child {child.participant_id}: {child.status}, promoted {len(child.promoted_memory_ids)} "
                  f"record(s); workflow {child.workflow_id}")
        print(f"checkpoint    {result.checkpoint_id}")
        print(f"batch         {workflow_id}  {client.ui_url(workflow_id) or ''}")
        if resume is not None:
            print("=== parent resume")
            _print_turn(resume)
        return 0
    return _run(_with_client(work))


def _discuss(args: argparse.Namespace) -> int:
    args.topic = _text(args.topic, "topic")
    if args.directive is not None:
        args.directive = _text(args.directive, "directive")
    if args.rounds < 1:
        raise InvalidInputError(f"--rounds must be at least 1, got {args.rounds}")
    _scope_ids(args)

    async def work(client: DossierClient) -> int:
        turns, workflow_id = await client.discuss(args.topic, args.model, rounds=args.rounds,
                                                  directive=args.directive, conversation_id=args.conversation,
                                                  branch_id=args.branch, progress=_progress)
        for turn in turns:
            print(f"{turn.participant}: {turn.answer}")
        print()
        print(f"conversation  {turns[0].conversation_id if turns else '-'}")
        print(f"workflow      {workflow_id}  {client.ui_url(workflow_id) or ''}")
        return 0
    return _run(_with_client(work))


def _answer(args: argparse.Namespace) -> int:
    args.tool_call_id = check_id(args.tool_call_id, "tool call")
    args.answer = _text(args.answer, "answer")

    async def work(client: DossierClient) -> int:
        workflow_id = await client.answer(args.tool_call_id, args.answer)
        print(f"answered {args.tool_call_id}; resumed {workflow_id}")
        return 0
    return _run(_with_client(work))


def _runs(args: argparse.Namespace) -> int:
    args.conversation = check_id(args.conversation, "conversation")

    async def work(client: DossierClient) -> int:
        rows = await client.runs.list(args.conversation)
        if args.json:
            print(json.dumps([row.to_json() for row in rows], indent=2))
            return 0
        # Dossier's own count of what it sent next to what the provider billed ('-': not reported).
        print(f"{'model run':<36}  {'kind':<14} {'participant':<16} {'model':<24} {'legacy':>6} {'dossier':>7} "
              f"{'in':>7} {'out':>6} {'cached':>7} {'written':>7}  workflow")
        for row in rows:
            usage = [_count(row.usage.get(key)) for key in USAGE_KEYS]
            print(f"{row.model_run_id:<36}  {row.runtime_kind:<14} {row.participant[:16]:<16} "
                  f"{(row.model or '-')[:24]:<24} {_count(row.legacy_tokens):>6} {_count(row.assembled_tokens):>7} "
                  f"{usage[0]:>7} {usage[1]:>6} {usage[2]:>7} {usage[3]:>7}  {row.workflow_id}")
        return 0
    return _run(_with_client(work))


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _worker(args: argparse.Namespace) -> int:
    from dossier.log import configure_logging
    from dossier.runtime import run_worker  # heavy (Temporal, SQLAlchemy): only for this command

    configure_logging()
    asyncio.run(run_worker(Settings()))
    return 0
