"""`serve --cert-dir` with a certificate `gpu-webhook certs` made for the Service, bound to every
address as deploy/ runs it: not warned about (it was, at every start, as not naming 127.0.0.1), and
the curl line reaches it by a name it has; bound to one address it does not name, it is."""

from __future__ import annotations

import datetime as dt
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID

from tests.conftest import INVENTORIES, ROOT
from tests.server.support import Client, WebhookProcess
from webhook.cli import build_parser, main
from webhook.commands.serve import _plan
from webhook.tls.certgen import KeyPair, make_ca, write_pair


def service_certificates(directory: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """What the certs Job makes (the Service's names); returns the names."""
    assert main(["certs", "--out-dir", str(directory)]) == 0
    capsys.readouterr()
    certificate = x509.load_pem_x509_certificate((directory / "tls.crt").read_bytes())
    return list(
        certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
            x509.DNSName
        )
    )


@pytest.mark.parametrize("bind", ["0.0.0.0:0", "[::]:0"])
def test_a_service_certificate_bound_to_every_address_is_not_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bind: str
) -> None:
    names = service_certificates(tmp_path, capsys)
    assert "gpu-webhook" in names and "127.0.0.1" not in names
    _plan(build_parser().parse_args(["serve", "--bind", bind, "--cert-dir", str(tmp_path)]))
    assert "warning" not in capsys.readouterr().err


def test_a_service_certificate_bound_to_one_address_it_does_not_name_is_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    service_certificates(tmp_path, capsys)
    _plan(build_parser().parse_args(["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(tmp_path)]))
    err = capsys.readouterr().err
    assert f"{tmp_path / 'tls.crt'} is for gpu-webhook," in err and "not 127.0.0.1" in err


def test_a_certificate_naming_no_host_bound_to_every_address_is_warned_about(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    ca = make_ca()
    write_pair(tmp_path, ca, nameless(ca))
    _plan(build_parser().parse_args(["serve", "--bind", "0.0.0.0:0", "--cert-dir", str(tmp_path)]))
    assert f"warning: {tmp_path / 'tls.crt'} names no host:" in capsys.readouterr().err


def nameless(ca: KeyPair) -> KeyPair:
    """A serving certificate with no subjectAltName (clients that check names refuse it)."""
    serving = make_ca("gpu-webhook")  # only for its key
    now = dt.datetime.now(dt.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "gpu-webhook")]))
        .issuer_name(ca.certificate.subject)
        .public_key(serving.key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca.key, hashes.SHA256())
    )
    return KeyPair(certificate, serving.key)


def test_the_curl_line_reaches_a_service_certificate_by_its_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Bound to every address, the curl line connects to 127.0.0.1 by a name the certificate has:
    https://127.0.0.1 with --cacert was refused by curl."""
    service_certificates(tmp_path / "tls", capsys)
    args = [
        "--bind",
        "0.0.0.0:0",
        "--cert-dir",
        "tls",
        "--workers",
        "1",
        "--templates",
        str(ROOT / "templates"),
    ]
    args += ["--policies", str(ROOT / "policies"), "--inventory", str(INVENTORIES / "mixed-cluster.yaml")]
    process = WebhookProcess(tmp_path, args, cwd=tmp_path)
    try:
        client = Client(process.port, tmp_path / "tls" / "ca.crt")
        client.context.check_hostname = False  # it connects to 127.0.0.1, which the certificate does not name
        process.wait_ready(client)
        (line,) = [line for line in process.stdout.read_text().splitlines() if line.startswith("try: ")]
        command = shlex.split(line.removeprefix("try: "))
        assert command[:5] == [
            "curl",
            "--cacert",
            "tls/ca.crt",
            "--resolve",
            f"gpu-webhook:{process.port}:127.0.0.1",
        ]
        assert command[-1] == f"https://gpu-webhook:{process.port}/mutate"
        assert "names no host" not in process.output() and "is for" not in process.output()
        if shutil.which("curl") is None:
            pytest.skip("curl is not installed")
        result = subprocess.run(
            [*command, "--silent", "--show-error"], cwd=tmp_path, capture_output=True, timeout=30
        )
        assert result.returncode == 0, result.stderr
    finally:
        process.stop()
