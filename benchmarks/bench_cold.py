"""What decide costs when the CPU caches do not hold it, as inside a server under load.

Under wrk, in a gunicorn worker, `decide_review` takes two to four times the CPU it takes in a
loop of its own (bench_server.py: its distinct load, each review decided, against its replicas
load, each answered from the decision cache). This script shows why, on the review of
bench_server.py (examples/admission/pod-review.json), in one process:

- CPU per `decide_review` (thread time, median of calls) when the calls follow each other, when
  each follows a trivial flask request (the baseline app of bench_server.py), and when each
  follows a copy of 8 MiB (which empties this machine's 2 MiB per-core L2 and more);
- with `--valgrind`: the cache lines one decide misses in a simulated cache after a 4 MiB copy
  (valgrind's cachegrind, its last level given this CPU's L2 geometry from sysfs), code and data,
  by where the code is: the compiled core, libpython, the rest. About two minutes.

    python benchmarks/bench_cold.py [--calls 1000] [--valgrind]

It measures the build of `webhook` that the interpreter imports (.venv-compiled/bin/python for
the compiled core the image ships).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after site-packages: an installed build (the compiled one) wins

from benchmarks.bench_server import breakdown_setup  # noqa: E402

COPIED = 8 * 1024 * 1024
VALGRIND_COPY = 4 * 1024 * 1024
VALGRIND_CALLS = 300
DEFAULT_L2 = (2 * 1024 * 1024, 16, 64)
EVENTS = ("Ir", "ILmr", "DLmr")


Call = Callable[[], Any]


def review_calls() -> tuple[Call, Call, Call]:
    """Parse the review, decide the parsed review (against the running sources), and a trivial
    flask request."""
    from webhook import admission
    from webhook.server.app import runtime_of

    trivial, app, body, _ = breakdown_setup()
    snapshot = runtime_of(app).snapshot()
    client = trivial.test_client()
    parsed: list[Any] = []

    def parse() -> None:
        parsed[:] = [admission.parse_body(body)]

    def decide() -> Any:
        return admission.decide_review(parsed[0], *snapshot)

    def trivial_request() -> Any:
        return client.post("/mutate", data=body, content_type="application/json")

    return parse, decide, trivial_request


def cpu_ns(parse: Call, decide: Call, before: Call, calls: int) -> list[int]:
    """Thread CPU (ns) of `decide`, each call after `before` and then the review's parse (not
    timed: in the server the pod is decided right after it is parsed)."""
    samples = []
    for _ in range(calls):
        before()
        parse()
        started = time.thread_time_ns()
        decide()
        samples.append(time.thread_time_ns() - started)
    return samples


def timed(calls: int, rounds: int = 10) -> None:
    """The cases take turns, `calls // rounds` calls at a time, so a change in the machine's
    load hits them alike."""
    parse, decide, trivial_request = review_calls()
    buffer = bytearray(COPIED)
    cases = {
        "one after another": lambda: None,
        "each after a trivial flask request": trivial_request,
        f"each after copying {COPIED >> 20} MiB": lambda: bytes(buffer),
    }
    cpu_ns(parse, decide, lambda: None, 200)  # warm-up
    samples: dict[str, list[int]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, before in cases.items():
            samples[name] += cpu_ns(parse, decide, before, calls // rounds)
    results = {name: statistics.median(times) / 1000 for name, times in samples.items()}
    warm = results["one after another"]
    print(f"decide_review of the parsed review, thread CPU (median of {calls} calls):")
    for name, micros in results.items():
        print(f"  {name:<36} {micros:7.1f} us  {micros / warm:5.2f}x")


# --- valgrind: the cache lines one decide misses -------------------------------------------------
def child(mode: str, calls: int) -> None:
    """Run under cachegrind: a copy that empties the simulated cache and the review's parse, then
    (mode "decide") a decide."""
    parse, decide, _ = review_calls()
    buffer = bytearray(VALGRIND_COPY)
    for _ in range(20):
        parse()
        decide()
    for _ in range(calls):
        bytes(buffer)
        parse()
        if mode == "decide":
            decide()


def l2_geometry(cache: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> tuple[int, int, int]:
    """(size in bytes, ways, line bytes) of the first CPU's unified level-2 cache, from sysfs."""
    for index in sorted(cache.glob("index*")):
        try:
            level, kind = (index / "level").read_text().strip(), (index / "type").read_text().strip()
            if level == "2" and kind == "Unified":
                size = int((index / "size").read_text().strip().rstrip("K")) * 1024
                ways = int((index / "ways_of_associativity").read_text())
                return size, ways, int((index / "coherency_line_size").read_text())
        except (OSError, ValueError):
            break
    return DEFAULT_L2


