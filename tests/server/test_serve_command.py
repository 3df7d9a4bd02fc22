"""`gpu-webhook serve`: the embedded default end to end (its printed curl line, run for real), and
every bad argument refused before gunicorn starts, with a message naming it and exit code 2."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import webhook
from tests.conftest import INVENTORIES, ROOT
from tests.server.conftest import Served
from tests.server.support import Client, WebhookProcess, write_serving_set
from webhook.cli import build_parser, main
from webhook.commands import serve as serve_command
from webhook.commands.serve import _plan, parse_bind
from webhook.server.pod_list import check_pod_list


def test_the_embedded_default_prints_a_curl_line_that_works(tmp_path: Path) -> None:
    """From any directory: the defaults fall back to the checkout the package runs from."""
    if not (Path(webhook.__file__).resolve().parents[1] / "templates").is_dir():
        pytest.skip("an installed wheel (the compiled run) has no checkout to fall back to")
    process = WebhookProcess(tmp_path, cwd=tmp_path)
    try:
        ca = tmp_path / ".gpu-webhook" / "certs" / "ca.crt"
        assert ca.is_file()
        process.wait_ready(Client(process.port, ca))
        (line,) = [line for line in process.stdout.read_text().splitlines() if line.startswith("try: ")]
        command = shlex.split(line.removeprefix("try: "))
        assert command[:3] == ["curl", "--cacert", ".gpu-webhook/certs/ca.crt"]
        if shutil.which("curl") is None:
            pytest.skip("curl is not installed")
        command += ["--silent", "--show-error"]
        result = subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=30)
        assert result.returncode == 0, result.stderr
        review = json.loads(result.stdout)
        example = json.loads((ROOT / "examples" / "admission" / "pod-review.json").read_text())
        assert review["response"]["uid"] == example["request"]["uid"]
        assert review["response"]["patchType"] == "JSONPatch"
    finally:
        process.stop()


def installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """serve as a wheel installs it, run from an empty folder: site-packages holds the stray
    `templates` and `examples` folders other distributions leave there. Returns site-packages."""
    site = tmp_path / "site-packages"
    (site / "templates").mkdir(parents=True)
    (site / "templates" / "index.html").write_text("<html></html>\n")
    (site / "examples" / "admission").mkdir(parents=True)
    monkeypatch.setattr(serve_command, "__file__", str(site / "webhook" / "commands" / "serve.py"))
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return site


def test_installed_outside_a_checkout_the_default_catalog_is_named_missing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Not site-packages/templates, a folder of another distribution, read as the catalog."""
    installed(monkeypatch, tmp_path)
    err = serve(capsys)
    assert "--templates: no such file or directory: templates" in err
    assert "site-packages" not in err


def test_installed_outside_a_checkout_the_curl_line_names_no_missing_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    installed(monkeypatch, tmp_path)
    catalog = ["--templates", str(ROOT / "templates"), "--policies", str(ROOT / "policies")]
    arguments = ["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(tmp_path / "certs"), *catalog]
    plan = _plan(build_parser().parse_args([*arguments, "--inventory", str(INVENTORIES / "a100-mixed.yaml")]))
    capsys.readouterr()
    serve_command._announce(plan, [("127.0.0.1", 8443)])
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("try: ")]
    command = shlex.split(line.removeprefix("try: "))
    posted = command[command.index("--data-binary") + 1]
    assert posted == "@REVIEW.json"


def serve(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`serve` refused; on a free port unless `args` bind, so a server on 8443 changes nothing."""
    assert main(["serve", "--bind", "127.0.0.1:0", *args]) == 2
    err: str = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_a_bad_bind_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--bind" in serve(capsys, "--bind", "localhost")


@pytest.mark.parametrize("host", ["192.0.2.1", "999.1.1.1"])
@pytest.mark.parametrize("port", ["0", "8443"])
def test_an_address_this_host_cannot_listen_on_is_refused(
    capsys: pytest.CaptureFixture[str], host: str, port: str
) -> None:
    """Not this host's address (TEST-NET-1), or no address at all: port 0, a free port, too."""
    assert f"--bind {host}:{port}: cannot listen there" in serve(capsys, "--bind", f"{host}:{port}")


@pytest.mark.parametrize("option", ["--templates", "--policies", "--inventory"])
def test_a_missing_path_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str) -> None:
    assert f"{option}: no such file or directory: {tmp_path / 'nowhere'}" in serve(
        capsys, option, str(tmp_path / "nowhere")
    )


