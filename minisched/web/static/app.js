// minisched's live page: nodes, queues, one pod's "why", and the timeline.
//
// The server (minisched/web/server.py) streams JSON messages on /events:
//   {type: "snapshot", features, ended, latest, lines, pods, nodes}  first, and on a reconnect
//   {type: "changes", ended, latest, lines, pods, nodes}             then, on every change
// A pod or node in "changes" replaces the one we have ({removed: true} deletes it). Lines
// carry a sequence number, so a line that is in the snapshot and in a change is shown once.
// Remaining times (backoff, Permit) are sent as seconds left when the message was sent; the
// page counts them down itself. "latest" is the pod whose scheduling cycle ended last: the
// right-hand panel shows its decision until the user picks a pod.
"use strict";

const state = {
  features: null,
  ended: false,
  pods: new Map(), // key -> pod (as state.py's _pod_json), plus receivedAt
  nodes: new Map(), // name -> node (as state.py's _node_json)
  lastSeq: 0,
  latest: "", // the key of the pod whose scheduling cycle ended last
  selected: null, // the key of the pod the user picked
  shown: null, // the key of the pod whose detail is shown: selected, else latest
  shownRev: -1,
};

const MAX_LINES = 1000;
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "class") node.className = value;
    else if (name === "onclick") node.addEventListener("click", value);
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child);
  }
  return node;
}

// Sort node2 before node10, as the terminal does.
function natural(a, b) {
  return a.localeCompare(b, undefined, { numeric: true });
}

function secondsLeft(pod) {
  if (pod.remaining === null || pod.remaining === undefined) return null;
  const elapsed = (performance.now() - pod.receivedAt) / 1000;
  return Math.max(0, pod.remaining - elapsed);
}

function countdown(pod, prefix, done) {
  const span = el("span", { class: "remaining", "data-prefix": prefix, "data-done": done });
  span.pod = pod;
  updateCountdown(span);
  return span;
}

function updateCountdown(span) {
  const left = secondsLeft(span.pod);
  if (left === null) span.textContent = "";
  else if (left <= 0) span.textContent = span.dataset.done;
  else span.textContent = `${span.dataset.prefix} ${left.toFixed(1)} s`;
}

// --- messages ---------------------------------------------------------------------------------

function apply(message) {
  if (message.type === "snapshot") {
    state.features = message.features;
    state.pods.clear();
    state.nodes.clear();
    $("timeline").replaceChildren();
    state.lastSeq = 0;
    state.shownRev = -1;
    const step = message.features.step;
    const title = message.features.title;
    $("title").textContent = `minisched step ${step}${title ? ": " + title : ""}`;
    document.title = `minisched step ${step}`;
  }
  state.ended = message.ended;
  state.latest = message.latest || "";
  const now = performance.now();
  for (const pod of message.pods) {
    if (pod.removed) state.pods.delete(pod.key);
    else state.pods.set(pod.key, { ...pod, receivedAt: now });
  }
  for (const node of message.nodes) {
    if (node.removed) state.nodes.delete(node.name);
    else state.nodes.set(node.name, node);
  }
  addLines(message.lines);
  render();
}

function addLines(lines) {
  const list = $("timeline");
  const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 4;
  for (const line of lines) {
    if (line.seq <= state.lastSeq) continue;
    state.lastSeq = line.seq;
    const time = new Date(line.time * 1000).toTimeString().slice(0, 8);
    const item = el("li", { "data-seq": String(line.seq) }, el("time", {}, time), " ", line.text);
    if (line.pod) {
      item.classList.add("clickable");
      item.addEventListener("click", () => select(line.pod));
    }
    list.append(item);
  }
  while (list.children.length > MAX_LINES) list.firstChild.remove();
  if (atBottom) {
    fitTimeline(list);
    list.scrollTop = list.scrollHeight;
  }
}

// The timeline is as tall as the newest lines that fit in its max-height, so that scrolled to
// the bottom (following the run) its first visible line starts at its top edge instead of
// being cut in half: lines wrap, so a fixed height would cut one wherever it falls.
function fitTimeline(list) {
  list.style.height = "";
  const max = parseFloat(getComputedStyle(list).maxHeight);
  const last = list.lastElementChild;
  if (!last || !(max > 0) || list.scrollHeight <= max) return;
  const bottom = last.getBoundingClientRect().bottom;
  let top = bottom;
  for (let item = last; item; item = item.previousElementSibling) {
    const itemTop = item.getBoundingClientRect().top;
    if (bottom - itemTop > max) break;
    top = itemTop;
  }
  list.style.height = `${Math.round(bottom - top)}px`;
}

// --- rendering --------------------------------------------------------------------------------

function podChip(key, name, extra = [], classes = "") {
  const chip = el("button", { class: `pod ${classes}`, "data-pod": key, type: "button" }, name);
  for (const part of extra) {
    if (part) chip.append(" ", part);
  }
  chip.addEventListener("click", () => select(key));
  if (key === state.selected) chip.classList.add("selected");
  return chip;
}

