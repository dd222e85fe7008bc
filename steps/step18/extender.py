"""HTTPExtender: a scheduler extender, an outside process the scheduler asks over HTTP.

Upstream, at v1.23.10 (as kubernetes-sigs/scheduler-plugins v0.23.10 vendors it):
pkg/scheduler/extender.go (HTTPExtender, NewHTTPExtender, makeTransport, send, Filter,
Prioritize, Bind, ProcessPreemption and the victims' conversions), k8s.io/kube-scheduler's
extender/v1/types.go (the wire types), and pkg/scheduler/factory.go (Configurator.create:
``new_extenders``). What a Go client does beneath them, the libraries kube-scheduler imports
(client-go's TLS configuration, net/http's error texts, encoding/json, fmt.Errorf), is
``minisched.gohttp``.

An extender is configured by the file's ``extenders:`` (``config.Extender``). Each call is one
HTTP POST of a JSON body to ``<urlPrefix>/<verb>``; the answer is JSON too:

- filter: the pod and the nodes that passed the Filter plugins (whole, or only their names
  when the extender is nodeCacheCapable); the answer names the nodes that pass, and why the
  others failed (FailedNodes: preemption may help; FailedAndUnresolvableNodes: it cannot).
- prioritize: the same arguments; the answer is a score, 0..MAX_EXTENDER_PRIORITY, per node.
- preempt: the pod and the victims preemption chose on each candidate node; the answer is the
  victims the extender agrees to, maybe on fewer nodes.
- bind: the pod's name, namespace and UID, and the node: the extender binds the pod itself.

The wire format is Go's encoding/json of the extender/v1 types, which have no json tags: the
keys are the Go field names (``Pod``, ``Nodes``, ``NodeNames``, ``FailedNodes``, ``Host``,
``Score``, ...), and a reply's keys are matched case-insensitively, as Go's decoder matches
them; unknown keys are ignored; a value of the wrong type is Go's ``json: cannot unmarshal
...`` error. Pods and nodes are written as the API writes them (the client's serialization,
times as metav1.Time writes them), and a reply's nodes read back with the client's models.

Surprising, and ported: an extender's ``Error`` is used as a format string (upstream:
fmt.Errorf(result.Error)), so ``100%`` reads ``100%!(NOVERB)``; a non-nodeCacheCapable
extender that answers only NodeNames filters every node out (its Nodes are read, and are
none); the victims lose their PodDisruptionBudget count both ways (NumPDBViolations is neither
sent in MetaVictims nor read back: every node the extender returns counts 0 violations; v1.24
fixed it); a Go ``%v`` of a MetaPod pointer (``&{uid}``) is in the "claims to preempt" error.

Differs from upstream: a null victims entry in a preempt reply is an error here; upstream
dereferences it and panics. Not implemented: redirects (Go's client follows them; here a 3xx
is answered as any status but 200 is). Simplified: httpTimeout bounds the connection and each
read, where Go's Client.Timeout bounds the whole exchange. (Where the error texts, the TLS
settings and the JSON differ from Go's is marked in ``minisched.gohttp``.)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import urllib3
from kubernetes.client import V1Node, V1Pod

from minisched import gohttp
from minisched.apimachinery import go_quote
from minisched.gohttp import INT64, NODE_LIST, STRING, Map, Slice, Struct

from . import config as schedconfig
from . import framework, preemption
from .framework import FailedNodesMap, NodeInfoLister

# How long a call may take when the configuration gives no httpTimeout, a Go duration as
# config.Extender.http_timeout holds it (upstream: DefaultExtenderTimeout).
DEFAULT_EXTENDER_TIMEOUT = "5s"


class ExtenderError(Exception):
    """A call to an extender failed; the text is upstream's error."""


# --- the wire types (k8s.io/kube-scheduler's extender/v1) --------------------------------------
#
# What the scheduler sends is a dict keyed by the Go field names (ExtenderArgs in
# ``_extender_args``, ExtenderBindingArgs in ``bind``, ExtenderPreemptionArgs in
# ``process_preemption``). What it reads back is decoded into one of these types, as Go's
# decoder fills the fields of the value ``send`` is given.

