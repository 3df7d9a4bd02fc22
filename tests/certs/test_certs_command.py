"""`gpu-webhook certs` end to end: files, Secret manifests, TLS, renewal, and errors without tracebacks."""

from __future__ import annotations

import base64
import datetime as dt
import os
import socket
import ssl
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import kubernetes_validate
import pytest
import yaml
from cryptography import x509

from tests.certs.conftest import write_kubeconfig
from tests.certs.helpers import SERVICE_NAMES, handshake, verify_chain
from webhook.cli import main
from webhook.tls.bundle import service_hosts
from webhook.tls.certgen import make_ca, make_serving
from webhook.tls.reload import check_validity

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def certs(capsys: pytest.CaptureFixture[str]) -> Run:
    def run(*args: str) -> tuple[int, str, str]:
        try:
            code = main(["certs", *args])
        except SystemExit as exited:  # argparse refuses a bad option value itself
            assert isinstance(exited.code, int)
            code = exited.code
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _sans(path: Path) -> list[str]:
    certificate = x509.load_pem_x509_certificate(path.read_bytes())
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return [*names.get_values_for_type(x509.DNSName), *map(str, names.get_values_for_type(x509.IPAddress))]


def test_out_dir_gets_the_four_files_and_stdout_the_bundle(certs: Run, tmp_path: Path) -> None:
    code, out, err = certs(
        "--out-dir", str(tmp_path / "tls"), "--ip", "127.0.0.1", "--dns", "webhook.example"
    )
    assert code == 0 and "Traceback" not in err
    files = {p.name: p for p in (tmp_path / "tls").iterdir()}
    assert set(files) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    assert out == files["ca.crt"].read_text()
    assert _sans(files["tls.crt"]) == [*SERVICE_NAMES, "webhook.example", "127.0.0.1"]
    for name in ("ca.key", "tls.key"):
        assert stat.S_IMODE(files[name].stat().st_mode) == 0o600
    for host in (*SERVICE_NAMES, "127.0.0.1"):
        verify_chain(files["tls.crt"].read_bytes(), out.encode(), host)


