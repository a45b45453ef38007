"""The command-line interface others build on: names and options the issues promise."""

from __future__ import annotations

import pytest

from dossier.cli import build_parser


@pytest.mark.parametrize("argv", [
    ["chat", "hello"],
    ["chat", "--conversation", "C", "--branch", "B", "--model", "scripted:analyst", "hello"],
    ["branch", "fork", "--conversation", "C", "--at", "M"],
    ["branch", "fork", "--conversation", "C", "--at", "M", "send this on the fork"],
    ["multi", "--model", "scripted:analyst", "--model", "scripted:echo", "hi"],
    ["subagents", "--task", "scripted:researcher=Analyse Q3", "Audit"],
    ["discuss", "--model", "scripted:panelist", "--model", "scripted:panelist", "--rounds", "2", "Topic"],
    ["answer", "TOOL_CALL", '{"path": "a.csv"}'],
    ["schedule", "create", "digest", "--every", "60", "Digest please"],
    ["schedule", "list"],
    ["schedule", "list", "--json"],
    ["schedule", "trigger", "digest"],
    ["schedule", "pause", "digest"],
    ["schedule", "unpause", "digest"],
    ["schedule", "delete", "digest"],
    ["runs"],
    ["runs", "--json"],
    ["worker"],
    ["demo"],
    ["bench", "scenarios", "--json"],
    ["services", "up"],
    ["services", "status"],
])
def test_every_promised_command_parses(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert callable(args.handler)


@pytest.mark.parametrize("argv", [
    ["chat"],                                   # no message
    ["branch", "fork", "--conversation", "C"],  # no --at
    ["multi", "hi"],                            # no --model
    ["schedule", "create", "digest", "hi"],     # no --every
])
def test_incomplete_commands_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