def test_no_writable_temporary_folder_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A read-only root filesystem without an emptyDir at /tmp: tempfile finds no folder to write
    in, which was a traceback (exit 1)."""

    def nowhere(prefix: str) -> Path:
        raise FileNotFoundError(2, "No usable temporary directory found in ['/tmp', '/var/tmp']")

    monkeypatch.setattr(serve_command, "make_shared_folder", nowhere)
    assert "/tmp" in serve(capsys, "--cert-dir", str(tmp_path / "certs"))


def test_a_catalog_that_does_not_load_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("apiVersion: gpu.aethervirt.io/v1\nkind: GpuTemplate\nspec: 3\n")
    assert "broken.yaml" in serve(capsys, "--templates", str(tmp_path))


def test_a_missing_kubeconfig_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert "--kubeconfig" in serve(capsys, "--kubeconfig", str(tmp_path / "config"))


@pytest.mark.parametrize("text", ["apiVersion: v1\nkind: Config\nclusters: []\n", "garbage: [\n", "\tx"])
def test_an_unusable_kubeconfig_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    (tmp_path / "config").write_text(text)
    assert "--kubeconfig" in serve(capsys, "--kubeconfig", str(tmp_path / "config"))


@pytest.mark.parametrize(
    "text",
    [
        "current-context: c\ncontexts: [{name: c, context: prod}]\n",  # a name where a mapping belongs
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",  # the CA, given by mistake
    ],
    ids=["context-not-a-map", "not-a-map"],
)
def test_a_kubeconfig_of_the_wrong_shape_says_so(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str
) -> None:
    """The client's AttributeError was a traceback (exit 1), its TypeError said only "'str'
    object does not support item assignment"."""
    (tmp_path / "config").write_text(text)
    assert "--kubeconfig" in (err := serve(capsys, "--kubeconfig", str(tmp_path / "config")))
    assert "not a valid kubeconfig" in err


def test_in_cluster_outside_a_cluster_is_refused(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert "--in-cluster" in serve(capsys, "--in-cluster")


def test_half_a_certificate_pair_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    (tmp_path / "tls.key").unlink()
    err = serve(capsys, "--cert-dir", str(tmp_path))
    assert "tls.key" in err
    assert (tmp_path / "tls.crt").exists() and not (tmp_path / "tls.key").exists()


@pytest.mark.parametrize("broken", ["tls.crt", "tls.key"])
def test_unusable_certificate_files_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, broken: str
) -> None:
    write_serving_set(tmp_path)
    (tmp_path / broken).write_text("not a PEM file\n")
    assert broken in serve(capsys, "--cert-dir", str(tmp_path))


def test_a_missing_client_ca_is_named(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    err = serve(capsys, "--cert-dir", str(tmp_path), "--client-ca", str(tmp_path / "clients.crt"))
    assert "clients.crt" in err


@pytest.mark.parametrize("option", ["--client-ca", "--pods", "--kubeconfig"])
def test_a_folder_given_for_a_file_is_named_as_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, option: str
) -> None:
    """A mounted Secret's folder given for the file in it was told "no such file", sending the
    user to look for a mount that was there."""
    write_serving_set(tmp_path / "certs")
    mounted = tmp_path / "client-ca"
    mounted.mkdir()
    err = serve(capsys, "--cert-dir", str(tmp_path / "certs"), option, str(mounted))
    assert f"{option}: {mounted} is a folder, not a file" in err


