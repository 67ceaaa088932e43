"""The shapes of the data promptstack returns as dicts, for type checkers.

These are plain ``TypedDict`` declarations: at run time the values are ordinary ``dict`` and
``list`` objects, the same documents ``promptstack ... --json`` prints.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, TypedDict, Union

JsonDocument = Union[Dict[str, Any], str, bytes, bytearray, "os.PathLike[str]"]
"""A send or conversation: a dict, JSON text (``str`` or ``bytes``) or a path to a JSON file."""

Sources = Union[Dict[str, Any], List[Dict[str, Any]], str, bytes, "os.PathLike[str]"]
"""A sources snapshot: ``{"sources": [...]}``, the list itself, JSON text or a path."""


class Location(TypedDict):
    """A place in a file: one-based line, and column in characters."""

    file: str
    line: int
    column: int


class _DiagnosticRequired(TypedDict):
    severity: str
    code: str
    message: str


class Diagnostic(_DiagnosticRequired, total=False):
    """A finding of an assembly, a composition or lint; the optional keys are absent when
    unknown."""

    subject: str
    location: Location
    hint: str


class Finding(Diagnostic, total=False):
    """A lint finding: a diagnostic and the send it is about (absent for the spec's own)."""

    send: str


class ByteRange(TypedDict):
    """UTF-8 byte offsets in a text."""

    start: int
    end: int


class Part(TypedDict):
    """One block's place in a composed text."""

    id: str
    slot: str
    range: ByteRange
    stability: str
    trust: str


class FenceProblem(TypedDict):
    """One problem of a text that should be a single fence."""

    kind: str
    offset: Optional[int]
    message: str


class Citation(TypedDict):
    """One citation run: the placeholder written in the text and the sources it stands for."""

    key: int
    placeholder: str
    sources: List[int]


class Widget(TypedDict):
    """A widget tag removed from the text, and the byte offset in the output where it stood."""

    name: str
    attributes: Dict[str, str]
    offset: int


class WidgetStart(TypedDict):
    """A declared widget whose tag is streaming, and where it stands in the output."""

    name: str
    offset: int


class _WidgetEventRequired(TypedDict):
    type: str
    name: str
    offset: int


class WidgetEvent(_WidgetEventRequired, total=False):
    """A widget event: ``type`` is ``widget_start``, ``widget`` (with ``attributes``) or
    ``widget_cancel``."""

    attributes: Dict[str, str]
