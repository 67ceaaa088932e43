"""promptstack: decides exactly what an LLM sees on every send, and cleans up what it writes back.

Load an agent spec once, assemble per send, compose a target's texts or build a provider request:

>>> import promptstack
>>> agent = promptstack.Agent.from_path("examples/chat-assistant/agent.toml")  # doctest: +SKIP
>>> assembly = agent.assemble({"now": "2026-11-30T09:15:00+01:00", ...})      # doctest: +SKIP
>>> assembly.compose("legacy").system                                          # doctest: +SKIP

The bytes are those of the ``promptstack`` command line for the same inputs. The GIL is released
while the engine works, and one :class:`Agent` can be shared by any number of threads.
"""

from . import _errors, _types
from ._errors import *  # noqa: F403 (every name in `_errors.__all__`)
from ._types import *  # noqa: F403 (every name in `_types.__all__`)
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
    "Block",
    "CiteStream",
    "Composition",
    "ENGINE_VERSION",
    "FenceCheck",
    "Fenced",
    "check_fence",
    "fence",
]
__all__ += _errors.__all__
__all__ += _types.__all__
