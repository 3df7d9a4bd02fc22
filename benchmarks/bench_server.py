"""Server benchmark: `/mutate` on a typical GPU pod review against a trivial allow-all flask app.

Both run under the same gunicorn settings (webhook/server/gunicorn_conf.py, TLS with the
reloading context) in this run, on loopback, for each worker class (gthread, sync), under two
loads, in alternating rounds:
- `replicas`: every review carries the same pod, as a ReplicaSet's or a Job's burst does (no name
  yet, only generateName), but for its service-account token volume, named anew for each pod
  as the API server names it: after the first, each worker answers from its decision cache;
- `distinct`: every review's pod also carries an annotation no other has, so each one is decided
  (the cache never hits: the worst case, and what `decide` costs under load).
Prints, per load:
- throughput (req/s) of the trivial app and of /mutate, and their ratio (target >= 0.8x), and
  the server CPU per request of both;
- under gthread, the share of /mutate's reviews answered from the decision cache (its metric),
  and p50/p99 latency of /mutate at half the trivial app's saturating rate (target p99 < 10 ms)
  and at a fixed rate (--fixed-rate, 1,000 req/s: a budget that does not move with the trivial
  app or the machine's other tenants);
- the server CPU a decided review costs over the trivial app's request (distinct load).

The load generator is `wrk` when installed (keep-alive, C; the distinct pods are made by its
Lua `request()`, for the trivial app too), else standard-library threads with keep-alive TLS
connections. Both share the 2 CPUs with the server: the figures are ratios measured in the same
run, not absolute capacity.

    python benchmarks/bench_server.py [--seconds 3] [--rounds 3] [--connections 8]
                                      [--generator auto|wrk|python] [--fixed-rate 1000]

All servers run the build of `webhook` the interpreter imports: .venv-compiled/bin/python for the
compiled core the image ships (scripts/setup-compiled.sh), .venv/bin/python for the pure sources.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import itertools
import json
import os
import random
import re
import shutil
import signal
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REVIEW = ROOT / "examples" / "admission" / "pod-review.json"
WORKERS = 2
THREADS = 4
WORKER_CLASSES = ("gthread", "sync")
HEADERS = {"Content-Type": "application/json"}
PACED_START = 0.5


# --- the servers (run in a child process: gunicorn's master owns its process) ------------------
def serve(app: str, worker_class: str, cert_dir: Path, port_file: Path) -> None:
    from webhook.server.gunicorn_app import ServerSettings, WebhookServer
    from webhook.tls.reload import TLSFiles

    threads = THREADS if worker_class == "gthread" else 1  # gunicorn turns sync with threads into gthread
    settings = ServerSettings(
        "127.0.0.1:0", TLSFiles.in_directory(cert_dir), WORKERS, threads, worker_class=worker_class
    )
    factory = trivial_app if app == "trivial" else None
    WebhookServer(settings, default_sources, partial(write_port, port_file), factory).run()


def default_sources() -> tuple[Any, Any]:
    from webhook.sources import FileInventorySource, StaticCatalogSource

    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    return catalog, FileInventorySource(ROOT / "examples" / "inventories" / "mixed-cluster.yaml")


def trivial_app(sources: Any) -> Any:
    """The baseline: parse the review, allow it, echo the uid. Nothing else."""
    from flask import Flask, Response, request

    app = Flask("trivial")

    def mutate() -> Response:
        uid = json.loads(request.get_data())["request"]["uid"]
        answer = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}
        body = json.dumps({**answer, "response": {"uid": uid, "allowed": True}})
        return Response(body, 200, mimetype="application/json")

    app.add_url_rule("/mutate", "mutate", mutate, methods=["POST"])
    app.add_url_rule("/readyz", "readyz", lambda: "ok")
    return app


def write_port(port_file: Path, addresses: Any) -> None:
    port_file.write_text(str(addresses[0][1]))


@dataclass(frozen=True)
class Server:
    port: int
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU of gunicorn's master and its workers so far (Linux /proc)."""
        ticks = os.sysconf("SC_CLK_TCK")
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        total = 0
        for pid in [str(self.pid), *children]:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])
        return total / ticks


