"""The command-line interface others build on: names and options the issues promise."""

from __future__ import annotations

import argparse
import io

import pytest

from dossier.cli import build_parser, main


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


@pytest.mark.parametrize("argv", [
    ["chat", "-"],
    ["multi", "--model", "scripted:analyst", "-"],
    ["discuss", "--model", "scripted:panelist", "-"],
    ["answer", "TOOL_CALL", "-"],
    ["branch", "fork", "--conversation", "C", "--at", "M", "-"],
])
def test_a_text_argument_may_be_a_dash_for_stdin(argv: list[str]) -> None:
    assert callable(build_parser().parse_args(argv).handler)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dossier: error: "), captured.err
    assert captured.out == ""
    return lines[0]


@pytest.mark.parametrize(("argv", "stdin", "says"), [
    (["runs", "--conversation", "not-a-uuid"], b"", "not a valid id"),
    (["chat", "--branch", "nope", "hi"], b"", "not a valid id"),
    (["answer", "not-a-uuid", "{}"], b"", "not a valid id"),
    (["chat", " \t "], b"", "blank"),
    (["chat", "bad \udcff"], b"", "UTF-8"),
    (["chat", "-"], b"a\x00b", "NUL"),
    (["chat", "-"], b"\xc3\x28", "UTF-8"),
    (["chat", "-"], b"", "blank"),
    (["discuss", "--model", "scripted:panelist", "--rounds", "0", "Topic"], b"", "rounds"),
    (["subagents", "--task", "scripted:researcher", "Audit"], b"", "SPEC=TASK"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_service(
    argv: list[str], stdin: bytes, says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    monkeypatch.setattr("dossier.commands.agent.DossierClient.connect",
                        lambda *a, **k: pytest.fail("a refused input must not connect"))
    assert main(argv) == 2
    assert says in _one_line(capsys)


def test_a_message_over_the_limit_on_stdin_is_one_line(capsys: pytest.CaptureFixture[str],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MESSAGE_MAX_BYTES", "10")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"x" * 1000)))
    assert main(["chat", "-"]) == 2
    assert "over the limit of 10" in _one_line(capsys)


def test_a_usage_error_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["chat"])
    assert exit_.value.code == 2
    assert "the following arguments are required: message" in _one_line(capsys)


def test_an_unexpected_error_is_one_line_not_a_traceback(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args: object) -> int:
        raise RuntimeError("first line\nsecond line")

    parser = argparse.ArgumentParser(prog="dossier")
    parser.set_defaults(handler=boom, verbose=False)
    monkeypatch.setattr("dossier.cli.build_parser", lambda: parser)
    assert main([]) == 1
    assert _one_line(capsys) == "dossier: error: RuntimeError: first line | second line"


def test_a_bad_setting_is_one_line_naming_its_env_var(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://u@h/db")
    assert main(["runs"]) == 1
    assert _one_line(capsys).startswith("dossier: error: bad setting DATABASE_URL: ")
