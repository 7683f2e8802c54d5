"""Where the links Discord would make of a markdown text lead: what tests of forged links check against."""

from __future__ import annotations

import re

_ESCAPED = re.compile(r"\\([^0-9A-Za-z\s])")  # Discord shows the character itself, not its markdown
_MASKED_TARGET = re.compile(r"\]\(\s*<?([^)>\s]*)>?\s*\)")
_AUTOLINK = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>]*")


def live_links(markdown: str) -> list[str]:
    """Targets of the masked links "[text](target)" and of the URLs Discord links by themselves, reading a
    backslash before punctuation as Discord does. Conservative: any "](" counts as a masked link, whether
    or not a "[" opens it."""
    active = _ESCAPED.sub("\x00", markdown)
    targets: list[str] = []

    def masked(match: re.Match[str]) -> str:
        targets.append(match.group(1))
        return "\x00"

    active = _MASKED_TARGET.sub(masked, active)
    return targets + _AUTOLINK.findall(active)
