"""The decision cache: a hit answers exactly what deciding would, and only when nothing that the
decision depends on differs; what it may not keep (dry runs, UPDATEs, large objects) it never keeps."""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from flask import Flask

from tests.conftest import INVENTORIES, ROOT, needs_shared, shared_path
from tests.inventory.fake_apiserver import FakeApiServer, wait_for
from tests.inventory.test_watch import bound_pod, cpu_pod, heartbeat, mig_node, source_for, used
from tests.server.conftest import Served
from tests.server.support import metric_value, vector, write_serving_set
from tests.test_corpus import FILES, _documents, pods_in
from webhook import admission
from webhook.admission import Review
from webhook.cli import main
from webhook.core.model import Catalog, Decision, Inventory
from webhook.server.app import create_app, start_sources, stop_sources
from webhook.server.decision_cache import DEFAULT_CAPACITY, MAX_OBJECT_BYTES, DecisionCache
from webhook.server.gunicorn_app import ServerSettings, WebhookServer
from webhook.server.logs import JsonLineFormatter
from webhook.sources import FileInventorySource, StaticCatalogSource
from webhook.tls.reload import TLSFiles

REPLICA = vector("create-pod-from-replicaset.json")


def review_of(document: dict[str, Any], uid: str = "uid-1", **request: Any) -> Review:
    sent = copy.deepcopy(document)
    sent["request"].update(uid=uid, **request)
    return admission.parse_review(sent)


def pod_review(pod: dict[str, Any], uid: str, namespace: str = "default") -> Review:
    request = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": namespace,
        "object": copy.deepcopy(pod),
    }
    return admission.parse_review(
        {"apiVersion": admission.API_VERSION, "kind": "AdmissionReview", "request": request}
    )


def same_answer(decision: Decision, fresh: Decision) -> bool:
    """Everything the server answers with: the cache keeps no mutated object."""
    return dataclasses.replace(fresh, mutated=None) == dataclasses.replace(decision, mutated=None)


def with_metadata(review: Review, **changes: Any) -> Review:
    obj = copy.deepcopy(review.obj)
    obj["metadata"].update(changes)
    return dataclasses.replace(review, obj=obj)


def test_a_replica_is_answered_from_the_cache_as_deciding_would(
    catalog: Catalog, mixed_cluster: Inventory
) -> None:
    cache = DecisionCache()
    first, second = review_of(REPLICA, "uid-1"), review_of(REPLICA, "uid-2")
    decided, outcome = cache.decide(first, catalog, mixed_cluster)
    assert outcome == "miss" and decided.patch, "the reference replica is rewritten to a MIG slice"
    cached, outcome = cache.decide(second, catalog, mixed_cluster)
    assert outcome == "hit"
    fresh = admission.decide_review(second, catalog, mixed_cluster)
    assert same_answer(cached, fresh)
    assert admission.mutation_response(second, cached) == admission.mutation_response(second, fresh)
    assert admission.validation_response(second, cached) == admission.validation_response(second, fresh)


def with_token_volume(review: Review, name: str) -> Review:
    """The review with its service-account token volume renamed, as the API server names another replica's."""
    old = review.obj["spec"]["volumes"][-1]["name"]
    renamed = json.dumps(review.obj).replace(f'"{old}"', f'"{name}"')
    return dataclasses.replace(review, obj=json.loads(renamed))


def test_replicas_with_their_own_token_volumes_are_answered_from_the_cache(
    catalog: Catalog, mixed_cluster: Inventory
) -> None:
    """The API server gives each replica its own `kube-api-access-xxxxx` volume before any webhook."""
    cache = DecisionCache()
    first = review_of(REPLICA, "uid-1")
    assert first.obj["spec"]["volumes"][-1]["name"] == "kube-api-access-msxhw"
    second = with_token_volume(review_of(REPLICA, "uid-2"), "kube-api-access-7x2bq")
    assert cache.decide(first, catalog, mixed_cluster)[1] == "miss"
    cached, outcome = cache.decide(second, catalog, mixed_cluster)
    assert outcome == "hit"
    fresh = admission.decide_review(second, catalog, mixed_cluster)
    assert same_answer(cached, fresh)
    assert admission.mutation_response(second, cached) == admission.mutation_response(second, fresh)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("kube-api-access-msxha", id="a letter the generator never draws"),
        pytest.param("kube-api-access-msxhwz", id="six characters"),
        pytest.param("my-api-access-msxhw", id="another prefix"),
    ],
)
def test_other_volume_names_are_not_taken_for_a_token_volume(
    catalog: Catalog, mixed_cluster: Inventory, name: str
) -> None:
    cache = DecisionCache()
    cache.decide(review_of(REPLICA), catalog, mixed_cluster)
    assert cache.decide(with_token_volume(review_of(REPLICA), name), catalog, mixed_cluster)[1] == "miss"


