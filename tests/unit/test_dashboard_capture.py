"""The dashboard's capture form, without a browser: its fields checked to one line each, the
address rule (this machine only, unless the server allows remote capture), and a capture that gets
nothing failing with the CLI's own line while the logdir stays as it was."""
from __future__ import annotations

import os
import time

import pytest

from collectors.server import free_port
from dashboard.data.capture_job import CaptureJobs, capture_request
from xlaprof.errors import XlaprofError


@pytest.mark.parametrize("hosts,expected", [
    ("localhost", "localhost:9012"), (" localhost:9013, 127.0.0.1 ", "localhost:9013,127.0.0.1:9012"),
    ("[::1]:9014", "[::1]:9014"), ("127.8.9.10", "127.8.9.10:9012")])
def test_local_hosts_are_captured_with_their_ports(hosts, expected):
    request = capture_request(hosts, 9012, 2, "", allow_remote=False)
    assert (request.hosts, request.duration_s, request.name) == (expected, 2.0, None)


@pytest.mark.parametrize("hosts", ["tpu-vm-3", "10.0.0.7", "169.254.169.254:80", "localhost,evil.example.com"])
def test_other_hosts_need_the_server_flag(hosts):
    with pytest.raises(XlaprofError, match="only workers on this machine .* --allow-remote-capture"):
        capture_request(hosts, 9012, 2, "", allow_remote=False)
    assert capture_request(hosts, 9012, 2, "", allow_remote=True).hosts.count(":") >= 1


@pytest.mark.parametrize("fields,says", [
    (("", 9012, 2, ""), "at least one host"), (("localhost;rm -rf /", 9012, 2, ""), "not a host"),
    (("localhost:99999", 9012, 2, ""), "port must be a number from 1 to 65535"),
    (("localhost", "x", 2, ""), "port must be a number"), (("localhost", 9012, 0, ""), "duration must be more than 0"),
    (("localhost", 9012, "inf", ""), "at most 300"), (("localhost", 9012, None, ""), "duration must be a number"),
    (("localhost", 9012, 2, "../escape"), "a run name is"), (("localhost", 9012, 2, ["x"]), "a run name is"),
    ((None, 9012, 2, ""), "at least one host"), ((",".join(["localhost"] * 65), 9012, 2, ""), "at most 64 hosts")])
def test_bad_fields_are_one_line(fields, says):
    with pytest.raises(XlaprofError, match=says) as caught:
        capture_request(*fields, allow_remote=False)
    assert "\n" not in str(caught.value)


def test_a_capture_that_gets_nothing_fails_with_the_clis_line_and_leaves_the_logdir_alone(tmp_path):
    logdir = tmp_path / "logdir"
    jobs = CaptureJobs(str(logdir))
    job = jobs.start(capture_request(f"localhost:{free_port()}", 9012, 0.5, "nothing", allow_remote=False))
    with pytest.raises(XlaprofError, match="still running"):  # one capture at a time
        jobs.start(capture_request("localhost", 9012, 0.5, "", allow_remote=False))
    deadline = time.monotonic() + 120
    while jobs.status(job).state == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    status = jobs.status(job)
    assert status.state == "failed" and "no profiler server answered" in status.error, status
    assert "\n" not in status.error and not status.error.startswith("xlaprof:")
    assert not os.path.exists(logdir / "plugins")  # nothing was created
    assert jobs.status("nope") is None and jobs.status(None) is None
