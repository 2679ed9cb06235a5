"""How an error line echoes what the operator gave: bounded in length, and always one line.

Every message that names a file, a topic or a flag value passes through here, so a newline in a topic
name or a path cannot forge a second error line, and a 100,000-character name cannot flood the terminal.
"""

import unicodedata

# Characters that could break or disguise the line: C0/C1 controls and DEL (Cc), format characters such
# as bidi overrides (Cf), line and paragraph separators (Zl, Zp), and lone surrogates (Cs: undecodable
# argv bytes under surrogateescape).
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(char):
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(text, limit=1000):
    """`text` with every unsafe character escaped (a newline shows as the two characters \\n), cut to
    `limit` characters."""
    line = "".join(_escaped(c) if unicodedata.category(c) in _UNSAFE_CATEGORIES else c for c in str(text))
    return line if len(line) <= limit else f"{line[:limit]}... ({len(line) - limit} more characters)"


def first_line(text, limit=300):
    """The first line of an error's text (a Java exception's text carries its whole stack), whitespace
    collapsed, cut to `limit` characters; "" when there is none."""
    lines = str(text).strip().splitlines()
    line = " ".join(lines[0].split()) if lines else ""
    return line if len(line) <= limit else line[:limit] + "..."


def shown(text, limit=60):
    """`text` as a message may quote it: at most `limit` characters, the rest counted, not printed."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
