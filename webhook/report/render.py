"""The report as text (for a terminal), JSON (for programs) or CSV (for spreadsheets)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping
from typing import Any

from webhook.report.model import HOURS_PER_MONTH, DeviceLine, Report, number
from webhook.terminal import showable

CSV_FIELDS = (
    "section",
    "node",
    "product",
    "strategy",
    "profile",
    "allocatable",
    "allocated",
    "free",
    "gpu_share",
    "namespace",
    "pod",
    "utilisation_percent",
    "cost_per_hour",
    "cost_per_month",
    "sharing",
    "replicas",
    "shares",
    "allocated_shares",
    "over_allocated",
    "resource",
    "state",
    "notes",
    "unschedulable",
    "unschedulable_cost_per_hour",
)


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def render(report: Report, output: str, extra: Mapping[str, Any] | None = None) -> str:
    """`extra`: fields the JSON adds after the report's (the server's Prometheus reading)."""
    if output == "json":
        return json.dumps(report.to_dict() | dict(extra or {}), indent=2) + "\n"
    if output == "csv":
        return render_csv(report)
    return render_text(report)


_LEFT, _RIGHT = "<", ">"
_NODE_COLUMNS = tuple(
    (name, _RIGHT if name in ("ALLOC", "USED", "FREE", "FREE $/h") else _LEFT)
    for name in ("NODE", "PRODUCT", "STATE", "DEVICE", "ALLOC", "USED", "FREE", "FREE $/h", "NOTES")
)
_PROFILE_COLUMNS = tuple(
    (name, _RIGHT if name in ("ALLOC", "USED", "FREE", "FREE $/h") else _LEFT)
    for name in ("PRODUCT", "DEVICE", "ALLOC", "USED", "FREE", "FREE $/h", "NOTES")
)


def render_text(report: Report) -> str:
    rows: list[tuple[str, ...]] = []
    for node in report.nodes:
        for index, line in enumerate(node.lines):
            cost = _money(line.unallocated_cost_per_hour)
            notes = "; ".join(filter(None, (*(node.notes if index == 0 else ()), _notes(line))))
            counts = (_count(line.allocatable), _count(line.allocated), _maybe_count(line.known_free))
            rows.append((node.name, node.product, node.state, line.profile, *counts, cost, notes))
        if not node.lines:
            rows.append((node.name, node.product, node.state, "-", "-", "-", "-", "-", "; ".join(node.notes)))
    lines = _table(_NODE_COLUMNS, rows)
    total, used, _ = report.gpu_equivalents()
    free = report.known_free()
    free_text = "free unknown" if free is None else f"{free:.2f} free"
    lines += ["", f"GPU-equivalents: {total:.2f} allocatable, {used:.2f} allocated, {free_text}"]
    unschedulable = report.unschedulable()
    if unschedulable:
        lines.append(
            f"unschedulable: {unschedulable:.2f} of the free GPU-equivalents are on nodes that take no new "
            "pods (cordoned, not-ready, unreachable), costed apart from the unallocated"
        )
    if report.over_allocated() > 0:
        lines.append(
            f"over-allocated: bound pods hold {report.over_allocated():.2f} GPU-equivalents more than "
            "their nodes' allocatable (devices gone unhealthy or removed under running pods)"
        )
    if not report.usage_known:
        lines.append(
            "note: no pods given (--pods or --kubeconfig): allocated counts are unknown, shown as 0; "
            "what is free and its cost are unknown, shown as -"
        )
    if report.dra_served:
        lines.append(
            f"note: DRA DeviceClasses serve {', '.join(report.dra_served)}; the devices DRA hands out are "
            "in ResourceSlices, which this report does not read: it counts what nodes advertise"
        )
    lines += _profile_lines(report)
    lines += _unaccounted_lines(report)
    lines += _cost_lines(report)
    lines += _waste_lines(report)
    lines += _idle_lines(report)
    return "\n".join(showable(line) for line in lines) + "\n"


def _table(columns: tuple[tuple[str, str], ...], rows: list[tuple[str, ...]]) -> list[str]:
    """Header and rows, each column as wide as its widest cell (the last one left unpadded), two
    spaces before the last column and one between the others. Cells are escaped (`showable`)
    before they are measured: escaped after, a name holding a control character pushed its row's
    columns out of line with the others."""
    cells = [tuple(name for name, _ in columns), *(tuple(map(showable, row)) for row in rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns) - 1)]
    lines = []
    for row in cells:
        padded = " ".join(
            f"{cell:{align}{width}}" for cell, (_, align), width in zip(row, columns, widths, strict=False)
        )
        lines.append(f"{padded}  {row[-1]}".rstrip())
    return lines


def _count(value: float) -> str:
    return str(number(value))


def _maybe_count(value: float | None) -> str:
    return "-" if value is None else _count(value)


def _notes(line: DeviceLine) -> str:
    notes = []
    if line.renamed:
        notes.append(f"as {line.resource}")
    if line.sharing != "none":
        notes.append(f"{line.sharing} x{line.replicas}: {line.held_shares}/{line.shares} shares allocated")
    if line.over_allocated > 0:
        notes.append(f"OVER-ALLOCATED by {_count(line.over_allocated)}")
    return "; ".join(notes)


def _profile_lines(report: Report) -> list[str]:
    """The totals per GPU model and slice (JSON's totals.byProfile)."""
    rows: list[tuple[str, ...]] = []
    for row in report.totals_by_profile():
        free = "-" if row["free"] is None else str(row["free"])
        rows.append(
            (str(row["product"]), str(row["profile"]), str(row["allocatable"]), str(row["allocated"]), free)
            + (_money(row["unallocatedCostPerHour"]), _profile_notes(row))
        )
    if not rows:
        return []
    return ["", "BY MODEL AND SLICE (all nodes together)", *_table(_PROFILE_COLUMNS, rows)]


def _profile_notes(row: dict[str, Any]) -> str:
    notes = []
    if row["unschedulable"]:
        cost = _money(row["unschedulableCostPerHour"])
        notes.append(f"{row['unschedulable']} of the free on nodes taking no new pods ({cost}/h)")
    if row["overAllocated"]:
        notes.append(f"OVER-ALLOCATED by {row['overAllocated']}")
    return "; ".join(notes)


def _unaccounted_lines(report: Report) -> list[str]:
    if not report.unaccounted:
        return []
    lines = ["", "PODS HOLDING DEVICES NO NODE ABOVE COUNTS"]
    for pod in report.unaccounted:
        held = ", ".join(f"{count} {resource}" for resource, count in pod.resources)
        lines.append(f"  {pod.namespace}/{pod.name} on {pod.node}: {held} ({pod.why})")
    return lines


def _cost_lines(report: Report) -> list[str]:
    costs = report.costs
    lines = ["", "COST            PER HOUR   PER MONTH (730 h)"]
    for name, hourly in (
        ("unallocated", costs.unallocated_per_hour),
        ("unschedulable", costs.unschedulable_per_hour),
        ("wasteful", costs.wasteful_per_hour),
        ("idle", costs.idle_per_hour),
    ):
        monthly = None if hourly is None else hourly * HOURS_PER_MONTH
        lines.append(f"{name:<14} {_money(hourly):>10} {_money(monthly):>11}")
    if report.unpriced_products:
        lines.append(f"not priced (add to a policy's prices): {', '.join(report.unpriced_products)}")
    return lines


def _waste_lines(report: Report) -> list[str]:
    if not report.wasteful:
        if not report.usage_known:
            return ["", "Whole GPUs a slice would serve: unknown (no pods in this inventory)."]
        return ["", "No pod holds whole GPUs that a slice would serve."]
    lines = ["", "WHOLE GPUS A SLICE WOULD SERVE (decide would rewrite them)"]
    for pod in report.wasteful:
        lines.append(
            f"  {pod.namespace}/{pod.name} on {pod.node}: {pod.gpus} GPU -> {pod.profile} "
            f"({pod.template}), frees {pod.gpus_freed:.2f} GPU, {_money(pod.cost_per_hour)}/h"
        )
    return lines


def _idle_lines(report: Report) -> list[str]:
    if report.idle is None:
        return []
    window, bar = report.window or "?", report.idle_threshold_percent
    if not report.idle:
        return ["", f"No allocated GPU averaged under {bar:g}% over {window}."]
    lines = ["", f"ALLOCATED BUT IDLE (average under {bar:g}% over {window})"]
    for gpu in report.idle:
        lines.append(
            f"  {gpu.node} gpu {gpu.gpu} {gpu.profile} held by {gpu.namespace}/{gpu.pod}: "
            f"{gpu.utilisation_percent:.1f}% ({gpu.metric}), {_money(gpu.cost_per_hour)}/h"
        )
    return lines


def render_csv(report: Report) -> str:
    buffer = io.StringIO()
    writer = _CellWriter(buffer)
    for node in report.nodes:
        for line in node.lines:
            writer.writerow(
                _row("device", node.name, node.product, strategy=node.strategy, profile=line.profile)
                | {"allocatable": number(line.allocatable), "allocated": number(line.allocated)}
                | {"free": "" if line.known_free is None else number(line.known_free)}
                | {"gpu_share": f"{line.gpu_share:.4f}"}
                | _costs(line.unallocated_cost_per_hour)
                | {"sharing": line.sharing, "replicas": line.replicas}
                | {"shares": line.shares, "allocated_shares": line.held_shares}
                | {"over_allocated": number(line.over_allocated), "resource": line.resource}
                | {"state": node.state, "notes": "; ".join(node.notes)}
            )
        if not node.lines:
            writer.writerow(
                _row("node", node.name, node.product, strategy=node.strategy)
                | {"state": node.state, "notes": "; ".join(node.notes)}
            )
    for total in report.totals_by_profile(exact=True):
        writer.writerow(_profile_row(total))
    for pod in report.wasteful:
        writer.writerow(
            _row("wasteful", pod.node, "", profile=pod.profile, namespace=pod.namespace, pod=pod.name)
            | {"allocated": pod.gpus, "free": f"{pod.gpus_freed:.4f}"}
            | _costs(pod.cost_per_hour)
        )
    for held in report.unaccounted:
        for resource, count in held.resources:
            writer.writerow(
                _row("unaccounted", held.node, "", namespace=held.namespace, pod=held.name)
                | {"allocated": count, "resource": resource}
            )
    for gpu in report.idle or ():
        writer.writerow(
            _row("idle", gpu.node, gpu.model, profile=gpu.profile, namespace=gpu.namespace, pod=gpu.pod)
            | {"utilisation_percent": f"{gpu.utilisation_percent:.2f}"}
            | _costs(gpu.cost_per_hour)
        )
    costs = report.costs
    for name, hourly in (
        ("unallocated", costs.unallocated_per_hour),
        ("unschedulable", costs.unschedulable_per_hour),
        ("wasteful", costs.wasteful_per_hour),
        ("idle", costs.idle_per_hour),
    ):
        writer.writerow(_row(f"total-{name}", "", "") | _costs(hourly))
    return buffer.getvalue()


class _CellWriter:
    """The header, then rows, each text cell that a spreadsheet would take for a formula (`=`, `+`,
    `-`, `@`, tab, carriage return first) after a `'`, which shows it as text: no name the cluster
    validates starts so, but dcgm-exporter's labels (a node's own) reach the idle rows as
    Prometheus answers them."""

    def __init__(self, buffer: io.StringIO) -> None:
        self._writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
        self._writer.writeheader()

    def writerow(self, row: Mapping[str, object]) -> None:
        self._writer.writerow({field: _inert(value) for field, value in row.items()})


def _inert(value: object) -> object:
    return "'" + value if isinstance(value, str) and value[:1] in _FORMULA_STARTS else value


def _profile_row(total: dict[str, Any]) -> dict[str, object]:
    """A `profile` row: the totals of one GPU model and slice; `free` and the costs blank when unknown."""
    unschedulable_cost = total["unschedulableCostPerHour"]
    return (
        _row("profile", "", total["product"], profile=total["profile"])
        | {"allocatable": total["allocatable"], "allocated": total["allocated"]}
        | {"free": "" if total["free"] is None else total["free"]}
        | {"over_allocated": total["overAllocated"]}
        | _costs(total["unallocatedCostPerHour"])
        | {"unschedulable": "" if total["unschedulable"] is None else total["unschedulable"]}
        | {"unschedulable_cost_per_hour": "" if unschedulable_cost is None else f"{unschedulable_cost:.4f}"}
    )


def _row(section: str, node: str, product: str, **fields: str) -> dict[str, object]:
    return {"section": section, "node": node, "product": product, **fields}


def _costs(hourly: float | None) -> dict[str, object]:
    if hourly is None:
        return {"cost_per_hour": "", "cost_per_month": ""}
    return {"cost_per_hour": f"{hourly:.4f}", "cost_per_month": f"{hourly * HOURS_PER_MONTH:.2f}"}


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"
