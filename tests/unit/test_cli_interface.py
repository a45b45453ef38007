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
    ["explain", "RUN"],
    ["explain", "RUN", "--trace", "--json"],
    ["why-not", "RECORD", "RUN"],
    ["why-not", "RECORD", "RUN", "--json"],
    ["what-if", "--policy", "dossier-lean/1", "--conversation", "C"],
    ["what-if", "--policy", "dossier-lean/1", "--account", "A", "--json"],
    ["what-if", "--policy", "dossier-lean/1", "--last", "5"],
    ["diff", "RUN"],
    ["diff", "RUN", "RUN2", "--json"],
    ["diff", "RUN", "--policy", "dossier-lean/1"],
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
    ["why-not", "RECORD"],                      # no model run
    ["what-if", "--conversation", "C"],         # no --policy
    ["what-if", "--policy", "dossier-lean/1"],  # no scope
    ["what-if", "--policy", "v", "--last", "3", "--conversation", "C"],  # two scopes
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
    (["explain", "not-a-uuid"], b"", "not a valid id"),
    (["why-not", "not-a-uuid", "00000000-0000-4000-8000-000000000000"], b"", "not a valid id"),
    (["what-if", "--policy", "dossier-lean/1", "--conversation", "nope"], b"", "not a valid id"),
    (["what-if", "--policy", "dossier-lean/1", "--last", "0"], b"", "positive number"),
    (["diff", "00000000-0000-4000-8000-000000000000", "nope"], b"", "not a valid id"),
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


def test_audit_output_cannot_send_terminal_control_sequences(capsys: pytest.CaptureFixture[str]) -> None:
    from dossier.audit import WhyNot
    from dossier.commands.audit import _show_why_not, printable

    assert printable("a\x1b[31mred\x07\u202e\x85\nb\tc") == "a\\x1b[31mred\\x07\\u202e\\x85\nb\tc"
    hostile = WhyNot(record_id="r", model_run_id="m", assembly_id="a", ref="memory:r", included=False,
                     rule="visibility", reason="private \x1b]0;owned\x07 to \x1b[2J someone", policy_version="v",
                     inputs={"title": "\x9b31m"})
    _show_why_not(hostile)
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert "\\x1b]0;owned\\x07" in out


def test_why_not_takes_a_record_as_explain_prints_it(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory:<id>`` (as explain, why-not and the inspector name records) is accepted like a bare id."""
    asked: list[str] = []

    async def reached_the_client(work: object) -> int:
        asked.append("connect")
        return 0

    monkeypatch.setattr("dossier.commands.audit._with_client", reached_the_client)
    record, run = "C68E309A-0000-4000-8000-000000000001", "58468703-0000-4000-8000-000000000002"
    assert main(["why-not", f"memory:{record}", run]) == 0
    assert main(["why-not", record, run]) == 0
    assert asked == ["connect", "connect"]
    assert main(["why-not", "memory:not-an-id", run]) == 2
    assert "'not-an-id' is not a valid id" in _one_line(capsys)
