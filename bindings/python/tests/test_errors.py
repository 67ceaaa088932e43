"""Bad input raises the right exception, with its location as data and the command line's message
as text."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any, Dict, List

import pytest

import promptstack
from conftest import ROOT, cli

SPEC = "examples/chat-assistant/agent.toml"
SEND = "examples/chat-assistant/sends/research.json"

MINIMAL = """spec_version = 1
name = "t"

[[blocks]]
id = "intro"
trust = "author"
stability = "volatile"
template = "{template}"

[targets.main]
system = ["@stable", "@volatile"]
"""

SEND_DICT = {
    "now": "2026-11-30T09:15:00+01:00",
    "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
    "user_message": "hi",
}


def test_a_bad_spec_file_is_a_spec_error_located_like_the_cli(tmp_path: Path) -> None:
    spec = tmp_path / "agent.toml"
    spec.write_text('spec_version = 1\nname = "t"\n\n[[blocks]]\nid = "a"\ntrust = "nobody"\n')
    with pytest.raises(promptstack.SpecError) as caught:
        promptstack.Agent.from_path(spec)
    error = caught.value
    assert error.kind == "spec"
    # Every problem at once: the bad trust, the missing stability, the missing targets.
    assert len(error.diagnostics) >= 3
    trust = next(d for d in error.diagnostics if d["path"] == "blocks[0].trust")
    assert trust["location"] == {"file": str(spec), "line": 6, "column": 9}
    assert trust["pointer"] == "/blocks/0/trust"
    run = cli(["render", str(spec), "--send", SEND])
    assert run.code == 2
    assert str(error) == run.stderr.rstrip("\n")


def test_a_spec_from_source_is_located_in_its_name() -> None:
    with pytest.raises(promptstack.SpecError) as caught:
        promptstack.Agent.from_source('spec_version = 1\nname = "t"\nblocks = [', name="inline.toml")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic["location"]["file"] == "inline.toml"
    assert diagnostic["location"]["line"] == 3
    assert "inline.toml:3:" in str(caught.value)


def test_a_json_spec_is_read_as_json() -> None:
    spec = {
        "spec_version": 1,
        "name": "j",
        "blocks": [{"id": "a", "trust": "author", "stability": "stable", "text": "Hello."}],
        "targets": {"main": {"system": ["@stable"]}},
    }
    agent = promptstack.Agent.from_source(json.dumps(spec), format="json")
    assert agent.assemble(SEND_DICT).compose("main").system == "Hello."
    with pytest.raises(promptstack.SpecError):
        promptstack.Agent.from_source("spec_version = 1", format="json")
    with pytest.raises(ValueError):
        promptstack.Agent.from_source("", format="yaml")


def test_a_send_of_the_wrong_shape_is_a_send_error_with_its_key_path() -> None:
    agent = promptstack.Agent.from_path(SPEC)
    bad = dict(SEND_DICT, model={"id": 5, "name": "GPT-4o", "provider": "openai"})
    with pytest.raises(promptstack.SendError) as caught:
        agent.assemble(bad)
    [diagnostic] = caught.value.diagnostics
    assert diagnostic["path"] == "model.id"
    assert diagnostic["pointer"] == "/model/id"
    assert diagnostic["location"]["file"] == "<send>"
    assert caught.value.kind == "send"


def test_a_send_given_as_json_text_is_located_by_line_and_column() -> None:
    agent = promptstack.Agent.from_path(SPEC)
    text = '{\n  "now": "2026-11-30T09:15:00+01:00",\n  "model": {"id": "x", "name": "X", "provider": "openai"},\n  "colour": 1\n}'
    with pytest.raises(promptstack.SendError) as caught:
        agent.assemble(text, name="request-17.json")
    [diagnostic] = caught.value.diagnostics
    assert diagnostic["code"] == "unknown-key"
    assert diagnostic["location"] == {"file": "request-17.json", "line": 4, "column": 3}


def test_a_bad_send_file_gives_the_cli_message(tmp_path: Path) -> None:
    send = tmp_path / "send.json"
    send.write_text('{"now": "2026-11-30", "model": {"id": "x", "name": "X", "provider": "openai"}}')
    agent = promptstack.Agent.from_path(SPEC)
    with pytest.raises(promptstack.SendError) as caught:
        agent.assemble(send)
    assert caught.value.diagnostics[0]["location"]["file"] == str(send)
    run = cli(["render", SPEC, "--send", str(send)])
    assert run.code == 2
    assert str(caught.value) == run.stderr.rstrip("\n")


def test_missing_and_unreadable_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(promptstack.InputError) as caught:
        promptstack.Agent.from_path(tmp_path / "missing.toml")
    assert caught.value.kind == "not-found"
    assert isinstance(caught.value, OSError)
    with pytest.raises(promptstack.InputError) as caught:
        promptstack.Agent.from_path(tmp_path)
    assert caught.value.kind == "input"
    agent = promptstack.Agent.from_path(SPEC)
    with pytest.raises(promptstack.InputError):
        agent.assemble(tmp_path / "missing.json")


def test_an_unknown_target_is_not_found() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    with pytest.raises(promptstack.NotFoundError) as caught:
        assembly.compose("nope")
    assert isinstance(caught.value, LookupError)
    assert caught.value.kind == "not-found"
    assert "cached, harness, legacy" in str(caught.value)
    with pytest.raises(promptstack.NotFoundError):
        assembly.request("anthropic", target="nope")


def test_request_errors() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    with pytest.raises(promptstack.RequestError, match="several targets"):
        assembly.request("anthropic")
    with pytest.raises(promptstack.RequestError) as caught:
        assembly.request("anthropic", {"messages": [{"role": "wizard", "content": "x"}]}, target="legacy")
    assert caught.value.diagnostics[0]["message"] == str(caught.value)
    with pytest.raises(ValueError, match="openai-chat"):
        assembly.request("openai", target="legacy")
    with pytest.raises(promptstack.RequestError):
        assembly.request("anthropic", target="legacy", rules="version = 1\n[[rule]]\n")


def test_a_render_failure_is_an_assembly_error_naming_the_block() -> None:
    agent = promptstack.Agent.from_source(MINIMAL.format(template="{{ 1 // 0 }}"))
    with pytest.raises(promptstack.AssemblyError) as caught:
        agent.assemble(SEND_DICT)
    assert caught.value.kind == "render"
    assert caught.value.diagnostics[0]["subject"] == "intro"


def test_values_that_are_not_json_are_type_errors() -> None:
    agent = promptstack.Agent.from_path(SPEC)
    with pytest.raises(TypeError, match="send"):
        agent.assemble(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"send\.variables\.x"):
        agent.assemble(dict(SEND_DICT, variables={"x": {1, 2}}))
    with pytest.raises(TypeError, match="keys must be str"):
        agent.assemble(dict(SEND_DICT, variables={1: "x"}))
    looped: Dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(ValueError, match="nested deeper"):
        agent.assemble(dict(SEND_DICT, variables=looped))


def test_fence_errors() -> None:
    with pytest.raises(promptstack.FenceError) as caught:
        promptstack.fence("x", "email")
    assert caught.value.kind == "unknown-kind"
    assert isinstance(caught.value, ValueError)
    with pytest.raises(promptstack.FenceError, match="origin"):
        promptstack.fence("x", "page")
    with pytest.raises(promptstack.FenceError) as caught:
        promptstack.fence("x", "tool-result", tool="not a name")
    assert caught.value.kind == "invalid-tool"


def test_exceptions_pickle_with_their_data() -> None:
    with pytest.raises(promptstack.SpecError) as caught:
        promptstack.Agent.from_source("spec_version = 1")
    copy = pickle.loads(pickle.dumps(caught.value))
    assert type(copy) is promptstack.SpecError
    assert copy.diagnostics == caught.value.diagnostics
    assert str(copy) == str(caught.value)
    assert repr(promptstack.SpecError).endswith("promptstack.SpecError'>")


def test_every_error_is_a_promptstack_error() -> None:
    for cls in (
        promptstack.SpecError,
        promptstack.SendError,
        promptstack.InputError,
        promptstack.AssemblyError,
        promptstack.NotFoundError,
        promptstack.RequestError,
        promptstack.FenceError,
        promptstack.StreamError,
    ):
        assert issubclass(cls, promptstack.PromptstackError)
    assert ROOT.is_dir()


def _answer(agent: promptstack.Agent, send: Any) -> Any:
    """What assembling `send` gives: the full text, or the error's class, text and diagnostics."""
    try:
        return agent.assemble(send).full
    except promptstack.PromptstackError as error:
        return (type(error).__name__, str(error), getattr(error, "diagnostics", None))


