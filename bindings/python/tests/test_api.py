"""The shape of the Python API: blocks with their provenance, compositions, requests with and
without planned cache breakpoints, explain and lint as data."""

from __future__ import annotations

import json
from pathlib import Path

import promptstack
from conftest import cli

SPEC = "examples/chat-assistant/agent.toml"
SEND = "examples/chat-assistant/sends/research.json"
CONVERSATION = {
    "messages": [
        {"role": "user", "text": "Hello"},
        {"role": "assistant", "text": "Hello! How can I help?"},
    ]
}


def test_blocks_carry_their_provenance() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    blocks = assembly.blocks
    explained = {b["id"]: b for b in assembly.explain()["assembly"]["blocks"]}
    assert [b.id for b in blocks] == list(explained)
    for block in blocks:
        data = explained[block.id]
        assert (block.kind, block.trust, block.stability) == (data["kind"], data["trust"], data["stability"])
        assert block.included == (data["state"]["state"] == "included")
        assert block.text == data["text"]
        assert block.tokens == data["tokens"]["count"]
        assert block.override == data["override"]
        assert (block.reason is None) == block.included
    included = [b for b in blocks if b.included and b.placement == "body"]
    assert assembly.full == assembly.stable + assembly.volatile or assembly.volatile == ""
    assert all(b.text in assembly.full for b in included)
    excluded = [b for b in blocks if not b.included]
    assert excluded and all(b.reason for b in excluded)


def test_composition_and_user_message() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    composition = assembly.compose("legacy")
    assert composition.target == "legacy"
    assert composition.system.startswith(composition.stable_prefix)
    assert composition.user_position in ("before", "after")
    assert composition.user
    message = composition.user_message("Hi")
    assert "Hi" in message and composition.user in message
    system_parts = [p for p in composition.parts if p["slot"] == "system"]
    raw = composition.system.encode()
    assert all(raw[p["range"]["start"] : p["range"]["end"]] for p in system_parts)


def test_request_dict_is_the_request_json_and_carries_the_conversation() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    body = assembly.request("anthropic", CONVERSATION, target="legacy")
    assert body == json.loads(assembly.request_json("anthropic", CONVERSATION, target="legacy"))
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert "cache_control" in json.dumps(body)


def test_a_conversation_file_gives_the_cli_bytes(tmp_path: Path) -> None:
    conversation = tmp_path / "conversation.json"
    conversation.write_text(json.dumps(CONVERSATION))
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    for fmt in ("anthropic", "openai-chat", "openai-responses", "gemini"):
        run = cli(["render", SPEC, "--send", SEND, "--target", "cached", "--format", fmt, "--conversation", str(conversation)])
        assert run.code == 0, run.stderr
        assert assembly.request_json(fmt, conversation, target="cached").encode() == run.stdout
        assert assembly.request_json(fmt, CONVERSATION, target="cached").encode() == run.stdout


def test_request_options_match_the_cli() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    run = cli(["render", SPEC, "--send", SEND, "--target", "cached", "--format", "openai-chat", "--model", "gpt-5-mini", "--max-tokens", "99", "--cache-key", "thread-1"])
    assert run.code == 0, run.stderr
    built = assembly.request_json("openai-chat", target="cached", model="gpt-5-mini", max_tokens=99, cache_key="thread-1")
    assert built.encode() == run.stdout


def test_without_plan_there_are_no_cache_breakpoints() -> None:
    assembly = promptstack.Agent.from_path(SPEC).assemble(Path(SEND))
    planned = assembly.request("anthropic", target="legacy")
    plain = assembly.request("anthropic", target="legacy", plan=False)
    assert "cache_control" in json.dumps(planned)
    assert "cache_control" not in json.dumps(plain)

    def strip(value: object) -> object:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    # The same body otherwise.
    assert strip(planned) == plain
    plan = assembly.request_plan("anthropic", target="legacy")
    assert plan["body"] == planned and plan["plan"]["breakpoints"]


def test_explain_with_a_format_plans_breakpoints() -> None:
    agent = promptstack.Agent.from_path(SPEC)
    run = cli(["explain", SPEC, "--send", SEND, "--json", "--format", "anthropic", "--target", "cached"])
    assert run.code == 0, run.stderr
    assert agent.explain(Path(SEND), target="cached", format="anthropic") == json.loads(run.stdout)


def test_lint_without_sends_and_agent_properties() -> None:
    agent = promptstack.Agent.from_path(SPEC)
    assert agent.name == "chat-assistant"
    assert agent.targets == ["cached", "harness", "legacy"]
    run = cli(["lint", SPEC, "--json"])
    assert agent.lint() == json.loads(run.stdout)
    assembly = agent.assemble(Path(SEND))
    assert assembly.targets == agent.targets
    assert "search" in assembly.tools
    assert len(assembly.fingerprint) == 64
    assert assembly.stable_tokens > 0 and assembly.tokens_exact
    assert all({"severity", "code", "message"} <= set(d) for d in assembly.diagnostics)
    assert repr(agent) == '<promptstack.Agent "chat-assistant">'


def test_from_source_reads_str_and_bytes_like_from_path() -> None:
    text = Path(SPEC).read_text()
    from_path = promptstack.Agent.from_path(SPEC).assemble(Path(SEND)).compose("legacy").system
    for source in (text, text.encode()):
        agent = promptstack.Agent.from_source(source, name=SPEC)
        assert agent.assemble(Path(SEND)).compose("legacy").system == from_path
