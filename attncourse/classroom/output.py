"""What the grader shows people: text safe in a terminal, a spreadsheet, a web page, a JSON viewer.

Everything a submission can influence (its notes, a student's folder name, a file name) passes
through here before it is displayed:

* ``clean``: a note as one printable paragraph: control, bidirectional and other invisible format
  characters (Unicode categories Cc, Cf, Cs, Zl, Zp: ``\\x1b[2J``, U+202E, U+200B, ...) removed;
* ``shown``: a name (a student id) with each such character shown as U+FFFD, so that two ids that
  differ only in one stay apart on screen;
* ``csv_cell``: OWASP's rule against CSV injection: a cell that starts with ``=``, ``+``, ``-``,
  ``@``, a tab or a carriage return gets a leading ``'``, so a spreadsheet shows it as text;
* ``json_text``: JSON that keeps every value exactly (a student id as it is) but writes each
  invisible character as a ``\\uXXXX`` escape, so no viewer renders it;
* ``path_part``: a name as one folder name, reversibly (``%XX`` for every byte outside
  ``[A-Za-z0-9_-]`` and a leading dot), so that distinct names never share a folder.
"""

from __future__ import annotations

import json
import os
import unicodedata

_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_SAFE_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def invisible(character: str) -> bool:
    """A control, bidirectional or other format character (shown as nothing, or reordering)."""
    return unicodedata.category(character) in _INVISIBLE_CATEGORIES


def clean(text, limit: int = 600) -> str:
    """Printable, one paragraph, at most ``limit`` characters."""
    text = str(text)[: max(limit, 1) * 4]  # what is cut off is never looked at
    text = "".join(" " if invisible(c) else c for c in text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(name, limit: int = 120) -> str:
    """A name to display: every invisible character as U+FFFD, at most ``limit`` characters."""
    text = "".join("\ufffd" if invisible(c) else c for c in str(name)[: limit * 4])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def csv_cell(value) -> str:
    """A cell for a spreadsheet: shown as text, never run as a formula (OWASP)."""
    text = value if isinstance(value, str) else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def _escape(character: str) -> str:
    code = ord(character)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(data) -> str:
    """``data`` as JSON with every invisible character escaped. ``json.dumps`` escapes those
    below U+0020 already; the others can only be inside strings, where an escape is valid."""
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return "".join(_escape(c) if c >= "\x7f" and invisible(c) else c for c in text) + "\n"


def path_part(name: str) -> str:
    """``name`` as one folder or file name, reversibly (see the module docstring)."""
    raw = os.fsencode(name)
    parts = []
    for index, byte in enumerate(raw):
        safe = byte in _SAFE_BYTES and not (byte == ord(".") and index == 0)
        parts.append(chr(byte) if safe else f"%{byte:02X}")
    return "".join(parts) or "%00"