def test_a_dict_send_answers_as_its_json_text() -> None:
    # A dict is read without JSON text when the engine accepts it; every answer, accepted or
    # refused, is the one its pretty JSON text (what a refused dict is located in) gives.
    agent = promptstack.Agent.from_path(ROOT / SPEC)
    research: Dict[str, Any] = json.loads((ROOT / SEND).read_text())
    base: Dict[str, Any] = dict(SEND_DICT)
    model: Dict[str, Any] = {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"}
    sends: List[Dict[str, Any]] = [
        research,
        base,
        dict(base, model=dict(model, context_window=-1)),
        dict(base, model=dict(model, context_window=1.5)),
        dict(base, model=dict(model, context_window=True)),
        dict(base, model=["gpt-4o", "GPT-4o", "openai"]),
        dict(base, user_message=None),
        dict(base, user={"name": 7}),
        dict(base, settings={"web_tools": "yes", "n": 2**63, "f": -0.5, "t": (1, [None])}),
        dict(base, unexpected=1),
        dict(base, now="2026-11-30T09:15:00"),
        {key: value for key, value in base.items() if key != "model"},
    ]
    for send in sends:
        # The text a refused dict is located in: keys sorted, two spaces of indentation.
        text = json.dumps(send, indent=2, ensure_ascii=False, sort_keys=True).encode()
        assert _answer(agent, send) == _answer(agent, text), send
    # Both kinds of answer are among them.
    answers = [_answer(agent, send) for send in sends]
    assert any(isinstance(answer, str) for answer in answers)
    assert any(isinstance(answer, tuple) for answer in answers)