_FAILED_NODES = Map(STRING, "v1.FailedNodesMap")
EXTENDER_FILTER_RESULT = Struct(
    "ExtenderFilterResult",
    (
        ("Nodes", NODE_LIST),
        ("NodeNames", Slice(STRING, "[]string")),
        ("FailedNodes", _FAILED_NODES),
        ("FailedAndUnresolvableNodes", _FAILED_NODES),
        ("Error", STRING),
    ),
)
HOST_PRIORITY_LIST = Slice(
    Struct("HostPriority", (("Host", STRING), ("Score", INT64))), "v1.HostPriorityList"
)
EXTENDER_BINDING_RESULT = Struct("ExtenderBindingResult", (("Error", STRING),))
_META_POD = Struct("MetaPod", (("UID", STRING),))
_META_VICTIMS = Struct(
    "MetaVictims",
    (("Pods", Slice(_META_POD, "[]*v1.MetaPod")), ("NumPDBViolations", INT64)),
)
EXTENDER_PREEMPTION_RESULT = Struct(
    "ExtenderPreemptionResult",
    (("NodeNameToMetaVictims", Map(_META_VICTIMS, "map[string]*v1.MetaVictims")),),
)


# --- HTTPExtender --------------------------------------------------------------------------------


@dataclass(eq=False)
class HTTPExtender:
    """An extender reached over HTTP (upstream: HTTPExtender); implements framework.Extender.

    Its methods raise ExtenderError (and, in ``process_preemption``, the node lister's error)
    with upstream's texts; ``new_http_extender`` builds one from the configuration.
    """

    extender_url: str = ""
    preempt_verb: str = ""
    filter_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    client: urllib3.PoolManager = field(
        default_factory=lambda: urllib3.PoolManager(retries=False), repr=False
    )
    # The whole call's time limit, in seconds; None for none (upstream: http.Client.Timeout).
    timeout: float | None = 5.0
    node_cache_capable: bool = False
    managed_resources: set[str] = field(default_factory=set)
    ignorable: bool = False

    def name(self) -> str:
        """The extender's URL prefix names it (upstream: Name)."""
        return self.extender_url

    def is_ignorable(self) -> bool:
        """Whether the scheduling goes on when this extender fails (upstream: IsIgnorable)."""
        return self.ignorable

    def supports_preemption(self) -> bool:
        """Upstream: SupportsPreemption: a preempt verb is set."""
        return bool(self.preempt_verb)

    def is_binder(self) -> bool:
        """Upstream: IsBinder: a bind verb is set."""
        return bool(self.bind_verb)

    def is_interested(self, pod: V1Pod) -> bool:
        """Whether the pod asks for one of the resources the extender manages, in a request
        or a limit of a container or an init container; an extender that manages none is
        interested in every pod (upstream: IsInterested)."""
        if not self.managed_resources:
            return True
        spec = pod.spec
        if spec is None:
            return False
        return self._has_managed_resources(spec.containers) or self._has_managed_resources(
            spec.init_containers
        )

    def _has_managed_resources(self, containers: list[Any] | None) -> bool:
        for container in containers or []:
            resources = container.resources
            if resources is None:
                continue
            for names in (resources.requests, resources.limits):
                if any(name in self.managed_resources for name in names or {}):
                    return True
        return False

    def _extender_args(self, pod: V1Pod, nodes: list[V1Node]) -> dict[str, Any]:
        """ExtenderArgs: the pod, and the nodes whole or (nodeCacheCapable) by name."""
        if self.node_cache_capable:
            return {
                "Pod": gohttp.object_json(pod),
                "Nodes": None,
                "NodeNames": [n.metadata.name for n in nodes],
            }
        return {
            "Pod": gohttp.object_json(pod),
            "Nodes": gohttp.node_list_json(nodes),
            "NodeNames": None,
        }

    def filter(
        self, pod: V1Pod, nodes: list[V1Node]
    ) -> tuple[list[V1Node], FailedNodesMap, FailedNodesMap]:
        """The nodes the extender lets through, and the ones it failed with why: those a
        preemption may help, and those it cannot (upstream: Filter). No filter verb passes
        every node. A nodeCacheCapable extender's names are mapped back to the nodes given;
        a name not among them is an error. Otherwise the reply's Nodes are the result, read
        back from their JSON (so an extender that answers only names passes no node)."""
        if not self.filter_verb:
            return nodes, {}, {}
        from_node_name = {n.metadata.name: n for n in nodes}
        args = self._extender_args(pod, nodes)
        result = self.send(self.filter_verb, args, EXTENDER_FILTER_RESULT) or {}
        if result.get("Error"):
            raise ExtenderError(gohttp.go_errorf(result["Error"]))
        node_result: list[V1Node] = []
        names = result.get("NodeNames")
        node_list = result.get("Nodes")
        if self.node_cache_capable and names is not None:
            for name in names:
                name = name or ""
                if name not in from_node_name:
                    raise ExtenderError(
                        f"extender {go_quote(self.extender_url)} claims a filtered node "
                        f"{go_quote(name)} which is not found in the input node list"
                    )
                node_result.append(from_node_name[name])
        elif node_list is not None:
            node_result = [n or V1Node() for n in node_list.get("items") or []]
        return (
            node_result,
            _string_map(result.get("FailedNodes")),
            _string_map(result.get("FailedAndUnresolvableNodes")),
        )

    def prioritize(self, pod: V1Pod, nodes: list[V1Node]) -> tuple[list[tuple[str, int]], int]:
        """Each node's score from the extender, as (host, score) pairs, and the extender's
        weight (upstream: Prioritize). No prioritize verb scores every node 0 with weight 0.
        The scores are used as they come: neither checked nor clamped."""
        if not self.prioritize_verb:
            return [(n.metadata.name, 0) for n in nodes], 0
        args = self._extender_args(pod, nodes)
        result = self.send(self.prioritize_verb, args, HOST_PRIORITY_LIST)
        priorities = [
            ((hp or {}).get("Host") or "", (hp or {}).get("Score") or 0) for hp in result or []
        ]
        return priorities, self.weight

    def bind(self, binding: Any) -> None:
        """Ask the extender to bind the pod (upstream: Bind); ``binding`` is a V1Binding: the
        pod's name, namespace and UID in its metadata, the node as its target."""
        if not self.is_binder():
            # Not expected: this extender would not have been chosen to bind.
            raise ExtenderError("unexpected empty bindVerb in extender")
        meta = binding.metadata
        args = {
            "PodName": meta.name or "",
            "PodNamespace": meta.namespace or "",
            "PodUID": meta.uid or "",
            "Node": binding.target.name or "",
        }
        result = self.send(self.bind_verb, args, EXTENDER_BINDING_RESULT) or {}
        if result.get("Error"):
            raise ExtenderError(gohttp.go_errorf(result["Error"]))

    def process_preemption(
        self,
        pod: V1Pod,
        node_name_to_victims: dict[str, preemption.Victims],
        node_infos: NodeInfoLister,
    ) -> dict[str, preemption.Victims]:
        """The victims the extender agrees to, per node, maybe on fewer nodes (upstream:
        ProcessPreemption). Sent whole, or (nodeCacheCapable) as the victims' UIDs; the reply
        is always UIDs, turned back into the pods of ``node_infos``. The caller's map is left
        as it is."""
        if not self.supports_preemption():
            raise ExtenderError(
                f"preempt verb is not defined for extender {self.extender_url} but run into "
                "ProcessPreemption"
            )
        args: dict[str, Any] = {"Pod": gohttp.object_json(pod)}
        if self.node_cache_capable:
            meta = convert_to_node_name_to_meta_victims(node_name_to_victims)
            args["NodeNameToVictims"] = None
            args["NodeNameToMetaVictims"] = dict(sorted(meta.items()))  # Go sorts map keys
        else:
            args["NodeNameToVictims"] = {
                node: {
                    "Pods": [gohttp.object_json(p) for p in victims.pods],
                    "NumPDBViolations": victims.num_pdb_violations,
                }
                for node, victims in sorted(node_name_to_victims.items())
            }
            args["NodeNameToMetaVictims"] = None
        result = self.send(self.preempt_verb, args, EXTENDER_PREEMPTION_RESULT) or {}
        meta_victims = result.get("NodeNameToMetaVictims") or {}
        for node, victims in meta_victims.items():
            # Differs from upstream: Go dereferences these nulls, and panics.
            if victims is None or None in (victims.get("Pods") or []):
                raise ExtenderError(
                    f"extender {self.extender_url} returned null victims for node {node}"
                )
        # Extender will always return NodeNameToMetaVictims (upstream's words).
        return self.convert_to_node_name_to_victims(meta_victims, node_infos)

    def convert_to_node_name_to_victims(
        self, node_name_to_meta_victims: dict[str, dict[str, Any]], node_infos: NodeInfoLister
    ) -> dict[str, preemption.Victims]:
        """MetaVictims, in their wire form (``{"Pods": [{"UID": uid}, ...],
        "NumPDBViolations": n}`` per node), back into Victims: each UID is looked up among the
        pods of that node (upstream: convertToNodeNameToVictims, convertPodUIDToPod). v1.23
        drops NumPDBViolations: every node's count is 0. Raises the lister's error for an
        unknown node, and ExtenderError for a pod not on its node."""
        out: dict[str, preemption.Victims] = {}
        for node_name, meta_victims in node_name_to_meta_victims.items():
            node_info = node_infos.get(node_name)
            victims = preemption.Victims(pods=[])
            for meta_pod in meta_victims.get("Pods") or []:
                uid = meta_pod.get("UID") or ""
                victims.pods.append(self._convert_pod_uid_to_pod(uid, node_info))
            out[node_name] = victims
        return out

    def _convert_pod_uid_to_pod(self, uid: str, node_info: framework.NodeInfo) -> V1Pod:
        """The pod with that UID on the node (upstream: convertPodUIDToPod); an error means
        the extender's cache and the scheduler's disagree."""
        for pod in node_info.pods:
            if pod.metadata.uid == uid:
                return pod
        node = node_info.node()
        node_name = node.metadata.name if node is not None else ""
        # Upstream prints the *MetaPod with %v: &{<uid>}.
        raise ExtenderError(
            f"extender: {self.extender_url} claims to preempt pod (UID: &{{{uid}}}) on node: "
            f"{node_name}, but the pod is not found on that node"
        )

    def send(self, action: str, args: dict[str, Any], result_type: Any) -> Any:
        """POST ``args`` as JSON to ``<urlPrefix>/<action>`` and return the reply read as
        ``result_type``, one of the wire types above (upstream: send, which decodes into the
        result it is given). Anything but 200 is an error, and so is a reply that is not JSON
        of that type."""
        url = self.extender_url.rstrip("/") + "/" + action
        body = gohttp.dumps(args)
        try:
            resp = self.client.request(
                "POST",
                url,
                body=body,
                headers={"Content-Type": "application/json"},
                timeout=urllib3.Timeout(total=self.timeout),
                retries=False,
                redirect=False,
                preload_content=False,
            )
        except (urllib3.exceptions.HTTPError, OSError) as e:
            raise ExtenderError(f"Post {go_quote(url)}: {gohttp.transport_error(e, url)}") from e
        try:
            if resp.status != 200:
                # Upstream closes the body unread: the connection is not reused.
                resp.close()
                raise ExtenderError(
                    f"failed {action} with extender at URL {url}, code {resp.status}"
                )
            try:
                data = resp.read()
            except (urllib3.exceptions.HTTPError, OSError) as e:
                raise ExtenderError(gohttp.body_error(e)) from e
        finally:
            resp.release_conn()
        try:
            return gohttp.decode(gohttp.loads(data), result_type)
        except gohttp.DecodeError as e:
            raise ExtenderError(str(e)) from e


