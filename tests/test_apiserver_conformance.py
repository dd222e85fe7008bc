"""Replay the exchanges recorded from a real kube-apiserver v1.36.2 against the embedded server.

``tests/fixtures/conformance/README.md`` says how: run each case's steps in order (``${name}``
substitutions, watches in the background), normalise volatile fields, compare status codes,
content types, Status bodies exactly (messages unless ``loose``) and other bodies by key sets
and values; watches by event types (consecutive BOOKMARKs folded), objects, and whether the
server closed the stream.

One fresh server process serves the whole module; every case uses its own object names.
Where this server deliberately differs, ``EXPECTED_DIFFERENCES`` replaces the recorded answer
with ours and says why: the test then asserts our answer exactly.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3

from tests.apiserver_util import ServerProcess, start_server

FIXTURES = Path(__file__).parent / "fixtures" / "conformance"
# cases.jsonl: the first recording; cases-issue13.jsonl, cases-issue31.jsonl and
# cases-issue35.jsonl (CustomResourceDefinitions): recorded by record.py (issues 13, 31, 35).
CASES = [
    json.loads(line)
    for path in sorted(FIXTURES.glob("cases*.jsonl"))
    for line in path.read_text().splitlines()
    if line
]
CASES_BY_ID = {c["id"]: c for c in CASES}


def _invalid_binding(field: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "status": 422,
        "content_type": "application/json",
        "body": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": f'Binding "p" is invalid: {field}: {message}',
            "reason": "Invalid",
            "details": {
                "name": "p",
                "kind": "Binding",
                "causes": [{"reason": reason, "message": message, "field": field}],
            },
            "code": 422,
        },
    }


# (case id, step index) -> (why we differ, the answer we give instead)
EXPECTED_DIFFERENCES: dict[tuple[str, int], tuple[str, dict[str, Any]]] = {
    ("binding-bad-target", 2): (
        "upstream answers an empty target name with a 500 without reason (a bug); DESIGN.md "
        "asks for the fitting 4xx: 422 Invalid",
        _invalid_binding("target.name", "FieldValueRequired", "Required value"),
    ),
    ("binding-bad-target", 3): (
        "upstream answers a non-Node target with a 500 without reason; we answer 422 Invalid",
        _invalid_binding(
            "target.kind",
            "FieldValueNotSupported",
            'Unsupported value: "Pod": supported values: "Node", "<empty>"',
        ),
    ),
}

_RV_ON_CREATE = (
    "upstream's storage refuses a create carrying metadata.resourceVersion with a 500 without "
    "reason (a client error reported as a server error); we answer 400 BadRequest",
    {
        "status": 400,
        "content_type": "application/json",
        "body": {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "resourceVersion should not be set on objects to be created",
            "reason": "BadRequest",
            "code": 400,
        },
    },
)
EXPECTED_DIFFERENCES[("pod-create-forbidden-fields", 3)] = _RV_ON_CREATE
EXPECTED_DIFFERENCES[("pod-create-system-fields", 2)] = _RV_ON_CREATE

# Implemented rather than excused: Table output (kubectl get), storage compaction (the
# server's test-only POST /minisched/compact forgets the watch history, like an etcd
# compaction). Aggregated discovery is not served, and no recorded case needs it.

GENERATED_SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"
TIME_KEYS = {
    "creationTimestamp",
    "deletionTimestamp",
    "lastTransitionTime",
    "lastProbeTime",
    "lastHeartbeatTime",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "startTime",
    "timeAdded",
    "buildDate",
    "lastUpdateTime",
}


# --------------------------------------------------------------------------------------------
# Fixture: one server for the module
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    # Restarted once on its storage before the cases, as the recording server was: its watch
    # history then starts after resourceVersion 1 (case watch-rv-too-old).
    data = str(tmp_path_factory.mktemp("conformance-data"))
    first = start_server("--test-endpoints", "--seed", "7", "--data-dir", data)
    assert first.stop() == 0, first.stderr
    proc = start_server("--test-endpoints", "--seed", "7", "--data-dir", data)
    yield proc
    assert proc.stop() == 0, proc.stderr


@pytest.fixture(scope="module")
def http() -> Iterator[urllib3.PoolManager]:
    pool = urllib3.PoolManager(maxsize=4)
    yield pool
    pool.clear()


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------


class Normaliser:
    """The README's normalisation rules, with what this case has seen (uids, generated names)."""

    def __init__(self) -> None:
        self.uids: set[str] = set()
        self.generate_prefixes: set[str] = set()

    def learn(self, doc: Any) -> None:
        if isinstance(doc, dict):
            for key, value in doc.items():
                if key == "uid" and isinstance(value, str) and value:
                    self.uids.add(value)
                self.learn(value)
        elif isinstance(doc, list):
            for item in doc:
                self.learn(item)

    def text(self, s: str) -> str:
        for uid in self.uids:
            s = s.replace(uid, "<uid>")
        for prefix in self.generate_prefixes:
            s = re.sub(re.escape(prefix) + GENERATED_SUFFIX, "<generated>", s)
        s = re.sub(r"(too old resource version: \d+) \(\d+\)", r"\1 (<rv>)", s)
        s = re.sub(r"(Too large resource version: \d+, current: )\d+", r"\1<rv>", s)
        s = re.sub(r"(the ResourceVersion in record )\(\d+\)", r"\1(<rv>)", s)
        return s

    def __call__(self, doc: Any, key: str = "") -> Any:
        if isinstance(doc, dict):
            out = {}
            for k, v in doc.items():
                if k == "managedFields":
                    continue
                out[k] = self(v, k)
            meta = out.get("metadata")
            if isinstance(meta, dict) and meta.get("generateName") and "name" in meta:
                meta["name"] = "<generated>"
            if out.get("kind") == "Table" and isinstance(out.get("columnDefinitions"), list):
                names = [c.get("name") for c in out["columnDefinitions"]]
                if "Age" in names:
                    idx = names.index("Age")
                    for row in out.get("rows") or []:
                        row["cells"][idx] = "<age>"
            return out
        if isinstance(doc, list):
            return [self(v, key) for v in doc]
        if isinstance(doc, str):
            if key == "uid" and doc:
                return "<uid>"
            if key == "resourceVersion" and doc:
                return "<rv>"
            if key == "continue" and doc:
                return "<continue>"
            if key == "serverAddress":
                return "<address>"
            if key in TIME_KEYS and doc:
                return "<time>"
            return self.text(doc)
        return doc