@contextmanager
def running(app: str, worker_class: str, workdir: Path) -> Iterator[Server]:
    port_file = workdir / f"{app}-{worker_class}.port"
    log = (workdir / f"{app}-{worker_class}.log").open("wb")
    command = [sys.executable, __file__, "serve", app, worker_class, str(workdir / "certs"), str(port_file)]
    process = subprocess.Popen(command, stdout=log, stderr=log, cwd=ROOT)
    try:
        port = wait_ready(process, port_file, workdir / "certs" / "ca.crt")
        yield Server(port, process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        log.close()


def wait_ready(process: subprocess.Popen[bytes], port_file: Path, ca: Path) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if port_file.exists() and port_file.read_text():
            port = int(port_file.read_text())
            try:
                if request(connect(port, ca), "GET", "/readyz", b"")[0] == 200:
                    return port
            except OSError:
                pass
        time.sleep(0.05)
    raise RuntimeError(f"the {port_file.stem} server did not start; see {port_file.with_suffix('.log')}")


# --- load ------------------------------------------------------------------------------------
def connect(port: int, ca: Path) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cafile=str(ca))
    return http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=30)


def request(conn: http.client.HTTPSConnection, method: str, path: str, body: bytes) -> tuple[int, bytes]:
    conn.request(method, path, body=body or None, headers=HEADERS if body else {})
    response = conn.getresponse()
    return response.status, response.read()


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, latency: float | None) -> None:
        with self.lock:
            if latency is None:
                self.errors += 1
            else:
                self.latencies.append(latency)


def post(conn: http.client.HTTPSConnection, body: bytes) -> bool:
    try:
        status, _ = request(conn, "POST", "/mutate", body)
    except (OSError, http.client.HTTPException):
        conn.close()
        return False
    return status == 200


