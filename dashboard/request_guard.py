"""What a request must be before Dash sees it: a bounded body, and callback bodies of the right shape.

Contract: ``install(app)`` makes the Flask server of a ``dash.Dash`` app
- refuse a request body over ``MAX_BODY_BYTES`` with ``413`` and one line saying the limit (the
  body is not read past it, so four 50 MB bodies cost the server nothing); a chunked body (no
  ``Content-Length``) alike, once ``MAX_BODY_BYTES`` of it have arrived;
- answer ``400`` with one line, and log one line at most (no traceback), to a callback request
  (``POST .../_dash-update-component``) whose body is not JSON, nests deeper than Python's parser
  goes, is not an object, names an output no callback has, lists outputs that are not each
  ``{"id", "property"}`` (Dash itself fails on those with a 500), or whose ``inputs``/``state`` do not
  list the callback's own inputs and states (each ``{"id", "property"}`` in the declared order).
A well-formed request goes on to Dash unchanged; its JSON is parsed once (Flask caches it).
"""
from __future__ import annotations

import logging

from dash import Dash
from flask import request
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge

MAX_BODY_BYTES = 4 * 2**20  # the largest callback body the pages send is a few kB
CALLBACK_PATH = "_dash-update-component"

log = logging.getLogger("xlaprof")


def install(app: Dash) -> None:
    server = app.server
    server.config["MAX_CONTENT_LENGTH"] = MAX_BODY_BYTES
    server.register_error_handler(RequestEntityTooLarge, _too_large)

    @server.before_request
    def bound_chunked_body():
        # Werkzeug stops a chunked body's stream at the limit without a word: the JSON parser would
        # then call the cut body malformed (400). The limit reached is the body refused.
        if request.content_length is None and request.environ.get("wsgi.input_terminated"):
            if len(request.get_data(cache=True)) >= MAX_BODY_BYTES:
                raise RequestEntityTooLarge()

    @server.before_request
    def check_callback_body():
        if request.method != "POST" or not request.path.endswith(CALLBACK_PATH):
            return None
        problem = callback_problem(app.callback_map, _body())
        if problem is None:
            return None
        log.info("refused a callback request: %s", problem)
        return f"bad callback request: {problem}\n", 400, {"Content-Type": "text/plain; charset=utf-8"}


def _too_large(_exc) -> tuple:
    return (f"request body too large: the limit is {MAX_BODY_BYTES // 2**20} MB\n", 413,
            {"Content-Type": "text/plain; charset=utf-8"})


_JSON_TYPES = {list: "array", type(None): "null", str: "string", int: "number", float: "number", bool: "boolean"}


class _Unreadable:
    def __init__(self, why: str) -> None:
        self.why = why


def _body() -> object:
    try:
        return request.get_json(force=True, silent=False)
    except RequestEntityTooLarge:
        raise
    except BadRequest:
        return _Unreadable("the body is not JSON")
    except RecursionError:
        return _Unreadable("the body's JSON nests too deep")


def callback_problem(callback_map: dict, body: object) -> str | None:
    """Why ``body`` is not a callback request this app can answer (None: it is)."""
    if isinstance(body, _Unreadable):
        return body.why
    if not isinstance(body, dict):
        return f"the body is a JSON {_JSON_TYPES.get(type(body), 'value')}, not an object"
    output = body.get("output")
    if not isinstance(output, str) or output not in callback_map:
        return "no callback has this output"
    spec = callback_map[output]
    outputs, many = body.get("outputs"), output.startswith("..")
    wanted = len(output.strip(".").split("...")) if many else 1
    if not all(_is_output(o) for o in (outputs if many and isinstance(outputs, list) else [outputs])) \
            or (many and (not isinstance(outputs, list) or len(outputs) != wanted)):
        return f"outputs does not list the callback's {wanted} output(s)"
    for key in ("inputs", "state"):
        problem = _listed(body.get(key, []), spec.get(key, []), key)
        if problem:
            return problem
    changed = body.get("changedPropIds", [])
    if not isinstance(changed, list) or not all(isinstance(c, str) for c in changed):
        return "changedPropIds is not a list of strings"
    return None


def _is_output(item: object) -> bool:
    """``{"id", "property"}``: an id (a string, or a pattern-matching dict) and a property name."""
    return isinstance(item, dict) and isinstance(item.get("id"), (str, dict)) and isinstance(item.get("property"), str)


def _listed(given: object, declared: list[dict], key: str) -> str | None:
    if not isinstance(given, list) or len(given) != len(declared):
        return f"{key} does not list the callback's {len(declared)} {key}"
    for item, want in zip(given, declared):
        if not isinstance(item, dict) or item.get("id") != want.get("id") or item.get("property") != want.get("property"):
            return f"{key} are not the callback's own"
    return None
