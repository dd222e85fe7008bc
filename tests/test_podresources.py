"""minisched/podresources.py: the runtime's pod request is the scheduler's
(computePodResourceRequest), init containers and overhead included, so the page's node cards
count what NodeInfo counts."""

from __future__ import annotations

from kubernetes.client import (
    V1Container,
    V1Node,
    V1NodeStatus,
    V1ObjectMeta,
    V1Pod,
    V1PodSpec,
    V1ResourceRequirements,
)

from minisched.podresources import compute_pod_resource_request, resource_list
from minisched.web.state import ClusterView, Features
from steps.step10.framework import NodeInfo
from steps.step10.plugins.noderesources import compute_pod_resource_request as step10_request


def container(name: str, **requests: str) -> V1Container:
    return V1Container(name=name, resources=V1ResourceRequirements(requests=requests or None))


def pod_with_init_containers_and_overhead() -> V1Pod:
    """Containers ask 750m and 1Gi together; one init container asks more cpu (1), another
    more memory than one container but less than both; the runtime class adds 100m, 64Mi."""
    return V1Pod(
        metadata=V1ObjectMeta(name="p", namespace="ns"),
        spec=V1PodSpec(
            node_name="n1",
            scheduler_name="minisched",
            containers=[
                container("app", cpu="500m", memory="512Mi"),
                container("sidecar", cpu="250m", memory="512Mi"),
                container("no-requests"),
            ],
            init_containers=[
                container("migrate", cpu="1"),
                container("warm", memory="768Mi"),
            ],
            overhead={"cpu": "100m", "memory": "64Mi"},
        ),
    )


def test_containers_add_up_init_containers_raise_it_overhead_comes_on_top() -> None:
    request = compute_pod_resource_request(pod_with_init_containers_and_overhead())
    # cpu: max(500m + 250m, 1000m) + 100m; memory: max(1Gi, 768Mi) + 64Mi.
    assert request == {"cpu": 1100, "memory": 2**30 + 64 * 2**20}


def test_it_is_what_the_schedulers_node_info_counts() -> None:
    pod = pod_with_init_containers_and_overhead()
    request = compute_pod_resource_request(pod)
    counted = NodeInfo(pod).requested
    assert (request["cpu"], request["memory"]) == (counted.milli_cpu, counted.memory)
    lesson = step10_request(pod).resource
    assert (request["cpu"], request["memory"]) == (lesson.milli_cpu, lesson.memory)


def test_quantities_round_up_as_upstreams_milli_value_and_value_do() -> None:
    assert resource_list({"cpu": "0.0001", "memory": "1.5", "pods": "110"}) == {
        "cpu": 1,
        "memory": 2,
        "pods": 110,
    }
    assert resource_list(None) == {}


def test_the_pages_node_card_counts_init_containers_and_overhead() -> None:
    view = ClusterView(Features.for_step(10))
    node = V1Node(
        metadata=V1ObjectMeta(name="n1"),
        status=V1NodeStatus(allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"}),
    )
    view.node_handler().add(node)
    view.pod_handler().add(pod_with_init_containers_and_overhead())
    (card,) = view.snapshot()["nodes"]
    assert card["requested"] == {"cpu": 1.1, "memory": 2**30 + 64 * 2**20, "pods": 1.0}