# --- the two loads ---------------------------------------------------------------------------
LOADS = ("replicas", "distinct")
SEQUENCE_ANNOTATION = "bench.gpu-webhook.io/sequence"
_SEQUENCE = "@@sequence@@"
_TOKEN = "@@token@@"
TOKEN_LETTERS = "bcdfghjklmnpqrstvwxz2456789"
"""What the API server's name generator draws a token volume's five characters from."""
TOKEN_SOURCES = [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
]
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class Bodies:
    """The reviews a load sends, each pod as the API server hands it to a webhook: with its own
    service-account token volume (`kube-api-access-` and five random characters, mounted in every
    container, as the ServiceAccount admission plugin adds it). `replicas`: otherwise the same
    pod every time; `distinct`: each also with its own value of SEQUENCE_ANNOTATION.
    `text` is the review's JSON with marks where those go."""

    load: str
    text: str
    counter: Iterator[int] = field(default_factory=itertools.count, compare=False)

    @classmethod
    def of(cls, load: str, review: bytes) -> Bodies:
        document = json.loads(review)
        pod = document["request"]["object"]
        spec = pod.setdefault("spec", {})
        name = f"kube-api-access-{_TOKEN}"
        spec.setdefault("volumes", []).append({"name": name, "projected": {"sources": TOKEN_SOURCES}})
        for group in ("initContainers", "containers"):
            for container in spec.get(group) or []:
                mount = {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
                container.setdefault("volumeMounts", []).append(mount)
        if load == "distinct":
            pod.setdefault("metadata", {}).setdefault("annotations", {})[SEQUENCE_ANNOTATION] = _SEQUENCE
        return cls(load, json.dumps(document))

    def next(self) -> bytes:
        """The next review to send (thread-safe: `itertools.count` is atomic under the GIL)."""
        token = "".join(random.choices(TOKEN_LETTERS, k=5))
        text = self.text.replace(_TOKEN, token)
        if self.load == "distinct":
            text = text.replace(_SEQUENCE, f"{next(self.counter)}-{time.monotonic_ns()}")
        return text.encode()

    def wrk_lines(self) -> list[str]:
        """wrk's Lua: `request()` makes each body (its sequence unique across threads and runs)."""
        return [
            'wrk.method = "POST"',
            'wrk.headers["Content-Type"] = "application/json"',
            f"local text = {_lua_string(self.text)}",
            f'local letters = "{TOKEN_LETTERS}"',
            f'local run = "{time.monotonic_ns()}"',
            "local threads = 0",
            'function setup(thread) thread:set("id", threads); threads = threads + 1 end',
            "function init(args) math.randomseed(os.time() + 7919 * id) end",
            "local function token()",
            "  local picked = {}",
            "  for i = 1, 5 do local k = math.random(#letters); picked[i] = letters:sub(k, k) end",
            "  return table.concat(picked)",
            "end",
            "local n = 0",
            "function request()",
            "  n = n + 1",
            f'  local body = text:gsub("{_TOKEN}", token())',
            f'  body = body:gsub("{_SEQUENCE}", run .. "-" .. id .. "-" .. n)',
            "  return wrk.format(nil, nil, nil, body)",
            "end",
        ]


def _lua_string(text: str) -> str:
    """A Lua long string: no escapes inside, so JSON goes in as it is."""
    assert "]==]" not in text and not text.startswith("\n")
    return f"[==[{text}]==]"


def saturate_python(port: int, ca: Path, bodies: Bodies, connections: int, seconds: float) -> int:
    """Closed loop: every connection sends its next request as soon as the last one is answered."""
    tally = Tally()
    stop_at = time.monotonic() + seconds

    def loop() -> None:
        conn = connect(port, ca)
        while time.monotonic() < stop_at:
            tally.add(0.0 if post(conn, bodies.next()) else None)
        conn.close()

    run_threads(loop, connections)
    check_errors(tally)
    return len(tally.latencies)


@dataclass(frozen=True)
class Latency:
    rate: float
    achieved: float
    p50: float
    p99: float
    count: int


def wrk(
    port: int, bodies: Bodies, connections: int, seconds: float, workdir: Path, delay_ms: float = 0
) -> str:
    """Run wrk against /mutate; with `delay_ms`, each connection waits that long between requests."""
    script = workdir / "post.lua"
    lines = bodies.wrk_lines()
    if delay_ms:
        lines.append(f"function delay() return {delay_ms:.3f} end")
    script.write_text("\n".join(lines) + "\n")
    url = f"https://127.0.0.1:{port}/mutate"
    command = ["wrk", "-t2", f"-c{connections}", f"-d{round(seconds)}s", "--latency", "-s", str(script), url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    failed = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if failed or "requests in" not in output:
        raise RuntimeError(f"wrk failed:\n{output}")
    return output


def saturate_wrk(port: int, bodies: Bodies, connections: int, seconds: float, workdir: Path) -> int:
    return int(_found(r"(\d+) requests in", wrk(port, bodies, connections, seconds, workdir))[0])


PACING_TRIES = 4


def paced_wrk(port: int, bodies: Bodies, rate: float, seconds: float, workdir: Path, conns: int) -> Latency:
    """Each connection pauses between an answer and its next request, so it sends one request
    per pause plus answer time: from each try's rate, the pause is set again to what leaves that
    answer time, until the rate is within 5% of `rate`; else the try closest to it counts (the
    rate it reached is reported). Latency is from send to answer (wrk, not wrk2: closed loop)."""
    delay_ms = conns * 1000 / rate
    tries: list[tuple[float, str]] = []
    for _ in range(PACING_TRIES):
        output = wrk(port, bodies, conns, seconds, workdir, delay_ms=delay_ms)
        achieved = float(_found(r"Requests/sec:\s+([\d.]+)", output)[0])
        tries.append((achieved, output))
        if abs(achieved - rate) <= 0.05 * rate:
            break
        answer_ms = max(0.0, conns * 1000 / achieved - delay_ms)
        delay_ms = max(0.001, conns * 1000 / rate - answer_ms)
    achieved, output = min(tries, key=lambda attempt: abs(attempt[0] - rate))
    answered = int(_found(r"(\d+) requests in", output)[0])
    return Latency(rate, achieved, _wrk_ms(output, "50%"), _wrk_ms(output, "99%"), answered)


def _wrk_ms(output: str, percent: str) -> float:
    value, unit = _found(rf"^\s+{percent}\s+([\d.]+)(us|ms|s)\s*$", output)
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def _found(pattern: str, output: str) -> tuple[str, ...]:
    match = re.search(pattern, output, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"cannot read wrk's output ({pattern}):\n{output}")
    return match.groups()


def paced_python(
    port: int, ca: Path, bodies: Bodies, rate: float, seconds: float, connections: int
) -> Latency:
    began = time.monotonic()
    tally = paced(port, ca, bodies, rate, seconds, connections)
    samples = [s * 1000 for s in tally.latencies]
    achieved = len(samples) / (time.monotonic() - began - PACED_START)
    return Latency(rate, achieved, percentile(samples, 0.50), percentile(samples, 0.99), len(samples))


def paced(port: int, ca: Path, bodies: Bodies, rate: float, seconds: float, connections: int) -> Tally:
    """Open loop at `rate` req/s; latency counts from the scheduled send time."""
    tally = Tally()
    interval = connections / rate
    start = time.monotonic() + PACED_START

    def loop(offset: float) -> None:
        conn = connect(port, ca)
        post(conn, bodies.next())  # handshake and warm-up outside the measurement
        scheduled = start + offset
        while scheduled < start + seconds:
            time.sleep(max(0.0, scheduled - time.monotonic()))
            ok = post(conn, bodies.next())
            tally.add(time.monotonic() - scheduled if ok else None)
            scheduled += interval
        conn.close()

    threads = [threading.Thread(target=loop, args=(i * interval / connections,)) for i in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    check_errors(tally)
    return tally


def run_threads(target: Any, count: int) -> None:
    threads = [threading.Thread(target=target) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def check_errors(tally: Tally) -> None:
    if tally.errors:
        raise RuntimeError(f"{tally.errors} requests failed")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# --- the run ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    rate: float
    """Requests answered per second."""
    cpu_ms: float
    """Server CPU per request (master + workers): what a dedicated machine's capacity follows."""


@dataclass
class Run:
    seconds: float
    connections: int
    use_wrk: bool
    workdir: Path
    fixed_rate: float = 1000.0
    review: bytes = field(default_factory=REVIEW.read_bytes)

    @property
    def ca(self) -> Path:
        return self.workdir / "certs" / "ca.crt"

    def saturate(self, server: Server, load: str, seconds: float | None = None) -> Sample:
        seconds = seconds or self.seconds
        bodies = Bodies.of(load, self.review)
        cpu, started = server.cpu_seconds(), time.monotonic()
        if self.use_wrk:
            answered = saturate_wrk(server.port, bodies, self.connections, seconds, self.workdir)
        else:
            answered = saturate_python(server.port, self.ca, bodies, self.connections, seconds)
        elapsed, used = time.monotonic() - started, server.cpu_seconds() - cpu
        return Sample(answered / elapsed, used * 1000 / max(answered, 1))

    def latency(self, server: Server, load: str, rate: float) -> Latency:
        bodies = Bodies.of(load, self.review)
        if self.use_wrk:
            return paced_wrk(server.port, bodies, rate, self.seconds, self.workdir, self.connections)
        return paced_python(server.port, self.ca, bodies, rate, self.seconds, self.connections)

    def cache_hits(self, server: Server, load: str) -> float:
        """The share of /mutate's reviews answered from the decision cache during a short run of
        `load`, from the webhook's own metric (each worker adds its tally every FLUSH_SECONDS)."""
        before = self._cache_counts(server)
        self.saturate(server, load, 1)
        time.sleep(FLUSH_WAIT)
        hits, total = (
            after - earlier for after, earlier in zip(self._cache_counts(server), before, strict=True)
        )
        return hits / max(total, 1)

    def _cache_counts(self, server: Server) -> tuple[float, float]:
        conn = connect(server.port, self.ca)
        try:
            status, body = request(conn, "GET", "/metrics", b"")
        finally:
            conn.close()
        if status != 200:
            raise RuntimeError(f"/metrics answered {status}")
        counts = {"hit": 0.0, "total": 0.0}
        for line in body.decode().splitlines():
            match = re.match(r"gpu_webhook_decision_cache_total\{(.*)\} (\S+)$", line)
            if match and 'endpoint="mutate"' in match[1]:
                counts["total"] += float(match[2])
                counts["hit"] += float(match[2]) if 'result="hit"' in match[1] else 0.0
        return counts["hit"], counts["total"]


FLUSH_WAIT = 1.5
"""Longer than the webhook's FLUSH_SECONDS: every worker has added its tally to the metrics."""


@dataclass
class Figures:
    samples: dict[tuple[str, str], list[Sample]] = field(default_factory=dict)
    """By (app, load): the trivial app or the webhook, under each load."""
    latencies: dict[str, Latency] = field(default_factory=dict)
    """By load (gthread): /mutate at half the trivial app's saturating rate under that load."""
    fixed: dict[str, Latency] = field(default_factory=dict)
    """By load (gthread): /mutate at the run's fixed rate."""
    cache_hits: dict[str, float] = field(default_factory=dict)
    """By load (gthread): the share of /mutate's reviews answered from the decision cache."""

    def add(self, app: str, load: str, sample: Sample) -> None:
        self.samples.setdefault((app, load), []).append(sample)

    def rate(self, app: str, load: str) -> float:
        return statistics.median(s.rate for s in self.samples[app, load])

    def cpu_ms(self, app: str, load: str) -> float:
        return statistics.median(s.cpu_ms for s in self.samples[app, load])

    def ratio(self, load: str) -> float:
        """Median of the per-round ratios: each round measures the apps back to back."""
        pairs = zip(self.samples["trivial", load], self.samples["webhook", load], strict=True)
        return statistics.median(w.rate / t.rate for t, w in pairs)


def measure(run: Run, worker_class: str, rounds: int) -> Figures:
    """Both servers up at once (an idle one costs nothing); rounds alternate between the servers
    and the loads so a change in the machine's background load hits them alike."""
    figures = Figures()
    with (
        running("trivial", worker_class, run.workdir) as trivial,
        running("webhook", worker_class, run.workdir) as hook,
    ):
        servers = {"trivial": trivial, "webhook": hook}
        for server in servers.values():  # warm-up
            for load in LOADS:
                run.saturate(server, load, 1)
        for _ in range(rounds):
            for load in LOADS:
                for app, server in servers.items():
                    figures.add(app, load, run.saturate(server, load))
        if worker_class != "gthread":
            return figures  # sync pays a TLS handshake per review: throughput says enough
        for load in LOADS:
            figures.latencies[load] = run.latency(hook, load, figures.rate("trivial", load) / 2)
            figures.fixed[load] = run.latency(hook, load, run.fixed_rate)
            figures.cache_hits[load] = run.cache_hits(hook, load)
    return figures


# --- where /mutate's extra time goes (in process, flask test client) ------------------------
BREAKDOWN_CALLS = 900


def breakdown() -> None:
    """CPU per /mutate request through flask, whole and with one part left out at a time; the
    parts cost more here than alone in a loop (a whole request leaves colder caches). Prints JSON."""
    trivial, app, body, parts = breakdown_setup()
    trivial_us, whole = _request_cpu_us(trivial, body), _request_cpu_us(app, body)
    saved = {}
    for name, patch in parts.items():
        with patch:
            saved[name] = whole - _request_cpu_us(app, body)
    print(json.dumps({"trivial": trivial_us, "mutate": whole, "saved": saved}))


PARTS = ("the review log line", "metrics", "decide", "building the answer")


def breakdown_setup() -> tuple[Any, Any, bytes, dict[str, AbstractContextManager[Any]]]:
    """The trivial app, the webhook's app (sources started), the review, and the parts of /mutate
    that can be left out one at a time (context managers)."""
    import logging
    from unittest import mock

    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="bench-breakdown-")
    from webhook import admission
    from webhook.server.app import create_app, runtime_of, start_sources
    from webhook.server.logs import LOGGER, configure_logging
    from webhook.server.metrics import Metrics

    configure_logging(open(os.devnull, "w"))  # noqa: SIM115 - lives as long as this process
    catalog, inventory = default_sources()
    app = create_app(catalog, inventory, decision_cache=0)  # every request decided, as the parts say
    start_sources(app)
    body = REVIEW.read_bytes()
    review = admission.parse_body(body)
    decision = admission.decide_review(review, *runtime_of(app).snapshot())
    answer = admission.mutation_response(review, decision)
    left_out: tuple[AbstractContextManager[Any], ...] = (
        _level(logging.getLogger(LOGGER), logging.WARNING),
        mock.patch.object(Metrics, "review", lambda *a, **k: None),
        mock.patch.object(admission, "decide_review", lambda *a: decision),
        mock.patch.object(admission, "mutation_response", lambda *a: answer),
    )
    return trivial_app(None), app, body, dict(zip(PARTS, left_out, strict=True))


@contextmanager
def _level(logger: Any, level: int) -> Iterator[None]:
    """setLevel, not the attribute: the logger caches isEnabledFor until setLevel clears it."""
    before = logger.level
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.setLevel(before)


def _request_cpu_us(app: Any, body: bytes) -> float:
    """The lowest of three runs' CPU microseconds per request (the least disturbed run)."""
    client = app.test_client()
    for _ in range(100):
        client.post("/mutate", data=body, content_type="application/json")
    runs = []
    for _ in range(3):
        started = time.process_time()
        for _ in range(BREAKDOWN_CALLS // 3):
            client.post("/mutate", data=body, content_type="application/json")
        runs.append((time.process_time() - started) / (BREAKDOWN_CALLS // 3) * 1e6)
    return min(runs)


def run_breakdown() -> dict[str, Any]:
    output = subprocess.run(
        [sys.executable, __file__, "breakdown"], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


# --- the same breakdown in instructions (valgrind): what a shared machine's noise cannot blur ---
COUNT_WARMUP = 50
COUNTS = (50, 550)
"""Each variant runs twice; the difference over the extra requests leaves start-up out. Both
runs start counting from the same state (hash seed fixed, garbage collected after warm-up)."""


def count_requests(variant: str, count: int) -> None:
    """The child callgrind counts: warm up, then `count` requests of one variant."""
    trivial, app, body, parts = breakdown_setup()
    with nullcontext() if variant in ("trivial", "mutate") else parts[variant]:
        client = (trivial if variant == "trivial" else app).test_client()
        for _ in range(COUNT_WARMUP):
            client.post("/mutate", data=body, content_type="application/json")
        gc.collect()
        for _ in range(count):
            client.post("/mutate", data=body, content_type="application/json")


def instruction_breakdown() -> dict[str, float]:
    """Instructions per request of the trivial app, /mutate, and /mutate without each part."""
    variants = ["trivial", "mutate", *PARTS]
    jobs = [(variant, count) for variant in variants for count in COUNTS]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counted = dict(zip(jobs, pool.map(lambda job: _instructions(*job), jobs), strict=True))
    spread = COUNTS[1] - COUNTS[0]
    return {v: (counted[v, COUNTS[1]] - counted[v, COUNTS[0]]) / spread for v in variants}


def _instructions(variant: str, count: int) -> int:
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
    command += [sys.executable, __file__, "count", variant, str(count)]
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT, env=environment)
    return int(_found(r"Collected : (\d+)", result.stderr)[0])


def report_instructions(counts: dict[str, float]) -> None:
    from webhook.buildinfo import core_build

    trivial, whole = counts.pop("trivial"), counts.pop("mutate")
    print(f"instructions per request in process through flask (valgrind; webhook.core: {core_build()})")
    print(f"  trivial app {trivial:12,.0f}")
    extra = whole - trivial
    print(f"  /mutate     {whole:12,.0f}  ratio {trivial / whole:.2f}x, {extra:,.0f} more; of that:")
    for name, without in counts.items():
        print(f"    {name:<22} {whole - without:10,.0f}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], Path(sys.argv[4]), Path(sys.argv[5]))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "breakdown":
        breakdown()
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "count":
        count_requests(sys.argv[2], int(sys.argv[3]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3, help="per measurement (default: 3)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default: 3)")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--generator", choices=("auto", "wrk", "python"), default="auto")
    parser.add_argument(
        "--fixed-rate", type=float, default=1000.0, help="req/s of the fixed-rate latency (default: 1000)"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="instead: count each part's instructions per request with valgrind (about 3 minutes)",
    )
    args = parser.parse_args()
    if args.instructions:
        if shutil.which("valgrind") is None:
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        report_instructions(instruction_breakdown())
        return 0
    use_wrk = args.generator == "wrk" or (args.generator == "auto" and shutil.which("wrk") is not None)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="bench-server-") as temporary:
        run = Run(args.seconds, args.connections, use_wrk, Path(temporary), args.fixed_rate)
        write_certificates(run.workdir / "certs")
        results = {worker_class: measure(run, worker_class, args.rounds) for worker_class in WORKER_CLASSES}
        decide_ms = in_process_decide_ms(run.review)
    parts = run_breakdown()
    report(results, decide_ms, "wrk" if use_wrk else "python threads", time.monotonic() - started)
    report_breakdown(parts)
    return 0


def write_certificates(directory: Path) -> None:
    from webhook.tls.certgen import ensure_self_signed

    ensure_self_signed(directory, ["127.0.0.1", "localhost"])


def in_process_decide_ms(body: bytes, repeat: int = 300) -> float:
    """parse + decide + response for the same review, in this process (no HTTP, no TLS)."""
    from webhook import admission

    catalog, inventory = default_sources()
    catalog.start()
    inventory.start()
    timings = []
    for _ in range(repeat):
        began = time.perf_counter()
        review = admission.parse_body(body)
        admission.mutation_response(
            review, admission.decide_review(review, catalog.current(), inventory.current())
        )
        timings.append(time.perf_counter() - began)
    return statistics.median(timings) * 1000


def report(results: dict[str, Figures], decide_ms: float, generator: str, elapsed: float) -> None:
    from webhook.buildinfo import core_build

    print(f"gpu-webhook server benchmark: {WORKERS} workers, {THREADS} threads (gthread), TLS, loopback")
    print(f"webhook.core: {core_build()} (the interpreter's installed gpu-webhook)")
    print(f"load generator: {generator}; review: {REVIEW.relative_to(ROOT)}; medians of alternating rounds")
    print("loads: replicas (the same pod every time), distinct (each pod different: each one decided)")
    print(
        f"{'worker class':<14}{'load':<10}{'trivial req/s':>14}{'/mutate req/s':>14}{'ratio':>7}"
        f"{'trivial CPU ms':>16}{'/mutate CPU ms':>16}{'cache hits':>12}"
    )
    for worker_class, figures in results.items():
        for load in LOADS:
            hits = figures.cache_hits.get(load)
            print(
                f"{worker_class:<14}{load:<10}{figures.rate('trivial', load):>14.0f}"
                f"{figures.rate('webhook', load):>14.0f}{figures.ratio(load):>6.2f}x"
                f"{figures.cpu_ms('trivial', load):>16.2f}{figures.cpu_ms('webhook', load):>16.2f}"
                + (f"{hits:>12.0%}" if hits is not None else "")
            )
    print("  (ratio: throughput, target >= 0.8x; CPU: the server's per request, master and workers)")
    threaded = results["gthread"]
    decide_cpu_ms = threaded.cpu_ms("webhook", "distinct") - threaded.cpu_ms("webhook", "replicas")
    print(f"gthread: deciding instead of answering from the cache costs {decide_cpu_ms:.2f} ms of server CPU")
    decided_over = threaded.cpu_ms("webhook", "distinct") - threaded.cpu_ms("trivial", "distinct")
    print(f"gthread: a decided review costs {decided_over:.2f} ms of server CPU more than the trivial app's")
    print(f"in-process parse + decide + response of the review, each decided: {decide_ms:.2f} ms")
    gthread, sync = (results[c].rate("webhook", "distinct") for c in ("gthread", "sync"))
    print(f"/mutate throughput under the distinct load, gthread vs sync: {gthread / sync:.2f}x")
    print("/mutate latency at half the trivial app's saturating rate (target p99 < 10 ms):")
    for worker_class, figures in results.items():
        _print_latencies(worker_class, figures, figures.latencies)
    print("/mutate latency at a fixed rate:")
    for worker_class, figures in results.items():
        _print_latencies(worker_class, figures, figures.fixed)
    print(f"total time {elapsed:.0f} s")


def _print_latencies(worker_class: str, figures: Figures, latencies: dict[str, Latency]) -> None:
    for load, latency in latencies.items():
        overload = "  (above /mutate's capacity)" if latency.rate > figures.rate("webhook", load) else ""
        print(
            f"  {worker_class:<8}{load:<10} asked {latency.rate:5.0f} req/s, got {latency.achieved:5.0f}:"
            f" p50 {latency.p50:7.2f} ms  p99 {latency.p99:7.2f} ms  n={latency.count}{overload}"
        )


def report_breakdown(parts: dict[str, Any]) -> None:
    trivial, whole = parts["trivial"], parts["mutate"]
    print(f"in process through flask (test client), CPU per request: trivial {trivial:.0f} us, ", end="")
    print(f"/mutate {whole:.0f} us, {whole - trivial:.0f} us more; of that, left out one at a time:")
    for name, saved in parts["saved"].items():
        print(f"  {name:<22} {saved:6.0f} us")


if __name__ == "__main__":
    raise SystemExit(main())