def apply_view(body: Any, view: dict[str, Any] | None) -> Any:
    if not view or not isinstance(body, dict):
        return body
    body = copy.deepcopy(body)
    if "keep_resources" in view and body.get("kind") == "APIGroupDiscoveryList":
        # Aggregated discovery: resources by name, subresources as "resource/subresource".
        keep = set(view["keep_resources"])
        for item in body.get("items") or []:
            for version in item.get("versions") or []:
                kept = [r for r in version.get("resources") or [] if r.get("resource") in keep]
                for r in kept:
                    if "subresources" in r:
                        r["subresources"] = [
                            sub
                            for sub in r["subresources"]
                            if f"{r['resource']}/{sub.get('subresource')}" in keep
                        ]
                        if not r["subresources"]:
                            del r["subresources"]
                version["resources"] = kept
    elif "keep_resources" in view:
        keep = set(view["keep_resources"])
        body["resources"] = [r for r in body.get("resources", []) if r.get("name") in keep]
    if "keep_groups" in view and body.get("kind") == "APIGroupList":
        keep = set(view["keep_groups"])
        body["groups"] = [g for g in body.get("groups") or [] if g.get("name") in keep]
    elif "keep_groups" in view:
        keep = set(view["keep_groups"])
        body["items"] = [
            i for i in body.get("items") or [] if (i.get("metadata") or {}).get("name") in keep
        ]
    if view.get("sort_conditions") and isinstance(body.get("status"), dict):
        # Conditions written by different controllers, in the order they happened to run.
        conditions = body["status"].get("conditions")
        if isinstance(conditions, list):
            body["status"]["conditions"] = sorted(conditions, key=lambda c: str(c.get("type")))
    if view.get("group_names"):
        body["groups"] = [
            g.get("name") if isinstance(g, dict) else g for g in body.get("groups", [])
        ]
    return body


# --------------------------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------------------------


