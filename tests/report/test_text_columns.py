"""The text report's columns are as wide as their content: a long product name
(NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition) or device (1g.10gb+me) does not push the rest of
its row out of line."""

from __future__ import annotations

from tests.builders import H100, make_catalog, make_pod, mixed_node, policy_doc, template_doc, whole_node
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.render import render

LONG = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"


def _pod() -> dict[str, object]:
    pod = make_pod("p").namespace("ns").container("c", image="zz:1", limits={"nvidia.com/gpu": 1}).build()
    pod["spec"]["nodeName"] = "a-node-with-a-rather-long-name"
    pod["status"] = {"phase": "Running"}
    return pod


def _text() -> str:
    nodes = [
        whole_node("a-node-with-a-rather-long-name", LONG, 4),
        mixed_node("mig", H100, {"1g.10gb+me": (1, None), "1g.10gb": (6, None)}),
        whole_node("h", H100, 8),
    ]
    pods = [_pod()]
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: 4.0, LONG: 1234.5}),
    )
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return render(build_report(build_inventory(nodes, pods), catalog, usages), "text")


def test_every_column_lines_up_with_its_header() -> None:
    table = _text().split("\n\n", 1)[0].splitlines()
    header, rows = table[0], table[1:]
    assert any(LONG in row for row in rows) and any("1g.10gb+me" in row for row in rows)
    names = ["NODE", "PRODUCT", "STATE", "DEVICE", "ALLOC", "USED", "FREE", "FREE $/h", "NOTES"]
    starts = [header.index(name) for name in names[:4]] + [header.index("NOTES")]
    ends = [header.index(f" {name} ") + len(name) + 1 for name in names[4:8]]
    for row in rows:
        for start in starts[1:]:
            if start < len(row):  # left-aligned cells start under their header (notes may be absent)
                assert row[start - 1] == " " and row[start] != " ", (row, start)
        for end in ends:  # right-aligned cells end under their header
            assert row[end - 1] != " " and (len(row) == end or row[end] == " "), (row, end)
    long_row = next(row for row in rows if LONG in row)
    assert long_row.split()[3:8] == ["gpu", "4", "1", "3", "$3,703.50"]


def test_a_product_label_holding_control_characters_keeps_its_row_in_line() -> None:
    """Escaped after the widths were measured, `\\x1b` (one character, four once escaped) pushed
    the rest of its row four columns right of the header."""
    nodes = [whole_node("w0", "H100\x1b[2J", 4), whole_node("w1", H100, 8)]
    template = template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]})
    catalog = make_catalog(template, policy_doc("all"))
    table = render(build_report(build_inventory(nodes, []), catalog, []), "text").split("\n\n", 1)[0]
    header, *rows = table.splitlines()
    assert "\x1b" not in table and any("H100\\x1b[2J" in row for row in rows)
    state = header.index("STATE")
    assert all(row[state - 1] == " " and row[state] != " " for row in rows), table
