"""`report --prometheus URL`: anything but an http(s) URL with a host is refused before any request."""

from __future__ import annotations

import pytest

from tests.conftest import ROOT
from webhook.cli import main
from webhook.report.service import ReportService
from webhook.report.utilisation import PrometheusError, check_url
from webhook.sources import FileInventorySource, StaticCatalogSource

NODES = ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
BAD_URLS = [
    "ftp://prometheus:9090",
    "prometheus:9090",
    "http://",
    "http://[::1",
    "file:///etc/passwd",
    "http://prometheus:99999",
    "https://prometheus:90 90",
    "http://prometheus:9090/api?x=1",
    "http://user:s3cret@prometheus:9090",
    "https://s3cret@prometheus/",
    "ftp://user:s3cret@prometheus",
    "http://user:s3cret@[::1",
    "",
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_a_url_that_is_not_http_is_refused_up_front(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # a node file that does not exist: the URL is checked before anything is read
    argv = ["report", "--inventory", "absent.yaml", "--prometheus", url]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--prometheus" in err and "Traceback" not in err and "absent.yaml" not in err
    assert "s3cret" not in err


def test_credentials_are_refused_and_never_echoed(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--inventory", "absent.yaml", "--prometheus", "http://u:s3cret@prom:9090"]) == 2
    err = capsys.readouterr().err
    assert "credentials" in err and "http://***@prom:9090" in err and "s3cret" not in err


@pytest.mark.parametrize("url", BAD_URLS)
def test_the_check_and_the_service_refuse_it(url: str) -> None:
    with pytest.raises(PrometheusError):
        check_url(url)
    with pytest.raises(PrometheusError):
        ReportService(FileInventorySource(NODES), StaticCatalogSource([]), prometheus_url=url)


@pytest.mark.parametrize(
    "url",
    [
        "http://prometheus:9090",
        "https://prom.example.com/prometheus/",
        "http://[::1]:9090",
        "http://10.0.0.5",
    ],
)
def test_http_urls_with_a_host_pass(url: str) -> None:
    assert check_url(url) == url
