"""Units for people: the one duration formatter of every report, table and page.

Contract: ``format_duration(us)`` renders microseconds as ``850 us``, ``12.3 ms``, ``1,234.5 ms``
below 10 s and ``12.35 s`` from there, with thousands separators; negative values keep their sign.
"""
from __future__ import annotations

US_PER_MS = 1_000.0
US_PER_S = 1_000_000.0
SECONDS_FROM_US = 10 * US_PER_S  # below this a duration reads best in ms


def format_duration(us: float) -> str:
    magnitude = abs(us)
    if magnitude >= SECONDS_FROM_US:
        return f"{us / US_PER_S:,.2f} s"
    if magnitude >= US_PER_MS:
        return f"{us / US_PER_MS:,.1f} ms"
    return f"{us:,.1f} us" if magnitude < 10 else f"{us:,.0f} us"