@pytest.mark.parametrize(
    "args",
    [
        ["--reload-seconds", "-1"],
        ["--reload-seconds", "0.001"],
        ["--reload-seconds", "nan"],
        ["--reload-seconds", "inf"],
        ["--reload-seconds", "1e300"],
        ["--reload-seconds", "soon"],
        ["--cert-check-seconds", "0"],
        ["--cert-check-seconds", "-5"],
        ["--cert-check-seconds", "nan"],
        ["--cert-check-seconds", "1e9"],
    ],
)
def test_an_interval_out_of_bounds_is_refused(
    capsys: pytest.CaptureFixture[str], taken_port: int, args: list[str]
) -> None:
    """argparse refuses it (SystemExit 2); the taken port stops a run that got past it."""
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--bind", f"127.0.0.1:{taken_port}", *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert args[0] in err and "Traceback" not in err


@pytest.mark.parametrize("option", ["--workers", "--threads", "--decision-cache"])
@pytest.mark.parametrize("value", ["many", "1.5", ""])
def test_a_count_that_is_no_whole_number_is_refused_as_such(
    capsys: pytest.CaptureFixture[str], taken_port: int, option: str, value: str
) -> None:
    """The error names the option and the value, not the parser's own function (argparse named
    its `_not_negative`, `_positive`)."""
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--bind", f"127.0.0.1:{taken_port}", option, value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert option in err and repr(value) in err
    assert "_positive" not in err and "_not_negative" not in err


