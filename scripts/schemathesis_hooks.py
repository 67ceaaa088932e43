"""schemathesis hooks of scripts/schemathesis.

`positive_data_acceptance_by_kind` stands in for schemathesis's `positive_data_acceptance` on the
operations that run a published version (see schemathesis.toml for why). A request valid by the
document must be accepted there as everywhere, except for the 422 problems listed below: each
says that the request does not fit the version it names (the version's spec, its targets, its
templates, its stage), which is data the server holds, or breaks a rule past what a JSON Schema
states (a URL's grammar, the order of a thread's tool calls and results). Any other refusal of a
valid request, a 422 of another kind or of another detail included, fails the check.
"""

import json
import re

import schemathesis
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case

# The statuses schemathesis's own check accepts for a valid request.
ACCEPTED = {401, 403, 404, 409, 429}


def codes(problem):
    return {d.get("code") for d in problem.get("diagnostics") or []}


# A send that does not fit the spec: a variable of another shape than the spec declares
# (`bad-shape`), or a skill's site pattern the site grammar refuses (`bad-site-pattern`; the send
# schema, the engine's, types `sites` as strings). A send the schema itself refuses, or a value
# the reader cannot read (`bad-value`), is not allowed: that is a document promising too much.
def send_misfit(problem):
    found = codes(problem)
    return bool(found) and found <= {"bad-shape", "bad-site-pattern"}


# Problems that depend on the version a request names, by problem type. A predicate, when given,
# narrows the type to the problems of it that are about the version.
VERSION = {
    "invalid-send": send_misfit,
    # The target named is not one of the spec's, or the spec has several and none was named.
    "unknown-target": None,
    "target-required": None,
    # A template of the spec fails on this send (a variable it reads is absent).
    "render-failed": None,
    # Settings previewed on an agent whose spec declares no `[stage]`.
    "invalid-settings": lambda problem: "declares no `[stage]`" in problem.get("detail", ""),
    # A provider request with nothing to send: the send has no `user_message` and the options no
    # conversation. The send schema is the engine's, shared with the CLI, where a text render
    # needs no user message; which spec targets build provider requests is the version's.
    "invalid-request": lambda problem: problem.get("detail", "").startswith("nothing to send"),
    # The thread's structure, checked across its messages once they are read: every tool result
    # answers an open call of the latest assistant message, no call is left unanswered before the
    # next message, call ids are not used twice. Shape errors of the conversation itself
    # ("conversation:1:30: unknown field ...") are not allowed: the document types it.
    "invalid-conversation": lambda problem: re.match(
        r"conversation: messages\[\d+\]: ", problem.get("detail", "")
    )
    is not None,
    # `cache-sim` on a version whose bundle holds no example sends.
    "no-sends": None,
}

# Publishing: the spec's text is TOML or JSON that must compile, lint and hold its suites.
PUBLISH = {
    "invalid-spec": None,
    "lint-errors": None,
    "invalid-suite": None,
    "invalid-send": send_misfit,
}

# Wrapping: an origin must be a URL of the kind's schemes, a path or an `mcp://` resource, and
# none may read as a fence marker; no schema states a URL parser.
FENCE = {
    "invalid-body": lambda problem: "origin" in problem.get("detail", "")
    or "fence marker" in problem.get("detail", ""),
}

BY_OPERATION = {
    "POST /v1/agents/{name}/versions": PUBLISH,
    "POST /v1/agents/{name}/render": VERSION,
    "POST /v1/agents/{name}/request": VERSION,
    "POST /v1/agents/{name}/explain": VERSION,
    "POST /v1/agents/{name}/tools": VERSION,
    "POST /v1/agents/{name}/diff": VERSION,
    "POST /v1/agents/{name}/lint": VERSION,
    "POST /v1/agents/{name}/cache-sim": VERSION,
    "POST /v1/fence": FENCE,
}


@schemathesis.check
def positive_data_acceptance_by_kind(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if is_unexpected_http_status_case(case):
        return None
    allowed = BY_OPERATION.get(case.operation.label)
    if allowed is None:
        return None
    status = response.status_code
    if status < 400 or status >= 500 or status in ACCEPTED:
        return None
    if status == 422:
        try:
            problem = json.loads(response.content)
        except ValueError:
            problem = {}
        kind = str(problem.get("type", "")).rsplit("/", 1)[-1]
        if kind in allowed and (allowed[kind] is None or allowed[kind](problem)):
            return None
    raise AssertionError(
        f"Valid data should have been accepted by {case.operation.label}, got {status}: "
        f"{response.content[:500]!r}"
    )