def test_a_decision_that_names_the_token_volume_is_not_kept(
    catalog: Catalog, mixed_cluster: Inventory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another replica's answer would name the wrong volume."""
    decide = admission.decide_review

    def naming_the_volume(review: Review, catalog: Catalog, inventory: Inventory) -> Decision:
        decision = decide(review, catalog, inventory)
        name = review.obj["spec"]["volumes"][-1]["name"]
        return dataclasses.replace(decision, warnings=(*decision.warnings, f"volume {name} is odd"))

    monkeypatch.setattr(admission, "decide_review", naming_the_volume)
    cache = DecisionCache()
    assert cache.decide(review_of(REPLICA), catalog, mixed_cluster)[1] == "bypass"
    assert cache.decide(review_of(REPLICA), catalog, mixed_cluster)[1] == "bypass"
    assert len(cache) == 0


def test_managed_fields_do_not_make_a_replica_new(catalog: Catalog, mixed_cluster: Inventory) -> None:
    """Replicas created a second apart differ in their managedFields' time, which no decision reads."""
    cache = DecisionCache()
    first = review_of(REPLICA)
    later = copy.deepcopy(first.obj["metadata"]["managedFields"])
    later[0]["time"] = "2026-12-02T11:38:41Z"
    cache.decide(first, catalog, mixed_cluster)
    assert cache.decide(with_metadata(first, managedFields=later), catalog, mixed_cluster)[1] == "hit"
    assert cache.decide(with_metadata(first, managedFields=[]), catalog, mixed_cluster)[1] == "hit"


def test_a_replica_whose_client_named_its_priority_class_is_decided_again(
    catalog: Catalog, mixed_cluster: Inventory
) -> None:
    """managedFields tell whether the pod's class is its own or the Priority plugin's default."""
    cache = DecisionCache()
    first = review_of(REPLICA)
    first.obj["spec"]["priorityClassName"] = "cluster-default"
    cache.decide(first, catalog, mixed_cluster)
    named = copy.deepcopy(first.obj["metadata"]["managedFields"])
    named[0]["fieldsV1"]["f:spec"]["f:priorityClassName"] = {}
    assert cache.decide(with_metadata(first, managedFields=named), catalog, mixed_cluster)[1] == "miss"
    assert cache.decide(with_metadata(first, managedFields=named), catalog, mixed_cluster)[1] == "hit"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda r: with_metadata(r, name="vllm-0"), id="name"),
        pytest.param(lambda r: with_metadata(r, labels={"app": "vllm"}), id="labels"),
        pytest.param(lambda r: with_metadata(r, annotations={"a": "b"}), id="annotations"),
        pytest.param(lambda r: dataclasses.replace(r, namespace="other"), id="namespace"),
        pytest.param(lambda r: dataclasses.replace(r, kind="Deployment", group="apps"), id="kind"),
    ],
)
def test_any_other_difference_is_decided_again(
    catalog: Catalog, mixed_cluster: Inventory, change: Any
) -> None:
    cache = DecisionCache()
    first = review_of(REPLICA)
    cache.decide(first, catalog, mixed_cluster)
    assert cache.decide(change(first), catalog, mixed_cluster)[1] == "miss"


