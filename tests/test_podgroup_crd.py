"""The project's PodGroup manifest (``manifests/podgroup-crd.yaml``, scheduler-plugins
v0.23.10's group, kind and schema): it applies to the embedded API server, and PodGroups then
behave as the CRD says (no status subresource, as v0.23.10's; validation of the schema's
types)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from minisched.cluster import EmbeddedServer

MANIFEST = Path(__file__).resolve().parent.parent / "manifests" / "podgroup-crd.yaml"
GROUP, VERSION, PLURAL = "scheduling.sigs.k8s.io", "v1alpha1", "podgroups"


@pytest.fixture(scope="module")
def api() -> Iterator[client.ApiClient]:
    with EmbeddedServer() as server:
        api_client = config.new_client_from_config(config_file=server.kubeconfig)
        yield api_client
        api_client.close()


def test_the_manifest_makes_podgroups_served(api: client.ApiClient) -> None:
    crd = yaml.safe_load(MANIFEST.read_text())
    created = client.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    assert created.metadata.name == f"{PLURAL}.{GROUP}"
    assert created.spec.names.short_names == ["pg", "pgs"]
    objects = client.CustomObjectsApi(api)
    group = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "PodGroup",
        "metadata": {"name": "trio"},
        "spec": {"minMember": 3, "minResources": {"cpu": "3"}, "scheduleTimeoutSeconds": 10},
    }
    pg = objects.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, group)
    assert pg["spec"]["minMember"] == 3
    # No status subresource (as v0.23.10's manifest): a merge patch of the PodGroup writes its
    # status, as Coscheduling's PostBind does, and there is no /status endpoint.
    status = {"status": {"phase": "Scheduling", "scheduled": 2}}
    pg = objects.patch_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "trio", status)
    assert pg["status"] == {"phase": "Scheduling", "scheduled": 2}
    with pytest.raises(ApiException) as exc:
        objects.patch_namespaced_custom_object_status(
            GROUP, VERSION, "default", PLURAL, "trio", status
        )
    assert exc.value.status == 404
    # The schema's types hold: minMember is an integer.
    bad = group | {"metadata": {"name": "bad"}, "spec": {"minMember": "three"}}
    with pytest.raises(ApiException) as exc:
        objects.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, bad)
    assert exc.value.status == 422
    assert "spec.minMember" in exc.value.body