function renderNodes() {
  const box = $("nodes");
  const names = [...state.nodes.keys()].sort(natural);
  // Pods on their way to a node, not bound yet: waiting on Permit, assumed, or nominated by
  // preemption (step 11: the node where its victims are making room for it).
  const incoming = new Map();
  for (const pod of state.pods.values()) {
    if (pod.where === "bound") continue;
    const node = pod.where === "waiting" ? pod.selected : pod.assumed || pod.nominated;
    if (!node) continue;
    if (!incoming.has(node)) incoming.set(node, []);
    incoming.get(node).push(pod);
  }
  const boxes = names.map((name) => {
    const node = state.nodes.get(name);
    const badges = el("div", { class: "badges" });
    if (node.unschedulable) badges.append(el("span", { class: "badge cordoned" }, "cordoned"));
    for (const taint of node.taints) {
      // A long taint is cut with an ellipsis to fit the card; its title has all of it.
      badges.append(el("span", { class: "badge taint", title: taint }, taint));
    }
    const section = el(
      "section",
      { class: "node" + (node.unschedulable ? " unschedulable" : ""), "data-node": name },
      el("h3", { title: name }, name),
      badges,
    );
    if (state.features.resources && node.allocatable) section.append(resources(node));
    const pods = el("div", { class: "node-pods" });
    for (const pod of node.pods) {
      const classes = "bound" + (pod.ours ? " ours" : " other");
      // A victim of preemption stays on its node while it terminates (its graceful deletion).
      const victimFor = state.pods.get(pod.key)?.preempted_by;
      if (!victimFor) {
        pods.append(podChip(pod.key, pod.name, [], classes));
        continue;
      }
      const label = el("small", { class: "victim-label" }, "preempted");
      const chip = podChip(pod.key, pod.name, [label], classes + " victim");
      chip.title = `preempted for ${victimFor.split("/").pop()}: terminating`;
      pods.append(chip);
    }
    for (const pod of incoming.get(name) || []) {
      let label = "nominated";
      if (pod.where === "waiting") label = "Permit";
      else if (pod.assumed) label = "assumed";
      const classes = "incoming" + (label === "nominated" ? " nominated" : "");
      const chip = podChip(pod.key, pod.name, [el("small", {}, label)], classes);
      if (label === "nominated") chip.title = "status.nominatedNodeName: its victims make room";
      pods.append(chip);
    }
    section.append(pods);
    return section;
  });
  box.replaceChildren(...boxes);
  if (!boxes.length) box.append(el("p", { class: "empty" }, "no nodes yet"));
}

function resources(node) {
  const rows = el("div", { class: "resources" });
  for (const resource of ["cpu", "memory", "pods"]) {
    const total = node.allocatable[resource];
    if (total === undefined) continue;
    const used = node.requested[resource] || 0;
    const percent = total > 0 ? Math.min(100, (100 * used) / total) : 0;
    const text = `${resource} ${quantity(resource, used)}/${quantity(resource, total)}`;
    rows.append(
      el(
        "div",
        { class: "resource", "data-resource": resource, title: text },
        el("span", {}, text),
        el("meter", { min: "0", max: "100", value: String(percent) }),
      ),
    );
  }
  return rows;
}

