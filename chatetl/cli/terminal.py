"""What the commands print: text from the inputs (titles, chat text, file names, errors that quote
them) made inert for a terminal.

Such text can hold escape sequences that retitle the window, write the clipboard (OSC 52), plant
a hidden link (OSC 8), move the cursor over earlier lines or reset the terminal. `printable` takes
out each sequence whole (CSI, OSC, DCS, SOS, PM, APC, their 8-bit C1 forms, the other ESC
sequences) and every other control character but the line feed and the tab; `one_line` also folds
line breaks, for a title or an error. `json_line` keeps the data of a JSON line exact: JSON escapes
the C0 controls itself, and here DEL and the C1 controls too, which JSON leaves raw.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Every pattern is a forward scan without backtracking over the text: linear in its length.
_SEQUENCES = re.compile(
    "(?:\x1b\\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"  # CSI: parameters, intermediates, final byte
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)"  # OSC, DCS, SOS, PM, APC: to BEL or ST
    "|\x1b[\x20-\x2f]*[\x30-\x7e]"  # any other escape sequence (ESC c, ESC 7, ESC ( B), or an unfinished one's start
)
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control but tab and line feed
_RAW_IN_JSON = re.compile("[\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` without escape sequences or control characters (line feeds and tabs stay)."""
    if not _CONTROLS.search(text):
        return text
    return _CONTROLS.sub("", _SEQUENCES.sub("", text))


def one_line(text: str) -> str:
    """`printable(text)` on one line: every run of whitespace as one space."""
    return " ".join(printable(text).split())


def json_line(value: Any) -> str:
    """`value` as one JSON line (UTF-8 text kept as it is), DEL and C1 controls as `\\u` escapes:
    the same data to a program, nothing a terminal would act on."""
    line = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def os_error(exc: OSError) -> str:
    """An OSError (a full disk, a folder it may not write) on one line: the file and the cause."""
    if exc.strerror and exc.filename:
        return one_line(f"{exc.filename}: {exc.strerror}")
    return one_line(str(exc) or type(exc).__name__)
