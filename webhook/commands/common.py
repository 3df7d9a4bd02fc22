"""What several commands share: loading the catalog and inventory with errors a person can act on."""

from __future__ import annotations

import sys
from pathlib import Path

from webhook.catalog import CatalogError, load_catalog
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, GpuNode, Inventory
from webhook.inventory.files import InventoryError, load_inventory, load_node_templates
from webhook.inventory.nodes import with_node_templates
from webhook.tls.files import write_stdout
from webhook.yamlio import stat_problem

EXIT_OK, EXIT_DENIED, EXIT_BAD_INPUT = 0, 1, 2


class UsageError(Exception):
    """Bad input to a command: printed without a traceback, exit code 2."""


def catalog_from(templates: str, policies: str) -> Catalog:
    missing = [p for p in (templates, policies) if not Path(p).exists()]
    if missing:
        raise UsageError(f"no such directory: {', '.join(missing)} (set --templates/--policies)")
    try:
        return load_catalog([templates, policies])
    except CatalogError as exc:
        raise UsageError(f"the templates and policies do not load:\n{exc}") from exc


def inventory_from(path: str | None, node_templates: str | None = None) -> Inventory:
    """The node list's inventory; with `node_templates`, pools that autoscale from zero join it."""
    if path is None:
        if node_templates is not None:
            raise UsageError("--node-templates goes with --inventory: they add to a node list")
        return UNKNOWN_INVENTORY
    try:
        inventory = load_inventory(path)
        return with_node_templates(inventory, templates_from(node_templates))
    except InventoryError as exc:
        raise UsageError(str(exc)) from exc


def templates_from(path: str | None) -> tuple[GpuNode, ...]:
    if path is None:
        return ()
    try:
        return load_node_templates(path)
    except InventoryError as exc:
        raise UsageError(f"--node-templates: {exc}") from exc


def check_kubeconfig(path: str | None) -> None:
    """A --kubeconfig that names no file: the same one line from every command that takes one."""
    if path is not None:
        check_file("--kubeconfig", path)


def check_file(option: str, path: str) -> None:
    """The file `option` names exists; a folder is named as one (a mounted Secret's or
    ConfigMap's, given for the file in it), not as a missing file."""
    if Path(path).is_dir():
        raise UsageError(f"{option}: {path} is a folder, not a file")
    if not Path(path).is_file():
        raise UsageError(f"{option}: {stat_problem(Path(path)) or 'no such file'}: {path}")


def error(message: str) -> None:
    print(f"gpu-webhook: {message}", file=sys.stderr)


def emit(text: str, what: str) -> bool:
    """Write a command's output to stdout. False, said on stderr, when stdout is closed or refuses
    it (a full disk); a reader that stopped reading (`| head`) is no failure, so the exit code
    still says what was decided: a gate piped into `head` or `tee` passed denied manifests."""
    try:
        write_stdout(text, what)
    except OSError as exc:
        if isinstance(exc.__cause__, BrokenPipeError):
            return True
        error(str(exc))
        return False
    return True
