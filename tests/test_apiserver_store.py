"""Unit tests of the API server's store, registry, selectors and patches (no HTTP)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from minisched.apiserver import errors, patch
from minisched.apiserver.errors import ApiError
from minisched.apiserver.registry import EVENTS, NAMESPACES, NODES, PODS, Registry
from minisched.apiserver.selectors import Selector, parse_label_selector
from minisched.apiserver.store import ADDED, DELETED, MODIFIED, Expired, Store

JSON = dict[str, Any]


def make_registry(history: int = 100, queue: int = 100) -> Registry:
    registry = Registry(
        Store(watch_history=history, watcher_queue=queue), rng=random.Random(1), now=lambda: 1e9
    )
    registry.bootstrap()
    return registry


def pod(name: str, **spec: Any) -> JSON:
    body: JSON = {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "i:1"}]},
    }
    body["spec"].update(spec)
    return body


def node(name: str, **labels: str) -> JSON:
    return {"metadata": {"name": name, "labels": labels}, "status": {"capacity": {"cpu": "4"}}}


def status_of(exc: pytest.ExceptionInfo[ApiError]) -> tuple[int, str]:
    return exc.value.status, exc.value.body.get("reason", "")


# ---- resourceVersion and history -------------------------------------------------------------


def test_resource_version_increases_across_resources_and_verbs() -> None:
    r = make_registry()
    seen = [r.store.rv]
    r.create(PODS, "default", pod("a"))
    seen.append(r.store.rv)
    r.create(NODES, None, node("n1"))
    seen.append(r.store.rv)
    r.patch(PODS, "default", "a", patch.MERGE_PATCH, {"metadata": {"labels": {"x": "1"}}})
    seen.append(r.store.rv)
    r.bind("default", "a", {"metadata": {"name": "a"}, "target": {"name": "n1"}})
    seen.append(r.store.rv)
    r.delete(PODS, "default", "a", {"gracePeriodSeconds": 0})
    seen.append(r.store.rv)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)
    assert r.store.get("pods", ("default", "a")) is None


def test_watch_history_window_and_too_old() -> None:
    r = make_registry(history=3)
    for i in range(5):
        r.create(NODES, None, node(f"n{i}"))
    start = r.store.history_start
    assert start == r.store.rv - 3
    with pytest.raises(Expired):
        r.store.watch("nodes", None, Selector("nodes"), start - 1)
    initial, _ = r.store.watch("nodes", None, Selector("nodes"), start)
    assert [obj["metadata"]["name"] for _, obj in initial] == ["n2", "n3", "n4"]


def test_watch_without_version_sends_current_objects_sorted() -> None:
    r = make_registry()
    for name in ("b", "a"):
        r.create(PODS, "default", pod(name))
    initial, _ = r.store.watch("pods", "default", Selector("pods"), None)
    assert [(t, o["metadata"]["name"]) for t, o in initial] == [(ADDED, "a"), (ADDED, "b")]


def test_watch_selector_transitions() -> None:
    """An object entering the selection is ADDED, leaving it DELETED (with its old state)."""
    r = make_registry()
    _, watcher = r.store.watch("pods", None, Selector.parse("pods", None, "spec.nodeName="), 0)
    watcher.min_rv = r.store.rv
    r.create(PODS, "default", pod("p"))
    r.bind("default", "p", {"metadata": {"name": "p"}, "target": {"name": "n1"}})
    events = watcher.take_all()
    assert [(t, prev) for _, t, prev in events] == [(ADDED, False), (DELETED, True)]
    deleted = events[1][0].payload(True)
    assert "nodeName" not in deleted["spec"]
    assert deleted["metadata"]["resourceVersion"] == str(r.store.rv)


def test_slow_watcher_is_ended_and_never_blocks_writers() -> None:
    r = make_registry(queue=3)
    _, slow = r.store.watch("nodes", None, Selector("nodes"), r.store.rv)
    for i in range(10):
        r.create(NODES, None, node(f"n{i}"))  # never blocks
    assert slow.ended and slow.pending() == 3
    assert r.store.watcher_count() == 0


def test_list_at_exact_version_rolls_back_history() -> None:
    r = make_registry()
    r.create(PODS, "default", pod("a"))
    rv = r.store.rv
    r.patch(PODS, "default", "a", patch.MERGE_PATCH, {"metadata": {"labels": {"x": "1"}}})
    r.create(PODS, "default", pod("b"))
    old = r.store.list_at("pods", "default", None, rv)
    assert [o["metadata"]["name"] for o in old] == ["a"]
    assert "labels" not in old[0]["metadata"]
    r.store.compact()
    with pytest.raises(Expired):
        r.store.list_at("pods", "default", None, rv)


# ---- selectors -------------------------------------------------------------------------------

LABELS = {"app": "web", "tier": "fe", "n": "5"}


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("app", True),
        ("!app", False),
        ("!missing", True),
        ("app=web,tier=be", False),
        ("n>3", True),
        ("n<3", False),
        ("", True),
    ],
)
def test_label_selector_forms(selector: str, matches: bool) -> None:
    obj = {"metadata": {"name": "x", "labels": LABELS}}
    assert Selector.parse("pods", selector, None).matches(obj) is matches


@pytest.mark.parametrize("selector", ["app in web", "a=b=c", "Bad Key=x", "app in (a", "=x"])
def test_invalid_label_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as exc:
        parse_label_selector(selector)
    assert status_of(exc) == (400, "BadRequest")


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ("spec.nodeName=n1", True),
        ("spec.nodeName==n1", True),
        ("spec.nodeName!=n1", False),
        ("spec.nodeName=", False),
        ("spec.nodeName!=", True),
        ("spec.schedulerName=minisched", True),
        ("metadata.name=p,metadata.namespace=ns", True),
        ("metadata.namespace!=ns", False),
        ("status.phase=Pending", True),
        ("status.phase!=Running,spec.nodeName=n1", True),
    ],
)
def test_field_selector_forms(selector: str, matches: bool) -> None:
    obj = {
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "schedulerName": "minisched"},
        "status": {"phase": "Pending"},
    }
    assert Selector.parse("pods", None, selector).matches(obj) is matches


@pytest.mark.parametrize("selector", ["spec.foo=x", "nonsense"])
def test_invalid_field_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as exc:
        Selector.parse("pods", None, selector)
    assert status_of(exc) == (400, "BadRequest")


# ---- patches ---------------------------------------------------------------------------------


def test_merge_patch_adds_changes_and_removes() -> None:
    doc = {"a": {"x": 1, "y": 2}, "l": [1, 2]}
    assert patch.merge_patch(doc, {"a": {"x": 3, "y": None, "z": 4}, "l": [3]}) == {
        "a": {"x": 3, "z": 4},
        "l": [3],
    }
    assert doc == {"a": {"x": 1, "y": 2}, "l": [1, 2]}  # inputs untouched


def test_json_patch_operations() -> None:
    doc = {"m": {"a": "1", "b": "2"}, "l": [1, 2, 3]}
    ops = [
        {"op": "add", "path": "/m/c", "value": "3"},
        {"op": "replace", "path": "/m/a", "value": "10"},
        {"op": "remove", "path": "/m/b"},
        {"op": "add", "path": "/m/x~1y", "value": "escaped"},
        {"op": "move", "from": "/m/c", "path": "/moved"},
        {"op": "copy", "from": "/l/0", "path": "/l/-"},
        {"op": "test", "path": "/l/3", "value": 1},
    ]
    assert patch.json_patch(doc, ops) == {
        "m": {"a": "10", "x/y": "escaped"},
        "l": [1, 2, 3, 1],
        "moved": "3",
    }


@pytest.mark.parametrize(
    "ops",
    [
        [{"op": "test", "path": "/a", "value": "nope"}],
        [{"op": "remove", "path": "/missing"}],
        [{"op": "replace", "path": "/missing", "value": 1}],
        [{"op": "move", "from": "/missing", "path": "/a"}],
        [{"op": "add", "path": "/l/9", "value": 1}],
        [{"op": "frobnicate", "path": "/a"}],
    ],
)
def test_json_patch_failures(ops: list[JSON]) -> None:
    with pytest.raises(patch.PatchError):
        patch.json_patch({"a": "1", "l": []}, ops)


def test_strategic_merge_patch_lists_by_merge_key() -> None:
    current = {
        "metadata": {"finalizers": ["a"]},
        "spec": {
            "containers": [{"name": "c", "image": "1"}, {"name": "d", "image": "1"}],
            "tolerations": [{"key": "k1"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }
    smp = {
        "metadata": {"finalizers": ["b"]},
        "spec": {
            "containers": [{"name": "c", "image": "2"}, {"name": "d", "$patch": "delete"}],
            "tolerations": [{"key": "k2"}],
            "$setElementOrder/containers": [{"name": "c"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X"}]},
    }
    result = patch.strategic_merge_patch(current, smp, patch.POD_SCHEMA)
    assert result["spec"]["containers"] == [{"name": "c", "image": "2"}]
    assert result["spec"]["tolerations"] == [{"key": "k2"}]  # no merge key: replaced
    assert result["metadata"]["finalizers"] == ["a", "b"]  # primitive merge
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "X"}]


def test_strategic_merge_patch_directives() -> None:
    current = {"spec": {"nodeSelector": {"a": "1", "b": "2"}, "containers": [{"name": "c"}]}}
    replaced = patch.strategic_merge_patch(
        current, {"spec": {"nodeSelector": {"$patch": "replace", "z": "9"}}}, patch.POD_SCHEMA
    )
    assert replaced["spec"]["nodeSelector"] == {"z": "9"}
    removed = patch.strategic_merge_patch(
        {"metadata": {"finalizers": ["a", "b"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}},
        patch.POD_SCHEMA,
    )
    assert removed["metadata"]["finalizers"] == ["b"]


# ---- registry: create, update, delete, bind ---------------------------------------------------


def test_generate_name_and_defaults() -> None:
    r = make_registry()
    created = r.create(
        PODS, "default", {"metadata": {"generateName": "web-"}, "spec": pod("x")["spec"]}
    )
    name = created["metadata"]["name"]
    assert name.startswith("web-") and len(name) == len("web-") + 5
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert created["metadata"]["generation"] == 1
    assert created["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


def test_qos_classes() -> None:
    r = make_registry()

    def qos(resources: JSON) -> str:
        body = pod(f"q{r.store.rv}")
        body["spec"]["containers"][0]["resources"] = resources
        return r.create(PODS, "default", body)["status"]["qosClass"]

    assert qos({}) == "BestEffort"
    assert qos({"requests": {"cpu": "100m"}}) == "Burstable"
    assert qos({"limits": {"cpu": "1", "memory": "1Gi"}}) == "Guaranteed"


def test_update_with_stale_resource_version_conflicts() -> None:
    r = make_registry()
    created = r.create(PODS, "default", pod("p"))
    stale = created["metadata"]["resourceVersion"]
    r.patch(PODS, "default", "p", patch.MERGE_PATCH, {"metadata": {"labels": {"a": "1"}}})
    body = pod("p")
    body["metadata"]["resourceVersion"] = stale
    rv = r.store.rv
    with pytest.raises(ApiError) as exc:
        r.update(PODS, "default", "p", body)
    assert status_of(exc) == (409, "Conflict")
    assert r.store.rv == rv


def test_noop_update_writes_nothing() -> None:
    r = make_registry()
    r.create(PODS, "default", pod("p"))
    rv = r.store.rv
    r.patch(PODS, "default", "p", patch.MERGE_PATCH, {"metadata": {}})
    assert r.store.rv == rv


def test_spec_change_bumps_generation_and_immutable_fields_are_refused() -> None:
    r = make_registry()
    r.create(PODS, "default", pod("p"))
    changed = r.patch(
        PODS,
        "default",
        "p",
        patch.STRATEGIC_MERGE_PATCH,
        {"spec": {"containers": [{"name": "c", "image": "i:2"}]}},
    )
    assert changed["metadata"]["generation"] == 2
    with pytest.raises(ApiError) as exc:
        r.patch(PODS, "default", "p", patch.MERGE_PATCH, {"spec": {"nodeName": "n1"}})
    assert status_of(exc) == (422, "Invalid")


def test_status_subresource_keeps_the_spec_but_not_the_metadata() -> None:
    """As kube-apiserver v1.36 does (case pod-status-write-keeps-metadata-and-spec): a write
    to /status changes status and metadata such as labels, never the spec, owner references
    or the QoS class (kept when the write leaves it out)."""
    r = make_registry()
    r.create(PODS, "default", pod("p"))
    updated = r.patch(
        PODS,
        "default",
        "p",
        patch.MERGE_PATCH,
        {
            "metadata": {"labels": {"x": "1"}, "ownerReferences": None},
            "spec": {"nodeName": "n1"},
            "status": {"phase": "Running", "qosClass": None},
        },
        "status",
    )
    assert updated["status"]["phase"] == "Running"
    assert updated["status"]["qosClass"] == "BestEffort"
    assert updated["metadata"]["labels"] == {"x": "1"}
    assert "nodeName" not in updated["spec"]


def test_delete_semantics() -> None:
    r = make_registry()
    r.create(PODS, "default", pod("unbound"))
    r.create(PODS, "default", pod("bound", nodeName="n1"))
    _, watcher = r.store.watch("pods", "default", Selector("pods"), r.store.rv)

    def events() -> list[tuple[str, str]]:
        return [(t, ev.obj["metadata"]["name"]) for ev, t, _ in watcher.take_all()]

    answer, _ = r.delete(PODS, "default", "unbound", {})
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 0
    assert events() == [(MODIFIED, "unbound"), (DELETED, "unbound")]
    answer, _ = r.delete(PODS, "default", "bound", {})
    assert answer["metadata"]["deletionGracePeriodSeconds"] == 30
    assert answer["metadata"]["generation"] == 2
    assert events() == [(MODIFIED, "bound")]
    assert r.store.get("pods", ("default", "bound")) is not None  # Terminating
    r.delete(PODS, "default", "bound", {"gracePeriodSeconds": 0})
    assert events() == [(MODIFIED, "bound"), (DELETED, "bound")]
    r.create(NODES, None, node("n1"))
    answer, _ = r.delete(NODES, None, "n1", {})
    assert answer["status"] == "Success" and answer["details"]["kind"] == "nodes"


def test_finalizers_hold_deletion_until_removed() -> None:
    r = make_registry()
    body = pod("p")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    r.create(PODS, "default", body)
    r.delete(PODS, "default", "p", {"gracePeriodSeconds": 0})
    assert r.store.get("pods", ("default", "p")) is not None
    r.patch(PODS, "default", "p", patch.MERGE_PATCH, {"metadata": {"finalizers": None}})
    assert r.store.get("pods", ("default", "p")) is None


def test_namespace_delete_removes_contents_and_protects_system_namespaces() -> None:
    r = make_registry()
    r.create(NAMESPACES, None, {"metadata": {"name": "tmp"}})
    r.create(PODS, "tmp", pod("p", nodeName="n1"))
    r.create(
        EVENTS,
        "tmp",
        {"metadata": {"name": "e"}, "involvedObject": {"name": "p", "namespace": "tmp"}},
    )
    answer, _ = r.delete(NAMESPACES, None, "tmp", {})
    # No event loop here: the namespace controller's work runs at once (on a server's loop it
    # runs right after the answer, see test_apiserver_http).
    assert answer["status"] == {"phase": "Terminating"}
    assert answer["metadata"]["deletionTimestamp"]
    # The controller deletes pods gracefully: the bound one waits for its kubelet, and the
    # namespace stays (Terminating, with the controller's conditions) until it is gone.
    assert r.store.list("events", "tmp") == []
    (left,) = r.store.list("pods", "tmp")
    assert left["metadata"]["deletionGracePeriodSeconds"] == 30
    ns = r.store.get("namespaces", ("", "tmp"))
    assert ns is not None and ns["status"]["phase"] == "Terminating"
    assert [c["reason"] for c in ns["status"]["conditions"]][:1] == ["ResourcesDiscovered"]
    r.delete(PODS, "tmp", "p", {"gracePeriodSeconds": 0})  # the kubelet's final delete
    assert r.store.get("namespaces", ("", "tmp")) is None
    with pytest.raises(ApiError) as exc:
        r.delete(NAMESPACES, None, "default", {})
    assert status_of(exc) == (403, "Forbidden")


def test_namespace_goes_when_a_finalized_pod_does() -> None:
    """A pod held by a finalizer keeps its Terminating namespace; when the finalizer is
    removed, the pod goes and so does the namespace (the controller's next pass)."""
    r = make_registry()
    r.create(NAMESPACES, None, {"metadata": {"name": "fin"}})
    r.create(PODS, "fin", {**pod("p"), "metadata": {"name": "p", "finalizers": ["x.io/hold"]}})
    r.delete(NAMESPACES, None, "fin", {})
    assert r.store.get("namespaces", ("", "fin")) is not None
    r.patch(PODS, "fin", "p", patch.MERGE_PATCH, {"metadata": {"finalizers": None}})
    assert r.store.get("pods", ("fin", "p")) is None
    assert r.store.get("namespaces", ("", "fin")) is None


def test_binding_rules() -> None:
    r = make_registry()
    r.create(PODS, "default", pod("p"))
    binding = {"metadata": {"name": "p", "annotations": {"why": "test"}}, "target": {"name": "n1"}}
    assert r.bind("default", "p", binding) == errors.success(201)
    bound = r.store.get("pods", ("default", "p"))
    assert bound is not None
    assert bound["spec"]["nodeName"] == "n1"
    assert bound["metadata"]["annotations"] == {"why": "test"}
    assert bound["status"]["conditions"][0]["type"] == "PodScheduled"
    for body, expected in [
        (binding, (409, "Conflict")),
        ({"metadata": {"name": "nope"}, "target": {"name": "n1"}}, (404, "NotFound")),
        ({"metadata": {"name": "p"}, "target": {"name": ""}}, (422, "Invalid")),
        ({"metadata": {"name": "p"}, "target": {"kind": "Pod", "name": "x"}}, (422, "Invalid")),
    ]:
        with pytest.raises(ApiError) as exc:
            r.bind("default", None, body)
        assert status_of(exc) == expected


def test_fault_injection_rejects_bindings_with_503() -> None:
    r = make_registry()
    r.fail_binding_fraction = 1.0
    r.create(PODS, "default", pod("p"))
    with pytest.raises(ApiError) as exc:
        r.bind("default", "p", {"metadata": {"name": "p"}, "target": {"name": "n1"}})
    assert status_of(exc) == (503, "ServiceUnavailable")
    assert r.failed_bindings == 1


def test_create_errors_leave_the_store_unchanged() -> None:
    r = make_registry()
    rv = r.store.rv
    bad_bodies = [
        [1, 2],
        {"kind": "Node", "apiVersion": "v1", "metadata": {"name": "x"}},
        {"kind": "Pod", "apiVersion": "v2", "metadata": {"name": "x"}},
        {"metadata": {"name": 5}},
        {"metadata": {"name": "Bad_Name"}, "spec": pod("x")["spec"]},
        {"metadata": {"name": "x"}, "spec": {"containers": "nope"}},
        {"metadata": {"name": "x"}, "spec": {}},
        {"metadata": {"name": "x", "namespace": "other"}, "spec": pod("x")["spec"]},
    ]
    for body in bad_bodies:
        with pytest.raises(ApiError) as exc:
            r.create(PODS, "default", body)
        assert exc.value.status in (400, 422)
    with pytest.raises(ApiError) as exc:
        r.create(PODS, "missing-namespace", pod("x"))
    assert status_of(exc) == (404, "NotFound")
    assert r.store.rv == rv
