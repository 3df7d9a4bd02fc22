"""JUnit XML for CI systems: one testsuite per suite, one testcase per resource of each case.

Suite files that do not load become a testsuite with one errored testcase listing the problems,
so a CI dashboard shows them instead of silently running fewer tests.
"""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from webhook.authoring.runner import ResourceResult, Run
from webhook.terminal import escape
from webhook.tls.files import PUBLIC_MODE, write_atomically


def junit_xml(run: Run) -> ET.ElementTree:
    root = ET.Element("testsuites", name="gpu-webhook test")
    by_suite: dict[tuple[str, str], list[ResourceResult]] = defaultdict(list)
    for result in run.results:
        by_suite[(result.suite, result.source)].append(result)
    for suite in run.suites:
        _suite(root, suite.name, suite.source, by_suite.get((suite.name, suite.source), []))
    for source, problems in run.broken.items():
        _broken(root, source, [str(p) for p in problems])
    _count(root, root.findall("testsuite"))
    _escape_what_xml_cannot_hold(root)
    ET.indent(root)
    return ET.ElementTree(root)


_NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
"""Characters XML 1.0 cannot hold, not even as `&#...;`: control characters but tab and newlines,
lone surrogates. ElementTree writes them as they are, and the file is no XML to any parser."""


def _escape_what_xml_cannot_hold(root: ET.Element) -> None:
    """Write such characters as Python does (`\\x1b`, `\\ud800`) in every name, path and message:
    a case's or pod's name (`"\\e[31m"` in YAML) made the whole file unreadable to a CI."""
    for element in root.iter():
        for key, value in list(element.attrib.items()):
            element.set(key, escape(_NOT_IN_XML, value))
        if element.text:
            element.text = escape(_NOT_IN_XML, element.text)


def write_junit(run: Run, path: str | Path) -> None:
    """The XML, whole or not at all: into a new file renamed over `path`, as the certificates are
    written, so a write that fails (a full disk, a file size limit) leaves neither a truncated
    file, which a CI's parser refuses, nor the last run's cut short. A path that is a symlink or no
    regular file (`/dev/stdout`, a pipe) is written in place."""
    buffer = io.BytesIO()
    junit_xml(run).write(buffer, encoding="utf-8", xml_declaration=True)
    data = buffer.getvalue()
    target = Path(path)
    if target.is_symlink() or (target.exists() and not target.is_file()):
        target.write_bytes(data)
    else:
        write_atomically(target, data, PUBLIC_MODE)


def _suite(root: ET.Element, name: str, source: str, results: list[ResourceResult]) -> None:
    element = ET.SubElement(root, "testsuite", name=name, file=source)
    for result in results:
        case = ET.SubElement(
            element,
            "testcase",
            name=f"{result.case} [{result.resource}]",
            classname=name,
            file=source,
            time=f"{result.seconds:.6f}",
        )
        if result.line:
            case.set("line", str(result.line))
        if result.error is not None:
            ET.SubElement(case, "error", message=result.error, type="WebhookError").text = result.error
        elif result.mismatches:
            message = "; ".join(f"{m.check}: {m.message}" for m in result.mismatches)
            failure = ET.SubElement(case, "failure", message=message, type="ExpectationFailed")
            failure.text = "\n".join(_failure_lines(result))
    _count(element, element.findall("testcase"))


def _failure_lines(result: ResourceResult) -> list[str]:
    lines = []
    for mismatch in result.mismatches:
        lines.append(f"{mismatch.check}: {mismatch.message}")
        lines.extend(f"  {line}" for line in mismatch.detail)
    return lines


def _broken(root: ET.Element, source: str, problems: list[str]) -> None:
    element = ET.SubElement(root, "testsuite", name=source, file=source)
    case = ET.SubElement(element, "testcase", name="load suite", classname=source, file=source, time="0")
    error = ET.SubElement(case, "error", message="the suite file does not load", type="SuiteError")
    error.text = "\n".join(problems)
    _count(element, element.findall("testcase"))


def _count(element: ET.Element, children: list[ET.Element]) -> None:
    """Set tests/failures/errors/skipped/time on a testsuite (from testcases) or testsuites (from suites)."""
    if element.tag == "testsuites":
        for key in ("tests", "failures", "errors", "skipped"):
            element.set(key, str(sum(int(c.get(key, "0")) for c in children)))
        element.set("time", f"{sum(float(c.get('time', '0')) for c in children):.6f}")
        return
    element.set("tests", str(len(children)))
    element.set("failures", str(sum(1 for c in children if c.find("failure") is not None)))
    element.set("errors", str(sum(1 for c in children if c.find("error") is not None)))
    element.set("skipped", "0")
    element.set("time", f"{sum(float(c.get('time', '0')) for c in children):.6f}")
