"""Units for people: the one duration formatter of every report, table and page.

Contract: ``format_duration(us)`` renders microseconds as ``850 us``, ``12.3 ms``, ``1,234.5 ms``
below 10 s and ``12.35 s`` from there, with thousands separators; negative values keep their sign.
``format_duration_change`` and ``format_percent_change`` write changes, always signed.
``format_ms(us)`` is the dashboard's one number format for a time in a card or a grid:
milliseconds with thousands separators and one decimal (``2,567.1 ms``), whatever the magnitude,
so a card and a grid column never show the same time two ways.
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


def format_ms(us: float) -> str:
    return f"{us / US_PER_MS:,.1f} ms"


def format_duration_change(us: float) -> str:
    """A change of duration with its sign: ``+238.0 ms``, ``-1.60 s``, ``0.0 us``."""
    return ("+" if us > 0 else "") + format_duration(us)


def format_percent_change(fraction: float) -> str:
    """A relative change with its sign: 0.108 is ``+10.8%``."""
    return f"{100 * fraction:+.1f}%"


def format_interval(bounds, level: float = 0.95) -> str:
    """A confidence interval of a relative change: (-0.25, -0.19) is ``95% CI -25.0%..-19.0%``."""
    low, high = bounds
    return f"{round(100 * level)}% CI {format_percent_change(low)}..{format_percent_change(high)}"