function quantity(resource, value) {
  if (resource === "memory") {
    for (const [unit, size] of [["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]]) {
      if (value >= size) return `${+(value / size).toFixed(1)}${unit}`;
    }
    return String(value);
  }
  if (resource === "cpu" && value % 1 !== 0) return `${Math.round(value * 1000)}m`;
  return String(value);
}

// The columns of the queue panel: the step's queues, then where else a pending pod can be.
function columns() {
  const f = state.features;
  const cols = [];
  for (const queue of f.queues) {
    cols.push({ where: queue, title: f.queues.length === 1 ? "queue (a FIFO)" : queue });
  }
  cols.push({ where: "scheduling", title: "being scheduled" });
  if (f.permit) cols.push({ where: "waiting", title: "waiting on Permit" });
  if (f.assumed) cols.push({ where: "assumed", title: "assumed" });
  const pending = [...state.pods.values()].some((p) => p.where === "pending");
  if (f.queues.length === 1 || pending) {
    cols.push({ where: "pending", title: "failed, in no queue" });
  }
  return cols;
}

function inColumn(pod, where) {
  if (where === "assumed") return pod.assumed && pod.where !== "bound";
  return pod.where === where;
}

function chipDetails(pod, where) {
  switch (where) {
    case "podBackoffQ":
      // Before the flush loop exists, a pod whose backoff is over stays here until an event.
      return [
        countdown(pod, "backoff", state.features.flushes ? "backoff over" : "backoff over, no flush"),
      ];
    case "unschedulableQ":
      return [el("small", { class: "rejectors" }, pod.rejectors.join(", ") || "(no plugin)")];
    case "waiting":
      return [
        el("small", {}, `on ${pod.selected}, ${pod.permit_plugins.join(", ")}`),
        countdown(pod, "times out in", "timing out"),
      ];
    case "assumed":
      return [el("small", {}, `on ${pod.assumed}`)];
    case "pending":
      return [el("small", { class: "rejectors" }, pod.rejectors.join(", "))];
    default:
      return [];
  }
}

function renderQueues() {
  const pods = [...state.pods.values()].sort((a, b) => natural(a.key, b.key));
  const cols = columns().map(({ where, title }) => {
    const members = pods.filter((pod) => inColumn(pod, where));
    const list = el("div", { class: "queue-pods" });
    for (const pod of members) list.append(podChip(pod.key, pod.name, chipDetails(pod, where)));
    return el(
      "div",
      { class: "queue", "data-queue": where },
      el("h3", { title }, title, " ", el("span", { class: "count" }, String(members.length))),
      list,
    );
  });
  $("queue-columns").replaceChildren(...cols);
}

function renderStatus() {
  const status = $("status");
  status.textContent = state.ended ? "scenario over: Ctrl-C in the terminal ends it" : "live";
  status.className = "status " + (state.ended ? "ended" : "live");
}

function render() {
  renderStatus();
  renderNodes();
  renderQueues();
  // The pod the user picked; until then, the latest decision, followed as it changes.
  const key = shownKey();
  if (!key) return;
  const pod = state.pods.get(key);
  if (key !== state.shown || (pod && pod.rev !== state.shownRev)) loadDetail(key);
}

function shownKey() {
  return state.selected || state.latest || null;
}

// --- one pod ----------------------------------------------------------------------------------

function select(key) {
  state.selected = key;
  for (const chip of document.querySelectorAll(".pod")) {
    chip.classList.toggle("selected", chip.dataset.pod === key);
  }
  loadDetail(key);
}

async function loadDetail(key) {
  const pod = state.pods.get(key);
  state.shown = key;
  state.shownRev = pod ? pod.rev : -1;
  const response = await fetch(`/api/pod?key=${encodeURIComponent(key)}`);
  if (key !== shownKey()) return;
  if (response.ok) showDetail(await response.json());
  else showUnknown(key);
}

// Whether the panel shows the latest decision (no pod picked) or the pod the user picked.
function showing(key) {
  const auto = !state.selected;
  $("detail").dataset.pod = key;
  $("detail").dataset.auto = String(auto);
  $("detail-hint").hidden = !auto;
  $("detail-body").hidden = false;
}

function showDetail(pod) {
  showing(pod.key);
  const bound = pod.where === "bound";
  // The terminal's titles: "Why this node" for a bound pod, "Why no node" for the others.
  $("detail-title").textContent = `${bound ? "Why this node" : "Why no node"}: ${pod.name}`;
  let summary = `${pod.key}: `;
  if (bound) summary += `bound to ${pod.node}${pod.profile ? ` by profile ${pod.profile}` : ""}.`;
  else {
    summary += pod.where ? `${pod.where}` : "not in a queue yet";
    if (pod.event) summary += ` (${pod.event})`;
    if (pod.rejectors.length) summary += `, rejected by ${pod.rejectors.join(", ")}`;
    summary += ".";
    if (pod.message) summary += ` ${pod.message}`;
    if (pod.nominated) summary += ` Nominated to ${pod.nominated} by preemption.`;
  }
  if (pod.preempted_by) {
    summary += ` Preempted for ${pod.preempted_by.split("/").pop()}: terminating.`;
  }
  $("detail-summary").textContent = summary;
  $("detail-attempts").replaceChildren(
    ...pod.attempts.map((a) => el("li", { value: String(a.n) }, a.result)),
  );
  const rows = pod.table.map((row) => {
    let scores = row.scores.map(([plugin, score]) => `${plugin} ${score}`).join(", ");
    if (row.selected) scores += " <- selected";
    return el(
      "tr",
      { "data-node": row.node, class: row.filter === "passed" ? "passed" : "rejected" },
      el("td", {}, row.node),
      el("td", {}, row.filter),
      el("td", {}, scores),
    );
  });
  if (!pod.table_kept && pod.attempt_count) {
    rows.push(el("tr", {}, el("td", { colspan: "3" }, "(table no longer kept: too many pods)")));
  }
  $("why").querySelector("tbody").replaceChildren(...rows);
}

// A pod minisched recorded nothing for: bound by another scheduler, or forgotten.
function showUnknown(key) {
  showing(key);
  $("detail-title").textContent = key.split("/").pop();
  $("detail-summary").textContent =
    `${key}: nothing recorded (another scheduler placed it, or the page has forgotten it).`;
  $("detail-attempts").replaceChildren();
  $("why").querySelector("tbody").replaceChildren();
}

// --- start ------------------------------------------------------------------------------------

function connect() {
  const events = new EventSource("/events");
  events.onmessage = (e) => apply(JSON.parse(e.data));
  events.onerror = () => {
    $("status").textContent = state.ended ? "the run has ended" : "disconnected: retrying";
    $("status").className = "status down";
  };
}

setInterval(() => {
  for (const span of document.querySelectorAll(".remaining")) updateCountdown(span);
}, 200);
connect();
