"""The docs say what the code does: every option of every command is in docs/guide.md, every key
of a real ``analyze --json`` report and every cause in docs/json-contract.md (its one description),
the causes in the README's table, and every link between the docs leads to a file and heading that
exist."""
from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from tests.support.synthetic import training_capture, write_session
from xlaprof.analysis import analyze
from xlaprof.analysis.compare.session_diff import diff_sessions
from xlaprof.cli import build_parser
from xlaprof.report.causes import idle_causes
from xlaprof.report.diff_report import diff_json
from xlaprof.report.json_report import analysis_json
from xlaprof.session import Session

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def text(name: str) -> str:
    return (REPO / name).read_text()


def commands() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("command", sorted(commands()))
def test_every_option_of_every_command_is_in_the_guide(command):
    guide = text("docs/guide.md")
    assert f"`xlaprof {command}`" in guide
    options = [o for a in commands()[command]._actions if a.help != argparse.SUPPRESS
               for o in a.option_strings if o not in ("-h", "--help")]
    missing = [o for o in options if not re.search(rf"`{re.escape(o)}[` ]", guide)]
    assert missing == [], f"xlaprof {command}: options not in docs/guide.md"


def analysed(logdir: Path, run: str, **capture):
    return analyze(Session.load(write_session(str(logdir), run, {"localhost_9012": training_capture(**capture)})))


def test_every_key_of_a_report_and_every_cause_is_in_the_contract(tmp_path):
    report = analysis_json(analysed(tmp_path, "run", steps=6, devices=2, read_every=2, recompile_every=3))
    contract = text("docs/json-contract.md")
    missing = [k for k in report if f"`{k}`" not in contract]
    assert missing == []
    for nested in ("workers", "findings", "gaps", "idle_by_line", "compile_events"):
        keys = set().union(*(row.keys() for row in report[nested])) if report[nested] else set()
        assert [k for k in sorted(keys) if not re.search(rf"\b{k}\b", contract)] == [], nested
    for name in ("compiles", "transfers_from_device"):
        assert [k for k in report[name] if not re.search(rf"\b{k}\b", contract)] == [], name
    assert [c for c in idle_causes() if f"`{c}`" not in contract] == []


def test_every_key_of_a_diff_report_is_in_the_contract(tmp_path):
    diff = diff_json(diff_sessions(analysed(tmp_path, "before", steps=6, read_every=1),
                                   analysed(tmp_path, "after", steps=6, read_every=3)))
    section = text("docs/json-contract.md").split("## `diff --json`")[1].split("\n## ")[0]
    nested = {k: v for k, v in diff.items() if isinstance(v, dict) and k not in ("idle_by_cause_us",)}
    missing = [k for k in diff if f"`{k}`" not in section]
    missing += [f"{k}.{sub}" for k, v in nested.items() for sub in v
                if not {"before", "after", "delta", "relative"} >= set(v) and not re.search(rf"\b{sub}\b", section)]
    assert missing == []


def test_the_readme_names_every_cause_in_its_table():
    rows = re.findall(r"^\| `(\w+)` \|", text("README.md"), re.M)
    assert set(idle_causes()) <= set(rows)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_link_between_the_docs_leads_somewhere(doc):
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", doc.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", linked.read_text(), re.M)
            if anchor not in {slug(h) for h in headings}:
                broken.append(target)
    assert broken == []
