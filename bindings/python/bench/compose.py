"""Per-call cost of promptstack from Python next to Jinja2 and LangChain, in one process and run.

For every send of an example, the three contenders produce the same final texts — the system text
and the user-slot notes of one target — and the script checks that they are byte-identical before
it times anything:

- promptstack: ``agent.assemble(send)`` then ``assembly.compose(target)``, the whole pipeline
  (send parsing, gates, toolset, rendering, halves, fingerprint, composition). The send is a dict
  (``assemble(dict)``: read into the send through serde every call) or JSON bytes. The same sends
  come round every round, so the agent's caches serve their stable halves and volatile units; the
  "clock moved" row gives every call a send of its own (``now`` one minute later each time), the
  next send of a thread: the stable half is reused, the notes that read the clock are rendered.
- Jinja2: one compiled ``jinja2.Template`` per text whose literal parts are the composed text and
  whose variables are the per-send (volatile) parts, rendered with those values: the floor cost of
  filling a fixed prompt template, with no gates, tools or token counts.
- LangChain: the same template as a ``ChatPromptTemplate`` (a system and a human message,
  f-string format), ``format_messages(**values)``.

The templates are built from promptstack's own composition of each send (outside the timing), so
the texts are the same by construction and the comparison is of per-call work only.

Run with the package built in release mode (see docs/bindings.md):

    target/py-bench-venv/bin/python bindings/python/bench/compose.py
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import jinja2
import langchain_core
from langchain_core.prompts import ChatPromptTemplate

import promptstack

ROOT = Path(__file__).resolve().parents[3]
CASES = [("chat-assistant", "legacy"), ("pi-compat", "system")]
# Distinct clocks per send for the "clock moved" row: more than the calls one run makes.
MOVES = 1000


def volatile_template(text: str, parts: List[Dict[str, Any]], slot: str) -> Tuple[List[str], List[str]]:
    """Cuts a composed text into literal pieces and the per-send (volatile) pieces between them."""
    raw = text.encode()
    literals: List[str] = []
    values: List[str] = []
    at = 0
    for part in parts:
        if part["slot"] != slot or part["stability"] != "volatile":
            continue
        start, end = part["range"]["start"], part["range"]["end"]
        literals.append(raw[at:start].decode())
        values.append(raw[start:end].decode())
        at = end
    literals.append(raw[at:].decode())
    return literals, values


def jinja_source(literals: List[str], prefix: str) -> str:
    out = []
    for i, literal in enumerate(literals):
        if literal:
            assert "{% endraw %}" not in literal
            out.append("{% raw %}" + literal + "{% endraw %}")
        if i < len(literals) - 1:
            out.append("{{ " + f"{prefix}{i}" + " }}")
    return "".join(out)


def fstring_source(literals: List[str], prefix: str) -> str:
    out = []
    for i, literal in enumerate(literals):
        out.append(literal.replace("{", "{{").replace("}", "}}"))
        if i < len(literals) - 1:
            out.append("{" + f"{prefix}{i}" + "}")
    return "".join(out)


class Case:
    """One send: its inputs for each contender, and the texts all must produce."""

    def __init__(self, agent: promptstack.Agent, path: Path, target: str) -> None:
        self.agent = agent
        self.target = target
        self.bytes = path.read_bytes()
        self.dict = json.loads(self.bytes)
        start = datetime.fromisoformat(self.dict["now"])
        self.moving = [
            dict(self.dict, now=(start + timedelta(minutes=i + 1)).isoformat()) for i in range(MOVES)
        ]
        self.moved = 0
        composition = agent.assemble(self.dict).compose(target)
        self.system, self.user = composition.system, composition.user
        system_literals, system_values = volatile_template(self.system, composition.parts, "system")
        user_literals, user_values = volatile_template(self.user, composition.parts, "user")
        env = jinja2.Environment(autoescape=False, keep_trailing_newline=True)
        self.jinja_system = env.from_string(jinja_source(system_literals, "s"))
        self.jinja_user = env.from_string(jinja_source(user_literals, "u"))
        self.values = {f"s{i}": v for i, v in enumerate(system_values)}
        self.values.update({f"u{i}": v for i, v in enumerate(user_values)})
        self.chat = ChatPromptTemplate.from_messages(
            [
                ("system", fstring_source(system_literals, "s")),
                ("human", fstring_source(user_literals, "u")),
            ]
        )

    def promptstack_dict(self) -> Tuple[str, str]:
        composition = self.agent.assemble(self.dict).compose(self.target)
        return composition.system, composition.user

    def promptstack_moving(self) -> Tuple[str, str]:
        send = self.moving[self.moved % MOVES]
        self.moved += 1
        composition = self.agent.assemble(send).compose(self.target)
        return composition.system, composition.user

    def promptstack_bytes(self) -> Tuple[str, str]:
        composition = self.agent.assemble(self.bytes).compose(self.target)
        return composition.system, composition.user

    def jinja(self) -> Tuple[str, str]:
        return self.jinja_system.render(self.values), self.jinja_user.render(self.values)

    def langchain(self) -> Tuple[str, str]:
        system, user = self.chat.format_messages(**self.values)
        return str(system.content), str(user.content)


def per_call(cases: List[Case], run: Callable[[Case], Tuple[str, str]], rounds: int) -> List[float]:
    """Nanoseconds per call: each round goes once through every send, timed as a whole."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for case in cases:
            run(case)
        samples.append((time.perf_counter_ns() - start) / len(cases))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300, help="timed rounds over every send (< 900)")
    parser.add_argument("--json", action="store_true", help="print the medians as one JSON object")
    args = parser.parse_args()
    if not 1 <= args.rounds < MOVES:
        parser.error(f"--rounds must be between 1 and {MOVES - 1}")

    contenders: List[Tuple[str, Callable[[Case], Tuple[str, str]]]] = [
        ("promptstack assemble+compose (dict send)", Case.promptstack_dict),
        ("promptstack assemble+compose (JSON bytes send)", Case.promptstack_bytes),
        ("promptstack assemble+compose (dict send, clock moved)", Case.promptstack_moving),
        (f"Jinja2 {jinja2.__version__} Template.render", Case.jinja),
        (f"LangChain {langchain_core.__version__} ChatPromptTemplate.format_messages", Case.langchain),
    ]
    report: Dict[str, Any] = {
        "python": platform.python_version(),
        "promptstack": promptstack.__version__,
        "rounds": args.rounds,
        "examples": [],
    }
    if not args.json:
        print(f"python {platform.python_version()}, promptstack {promptstack.__version__}")
    for example, target in CASES:
        agent = promptstack.Agent.from_path(ROOT / "examples" / example / "agent.toml")
        sends = sorted((ROOT / "examples" / example / "sends").glob("*.json"))
        cases = [Case(agent, path, target) for path in sends]
        for case in cases:
            expected = (case.system, case.user)
            for name, run in contenders:
                if run is not Case.promptstack_moving:
                    assert run(case) == expected, f"{name} differs on {case.target}"
        medians = {}
        for name, run in contenders:
            per_call(cases, run, max(args.rounds // 10, 3))  # warm-up
            samples = per_call(cases, run, args.rounds)
            medians[name] = statistics.median(samples), statistics.fmean(samples)
        jinja = next(v[0] for k, v in medians.items() if k.startswith("Jinja2"))
        report["examples"].append(
            {
                "example": example,
                "target": target,
                "sends": len(cases),
                "contenders": [
                    {"name": name, "median_ns": median, "mean_ns": mean, "x_jinja2": median / jinja}
                    for name, (median, mean) in medians.items()
                ],
            }
        )
        if args.json:
            continue
        print(f"\n{example} (target {target}, {len(cases)} sends, {args.rounds} rounds)")
        print("| contender | median per call | mean per call | × Jinja2 |")
        print("|---|---|---|---|")
        for name, (median, mean) in medians.items():
            print(f"| {name} | {median / 1000:.1f} µs | {mean / 1000:.1f} µs | {median / jinja:.2f} |")
    if args.json:
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
