"""Type stubs of the native module (``promptstack._native``); see ``promptstack`` for the API."""

import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union, final

from ._types import (
    Citation,
    Diagnostic,
    FenceProblem,
    Finding,
    JsonDocument,
    Part,
    Sources,
    Widget,
    WidgetEvent,
    WidgetStart,
)

__all__ = [
    "Agent",
    "Assembly",
    "Block",
    "Composition",
    "Fenced",
    "FenceCheck",
    "CiteStream",
    "fence",
    "check_fence",
    "ENGINE_VERSION",
]

ENGINE_VERSION: str

@final
class Agent:
    """A compiled agent spec: load it once, then assemble every send with it.

    Immutable and safe to share between threads; the GIL is released while it works.
    """

    @staticmethod
    def from_path(path: Union[str, "os.PathLike[str]"]) -> "Agent": ...
    @staticmethod
    def from_source(
        text: Union[str, bytes], format: str = "toml", name: Optional[str] = None
    ) -> "Agent": ...
    @property
    def name(self) -> str: ...
    @property
    def targets(self) -> List[str]: ...
    def assemble(self, send: JsonDocument, name: Optional[str] = None) -> "Assembly": ...
    def lint(
        self, sends: Optional[Union[Mapping[str, JsonDocument], Iterable[JsonDocument]]] = None
    ) -> List[Finding]: ...
    def explain(
        self,
        send: JsonDocument,
        target: Optional[str] = None,
        format: Optional[str] = None,
        name: Optional[str] = None,
    ) -> Dict[str, Any]: ...
    def cache_stats(self) -> Dict[str, int]: ...

@final
class Assembly:
    """What an agent sends for one send."""

    @property
    def stable(self) -> str: ...
    @property
    def volatile(self) -> str: ...
    @property
    def full(self) -> str: ...
    @property
    def fingerprint(self) -> str: ...
    @property
    def blocks(self) -> List["Block"]: ...
    @property
    def diagnostics(self) -> List[Diagnostic]: ...
    @property
    def targets(self) -> List[str]: ...
    @property
    def tools(self) -> List[str]: ...
    @property
    def stable_tokens(self) -> int: ...
    @property
    def volatile_tokens(self) -> int: ...
    @property
    def tokens_exact(self) -> bool: ...
    def compose(self, target: str) -> "Composition": ...
    def request(
        self,
        format: str,
        conversation: Optional[JsonDocument] = None,
        plan: bool = True,
        *,
        target: Optional[str] = None,
        model: Optional[str] = None,
        max_tokens: int = 4096,
        gap_seconds: Optional[int] = None,
        cache_key: Optional[str] = None,
        cached_content: Optional[str] = None,
        rules: Optional[Union[str, bytes, "os.PathLike[str]"]] = None,
    ) -> Dict[str, Any]: ...
    def request_json(
        self,
        format: str,
        conversation: Optional[JsonDocument] = None,
        plan: bool = True,
        *,
        target: Optional[str] = None,
        model: Optional[str] = None,
        max_tokens: int = 4096,
        gap_seconds: Optional[int] = None,
        cache_key: Optional[str] = None,
        cached_content: Optional[str] = None,
        rules: Optional[Union[str, bytes, "os.PathLike[str]"]] = None,
    ) -> str: ...
    def request_plan(
        self,
        format: str,
        conversation: Optional[JsonDocument] = None,
        *,
        target: Optional[str] = None,
        model: Optional[str] = None,
        max_tokens: int = 4096,
        gap_seconds: Optional[int] = None,
        cache_key: Optional[str] = None,
        cached_content: Optional[str] = None,
        rules: Optional[Union[str, bytes, "os.PathLike[str]"]] = None,
    ) -> Dict[str, Any]: ...
    def explain(
        self, target: Optional[str] = None, format: Optional[str] = None
    ) -> Dict[str, Any]: ...

@final
class Block:
    """One block of an assembly, with its provenance."""

    @property
    def id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def trust(self) -> str: ...
    @property
    def stability(self) -> str: ...
    @property
    def placement(self) -> str: ...
    @property
    def included(self) -> bool: ...
    @property
    def reason(self) -> Optional[str]: ...
    @property
    def tokens(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def override(self) -> str: ...
    @property
    def variant(self) -> Optional[str]: ...
    @property
    def origin(self) -> str: ...

@final
class Composition:
    """The texts one target sends."""

    @property
    def target(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def user(self) -> str: ...
    @property
    def user_position(self) -> str: ...
    @property
    def stable_prefix(self) -> str: ...
    @property
    def parts(self) -> List[Part]: ...
    @property
    def shed(self) -> List[Dict[str, Any]]: ...
    @property
    def diagnostics(self) -> List[Diagnostic]: ...
    def user_message(self, message: str) -> str: ...

@final
class Fenced:
    """Untrusted content wrapped in a fresh nonce fence."""

    @property
    def text(self) -> str: ...
    @property
    def nonce(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def defanged(self) -> int: ...
    @property
    def truncated(self) -> Optional[Tuple[int, int]]: ...

@final
class FenceCheck:
    """Whether a text is exactly one valid fence, and what it holds."""

    @property
    def valid(self) -> bool: ...
    @property
    def kind(self) -> Optional[str]: ...
    @property
    def nonce(self) -> Optional[str]: ...
    @property
    def origin(self) -> Optional[str]: ...
    @property
    def tool(self) -> Optional[str]: ...
    @property
    def body(self) -> Optional[str]: ...
    @property
    def problems(self) -> List[FenceProblem]: ...
    def __bool__(self) -> bool: ...

def fence(
    content: str,
    kind: str,
    origin: Optional[str] = None,
    tool: Optional[str] = None,
    max_bytes: Optional[int] = None,
) -> Fenced: ...
def check_fence(text: str) -> FenceCheck: ...

@final
class CiteStream:
    """Streams model output through the citation and math processor."""

    def __new__(
        cls, sources: Sources, mode: str = "placeholders", widgets: Optional[List[str]] = None
    ) -> "CiteStream": ...
    def feed(self, delta: str) -> str: ...
    def finish(self) -> str: ...
    @property
    def citations(self) -> List[Citation]: ...
    @property
    def widgets(self) -> List[Widget]: ...
    @property
    def widget_events(self) -> List[WidgetEvent]: ...
    @property
    def loading(self) -> Optional[WidgetStart]: ...
    @property
    def score(self) -> Dict[str, Any]: ...