def cachegrind(mode: str, geometry: tuple[int, int, int], out: Path) -> Counter[tuple[str, str]]:
    size, ways, line = geometry
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={size},{ways},{line}"]
    command += [f"--cachegrind-out-file={out}", sys.executable, "-P", __file__, "child", mode]
    environment = {**os.environ, "PYTHONHASHSEED": "0"}
    subprocess.run(command, capture_output=True, check=True, cwd=ROOT, env=environment)
    return by_place(out.read_text())


def by_place(text: str) -> Counter[tuple[str, str]]:
    """Each event summed by where the code is: the compiled core (mypyc's functions, `CPy...`,
    with the CPython header code inlined in them), libpython, or the rest (libc, msgspec...)."""
    totals: Counter[tuple[str, str]] = Counter()
    names: dict[tuple[str, str], str] = {}
    events: list[str] = []
    file = function = ""
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
            continue
        found = re.match(r"(fl|fi|fe|fn)=(?:\((\d+)\))?\s*(.*)", line)
        if found:
            kind, number, name = found.groups()
            space = "fn" if kind == "fn" else "fl"
            if number is not None:  # compressed: "(n) name" the first time, "(n)" after
                name = names.setdefault((space, number), name) if name else names.get((space, number), "")
            file, function = (file, name) if kind == "fn" else (name, function)
            continue
        if line[:1].isdigit():
            place = _place(file, function)
            for event, value in zip(events, line.split()[1:], strict=False):
                totals[place, event] += int(value)
    return totals


def _place(file: str, function: str) -> str:
    if function.startswith("CPy"):
        return "compiled core"
    if "/Python-3" in file:
        return "libpython"
    return "rest"


def missed() -> None:
    geometry = l2_geometry()
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as temporary:
        folder = Path(temporary)
        with_decide = cachegrind("decide", geometry, folder / "decide.out")
        without = cachegrind("parse", geometry, folder / "parse.out")
    size, ways, line = geometry
    print(
        f"one decide after a {VALGRIND_COPY >> 20} MiB copy, in a simulated {size >> 10} KiB {ways}-way cache"
    )
    print(f"of {line}-byte lines (this CPU's L2; valgrind's cachegrind, {VALGRIND_CALLS} reviews):")
    print(f"  {'code in':<16} {'instructions':>12} {'code lines':>11} {'data lines':>11}")
    for place in ("compiled core", "libpython", "rest"):
        per = [(with_decide[place, event] - without[place, event]) / VALGRIND_CALLS for event in EVENTS]
        print(f"  {place:<16} {per[0]:12,.0f} {per[1]:11,.0f} {per[2]:11,.0f}")


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "child":
        child(sys.argv[2], VALGRIND_CALLS)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="decides per case (default: 1000)")
    parser.add_argument(
        "--valgrind", action="store_true", help="also the cache lines missed (about 2 minutes)"
    )
    args = parser.parse_args()
    from webhook.buildinfo import core_build

    print(f"webhook.core: {core_build()}")
    timed(args.calls)
    if args.valgrind:
        if shutil.which("valgrind") is None:
            sys.exit("--valgrind needs valgrind (apt-get install valgrind)")
        missed()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
