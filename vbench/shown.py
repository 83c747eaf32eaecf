"""Text a lab, a guest or a user named, as a terminal or an export may show it.

What no output writes as it is: C0 controls (but tab, newline and CR), DEL and C1. XML
1.0 cannot hold most of them even as a character reference, and an ESC in a VM's name,
a guest tool's error or a label moves the cursor (or clears the screen) of the terminal
that prints it or reads a Markdown or CSV file. Each is written as ``\\xNN``: the one rule
of `vbench show`, `vbench run`'s live lines, the CLI's error lines and the exports.
"""

from __future__ import annotations

import re

_UNSHOWN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def shown_text(text: str) -> str:
    """``text`` with every control character an output cannot hold written as ``\\xNN``."""
    return _UNSHOWN.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
