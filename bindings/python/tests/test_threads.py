"""One Agent shared by eight threads gives every thread the bytes a lone thread gets, and the GIL
is released while the engine assembles and builds requests."""

from __future__ import annotations

import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator, List, Tuple

import pytest

import promptstack
from conftest import examples

THREADS = 8


def outputs(agent: promptstack.Agent, send: Path) -> Tuple[str, ...]:
    assembly = agent.assemble(send)
    texts: List[str] = [assembly.fingerprint, assembly.full]
    for target in agent.targets:
        composition = assembly.compose(target)
        texts += [composition.system, composition.user]
        for fmt in ("anthropic", "openai-responses"):
            try:
                texts.append(assembly.request_json(fmt, target=target))
            except promptstack.RequestError as error:
                texts.append(str(error))
    return tuple(texts)


@pytest.mark.parametrize("name", ["chat-assistant", "coding-agent", "pi-compat"])
def test_eight_threads_share_one_agent(name: str) -> None:
    example = next(e for e in examples() if e.name == name)
    sends = [Path(s) for s in example.sends]
    lone = promptstack.Agent.from_path(example.spec)
    expected = {send: outputs(lone, send) for send in sends}

    shared = promptstack.Agent.from_path(example.spec)
    # Every thread goes through every send several times, each in its own order, so cold and
    # warm sends of the same stable half race each other.
    work = [(t, random.Random(t).sample(sends * 3, len(sends) * 3)) for t in range(THREADS)]
    start = threading.Barrier(THREADS)

    def run(job: Tuple[int, List[Path]]) -> List[Tuple[Path, Tuple[str, ...]]]:
        start.wait()
        return [(send, outputs(shared, send)) for send in job[1]]

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = [r for batch in pool.map(run, work) for r in batch]
    assert len(results) == THREADS * len(sends) * 3
    for send, got in results:
        assert got == expected[send], send
    stats = shared.cache_stats()
    assert stats["stable_hits"] + stats["stable_misses"] == len(results)


# A spec whose only note renders a large variable: assembling it takes long enough for another
# thread to run many times over, if the GIL is released.
HEAVY = """spec_version = 1
name = "heavy"

[variables.notes]
trust = "platform"
stability = "volatile"

[[blocks]]
id = "intro"
trust = "author"
stability = "stable"
text = "Hello."

[[notes]]
id = "notes"
trust = "platform"
template = "{{ variables.notes }}"

[targets.main]
system = ["@stable", "notes"]
"""


@pytest.fixture
def no_forced_switches() -> Iterator[None]:
    """With a switch interval of 100 s a thread holding the GIL keeps it until it releases it
    itself, so another thread can run during a call only if the call releases the GIL."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def ticks_during(call: Callable[[], object]) -> int:
    """How many times another Python thread ran while `call` ran."""
    ticks = 0
    stop = False

    def tick() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            time.sleep(0)  # releases the GIL, and needs it back to go on

    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.01)  # let the ticker start; this releases the GIL
    before = ticks
    call()
    during = ticks - before
    stop = True
    thread.join()
    return during


def test_the_gil_is_released_while_assembling_and_building_requests(no_forced_switches: None) -> None:
    agent = promptstack.Agent.from_source(HEAVY)
    rng = random.Random(7)
    notes = " ".join(
        "".join(rng.choice("abcdefghijklmnop") for _ in range(rng.randint(2, 9)))
        for _ in range(150_000)
    )
    send = {
        "now": "2026-11-30T09:15:00+01:00",
        "model": {"id": "gpt-4o", "name": "GPT-4o", "provider": "openai"},
        "variables": {"notes": notes},
        "user_message": "Summarise the notes.",
    }
    assembled: List[promptstack.Assembly] = []
    assert ticks_during(lambda: assembled.append(agent.assemble(send))) > 0
    assembly = assembled[0]
    assert assembly.compose("main").system.endswith(notes)
    assert ticks_during(lambda: assembly.request_json("anthropic")) > 0
    # The control: Python code that holds the GIL lets the ticker run not once.
    assert ticks_during(lambda: sum(range(3_000_000))) == 0
