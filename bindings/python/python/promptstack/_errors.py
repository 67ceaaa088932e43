"""The exceptions promptstack raises, each carrying its diagnostics as data.

Every exception is a :class:`PromptstackError`. ``str(error)`` is the message the command line
prints (for spec and send errors: every problem with ``file:line:column``, the source line, the
key and a hint); ``error.diagnostics`` holds the same problems as dicts, and ``error.kind`` names
what went wrong broadly.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional


class PromptstackError(Exception):
    """Base class of every promptstack error.

    Attributes:
        message: The full message, as the command line prints it.
        kind: What went wrong broadly (``"spec"``, ``"send"``, ``"render"``, ``"not-found"``, ...).
        diagnostics: The problems found, as dicts. Spec and send errors give ``code``,
            ``message``, ``path`` (the key path, e.g. ``blocks[2].template``), ``pointer`` (the
            same place as a JSON pointer), ``location`` (``{"file", "line", "column"}`` or
            ``None``) and ``hint``; other errors give ``code``, ``message`` and ``subject`` (the
            block, note or target concerned, or ``None``).
        truncated: True when more problems were found than are reported.
    """

    message: str
    kind: str
    diagnostics: List[Dict[str, Any]]
    truncated: bool

    def __init__(
        self,
        message: str,
        kind: str = "error",
        diagnostics: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.diagnostics = list(diagnostics or [])
        self.truncated = False

    def __reduce__(self) -> Any:
        return (type(self), (self.message, self.kind, self.diagnostics))


class SpecError(PromptstackError):
    """The agent spec (or a capability manifest next to it) is invalid: every problem, located."""


class SendError(PromptstackError):
    """The send context is invalid, or does not fit the spec (a variable of the wrong shape)."""


class InputError(PromptstackError, OSError):
    """A file could not be read: missing, not a regular file, too large, or outside its folder."""

    def __init__(
        self,
        message: str,
        kind: str = "input",
        diagnostics: Optional[List[Dict[str, Any]]] = None,
    ) -> None:
        PromptstackError.__init__(self, message, kind, diagnostics)

    def __str__(self) -> str:
        return self.message


class AssemblyError(PromptstackError):
    """Assembling or composing failed: a template or gate failed while rendering, or a
    user-controlled block would end a system text."""


class NotFoundError(PromptstackError, LookupError):
    """A target, block or note that does not exist was asked for."""


class RequestError(PromptstackError):
    """A provider request cannot be built: an invalid conversation, a model the rules do not
    cover, nothing to send, or an invalid rules table."""


class FenceError(PromptstackError, ValueError):
    """Fence arguments that cannot be made safe: an unknown kind, an invalid origin or tool."""


class StreamError(PromptstackError):
    """The citation stream reached a bound (links or citation runs), or was used after
    ``finish()``."""


for _error in (
    PromptstackError,
    SpecError,
    SendError,
    InputError,
    AssemblyError,
    NotFoundError,
    RequestError,
    FenceError,
    StreamError,
):
    # Shown as `promptstack.SpecError`, where applications import them from.
    _error.__module__ = "promptstack"
