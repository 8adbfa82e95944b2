"""The query string of a dashboard URL, read defensively (a URL is user input).

Contract: ``query_values(search, keys)``: per key, the first value of ``?key=...`` in ``search``
(``location.search``, with or without its "?"), or None; every value None for a non-string, a
query longer than ``MAX_QUERY_CHARS`` or with more than ``MAX_FIELDS`` fields (no real link has).
"""
from __future__ import annotations

from urllib.parse import parse_qs

MAX_QUERY_CHARS = 2000
MAX_FIELDS = 20


def query_values(search: object, keys: tuple[str, ...]) -> list[str | None]:
    if not isinstance(search, str) or len(search) > MAX_QUERY_CHARS:
        return [None] * len(keys)
    try:
        query = parse_qs(search.lstrip("?"), max_num_fields=MAX_FIELDS)
    except ValueError:  # more fields than any real link has
        return [None] * len(keys)
    return [(query.get(key) or [None])[0] for key in keys]