def test_the_generated_pair_serves_tls_12_and_13_to_a_verifying_client(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    assert certs("--out-dir", str(directory))[0] == 0
    pair = (directory / "tls.crt", directory / "tls.key", directory / "ca.crt")
    version, data = handshake(*pair, "gpu-webhook.gpu-webhook.svc")
    assert version == "TLSv1.3" and data == b"ok"
    version, _ = handshake(*pair, "gpu-webhook.gpu-webhook.svc", maximum=ssl.TLSVersion.TLSv1_2)
    assert version == "TLSv1.2"
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(*pair, "other.gpu-webhook.svc")


def test_second_run_changes_nothing_and_says_so(certs: Run, tmp_path: Path) -> None:
    directory = str(tmp_path / "tls")
    _, first, _ = certs("--out-dir", directory)
    before = {p.name: p.read_bytes() for p in Path(directory).iterdir()}
    code, again, err = certs("--out-dir", directory)
    assert code == 0 and again == first and "nothing changed" in err
    assert {p.name: p.read_bytes() for p in Path(directory).iterdir()} == before


def test_renewal_keeps_the_ca_and_rotation_bundles_both_cas(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    directory.mkdir()
    ca = make_ca(days=60)
    serving = make_serving(ca, service_hosts("gpu-webhook", "gpu-webhook"), days=20)
    (directory / "ca.crt").write_bytes(ca.certificate_pem())
    (directory / "ca.key").write_bytes(ca.key_pem())
    (directory / "tls.crt").write_bytes(serving.certificate_pem())
    (directory / "tls.key").write_bytes(serving.key_pem())
    code, out, err = certs("--out-dir", str(directory))
    assert code == 0 and err.count("created CA") == 1 and err.count("issued serving") == 1
    bundle = x509.load_pem_x509_certificates(out.encode())
    assert len(bundle) == 2 and bundle[0] == ca.certificate
    new = x509.load_pem_x509_certificate((directory / "tls.crt").read_bytes())
    assert new.issuer == bundle[1].subject
    verify_chain((directory / "tls.crt").read_bytes(), out.encode(), SERVICE_NAMES[2])
    verify_chain(serving.certificate_pem(), out.encode(), SERVICE_NAMES[2])
    version, _ = handshake(
        directory / "tls.crt", directory / "tls.key", directory / "ca.crt", SERVICE_NAMES[2]
    )
    assert version.startswith("TLSv1.")


def test_during_a_rotation_nothing_due_names_the_ca_tls_crt_depends_on(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    directory.mkdir()
    ca = make_ca(days=60)
    serving = make_serving(ca, SERVICE_NAMES, days=50)
    for name, data in (("ca.crt", ca.certificate_pem()), ("ca.key", ca.key_pem())):
        (directory / name).write_bytes(data)
    (directory / "tls.crt").write_bytes(serving.certificate_pem())
    (directory / "tls.key").write_bytes(serving.key_pem())
    code, out, err = certs("--out-dir", str(directory))
    assert code == 0 and "created CA" in err and "issued serving" not in err
    new_ca = x509.load_pem_x509_certificates(out.encode())[1]
    code, _, err = certs("--out-dir", str(directory))
    assert code == 0 and "nothing changed" in err
    assert f"its CA until {ca.certificate.not_valid_after_utc:%Y-%m-%d}" in err
    assert f"the next CA, until {new_ca.not_valid_after_utc:%Y-%m-%d}" in err


def test_only_the_serving_certificate_renews_when_the_ca_is_fine(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    ca = make_ca()
    directory.mkdir()
    (directory / "ca.crt").write_bytes(ca.certificate_pem())
    (directory / "ca.key").write_bytes(ca.key_pem())
    (directory / "tls.crt").write_bytes(make_serving(ca, SERVICE_NAMES, days=40).certificate_pem())
    (directory / "tls.key").write_bytes(make_serving(ca, SERVICE_NAMES).key_pem())
    code, out, _ = certs("--out-dir", str(directory), "--renew-before", "45d")
    assert code == 0 and out == ca.certificate_pem().decode()
    verify_chain((directory / "tls.crt").read_bytes(), out.encode(), SERVICE_NAMES[0])


@pytest.mark.parametrize("future", ["tls.crt", "ca.crt"])
def test_a_set_serve_refuses_as_not_valid_yet_is_reissued(certs: Run, tmp_path: Path, future: str) -> None:
    directory = tmp_path / "tls"
    directory.mkdir()
    tomorrow = dt.datetime.now(dt.UTC) + dt.timedelta(days=1)
    ca = make_ca(not_before=tomorrow if future == "ca.crt" else None)
    serving = make_serving(ca, SERVICE_NAMES, not_before=tomorrow if future == "tls.crt" else None)
    for name, data in (("ca.crt", ca.certificate_pem()), ("ca.key", ca.key_pem())):
        (directory / name).write_bytes(data)
    (directory / "tls.crt").write_bytes(serving.certificate_pem())
    (directory / "tls.key").write_bytes(serving.key_pem())
    code, out, err = certs("--out-dir", str(directory))
    assert code == 0 and "nothing changed" not in err and "not valid yet (notBefore" in err
    check_validity(directory / "tls.crt", dt.datetime.now(dt.UTC))  # what `serve` checks
    verify_chain((directory / "tls.crt").read_bytes(), out.encode(), SERVICE_NAMES[2])


def test_secret_manifest_is_a_valid_tls_secret(certs: Run) -> None:
    code, out, err = certs("--secret", "gpu-webhook-tls", "--namespace", "gpu-webhook")
    assert code == 0 and "Traceback" not in err
    secret = yaml.safe_load(out)
    kubernetes_validate.validate(secret, "1.33", strict=True)
    assert secret["type"] == "kubernetes.io/tls"
    assert secret["metadata"] == {**secret["metadata"], "name": "gpu-webhook-tls", "namespace": "gpu-webhook"}
    data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
    assert set(data) == {"ca.crt", "ca.key", "tls.crt", "tls.key"}
    verify_chain(data["tls.crt"], data["ca.crt"], SERVICE_NAMES[3])


def test_secret_file_is_private_renewable_and_leaves_stdout_to_the_bundle(certs: Run, tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    code, out, _ = certs("--secret", "tls", "--secret-file", str(path))
    assert code == 0 and stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = yaml.safe_load(path.read_text())
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == out
    before = path.read_bytes()
    code, again, err = certs("--secret", "tls", "--secret-file", str(path))
    assert code == 0 and again == out and "nothing changed" in err and path.read_bytes() == before


def test_a_secret_file_with_string_data_keeps_its_ca(certs: Run, tmp_path: Path) -> None:
    path = tmp_path / "secret.yaml"
    code, out, _ = certs("--secret", "tls", "--secret-file", str(path))
    assert code == 0
    secret = yaml.safe_load(path.read_text())
    plain = {key: base64.b64decode(value).decode() for key, value in secret.pop("data").items()}
    path.write_text(yaml.safe_dump({**secret, "stringData": plain}))
    code, again, err = certs("--secret", "tls", "--secret-file", str(path))
    assert code == 0 and again == out and "nothing changed" in err


def test_a_secret_file_that_is_a_symlink_is_written_through_it(certs: Run, tmp_path: Path) -> None:
    """It was renamed over: the link became a file of its own, and the file it named (a shared
    secrets folder, an overlay's) kept the old Secret, or none, while certs said it was stored."""
    (tmp_path / "secrets").mkdir()
    target, link = tmp_path / "secrets" / "secret.yaml", tmp_path / "secret.yaml"
    link.symlink_to(target)
    code, out, _ = certs("--secret", "tls", "--secret-file", str(link))
    assert code == 0 and link.is_symlink() and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert base64.b64decode(yaml.safe_load(target.read_text())["data"]["ca.crt"]).decode() == out
    code, again, err = certs("--secret", "tls", "--secret-file", str(link))
    assert code == 0 and again == out and "nothing changed" in err and link.is_symlink()


def test_a_secret_file_that_is_a_symlink_loop_is_named_and_kept(certs: Run, tmp_path: Path) -> None:
    """A loop was read as no Secret yet and renamed over, where every other file option names it."""
    link = tmp_path / "secret.yaml"
    link.symlink_to(link)
    code, out, err = certs("--secret", "tls", "--secret-file", str(link))
    assert code == 2 and out == "" and "Traceback" not in err
    assert str(link) in err and "Too many levels of symbolic links" in err and link.is_symlink()


@pytest.mark.parametrize(
    ("string_data", "says"),
    [
        (["not", "a", "map"], "stringData is not a map"),
        ({"tls.crt": 5}, "stringData.tls.crt is not a string"),
    ],
)
def test_a_secret_file_with_unusable_string_data_is_named(
    certs: Run, tmp_path: Path, string_data: object, says: str
) -> None:
    path = tmp_path / "secret.yaml"
    assert certs("--secret", "tls", "--secret-file", str(path))[0] == 0
    path.write_text(yaml.safe_dump({**yaml.safe_load(path.read_text()), "stringData": string_data}))
    before = path.read_bytes()
    code, out, err = certs("--secret", "tls", "--secret-file", str(path))
    assert code == 2 and out == "" and f"{path}: {says}" in err and path.read_bytes() == before


@pytest.mark.parametrize(
    ("change", "args", "says"),
    [
        ("name", ["--secret", "renamed"], "holds Secret gpu-webhook/tls, not gpu-webhook/renamed"),
        ("namespace", ["--secret", "tls", "--namespace", "other"], "not other/tls"),
        ("type", ["--secret", "tls"], "has type Opaque"),
        ("no-namespace", ["--secret", "tls"], "holds Secret tls with no namespace, not gpu-webhook/tls"),
        ("no-name", ["--secret", "tls"], "holds Secret with no name in namespace gpu-webhook, not"),
    ],
)
def test_a_secret_file_holding_another_secret_is_not_overwritten(
    certs: Run, tmp_path: Path, change: str, args: list[str], says: str
) -> None:
    path = tmp_path / "secret.yaml"
    assert certs("--secret", "tls", "--secret-file", str(path))[0] == 0
    secret = yaml.safe_load(path.read_text())
    if change == "type":
        path.write_text(yaml.safe_dump({**secret, "type": "Opaque"}))
    elif change.startswith("no-"):
        del secret["metadata"][change.removeprefix("no-")]
        path.write_text(yaml.safe_dump(secret))
    before = path.read_bytes()
    code, out, err = certs(*args, "--secret-file", str(path))
    assert code == 2 and out == "" and "Traceback" not in err
    assert str(path) in err and says in err and path.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--out-dir", "d", "--ip", "not-an-ip"], "--ip"),
        (["--out-dir", "d", "--renew-before", "soon"], "--renew-before"),
        (["--out-dir", "d", "--renew-before", "400d"], "--renew-before"),
        (["--out-dir", "d", "--ca-renew-before", "10d"], "--ca-renew-before"),
        (["--out-dir", "d", "--renew-before", "99999999999d"], "--renew-before"),
        (["--out-dir", "d", "--ca-renew-before", "900000h"], "--ca-renew-before"),
        (["--out-dir", "d", "--days", "0"], "--days"),
        (["--out-dir", "d", "--days", "-30"], "--days"),
        (["--out-dir", "d", "--days", "36501"], "--days"),
        (["--out-dir", "d", "--days", "ten"], "--days"),
        (["--out-dir", "d", "--ca-days", "0"], "--ca-days"),
        (["--out-dir", "d", "--ca-days", "99999999999"], "--ca-days"),
        (["--out-dir", "d", "--service", "Bad_Name"], "--service"),
        (["--out-dir", "d", "--apply"], "--apply"),
        (["--secret", "s", "--apply", "--secret-file", "f"], "--secret-file"),
        (["--secret", "Not A Name"], "--secret"),
        (["--secret", "*.x"], "not a valid Secret name"),
        (["--out-dir", "d", "--ca-days", "30"], "--ca-renew-before 90d must be shorter than --ca-days 30"),
        (["--out-dir", "d", "--ip", "fe80::1%eth0"], "cannot name a zone"),
    ],
)
def test_bad_arguments_are_named(
    certs: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], names: str
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = certs(*args)
    assert code == 2 and out == "" and names in err and "Traceback" not in err
    assert not (tmp_path / "d").exists()


def test_the_longest_validity_is_accepted(certs: Run, tmp_path: Path) -> None:
    code, out, err = certs("--out-dir", str(tmp_path / "tls"), "--days", "36500", "--ca-days", "36500")
    assert code == 0 and "Traceback" not in err
    verify_chain((tmp_path / "tls" / "tls.crt").read_bytes(), out.encode(), SERVICE_NAMES[0])


def test_unreadable_existing_certificate_names_the_file(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    directory.mkdir()
    (directory / "ca.crt").write_text("this is not PEM")
    code, _, err = certs("--out-dir", str(directory))
    assert code == 2 and str(directory / "ca.crt") in err and "Traceback" not in err


def test_a_ca_key_without_any_ca_certificate_is_refused_and_kept(certs: Run, tmp_path: Path) -> None:
    """The key is the only copy: a new CA written over it could never sign for the old one again."""
    directory = tmp_path / "tls"
    directory.mkdir()
    key = make_ca().key_pem()
    (directory / "ca.key").write_bytes(key)
    code, out, err = certs("--out-dir", str(directory))
    assert code == 2 and out == "" and "Traceback" not in err
    assert str(directory / "ca.key") in err
    assert (directory / "ca.key").read_bytes() == key
    assert not (directory / "tls.crt").exists()


def test_a_ca_key_beside_other_cas_gets_a_new_ca_beside_them(certs: Run, tmp_path: Path) -> None:
    """What cert-manager leaves in the Secret when an install goes back to the certs Job: its CA
    in ca.crt, the Job's old ca.key. The Job starts a new CA beside it, as it did before."""
    directory = tmp_path / "tls"
    directory.mkdir()
    other = make_ca()
    (directory / "ca.key").write_bytes(make_ca().key_pem())
    (directory / "ca.crt").write_bytes(other.certificate_pem())
    code, out, err = certs("--out-dir", str(directory))
    assert code == 0 and "Traceback" not in err
    verify_chain((directory / "tls.crt").read_bytes(), out.encode(), SERVICE_NAMES[0])
    assert other.certificate_pem() in (directory / "ca.crt").read_bytes()


def test_a_leaf_certificate_as_ca_is_refused_and_nothing_is_written(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    directory.mkdir()
    leaf = make_serving(make_ca(), ["leaf.example"])
    (directory / "ca.crt").write_bytes(leaf.certificate_pem())
    (directory / "ca.key").write_bytes(leaf.key_pem())
    code, out, err = certs("--out-dir", str(directory))
    assert code == 2 and out == "" and "Traceback" not in err
    assert str(directory / "ca.crt") in err and "is not a CA" in err
    assert sorted(p.name for p in directory.iterdir()) == ["ca.crt", "ca.key"]


def test_unwritable_directory_is_a_clear_error(certs: Run, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file, not a directory")
    code, out, err = certs("--out-dir", str(blocker / "tls"))
    assert code == 1 and out == "" and str(blocker / "tls") in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_read_only_directory_is_a_clear_error(certs: Run, tmp_path: Path) -> None:
    directory = tmp_path / "tls"
    directory.mkdir(mode=0o500)
    code, _, err = certs("--out-dir", str(directory))
    assert code == 1 and "cannot write" in err and "Traceback" not in err


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_unreachable_api_server_is_a_clear_error(certs: Run, tmp_path: Path) -> None:
    ca = make_ca()
    kubeconfig = write_kubeconfig(
        tmp_path / "kc", f"https://127.0.0.1:{_closed_port()}", ca.certificate_pem()
    )
    code, out, err = certs(
        "--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig)
    )
    assert code == 1 and out == "" and "cannot reach the API server" in err and "Traceback" not in err
    assert not (tmp_path / "tls").exists(), "nothing is written when the webhooks cannot be patched"


@pytest.mark.parametrize("apply", [True, False], ids=["apply", "patch-webhooks"])
def test_missing_kubeconfig_is_named_as_serve_names_it(certs: Run, tmp_path: Path, apply: bool) -> None:
    missing = tmp_path / "nope"
    out_dir = ("--out-dir", str(tmp_path / "tls"), "--patch-webhooks")
    where = ("--secret", "s", "--apply") if apply else out_dir
    code, out, err = certs(*where, "--kubeconfig", str(missing))
    assert (code, out) == (2, "") and err == f"gpu-webhook: --kubeconfig: no such file: {missing}\n"
    assert not (tmp_path / "tls").exists()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("garbage: [\n", "not valid YAML"),
        ("current-context: x\ncontexts: [{name: x, context: 5}]\n", "not a valid kubeconfig"),
        ("[1, 2]\n", "cannot load"),
    ],
    ids=["not-yaml", "context-not-a-map", "not-a-map"],
)
def test_an_unusable_kubeconfig_is_one_message(certs: Run, tmp_path: Path, text: str, says: str) -> None:
    kubeconfig = tmp_path / "bogus.kc"
    kubeconfig.write_text(text, encoding="utf-8")
    code, out, err = certs(
        "--out-dir", str(tmp_path / "tls"), "--patch-webhooks", "--kubeconfig", str(kubeconfig)
    )
    assert code == 1 and out == "" and "Traceback" not in err
    assert says in err and str(kubeconfig) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "tls").exists()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("where", ["--out-dir", "--secret"])
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_an_unwritable_stdout_is_one_message(tmp_path: Path, where: str, stdout: str) -> None:
    target = str(tmp_path / "tls") if where == "--out-dir" else "gpu-webhook-tls"
    redirect = ">/dev/full" if stdout == "full" else ">&-"
    script = f'"$0" -m webhook certs {where} "$1" {redirect}'
    result = subprocess.run(
        ["sh", "-c", script, sys.executable, target],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    problem = "stdout is closed" if stdout == "closed" else "No space left on device"
    what = "the CA bundle" if where == "--out-dir" else "the Secret manifest"
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"cannot write {what} to stdout: {problem}" in result.stderr
    if where == "--out-dir":
        assert sorted(p.name for p in (tmp_path / "tls").iterdir()) == [
            "ca.crt",
            "ca.key",
            "tls.crt",
            "tls.key",
        ]


def test_the_installed_command_fails_cleanly_too(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(
        tmp_path / "kc", f"https://127.0.0.1:{_closed_port()}", make_ca().certificate_pem()
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "webhook",
            "certs",
            "--secret",
            "s",
            "--apply",
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "Secret gpu-webhook/s" in result.stderr and "cannot reach the API server" in result.stderr