def _string_map(value: dict[str, Any] | None) -> FailedNodesMap:
    """A FailedNodesMap: a null value is the empty string, Go's zero value."""
    return {k: v or "" for k, v in (value or {}).items()}


def convert_to_node_name_to_meta_victims(
    node_name_to_victims: dict[str, preemption.Victims],
) -> dict[str, dict[str, Any]]:
    """Victims as MetaVictims, in their wire form: each pod by its UID, ``{"Pods": [{"UID":
    uid}, ...], "NumPDBViolations": 0}`` (upstream: convertToNodeNameToMetaVictims). v1.23
    leaves NumPDBViolations out: always 0."""
    return {
        node: {
            "Pods": [{"UID": p.metadata.uid or ""} for p in victims.pods],
            "NumPDBViolations": 0,
        }
        for node, victims in node_name_to_victims.items()
    }


# --- building them (NewHTTPExtender, Configurator.create) -----------------------------------------


def make_transport(cfg: schedconfig.Extender) -> urllib3.PoolManager:
    """The connection pool an extender is called through, a pool per extender (upstream:
    makeTransport): the extender's tlsConfig as client-go's TLS settings. ValueError with
    upstream's text for a TLS setting that cannot be used.

    enableHTTPS only means "skip verifying the server when no CA is given": whether TLS is
    used at all is the urlPrefix's scheme (an http:// prefix talks plain HTTP, whatever
    enableHTTPS says). With nothing TLS-related set, an https:// prefix verifies the server
    against the system's CAs.
    """
    tls = cfg.tls_config or schedconfig.ExtenderTLSConfig()
    insecure = tls.insecure
    if cfg.enable_https and not (tls.ca_file or tls.ca_data):
        insecure = True
    return gohttp.new_transport(
        insecure=insecure,
        server_name=tls.server_name,
        cert_file=tls.cert_file,
        key_file=tls.key_file,
        ca_file=tls.ca_file,
        cert_data=tls.cert_data,
        key_data=tls.key_data,
        ca_data=tls.ca_data,
    )


