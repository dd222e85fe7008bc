"""Measure the embedded API server: start-to-ready, creates/s, binds/s, watch-event latency.

Upstream counterpart: none (kube-apiserver has its own load tests); this is the small harness
that issue 2 asks for, to be folded into ``nox -s bench``.

- start-to-ready: from spawning ``python -m minisched.apiserver --port 0`` to its ready line
  (median of several starts);
- creates/s and binds/s: one official-client thread (``kubernetes`` 37) creating pods, then
  binding each (``_preload_content=False``, as DESIGN.md section 3 says);
- watch latency: N raw watch streams (urllib3, one thread each, JSON lines parsed with
  ``json.loads``), time from just before the client sends a create to the moment each watcher
  has decoded the ADDED event, p50 and p99 over all (event, watcher) pairs.

Run: ``python -m minisched.bench.apiserver [--pods 1000] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

import urllib3
from kubernetes import client, config

READY = "minisched-apiserver ready "


def start(*args: str) -> tuple[subprocess.Popen[str], dict[str, str], float]:
    began = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "minisched.apiserver", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - began
    if not line.startswith(READY):
        proc.kill()
        raise RuntimeError(f"server did not start: {line!r}")
    fields = dict(part.split("=", 1) for part in line[len(READY) :].split())
    return proc, fields, elapsed


def stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(10)


def start_to_ready(runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        proc, _, elapsed = start()
        times.append(elapsed)
        stop(proc)
    return times


def pod(name: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause:3.9")]),
    )


def creates_and_binds(core: client.CoreV1Api, n: int) -> tuple[float, float]:
    began = time.perf_counter()
    for i in range(n):
        core.create_namespaced_pod("default", pod(f"bench-{i}"))
    create_rate = n / (time.perf_counter() - began)
    began = time.perf_counter()
    for i in range(n):
        response = core.create_namespaced_pod_binding(
            f"bench-{i}",
            "default",
            client.V1Binding(
                metadata=client.V1ObjectMeta(name=f"bench-{i}"),
                target=client.V1ObjectReference(kind="Node", name=f"node-{i % 10}"),
            ),
            _preload_content=False,
        )
        response.data  # noqa: B018 - read the body: returns the connection to the pool
    bind_rate = n / (time.perf_counter() - began)
    return create_rate, bind_rate


def watch_latency(
    url: str, token: str, core: client.CoreV1Api, watchers: int, events: int, ns: str
) -> list[float]:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
    rv = core.list_namespaced_pod(ns).metadata.resource_version
    sent: dict[str, float] = {}
    received: list[list[tuple[str, float]]] = [[] for _ in range(watchers)]
    ready = threading.Barrier(watchers + 1)
    done = threading.Event()

    def watch(index: int) -> None:
        http = urllib3.PoolManager(maxsize=1)
        response = http.request(
            "GET",
            f"{url}/api/v1/namespaces/{ns}/pods?watch=true&resourceVersion={rv}&timeoutSeconds=120",
            headers={"Authorization": f"Bearer {token}"},
            preload_content=False,
        )
        ready.wait()
        buffer = b""
        for chunk in response.stream(65536, decode_content=False):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                ev = json.loads(line)
                received[index].append((ev["object"]["metadata"]["name"], time.perf_counter()))
            if len(received[index]) >= events or done.is_set():
                break
        response.release_conn()

    threads = [threading.Thread(target=watch, args=(i,), daemon=True) for i in range(watchers)]
    for t in threads:
        t.start()
    ready.wait()
    for i in range(events):
        name = f"lat-{i}"
        sent[name] = time.perf_counter()
        core.create_namespaced_pod(ns, pod(name))
        time.sleep(0.002)  # a steady stream rather than a burst (this is a measurement)
    for t in threads:
        t.join(30)
    done.set()
    return [(at - sent[name]) * 1000 for per in received for name, at in per if name in sent]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(pods: int = 1000, starts: int = 7, events: int = 200) -> dict[str, Any]:
    """Every measurement of this module, as a dict (``nox -s bench`` stores it as is)."""
    results: dict[str, Any] = {}
    ready = start_to_ready(starts)
    results["start_to_ready_s"] = {"median": statistics.median(ready), "all": ready}

    token = secrets.token_hex(16)
    proc, fields, _ = start("--watch-history", "20000", "--token", token)
    try:
        api_client = config.new_client_from_config(config_file=fields["kubeconfig"])
        core = client.CoreV1Api(api_client)
        creates, binds = creates_and_binds(core, pods)
        results["creates_per_s"] = creates
        results["binds_per_s"] = binds
        for watchers in (1, 50):
            lat = watch_latency(fields["url"], token, core, watchers, events, f"lat-{watchers}")
            results[f"watch_latency_ms_{watchers}"] = {
                "p50": percentile(lat, 0.50),
                "p99": percentile(lat, 0.99),
                "samples": len(lat),
            }
        api_client.close()
    finally:
        stop(proc)

    results["pods"] = pods
    results["events"] = events
    return results


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pods", type=int, default=1000, help="pods to create and bind")
    p.add_argument("--starts", type=int, default=7, help="process starts to time")
    p.add_argument("--events", type=int, default=200, help="events per watch-latency run")
    p.add_argument("--json", help="also write the results to this JSON file")
    args = p.parse_args(argv)

    results = measure(args.pods, args.starts, args.events)
    rows = [
        ("start-to-ready (median)", f"{results['start_to_ready_s']['median'] * 1000:.0f} ms"),
        (f"creates/s (1 client thread, {args.pods} pods)", f"{results['creates_per_s']:.0f}"),
        (f"binds/s (1 client thread, {args.pods} pods)", f"{results['binds_per_s']:.0f}"),
    ]
    for watchers in (1, 50):
        lat = results[f"watch_latency_ms_{watchers}"]
        rows.append(
            (
                f"watch latency, {watchers} watcher(s) (raw urllib3 streams)",
                f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms",
            )
        )
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:<{width}}  {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