def test_the_api_group_tells_two_kinds_of_one_name_apart(catalog: Catalog, mixed_cluster: Inventory) -> None:
    """A batch Job and a Volcano Job with the same body (an object that names no apiVersion: the
    review's group decides) keep their pod templates in different places: one's decision is not
    the other's."""
    job = copy.deepcopy(vector("create-job-finetune.json"))
    obj = job["request"]["object"]
    del obj["apiVersion"], obj["kind"]
    template = copy.deepcopy(obj["spec"]["template"])
    template["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "0.5"}}
    obj["spec"]["tasks"] = [{"name": "worker", "template": template}]
    volcano = review_of(job, kind={"group": "batch.volcano.sh", "version": "v1alpha1", "kind": "Job"})
    batch = review_of(job, kind={"group": "batch", "version": "v1", "kind": "Job"})
    assert "FractionalGpu" in admission.decide_review(volcano, catalog, mixed_cluster).codes
    for first, second in ((batch, volcano), (volcano, batch)):
        cache = DecisionCache()
        cache.decide(first, catalog, mixed_cluster)
        decision, outcome = cache.decide(second, catalog, mixed_cluster)
        assert outcome == "miss"
        assert same_answer(decision, admission.decide_review(second, catalog, mixed_cluster))


def test_a_change_in_the_spec_is_decided_again(catalog: Catalog, mixed_cluster: Inventory) -> None:
    cache = DecisionCache()
    first = review_of(REPLICA)
    cache.decide(first, catalog, mixed_cluster)
    obj = copy.deepcopy(first.obj)
    obj["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "2"
    obj["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "2"
    decision, outcome = cache.decide(dataclasses.replace(first, obj=obj), catalog, mixed_cluster)
    assert outcome == "miss"
    assert same_answer(
        decision, admission.decide_review(dataclasses.replace(first, obj=obj), catalog, mixed_cluster)
    )


def test_a_new_catalog_or_inventory_starts_afresh(catalog: Catalog, mixed_cluster: Inventory) -> None:
    """Equal content is not enough: a source publishes a new value when anything changed."""
    cache = DecisionCache()
    replica = review_of(REPLICA)
    cache.decide(replica, catalog, mixed_cluster)
    same_nodes = dataclasses.replace(mixed_cluster)
    assert cache.decide(replica, catalog, same_nodes)[1] == "miss"
    assert len(cache) == 1, "the entries decided against the old inventory are gone"
    reloaded = dataclasses.replace(catalog)
    assert cache.decide(replica, reloaded, same_nodes)[1] == "miss"
    assert cache.decide(replica, reloaded, same_nodes)[1] == "hit"


def test_a_decision_is_kept_only_with_the_snapshot_it_was_made_against(
    catalog: Catalog, mixed_cluster: Inventory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review decided against the old inventory while another thread already uses the new one
    must not land in the new one's entries."""
    cache = DecisionCache()
    newer = dataclasses.replace(mixed_cluster)
    replica = review_of(REPLICA)
    decide = admission.decide_review

    def meanwhile_the_inventory_changes(review: Review, catalog: Catalog, inventory: Inventory) -> Decision:
        monkeypatch.setattr(admission, "decide_review", decide)
        cache.decide(review_of(REPLICA, "other", namespace="elsewhere"), catalog, newer)
        return decide(review, catalog, inventory)

    monkeypatch.setattr(admission, "decide_review", meanwhile_the_inventory_changes)
    assert cache.decide(replica, catalog, mixed_cluster)[1] == "miss"
    assert cache.decide(replica, catalog, newer)[1] == "miss"


def test_with_a_live_inventory_the_cache_outlives_events_that_change_nothing(
    catalog: Catalog, tmp_path: Path
) -> None:
    """Node heartbeats and pods without accelerators are most of a cluster's events: the live
    inventory stays the same object through them, so replicas keep being answered from the
    cache; a pod bound with a GPU slice changes the inventory and starts the cache afresh."""
    server = FakeApiServer(tmp_path).start()
    server.put("nodes", mig_node())
    server.put("pods", bound_pod("slice-a", "mig-0"))
    source = source_for(server)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        cache = DecisionCache()
        assert cache.decide(review_of(REPLICA, "uid-1"), catalog, source.current())[1] == "miss"
        events = source.status()["streams"]["pods"]["events"]
        for index in range(5):
            server.put("nodes", heartbeat(mig_node(), index))
            server.put("pods", cpu_pod(f"web-{index}", node="mig-0"))
        wait_for(lambda: source.status()["streams"]["pods"]["events"] == events + 5, what="the events")
        time.sleep(0.3)  # six rebuild intervals
        assert cache.decide(review_of(REPLICA, "uid-2"), catalog, source.current())[1] == "hit"

        server.put("pods", bound_pod("slice-b", "mig-0"))
        wait_for(lambda: used(source.current(), "mig-0", "nvidia.com/mig-1g.10gb") == 2, what="the bind")
        assert cache.decide(review_of(REPLICA, "uid-3"), catalog, source.current())[1] == "miss"
    finally:
        source.stop()
        server.stop()


@pytest.mark.parametrize(
    ("request_changes", "why"),
    [
        ({"dryRun": True}, "a dry run caches nothing"),
        (
            {"operation": "UPDATE", "oldObject": REPLICA["request"]["object"]},
            "an UPDATE depends on the old object",
        ),
        ({"operation": "DELETE", "object": None, "oldObject": REPLICA["request"]["object"]}, "no object"),
    ],
)
def test_what_is_never_cached(
    catalog: Catalog, mixed_cluster: Inventory, request_changes: dict[str, Any], why: str
) -> None:
    cache = DecisionCache()
    for uid in ("uid-1", "uid-2"):
        review = review_of(REPLICA, uid, **request_changes)
        assert cache.decide(review, catalog, mixed_cluster)[1] == "bypass", why
    assert len(cache) == 0


def test_a_large_object_is_decided_every_time(catalog: Catalog, mixed_cluster: Inventory) -> None:
    cache = DecisionCache()
    large = with_metadata(review_of(REPLICA), annotations={"notes": "x" * MAX_OBJECT_BYTES})
    assert [cache.decide(large, catalog, mixed_cluster)[1] for _ in range(2)] == ["bypass", "bypass"]


def test_a_cache_of_zero_decides_every_time(catalog: Catalog, mixed_cluster: Inventory) -> None:
    cache = DecisionCache(0)
    assert [cache.decide(review_of(REPLICA), catalog, mixed_cluster)[1] for _ in range(2)] == [
        "bypass",
        "bypass",
    ]
    with pytest.raises(ValueError, match="capacity"):
        DecisionCache(-1)


def test_the_oldest_entry_goes_first(catalog: Catalog, mixed_cluster: Inventory) -> None:
    cache = DecisionCache(3)
    replicas = [with_metadata(review_of(REPLICA), generateName=f"vllm-{n}-") for n in range(4)]
    assert [cache.decide(r, catalog, mixed_cluster)[1] for r in replicas] == ["miss"] * 4
    assert len(cache) == 3
    assert cache.decide(replicas[3], catalog, mixed_cluster)[1] == "hit"
    assert cache.decide(replicas[1], catalog, mixed_cluster)[1] == "hit"
    assert cache.decide(replicas[0], catalog, mixed_cluster)[1] == "miss"


def test_every_reference_request_gets_the_same_answer_from_the_cache(
    catalog: Catalog, mixed_cluster: Inventory
) -> None:
    paths = sorted(shared_path("reference", "admission").glob("*.json"))
    assert paths
    for path in paths:
        document = json.loads(path.read_bytes())
        cache = DecisionCache()
        first, second = review_of(document, "uid-1"), review_of(document, "uid-2")
        cache.decide(first, catalog, mixed_cluster)
        cached, _ = cache.decide(second, catalog, mixed_cluster)
        fresh = admission.decide_review(second, catalog, mixed_cluster)
        assert admission.mutation_response(second, cached) == admission.mutation_response(second, fresh), (
            path.name
        )


def with_service_account_token(pod: dict[str, Any], name: str) -> dict[str, Any]:
    """The pod as the ServiceAccount admission plugin leaves it: a projected token volume, mounted
    in every container."""
    pod = copy.deepcopy(pod)
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    token = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    spec.setdefault("volumes", []).append({"name": name, "projected": {"sources": [token]}})
    mount = {"name": name, "readOnly": True, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            container.setdefault("volumeMounts", []).append(dict(mount))
    return pod


@needs_shared("corpus")
def test_every_corpus_pod_gets_the_same_answer_from_the_cache(
    catalog: Catalog, mixed_cluster: Inventory
) -> None:
    """Whatever the pod, a second one with other managedFields and its own service-account token
    volume, as the API server sends a replica, is a hit with the same answer."""
    cache = DecisionCache(capacity=100_000)
    hits = 0
    for path in FILES:
        documents, _ = _documents(path)
        for document in documents:
            for where, pod in pods_in(document):
                first = pod_review(with_service_account_token(pod, "kube-api-access-msxhw"), "uid-1")
                cache.decide(first, catalog, mixed_cluster)
                second = pod_review(with_service_account_token(pod, "kube-api-access-7x2bq"), "uid-2")
                second.obj.setdefault("metadata", {})["managedFields"] = [{"manager": "other"}]
                cached, outcome = cache.decide(second, catalog, mixed_cluster)
                hits += outcome == "hit"
                fresh = admission.decide_review(second, catalog, mixed_cluster)
                answer = admission.mutation_response(second, fresh)
                assert admission.mutation_response(second, cached) == answer, f"{path.name} {where}"
    assert hits > 100


# --- through the app: the log line, the metric, the switch ------------------------------------
def app_with_cache(size: int = DEFAULT_CAPACITY) -> Flask:
    catalog, inventory = default_sources()
    app = create_app(catalog, inventory, decision_cache=size)
    start_sources(app)
    return app


def post(app: Flask, document: dict[str, Any], endpoint: str = "mutate") -> dict[str, Any]:
    reply = app.test_client().post(f"/{endpoint}", data=json.dumps(document), content_type="application/json")
    assert reply.status_code == 200
    answer: dict[str, Any] = reply.get_json()
    return answer


def review_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    formatter = JsonLineFormatter()
    return [json.loads(formatter.format(r)) for r in caplog.records if r.getMessage() == "review"]


def sent(uid: str, **request: Any) -> dict[str, Any]:
    document = copy.deepcopy(REPLICA)
    document["request"].update(uid=uid, **request)
    return document


def test_the_app_answers_replicas_from_the_cache_and_says_so(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    app = app_with_cache()
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            answers = [post(app, sent(f"uid-{n}"))["response"] for n in range(3)]
            dry = post(app, sent("uid-dry", dryRun=True))["response"]
            validated = post(app, sent("uid-v"), "validate")["response"]
        assert [line["cache"] for line in review_lines(caplog)] == ["miss", "hit", "hit", "bypass", "hit"]
        assert [a["uid"] for a in answers] == ["uid-0", "uid-1", "uid-2"]
        assert all({**a, "uid": ""} == {**answers[0], "uid": ""} for a in answers)
        assert {**dry, "uid": ""} == {**answers[0], "uid": ""}
        assert "patch" not in validated
        exposition = app.test_client().get("/metrics").get_data(as_text=True)
        counted = {
            (endpoint, result): metric_value(
                exposition, "gpu_webhook_decision_cache_total", endpoint=endpoint, result=result
            )
            for endpoint in ("mutate", "validate")
            for result in ("hit", "miss", "bypass")
        }
        assert {k: v for k, v in counted.items() if v} == {
            ("mutate", "miss"): 1,
            ("mutate", "hit"): 2,
            ("mutate", "bypass"): 1,
            ("validate", "hit"): 1,
        }
    finally:
        stop_sources(app)


def test_the_app_without_a_cache_decides_every_review(monkeypatch: pytest.MonkeyPatch) -> None:
    app = app_with_cache(0)
    calls = []
    decide = admission.decide_review
    monkeypatch.setattr(admission, "decide_review", lambda *a: calls.append(1) or decide(*a))
    try:
        for n in range(3):
            post(app, sent(f"uid-{n}"))
        assert len(calls) == 3
    finally:
        stop_sources(app)


# --- the real server ----------------------------------------------------------------------------
def test_the_served_webhook_answers_a_burst_of_replicas_from_its_cache(served: Served) -> None:
    """gunicorn, 2 workers: each decides the replica once at most, and answers the rest from its cache."""
    uids = [f"burst-{n}" for n in range(12)]
    for uid in uids:
        reply = served.client.post("/mutate", sent(uid))
        assert reply.status == 200 and json.loads(reply.body)["response"]["patchType"] == "JSONPatch"
    lines = {line["uid"]: line for line in served.process.log_lines() if line.get("uid") in uids}
    outcomes = sorted(line["cache"] for line in lines.values())
    assert len(lines) == len(uids)
    assert outcomes.count("miss") <= len({line["pid"] for line in lines.values()}) <= 2
    assert outcomes.count("hit") >= len(uids) - 2


def test_serve_decision_cache_reaches_the_workers_app(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`--decision-cache 0` goes through ServerSettings to the app gunicorn loads in each worker."""
    write_serving_set(tmp_path)
    settings = ServerSettings("127.0.0.1:0", TLSFiles.in_directory(tmp_path), decision_cache=0)
    app = WebhookServer(settings, default_sources).load()
    start_sources(app)
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            for n in range(2):
                post(app, sent(f"uid-{n}"))
        assert [line["cache"] for line in review_lines(caplog)] == ["bypass", "bypass"]
    finally:
        stop_sources(app)


def default_sources() -> tuple[StaticCatalogSource, FileInventorySource]:
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    return catalog, FileInventorySource(INVENTORIES / "mixed-cluster.yaml")


@pytest.mark.parametrize("value", ["-1", "many"])
def test_a_bad_decision_cache_size_is_refused(capsys: pytest.CaptureFixture[str], value: str) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--decision-cache", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--decision-cache" in err and "Traceback" not in err


def test_another_app_than_the_webhook_s_loads_in_the_workers(tmp_path: Path) -> None:
    """benchmarks/bench_server.py serves a trivial flask app with WebhookServer: the certificate
    gauge looked for the webhook's metrics in it, and every worker failed to boot."""
    write_serving_set(tmp_path)
    settings = ServerSettings("127.0.0.1:0", TLSFiles.in_directory(tmp_path))
    trivial = Flask("trivial")
    assert WebhookServer(settings, default_sources, app_factory=lambda sources: trivial).load() is trivial
