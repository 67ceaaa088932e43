"""What every test shares: the repository root, the examples and the command line to compare with.

The command line is the workspace's debug build (``target/debug/promptstack``, built by
``scripts/test`` before pytest runs) unless ``PROMPTSTACK_CLI`` names another binary. Commands run
from the repository root with the same relative paths the Python side uses, so the file names in
locations and messages are the same on both sides.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[3]
CLI = Path(os.environ.get("PROMPTSTACK_CLI", ROOT / "target" / "debug" / "promptstack"))


@dataclass(frozen=True)
class Example:
    name: str
    spec: str
    sends: Tuple[str, ...]


def examples() -> List[Example]:
    """Every example with an agent spec and sends, discovered like the command line's tests."""
    found = []
    for folder in sorted((ROOT / "examples").iterdir()):
        if not (folder / "agent.toml").is_file() or not (folder / "sends").is_dir():
            continue
        sends = tuple(
            f"examples/{folder.name}/sends/{p.name}"
            for p in sorted((folder / "sends").glob("*.json"))
        )
        found.append(Example(folder.name, f"examples/{folder.name}/agent.toml", sends))
    assert any(e.name == "chat-assistant" for e in found), "the examples must be found"
    return found


@dataclass(frozen=True)
class Run:
    code: int
    stdout: bytes
    stderr: str


def cli(args: Sequence[str], stdin: bytes = b"") -> Run:
    """Runs the command line from the repository root."""
    if not CLI.is_file():
        pytest.fail(f"{CLI} is missing: build it with `cargo build -p promptstack-cli`")
    done = subprocess.run(
        [str(CLI), *args], cwd=ROOT, input=stdin, capture_output=True, check=False
    )
    return Run(done.returncode, done.stdout, done.stderr.decode())


@pytest.fixture(autouse=True)
def _run_from_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative example paths resolve from the repository root, as for the command line."""
    monkeypatch.chdir(ROOT)