def diff(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Differences: equal key sets at every level, equal values, list order significant."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        if set(expected) != set(actual):
            out.append(
                f"{path or '.'}: keys missing {sorted(set(expected) - set(actual))}, "
                f"extra {sorted(set(actual) - set(expected))}"
            )
        for k in expected.keys() & actual.keys():
            out += diff(expected[k], actual[k], f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{path}: {len(expected)} items expected, got {len(actual)}: {actual!r:.600}"]
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += diff(e, a, f"{path}[{i}]")
        return out
    if expected != actual:
        return [f"{path}: expected {expected!r:.400}, got {actual!r:.400}"]
    return []


def without_messages(status: dict[str, Any]) -> dict[str, Any]:
    status = copy.deepcopy(status)
    status.pop("message", None)
    for cause in (status.get("details") or {}).get("causes") or []:
        cause.pop("message", None)
    return status


def compare_body(step: dict[str, Any], expected: Any, actual: Any) -> list[str]:
    if isinstance(expected, dict) and expected.get("kind") == "Status":
        if not isinstance(actual, dict):
            return [f"expected a Status, got {actual!r:.300}"]
        if "message" in (step.get("loose") or []):
            return diff(without_messages(expected), without_messages(actual))
        return diff(expected, actual)
    if step.get("compare") == "keys":
        if not isinstance(actual, dict):
            return [f"expected an object, got {actual!r:.300}"]
        out = []
        if set(expected) != set(actual):
            out.append(f"keys differ: expected {sorted(expected)}, got {sorted(actual)}")
        for k in ("kind", "apiVersion"):
            if expected.get(k) != actual.get(k):
                out.append(f"{k}: expected {expected.get(k)!r}, got {actual.get(k)!r}")
        return out
    return diff(expected, actual)


def fold_bookmarks(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for ev in events:
        if ev["type"] == "BOOKMARK" and out and out[-1]["type"] == "BOOKMARK":
            continue
        out.append(ev)
    return out


# --------------------------------------------------------------------------------------------
# Running a case
# --------------------------------------------------------------------------------------------


class WatchStream:
    """A watch read line by line in a background thread."""

    def __init__(self, response: urllib3.BaseHTTPResponse) -> None:
        self.response = response
        self.events: list[dict[str, Any]] = []
        self.closed_by_server = False
        self.changed = threading.Condition()
        self._closing = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        buffer = b""
        try:
            for chunk in self.response.stream(4096, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        with self.changed:
                            self.events.append(json.loads(line))
                            self.changed.notify_all()
            with self.changed:
                self.closed_by_server = not self._closing
                self.changed.notify_all()
        except Exception:
            with self.changed:
                self.changed.notify_all()

    def wait(self, count: int | None, until_closed: bool, timeout: float, settle: float) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            if until_closed:
                self.changed.wait_for(lambda: self.closed_by_server, timeout)
                return
            self.changed.wait_for(lambda: len(self.events) >= (count or 0), timeout)
            # Then briefly for extras the recording would have shown.
            n = len(self.events)
            self.changed.wait_for(
                lambda: len(self.events) > n or self.closed_by_server,
                min(settle, max(0.0, deadline - time.monotonic())),
            )

    def close(self) -> None:
        with self.changed:
            self._closing = not self.closed_by_server
        try:
            self.response.shutdown()  # unblocks the reading thread
        except Exception:
            pass
        self.response.close()
        self.thread.join(5)


def substitute(value: Any, captures: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\$\{(\w+)\}", lambda m: captures[m.group(1)], value)
    if isinstance(value, dict):
        return {k: substitute(v, captures) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, captures) for v in value]
    return value


def decode_body(response: Any) -> Any:
    """A response's body as the cases hold it: JSON when it says so, else text."""
    ctype = response.headers.get("Content-Type")
    try:
        return json.loads(response.data) if ctype and "json" in ctype else response.data.decode()
    except ValueError:
        return response.data.decode(errors="replace")


def capture(doc: Any, path: str) -> str:
    cur = doc
    for part in path.split(".")[1:]:  # "body.metadata.uid"
        cur = cur[part]
    return str(cur)


def run_case(case: dict[str, Any], server: ServerProcess, http: urllib3.PoolManager) -> None:
    captures: dict[str, str] = {}
    norm = Normaliser()
    stream: WatchStream | None = None
    failures: list[str] = []
    for index, step in enumerate(case["steps"]):
        if "action" in step:
            action = step["action"]
            if action == "compact":
                r = http.request(
                    "POST",
                    server.url + "/minisched/compact",
                    headers={"Authorization": f"Bearer {server.token}"},
                )
                assert r.status == 200, r.data
            elif action == "watch_wait":
                assert stream is not None
                stream.wait(
                    step.get("count"),
                    step.get("until") == "closed",
                    step.get("timeout", 10),
                    min(step.get("settle", 0.5), 0.3),
                )
                stream.close()
            continue
        request = substitute(step["request"], captures)
        expected = step["response"]
        difference = EXPECTED_DIFFERENCES.get((case["id"], index))
        if difference is not None:
            expected = difference[1]
        headers = {"Accept": "application/json", **(request.get("headers") or {})}
        auth = request.get("auth")
        if auth is None:
            headers["Authorization"] = f"Bearer {server.token}"
        elif auth == "bad-token":
            headers["Authorization"] = "Bearer not-the-token"
        body = request.get("body")
        data: bytes | None = None
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            if isinstance(body, dict):
                prefix = (body.get("metadata") or {}).get("generateName")
                if prefix:
                    norm.generate_prefixes.add(prefix)
        if request.get("content_type"):
            headers["Content-Type"] = request["content_type"]
        url = server.url + request["path"]
        fields = request.get("query")
        if request.get("watch"):
            # A pool of its own: the stream's connection is closed, never reused.
            response = urllib3.PoolManager(maxsize=1).request(
                request["method"],
                url,
                fields=fields,
                headers=headers,
                preload_content=False,
                timeout=urllib3.Timeout(connect=5, read=30),
            )
            label = f"step {index} ({request['method']} {request['path']})"
            if response.status != expected["status"]:
                failures.append(f"{label}: status {response.status} != {expected['status']}")
            ctype = response.headers.get("Content-Type")
            if ctype != expected["content_type"]:
                failures.append(f"{label}: content type {ctype!r} != {expected['content_type']!r}")
            stream = WatchStream(response)
            continue
        if fields and request["method"] in ("POST", "PUT", "PATCH", "DELETE"):
            from urllib.parse import urlencode

            url += "?" + urlencode(fields)
            fields = None
        response = http.request(
            request["method"], url, body=data, fields=fields, headers=headers, timeout=10
        )
        label = f"step {index} ({request['method']} {request['path']} {request.get('query') or ''})"
        ctype = response.headers.get("Content-Type")
        live = decode_body(response)
        for name, path in (step.get("capture") or {}).items():
            captures[name] = capture(live, path)
        norm.learn(live)
        if response.status != expected["status"]:
            failures.append(
                f"{label}: status {response.status} != {expected['status']}: {live!r:.500}"
            )
            continue
        if "content_type" in expected and ctype != expected["content_type"]:
            failures.append(f"{label}: content type {ctype!r} != {expected['content_type']!r}")
        if "body" in expected:
            want = apply_view(expected["body"], step.get("view"))
            got = apply_view(norm(live), step.get("view"))
            failures += [f"{label}: {d}" for d in compare_body(step, want, got)]
    if "watch" in case:
        assert stream is not None
        want_events = fold_bookmarks(case["watch"])
        got_events = fold_bookmarks([{**e, "object": norm(e.get("object"))} for e in stream.events])
        want_types = [e["type"] for e in want_events]
        got_types = [e["type"] for e in got_events]
        if want_types != got_types:
            failures.append(f"watch event types {got_types} != {want_types}")
        else:
            for i, (w, g) in enumerate(zip(want_events, got_events, strict=True)):
                failures += [f"watch[{i}] {w['type']}: {d}" for d in diff(w["object"], g["object"])]
        if (
            "watch_closed_by_server" in case
            and case["watch_closed_by_server"] != stream.closed_by_server
        ):
            failures.append(
                f"watch closed by server: {stream.closed_by_server}, recorded "
                f"{case['watch_closed_by_server']}"
            )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("case_id", [c["id"] for c in CASES])
def test_conformance(case_id: str, server: ServerProcess, http: urllib3.PoolManager) -> None:
    run_case(CASES_BY_ID[case_id], server, http)


def test_expected_differences_are_current() -> None:
    """Every listed difference names a real request step (so the list cannot go stale)."""
    for (case_id, index), (reason, _) in EXPECTED_DIFFERENCES.items():
        assert reason
        assert "request" in CASES_BY_ID[case_id]["steps"][index]
