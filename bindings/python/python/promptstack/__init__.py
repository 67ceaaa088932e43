"""promptstack: decides exactly what an LLM sees on every send, and cleans up what it writes back.

Load an agent spec once, assemble per send, compose a target's texts or build a provider request:

>>> import promptstack
>>> agent = promptstack.Agent.from_path("examples/chat-assistant/agent.toml")  # doctest: +SKIP
>>> assembly = agent.assemble({"now": "2026-11-30T09:15:00+01:00", ...})      # doctest: +SKIP
>>> assembly.compose("legacy").system                                          # doctest: +SKIP

The bytes are those of the ``promptstack`` command line for the same inputs. The GIL is released
while the engine works, and one :class:`Agent` can be shared by any number of threads.
"""

from ._errors import (
    AssemblyError,
    FenceError,
    InputError,
    NotFoundError,
    PromptstackError,
    RequestError,
    SendError,
    SpecError,
    StreamError,
)
from ._types import (
    ByteRange,
    Citation,
    Diagnostic,
    FenceProblem,
    Finding,
    JsonDocument,
    Location,
    Part,
    Sources,
    Widget,
    WidgetEvent,
    WidgetStart,
)
from ._native import (
    ENGINE_VERSION,
    Agent,
    Assembly,
    Block,
    CiteStream,
    Composition,
    FenceCheck,
    Fenced,
    check_fence,
    fence,
)

__version__ = ENGINE_VERSION

__all__ = [
    "Agent",
    "Assembly",
    "AssemblyError",
    "Block",
    "ByteRange",
    "Citation",
    "CiteStream",
    "Composition",
    "Diagnostic",
    "FenceProblem",
    "Finding",
    "JsonDocument",
    "Location",
    "Part",
    "Sources",
    "Widget",
    "WidgetEvent",
    "WidgetStart",
    "ENGINE_VERSION",
    "FenceCheck",
    "FenceError",
    "Fenced",
    "InputError",
    "NotFoundError",
    "PromptstackError",
    "RequestError",
    "SendError",
    "SpecError",
    "StreamError",
    "check_fence",
    "fence",
]