def new_http_extender(cfg: schedconfig.Extender) -> HTTPExtender:
    """An HTTPExtender for one configured extender (upstream: NewHTTPExtender). As upstream,
    a zero httpTimeout is set to DEFAULT_EXTENDER_TIMEOUT in ``cfg`` itself (so the written
    configuration shows it); a negative one, which nothing refuses, is no time limit at all
    (Go's http.Client sets a deadline only for a positive Timeout). ValueError with upstream's
    text for TLS settings that cannot be used (an unreadable file, a CA with insecure, a bad
    certificate)."""
    if schedconfig.parse_duration(cfg.http_timeout) == 0:
        cfg.http_timeout = DEFAULT_EXTENDER_TIMEOUT
    timeout_ns = schedconfig.parse_duration(cfg.http_timeout)
    return HTTPExtender(
        extender_url=cfg.url_prefix,
        preempt_verb=cfg.preempt_verb,
        filter_verb=cfg.filter_verb,
        prioritize_verb=cfg.prioritize_verb,
        bind_verb=cfg.bind_verb,
        weight=cfg.weight,
        client=make_transport(cfg),
        timeout=timeout_ns / 1e9 if timeout_ns > 0 else None,
        node_cache_capable=cfg.node_cache_capable,
        managed_resources={r.name for r in cfg.managed_resources},
        ignorable=cfg.ignorable,
    )


def new_extenders(cfg: schedconfig.KubeSchedulerConfiguration) -> list[framework.Extender]:
    """The scheduler's extenders, in the configuration's order but with the ignorable ones
    moved to the end (keeping their order), and every profile's NodeResourcesFit args told to
    ignore the resources the extenders take over (upstream: the start of Configurator.create,
    before the profiles are built; both change ``cfg``). ValueError with upstream's text,
    without scheduler.New's "couldn't create scheduler: " prefix.

    The ignored resources change nothing visible here: NodeResourcesFit counts no extended
    resource (framework.Resource has no ScalarResources), so it never refused a pod for one.
    """
    extenders: list[framework.Extender] = []
    ignorable: list[framework.Extender] = []
    for ext_cfg in cfg.extenders:
        ext = new_http_extender(ext_cfg)
        (ignorable if ext.is_ignorable() else extenders).append(ext)
    extenders += ignorable
    schedconfig.set_extender_ignored_resources(cfg.profiles, cfg.extenders)
    return extenders
