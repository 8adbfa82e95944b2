"""Talk to a Dash app the way dash-renderer does: callback requests, and a person's browsing.

Contract: ``callback_body`` builds the JSON of one ``/_dash-update-component`` POST;
``output_for(callbacks, trigger)`` finds the output key of the callback that an input fires
(``callbacks``: (output key, inputs) pairs, from ``app.callback_map`` or ``/_dash-dependencies``);
``browse(base_url, run)`` does what one person opening a session does (sessions page, session
page, each with its layout, a zoom, a page of the gaps table) over HTTP and returns each request's (status, seconds).
"""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request


def callback_body(output: str, inputs: list[tuple[str, str, object]], state=(), changed=None) -> dict:
    names = [o.strip(".") for o in output.split("...")]
    outputs = [{"id": o.split(".")[0], "property": o.split(".")[1]} for o in names]
    return {"output": output, "outputs": outputs if len(outputs) > 1 else outputs[0],
            "inputs": [{"id": i, "property": p, "value": v} for i, p, v in inputs],
            "state": [{"id": i, "property": p, "value": v} for i, p, v in state],
            "changedPropIds": [changed or f"{inputs[0][0]}.{inputs[0][1]}"]}


def output_for(callbacks, trigger: str) -> str:
    (key,) = [key for key, inputs in callbacks if trigger in [f"{i['id']}.{i['property']}" for i in inputs]]
    return key


def _request(url: str, body: dict | None = None, referrer: str | None = None) -> tuple[int, float]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"} if data else {}
    request = urllib.request.Request(url, data=data, headers=headers | ({"Referer": referrer} if referrer else {}))
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            response.read()
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    return status, time.perf_counter() - started


def live_callbacks(base_url: str) -> list[tuple[str, list]]:
    with urllib.request.urlopen(base_url + "/_dash-dependencies", timeout=30) as response:
        return [(cb["output"], cb["inputs"]) for cb in json.loads(response.read())]


def browse(base_url: str, run: str, callbacks: list[tuple[str, list]], zoom_ms: tuple[float, float]
           ) -> list[tuple[int, float]]:
    page, callback, layout = f"/session/{run}", base_url + "/_dash-update-component", base_url + "/_dash-layout"
    zoom = output_for(callbacks, "timeline.relayoutData")
    gaps = output_for(callbacks, "gaps-table.getRowsRequest")
    return [
        _request(base_url + "/"),
        _request(layout, referrer=base_url + "/"),  # a page comes drawn in the layout of its URL
        _request(base_url + page),
        _request(layout, referrer=base_url + page),
        _request(callback, callback_body(zoom, [("timeline", "relayoutData", {"xaxis.range[0]": zoom_ms[0],
                                                                             "xaxis.range[1]": zoom_ms[1]}),
                                                ("timeline-reset", "n_clicks", None)],
                                         state=[("session-run", "data", run), ("flame-selection", "children", None),
                                                ("timeline-workers", "children", None)])),
        _request(callback, callback_body(gaps, [("gaps-table", "getRowsRequest", {
            "startRow": 15, "endRow": 30, "sortModel": [{"colId": "dur_ms", "sort": "desc"}], "filterModel": {}})],
                                         state=[("session-run", "data", run)])),
    ]