@pytest.mark.parametrize(("option", "bound"), [("--workers", 64), ("--threads", 256)])
def test_a_count_past_its_bound_is_refused_before_anything_forks(
    capsys: pytest.CaptureFixture[str], taken_port: int, option: str, bound: int
) -> None:
    """`--workers 100000` made gunicorn fork until the machine ran out of memory; the bound itself
    passes the parser, and the taken port stops the run after it."""
    with pytest.raises(SystemExit) as exited:
        main(["serve", option, "100000", "--bind", f"127.0.0.1:{taken_port}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert option in err and str(bound) in err and "100000" in err
    assert main(["serve", option, str(bound), "--bind", f"127.0.0.1:{taken_port}"]) == 2
    err = capsys.readouterr().err
    assert "cannot listen there" in err and option not in err


def test_inventory_and_kubeconfig_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--inventory", "a.yaml", "--kubeconfig", "b"])
    assert exited.value.code == 2


@pytest.mark.parametrize(
    ("bind", "expected"),
    [("127.0.0.1:8443", ("127.0.0.1", 8443)), ("0.0.0.0:0", ("0.0.0.0", 0)), ("[::1]:443", ("::1", 443))],
)
def test_bind_addresses(bind: str, expected: tuple[str, int]) -> None:
    assert parse_bind(bind) == expected


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A loopback port another process listens on (a plain socket: no SO_REUSEPORT)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield int(listener.getsockname()[1])


def run_to_exit(
    command: list[str], cwd: Path, timeout: float = 45, metrics_dir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `command` in its own session; a server still running after `timeout` is killed with
    its workers, and the test fails. `metrics_dir`: its PROMETHEUS_MULTIPROC_DIR (default unset)."""
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    if metrics_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"still running after {timeout} s:\n{out}{err}")
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def serve_on(port: int, cert_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "webhook", "serve", "--bind", f"127.0.0.1:{port}"]
    return run_to_exit([*command, "--cert-dir", str(cert_dir), "--workers", "1"], ROOT)


def test_a_port_in_use_is_refused_before_gunicorn_starts(tmp_path: Path, taken_port: int) -> None:
    """The real command exits with code 2 and announces nothing."""
    result = serve_on(taken_port, tmp_path / "certs")
    assert result.returncode == 2
    assert "--bind" in result.stderr and "Traceback" not in result.stderr
    assert "serving" not in result.stdout
    assert not (tmp_path / "certs").exists(), "nothing is generated for a server that cannot start"


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_metrics_folder_that_cannot_be_written_is_refused_before_gunicorn_starts(
    tmp_path: Path, where: str
) -> None:
    """A file at PROMETHEUS_MULTIPROC_DIR (or above it) was a traceback from the master after
    `serve` had announced itself; a read-only or full folder had every worker fail to boot."""
    blocker = tmp_path / "prometheus"
    blocker.write_text("")
    metrics_dir = blocker if where == "a file" else blocker / "multiproc"
    command = [sys.executable, "-m", "webhook", "serve", "--bind", "127.0.0.1:0", "--workers", "1"]
    result = run_to_exit([*command, "--cert-dir", str(tmp_path / "certs")], ROOT, metrics_dir=metrics_dir)
    assert result.returncode == 2, result.stderr
    assert f"PROMETHEUS_MULTIPROC_DIR {metrics_dir}" in result.stderr and "Traceback" not in result.stderr
    assert "serving" not in result.stdout


def test_a_second_webhook_on_the_same_port_is_refused(served: Served, tmp_path: Path) -> None:
    """The running webhook's workers listen with SO_REUSEPORT; another one must not join them."""
    result = serve_on(served.process.port, tmp_path / "certs")
    assert result.returncode == 2
    assert "--bind" in result.stderr and "Traceback" not in result.stderr


WORKERS_CANNOT_BIND = """
import socket
from pathlib import Path
from webhook.server.gunicorn_app import ServerSettings, WebhookServer
from webhook.sources import FileInventorySource, StaticCatalogSource
from webhook.tls.reload import TLSFiles

root, certs = Path({root!r}), Path({certs!r})
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen()
port = listener.getsockname()[1]
settings = ServerSettings(f"127.0.0.1:{{port}}", TLSFiles.in_directory(certs, None), workers=2)
sources = lambda: (StaticCatalogSource([root / "templates", root / "policies"]),
                   FileInventorySource(root / "examples/inventories/mixed-cluster.yaml"))
WebhookServer(settings, sources).run()
"""


def test_workers_that_cannot_boot_stop_the_master(tmp_path: Path) -> None:
    """Past the check (the port taken after it): gunicorn's master exits with code 3 once a worker
    fails to boot, instead of starting new workers that fail the same way forever."""
    write_serving_set(tmp_path)
    script = textwrap.dedent(WORKERS_CANNOT_BIND.format(root=str(ROOT), certs=str(tmp_path)))
    result = run_to_exit([sys.executable, "-c", script], tmp_path)
    assert result.returncode == 3, result.stderr


POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  nodeName: a100-mig-0\n"
BAD_PODS = {
    "not YAML": ("a: [\n", "pods.yaml:2"),
    "a Node": ("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n", "kind"),
    "spec not a mapping": ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: 3\n", "spec"),
    "no name": ("apiVersion: v1\nkind: Pod\nspec: {containers: []}\n", "metadata.name"),
    "nodeName a list": (POD.replace("a100-mig-0", "[a]") + "  containers: []\n", "spec.nodeName"),
    "containers a number": (POD + "  containers: 5\n", "spec.containers"),
    "limits a list": (
        POD + "  containers:\n  - name: c\n    resources: {limits: [1]}\n",
        "spec.containers[name=c].resources.limits",
    ),
    "a request that is no quantity": (
        "apiVersion: v1\nkind: List\nitems:\n- "
        + POD.replace("\n", "\n  ").rstrip()
        + "\n    initContainers:\n    - name: c\n      resources: {requests: {nvidia.com/gpu: lots}}\n"
        + "    containers: []\n",
        'spec.initContainers[name=c].resources.requests["nvidia.com/gpu"]',
    ),
}


@pytest.mark.parametrize("case", BAD_PODS)
def test_a_bad_pod_list_is_refused_at_start(tmp_path: Path, case: str) -> None:
    """The real command, before gunicorn starts: exit code 2, naming the file and the field."""
    text, field = BAD_PODS[case]
    pods = tmp_path / "pods.yaml"
    pods.write_text(text)
    command = [sys.executable, "-m", "webhook", "serve", "--bind", "127.0.0.1:0", "--workers", "1"]
    command += ["--inventory", str(INVENTORIES / "mixed-cluster.yaml"), "--pods", str(pods)]
    result = run_to_exit([*command, "--cert-dir", str(tmp_path / "certs")], ROOT, timeout=30)
    assert result.returncode == 2
    assert str(pods) in result.stderr and field in result.stderr
    assert "Traceback" not in result.stderr and "serving" not in result.stdout


@pytest.mark.parametrize("pods", sorted(INVENTORIES.glob("*pods*.yaml")), ids=lambda p: p.name)
def test_the_example_pod_lists_pass_the_check(pods: Path) -> None:
    assert check_pod_list(pods) > 0


def test_gunicorn_names_the_address_it_listens_at(served: Served) -> None:
    """Each worker binds its own socket (reuse_port), so gunicorn's master has none to name."""
    (line,) = [line for line in served.process.output().splitlines() if "Listening at:" in line]
    assert f"Listening at: https://127.0.0.1:{served.process.port} (" in line


def test_gunicorns_own_lines_are_json_lines_too(served: Served) -> None:
    """A worker booted, killed, timed out: the lines an operator searches for after a crash."""
    stderr = served.process.stderr.read_text(errors="replace").splitlines()
    plain = [text for text in stderr if not text.startswith("{")]
    assert stderr and plain == []
    booted = [line for line in served.process.log_lines() if line["event"].startswith("Booting worker")]
    assert len(booted) == 2 and all(line["logger"] == "gunicorn.error" for line in booted)


def test_the_catalog_load_is_a_json_log_line_of_each_worker(served: Served) -> None:
    """`webhook.catalog.reload` logs under the package's name, not the server's: its lines went to
    Python's last-resort handler (plain text, and no line at all for a successful load)."""
    loaded = [line for line in served.process.log_lines() if line["event"] == "catalog_loaded"]
    assert len({line["pid"] for line in loaded}) == 2  # --workers 2
    assert all(line["logger"] == "webhook.catalog.reload" and line["templates"] > 0 for line in loaded)


def _plan_serving(cert_dir: Path) -> None:
    """What `serve --cert-dir` does before gunicorn starts."""
    args = build_parser().parse_args(["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(cert_dir)])
    _plan(args)


def test_a_serving_key_others_can_read_is_warned_about_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_serving_set(tmp_path)
    _plan_serving(tmp_path)
    assert "warning" not in capsys.readouterr().err, "write_pair writes the key 0600"
    (tmp_path / "tls.key").chmod(0o644)
    _plan_serving(tmp_path)
    assert capsys.readouterr().err.splitlines() == [
        f"gpu-webhook: warning: {tmp_path / 'tls.key'} holds a private key and is readable by group and "
        f"others (mode 0644); chmod 600 {tmp_path / 'tls.key'}"
    ]


def test_a_generated_or_mounted_serving_key_is_not_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    generated = tmp_path / "generated"
    _plan_serving(generated)
    assert (generated / "tls.key").is_file()
    made = tmp_path / "made"
    write_serving_set(made)
    mounted = tmp_path / "mounted"  # a Secret volume: defaultMode 0644, each file a symlink into ..data
    timestamped = mounted / "..2026_12_07_10_00_00.000000001"
    timestamped.mkdir(parents=True)
    for name in ("tls.crt", "tls.key", "ca.crt"):
        (timestamped / name).write_bytes((made / name).read_bytes())
        (timestamped / name).chmod(0o644)
        (mounted / name).symlink_to(f"..data/{name}")
    (mounted / "..data").symlink_to(timestamped.name)
    _plan_serving(mounted)
    assert "warning" not in capsys.readouterr().err


def test_a_kept_certificate_that_does_not_name_the_bound_host_is_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The printed curl line, and the API server, would refuse it."""
    write_serving_set(tmp_path)
    args = build_parser().parse_args(["serve", "--bind", "127.0.0.2:0", "--cert-dir", str(tmp_path)])
    _plan(args)
    err = capsys.readouterr().err
    assert f"{tmp_path / 'tls.crt'} is for" in err and "not 127.0.0.2" in err
    _plan_serving(tmp_path)  # 127.0.0.1, which it names
    assert "warning" not in capsys.readouterr().err
