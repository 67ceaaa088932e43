"""Every example send through Python gives the command line's bytes: the system text and the user
slot of every target, every provider request body, the request with its plan, `explain --json`
and `lint --json`.

Where the command line refuses an input (exit 2), Python raises a PromptstackError with the same
message.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Dict, List, Tuple

import pytest

import promptstack
from conftest import Example, Run, cli, examples

FORMATS = ["anthropic", "openai-chat", "openai-responses", "gemini"]
EXAMPLES = examples()


def cli_message(run: Run) -> str:
    """The message of a refused input as the command line prints it, without `error: `."""
    text = run.stderr.rstrip("\n")
    return text[len("error: ") :] if text.startswith("error: ") else text


def run_all(jobs: List[Tuple[str, List[str]]]) -> Dict[str, Run]:
    """Runs many commands two at a time (the machines have two cores)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda job: cli(job[1]), jobs))
    return {key: run for (key, _), run in zip(jobs, runs)}


def assert_same_outcome(run: Run, produce: Callable[[], bytes], what: str) -> None:
    """Python produces the command line's stdout, or fails with its message."""
    if run.code == 0:
        assert produce() == run.stdout, what
        return
    assert run.code == 2, f"{what}: {run.stderr}"
    with pytest.raises(promptstack.PromptstackError) as caught:
        produce()
    assert str(caught.value) == cli_message(run), what


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_texts_match_render(example: Example) -> None:
    agent = promptstack.Agent.from_path(example.spec)
    jobs = [
        (f"{send}|{target}|{slot}", ["render", example.spec, "--send", send, "--target", target, "--slot", slot])
        for send in example.sends
        for target in agent.targets
        for slot in ("system", "user")
    ]
    runs = run_all(jobs)
    checked = 0
    for send in example.sends:
        assembly = agent.assemble(Path(send))
        for target in agent.targets:
            composition = assembly.compose(target)
            for slot, text in (("system", composition.system), ("user", composition.user)):
                run = runs[f"{send}|{target}|{slot}"]
                assert run.code == 0, run.stderr
                assert text.encode() == run.stdout, f"{send} {target} {slot}"
                checked += 1
    assert checked == len(jobs) > 0


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_request_bodies_match_render(example: Example) -> None:
    agent = promptstack.Agent.from_path(example.spec)
    jobs = []
    for send in example.sends:
        for target in agent.targets:
            for fmt in FORMATS:
                base = ["render", example.spec, "--send", send, "--target", target, "--format", fmt]
                jobs.append((f"{send}|{target}|{fmt}", base))
                if send == example.sends[0]:
                    jobs.append((f"{send}|{target}|{fmt}|plan", [*base, "--plan"]))
    runs = run_all(jobs)
    built = 0
    for send in example.sends:
        assembly = agent.assemble(Path(send))
        for target in agent.targets:
            for fmt in FORMATS:
                run = runs[f"{send}|{target}|{fmt}"]
                what = f"{send} {target} {fmt}"
                assert_same_outcome(
                    run, lambda: assembly.request_json(fmt, target=target).encode(), what
                )
                if run.code == 0:
                    built += 1
                    # The dict is the same document.
                    assert assembly.request(fmt, target=target) == json.loads(run.stdout)
                planned = runs.get(f"{send}|{target}|{fmt}|plan")
                if planned is not None and planned.code == 0:
                    assert assembly.request_plan(fmt, target=target) == json.loads(planned.stdout), what
    # Sends without a user message (both pi-compat versions, voice-platform) are refused: the same
    # message.
    assert built > 0 or example.name in ("pi-compat", "pi-compat-1.6", "voice-platform")


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_explain_matches_explain_json(example: Example) -> None:
    runs = run_all(
        [(send, ["explain", example.spec, "--send", send, "--json"]) for send in example.sends]
    )
    agent = promptstack.Agent.from_path(example.spec)
    for send in example.sends:
        run = runs[send]
        assert run.code == 0, run.stderr
        assert agent.explain(Path(send)) == json.loads(run.stdout), send


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.name)
def test_lint_matches_lint_json(example: Example) -> None:
    run = cli(["lint", example.spec, "--json", *[a for s in example.sends for a in ("--send", s)]])
    assert run.code in (0, 1), run.stderr
    agent = promptstack.Agent.from_path(example.spec)
    findings = agent.lint(sends=[Path(s) for s in example.sends])
    assert findings == json.loads(run.stdout)
    # Named sends carry the names given.
    named = agent.lint(sends={s: Path(s) for s in example.sends})
    assert named == findings


def test_every_form_of_a_send_gives_the_same_assembly() -> None:
    spec = "examples/chat-assistant/agent.toml"
    path = "examples/chat-assistant/sends/research.json"
    agent = promptstack.Agent.from_path(spec)
    text = Path(path).read_text()
    forms = [Path(path), text, text.encode(), bytearray(text.encode()), json.loads(text)]
    results = set()
    for form in forms:
        assembly = agent.assemble(form)
        results.add(
            (
                assembly.fingerprint,
                assembly.full,
                assembly.compose("legacy").system,
                assembly.request_json("anthropic", target="legacy"),
            )
        )
    assert len(results) == 1
    run = cli(["render", spec, "--send", path, "--target", "legacy"])
    assert next(iter(results))[2].encode() == run.stdout
