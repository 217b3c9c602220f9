// The pipeline console: draws the graph the server laid out, follows the
// server-sent "state" frames, and asks the admin endpoint's read-only
// handlers for a node's details, its tap, explain and the reload history.
// Every text from the server goes in through textContent, never as markup.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const ui = {
  graph: null,        // the graphView drawn
  nodes: new Map(),   // address -> {view, g, texts}
  edges: [],          // {from, to, path, label, bg}
  frame: null,        // the latest frame
  reloads: -1,        // reload count of the last /reloads fetched
  selected: "",       // address of the node shown in the side panel
  detail: null,       // its /console/node answer, extended by frames
  tap: null,          // AbortController of its tap
  explained: null,    // the explain answer drawn on the graph
};

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function h(tag, cls, text, parent) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

function fmtRate(v) {
  if (!v) return "0/s";
  if (v >= 1000) return (v / 1000).toFixed(1) + "k/s";
  if (v >= 10) return v.toFixed(0) + "/s";
  return v.toFixed(1) + "/s";
}

function clip(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }

// ---- the graph ----

async function loadGraph() {
  const r = await fetch("/console/graph", {cache: "no-store"});
  if (!r.ok) return;
  drawGraph(await r.json());
  if (ui.frame) update(ui.frame);
  if (ui.explained) drawExplain(ui.explained);
  ui.reloads = -1; // redraw the last reload's diff on the new graph
}

function drawGraph(g) {
  ui.graph = g;
  const svg = $("graph");
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${g.width} ${g.height}`);
  svg.parentElement.style.maxWidth = (g.width + 2) + "px"; // the frame fits a narrow graph
  svg.style.minWidth = Math.round(g.width * 0.7) + "px"; // a wide graph scrolls rather than shrinking its text away
  const defs = el("defs", {}, svg);
  const m = el("marker", {id: "arrow", viewBox: "0 0 10 10", refX: "9", refY: "5", markerWidth: "10", markerHeight: "10",
    markerUnits: "userSpaceOnUse", orient: "auto-start-reverse"}, defs);
  el("path", {d: "M 0 0 L 10 5 L 0 10 z", fill: "#8a94a6"}, m);
  ui.nodes.clear();
  ui.edges = [];
  const byAddr = new Map(g.nodes.map((n) => [n.address, n]));
  const edgeLayer = el("g", {class: "edges"}, svg);
  const outs = new Map(), ins = new Map();
  for (const e of g.edges) { outs.set(e.from, (outs.get(e.from) || 0) + 1); ins.set(e.to, (ins.get(e.to) || 0) + 1); }
  for (const e of g.edges) {
    const a = byAddr.get(e.from), b = byAddr.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2, dx = Math.max((x2 - x1) / 2, 30);
    const path = el("path", {class: "edge", d: `M ${x1} ${y1} C ${x1 + dx} ${y1}, ${x2 - dx} ${y2}, ${x2 - 2} ${y2}`,
      "marker-end": "url(#arrow)", "data-from": e.from, "data-to": e.to}, edgeLayer);
    // The label sits where the edge is apart from its siblings: near the
    // target on a fan-out, near the source on a fan-in, else midway.
    const fanOut = outs.get(e.from) > 1, fanIn = ins.get(e.to) > 1;
    const t = fanOut && !fanIn ? 0.75 : fanIn && !fanOut ? 0.25 : 0.5;
    const c = [(1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t ** 2, t ** 3];
    const mx = c[0] * x1 + c[1] * (x1 + dx) + c[2] * (x2 - dx) + c[3] * x2;
    const my = (c[0] + c[1]) * y1 + (c[2] + c[3]) * y2;
    const bg = el("rect", {class: "edgelabel-bg", x: mx - 24, y: my - 17, width: 48, height: 14, rx: 3}, edgeLayer);
    const label = el("text", {class: "edgelabel", x: mx, y: my - 6, "text-anchor": "middle", "data-from": e.from, "data-to": e.to}, edgeLayer, "");
    ui.edges.push({from: e.from, to: e.to, path, label, bg});
  }
  const nodeLayer = el("g", {class: "nodes"}, svg);
  for (const n of g.nodes) {
    const grp = el("g", {class: "node pending", transform: `translate(${n.x},${n.y})`, "data-addr": n.address, "data-kind": n.kind, tabindex: "0"}, nodeLayer);
    const title = el("title", {}, grp, n.address);
    el("rect", {class: "box", width: n.w, height: n.h}, grp);
    el("rect", {class: "bar", x: 0, y: 0, width: 6, height: n.h}, grp);
    el("text", {class: "kind", x: 16, y: 20}, grp, `${n.kind} · ${n.type}`);
    el("text", {class: "name", x: 16, y: 40}, grp, clip(n.name, 24));
    const t = {
      title,
      records: el("text", {class: "records", x: 16, y: 61}, grp, "–"),
      state: el("text", {class: "state", x: n.w - 12, y: 61, "text-anchor": "end"}, grp, "pending"),
      rates: el("text", {class: "rates", x: 16, y: 79}, grp, ""),
      extra: el("text", {class: "extra", x: 16, y: 96}, grp, ""),
    };
    const tag = el("g", {class: "tag", visibility: "hidden"}, grp);
    el("rect", {x: n.w - 80, y: -9, width: 72, height: 17}, tag);
    t.tag = el("text", {x: n.w - 44, y: 3.5, "text-anchor": "middle"}, tag, "");
    t.tagGroup = tag;
    const note = el("g", {class: "pathnote", visibility: "hidden"}, grp);
    t.noteRect = el("rect", {x: 10, y: -10, width: 120, height: 19}, note);
    t.note = el("text", {x: 18, y: 4}, note, "");
    t.noteGroup = note;
    grp.addEventListener("click", () => select(n.address));
    grp.addEventListener("keydown", (ev) => { if (ev.key === "Enter") select(n.address); });
    ui.nodes.set(n.address, {view: n, g: grp, t});
  }
  if (ui.selected && !ui.nodes.has(ui.selected)) select("");
  markSelected();
}

function inputsOf(addr) { return ui.edges.filter((e) => e.to === addr).map((e) => e.from); }

// update writes a frame onto the drawn graph.
function update(f) {
  ui.frame = f;
  const ready = $("ready");
  ready.textContent = f.ready ? "ready" : "not ready";
  ready.className = "badge " + (f.ready ? "ok" : "bad");
  $("generation").textContent = "generation " + f.generation;
  $("clock").textContent = "updated " + new Date(f.time).toLocaleTimeString();
  if (ui.graph && f.graph !== ui.graph.version) { loadGraph(); return; }
  for (const [addr, n] of ui.nodes) {
    const s = f.nodes[addr];
    if (!s) continue;
    const classes = ["node", s.state];
    for (const c of ["selected", "onpath", "dim"]) if (n.g.classList.contains(c)) classes.push(c);
    n.g.setAttribute("class", classes.join(" "));
    n.g.dataset.state = s.state;
    n.g.dataset.records = s.records;
    n.t.state.textContent = s.state + (s.restarts ? ` · ${s.restarts} restarts` : "");
    if (n.view.kind === "sink") {
      const ins = inputsOf(addr).map((a) => (f.nodes[a] || {}).records || 0);
      const sum = ins.reduce((x, y) => x + y, 0);
      n.t.records.textContent = `${ins.length > 1 ? "≤ " : ""}${sum} wanted`;
      n.t.rates.textContent = `in ${fmtRate(s.in)} · writes ${fmtRate(s.writes)} · queue ${s.queue}`;
    } else {
      n.t.records.textContent = `${s.records} records`;
      n.t.rates.textContent = n.view.kind === "source" ? `out ${fmtRate(s.out)}`
        : `in ${fmtRate(s.in)} · out ${fmtRate(s.out)} · queue ${s.queue}`;
    }
    let extra = "", cls = "extra";
    if (s.braked) { extra = `${s.braked} deletes held (max_deletes)`; cls = "extra err"; }
    else if (s.detail) { extra = s.detail; cls = "extra err"; }
    else if (s.errors) { extra = `write errors ${fmtRate(s.errors)}`; cls = "extra err"; }
    else if (s.pending) extra = `${s.pending} deletion${s.pending > 1 ? "s" : ""} held back`;
    else if (n.view.reads && n.view.reads.length) extra = "reads " + n.view.reads.join(" ");
    else { extra = n.view.pos.split("/").pop(); cls = "extra pos"; }
    n.t.extra.textContent = clip(extra, 36);
    n.t.extra.setAttribute("class", cls);
    n.t.title.textContent = `${addr}\n${n.view.pos}${s.detail ? "\n" + s.detail : ""}`;
  }
  for (const e of ui.edges) {
    const s = f.nodes[e.from];
    const r = s ? s.out : 0;
    e.label.textContent = fmtRate(r);
    const onpath = e.path.classList.contains("onpath");
    e.path.setAttribute("class", "edge" + (r > 0 ? " live" : "") + (onpath ? " onpath" : ""));
  }
  if (f.reloads !== ui.reloads) loadReloads(f.reloads);
  if (ui.detail && f.nodes[ui.selected]) extendHistory(f, f.nodes[ui.selected]);
}

// ---- live stream ----

function connect() {
  const es = new EventSource("/console/events");
  es.addEventListener("state", (ev) => update(JSON.parse(ev.data)));
  es.onerror = () => { $("ready").textContent = "reconnecting…"; $("ready").className = "badge bad"; };
}

// ---- reloads ----

async function loadReloads(count) {
  ui.reloads = count;
  const r = await fetch("/reloads", {cache: "no-store"});
  if (!r.ok) return;
  const body = await r.json();
  const list = $("reloadlist");
  list.replaceChildren();
  if (!body.reloads.length) {
    h("li", "empty", "no reload yet: the configuration loaded at start is generation 1", list);
  }
  for (const rec of body.reloads) {
    const li = h("li", rec.result, undefined, list);
    li.dataset.result = rec.result;
    li.dataset.generation = rec.generation;
    const head = h("div", "", undefined, li);
    h("span", "result " + rec.result, rec.result.replace("_", " "), head);
    head.append(` generation ${rec.generation} · ${rec.trigger || "reload"} · ${new Date(rec.started).toLocaleTimeString()} · ${(rec.duration_ns / 1e6).toFixed(0)} ms`);
    const changed = (rec.nodes || []).filter((n) => n.action !== "kept");
    if (changed.length) {
      h("div", "changes", changed.map((n) => `${n.action} ${n.address}${n.changed ? " (" + n.changed.join(", ") + ")" : ""}`).join(" · "), li);
    } else if (rec.result === "applied") {
      h("div", "changes", "no node changed", li);
    }
    if (rec.error) h("div", "diag", rec.error, li);
    for (const d of rec.diagnostics || []) h("div", "diag", d, li);
  }
  drawDiff(body.reloads.find((rec) => (rec.nodes || []).some((n) => n.action !== "kept")));
}

// drawDiff tags the nodes the last reload that changed the graph added or rebuilt.
function drawDiff(rec) {
  const actions = new Map(((rec && rec.nodes) || []).map((n) => [n.address, n.action]));
  for (const [addr, n] of ui.nodes) {
    const a = actions.get(addr);
    const show = a === "added" || a === "rebuilt";
    n.t.tagGroup.setAttribute("visibility", show ? "visible" : "hidden");
    n.t.tagGroup.setAttribute("class", "tag " + (a || ""));
    n.t.tag.textContent = show ? a : "";
    n.g.dataset.reload = show ? a : "";
  }
}

// ---- the side panel: one node ----

function markSelected() {
  for (const [addr, n] of ui.nodes) n.g.classList.toggle("selected", addr === ui.selected);
}

async function select(addr) {
  if (ui.tap) { ui.tap.abort(); ui.tap = null; }
  ui.selected = addr;
  ui.detail = null;
  markSelected();
  const side = $("detail");
  if (!addr) {
    side.replaceChildren(h("p", "empty", "Select a node to see its block as written, the fields it reads, its recent deltas and its metrics over the last minutes."));
    return;
  }
  const r = await fetch("/console/node?addr=" + encodeURIComponent(addr), {cache: "no-store"});
  if (!r.ok || ui.selected !== addr) return;
  const d = await r.json();
  ui.detail = d;
  side.replaceChildren();
  const close = h("button", "close", "×", side);
  close.title = "close";
  close.onclick = () => select("");
  h("h3", "", d.address, side);
  h("div", "pos", d.pos, side);
  const kv = h("dl", "kv", undefined, side);
  const s = (ui.frame && ui.frame.nodes[addr]) || {};
  const row = (k, v) => { h("dt", "", k, kv); const dd = h("dd", "", v, kv); return dd; };
  d.stateCell = row("state", s.state || "–");
  d.detailCell = row("last error", s.detail || "none");
  if (d.inputs && d.inputs.length) row(d.inputs.length > 1 ? "inputs" : "input", d.inputs.join(", "));
  if (d.emits) row("emits", d.emits);
  h("h2", "", d.reads ? "Fields it reads (projection)" : "Fields", side);
  const chips = h("div", "chips", undefined, side);
  if (d.reads) for (const f of d.reads) h("span", "chip", f === "." ? "whole objects" : f, chips);
  else h("span", "empty", d.kind === "source" ? "decodes whole objects" : "works on the records of its input", chips);
  h("h2", "", "Metrics, last 5 minutes", side);
  d.plots = h("div", "plots", undefined, side);
  drawPlots(d);
  h("h2", "", "Block as written", side);
  h("pre", "block", d.block || "(not available)", side);
  h("h2", "", "Recent deltas (tap)", side);
  const list = h("ul", "", undefined, side);
  list.id = "taplist";
  h("li", "skipped", "waiting for deltas…", list);
  startTap(addr, list);
}

function extendHistory(f, s) {
  const hst = ui.detail.history;
  const t = Math.floor(new Date(f.time).getTime() / 1000);
  if (hst.t.length && hst.t[hst.t.length - 1] >= t) return;
  hst.t.push(t); hst.records.push(s.records); hst.in.push(s.in); hst.out.push(s.out); hst.queue.push(s.queue);
  for (const k of ["t", "records", "in", "out", "queue"]) if (hst[k].length > 300) hst[k].shift();
  ui.detail.stateCell.textContent = s.state;
  ui.detail.detailCell.textContent = s.detail || "none";
  drawPlots(ui.detail);
}

function drawPlots(d) {
  const hst = d.history;
  d.plots.replaceChildren();
  const series = [["records", hst.records, (v) => String(v)], ["deltas in", hst.in, fmtRate],
    ["deltas out", hst.out, fmtRate], ["queue depth", hst.queue, (v) => String(v)]];
  for (const [name, vals, fmt] of series) {
    const box = h("div", "plot", undefined, d.plots);
    const label = h("div", "label", undefined, box);
    h("span", "", name, label);
    h("span", "", vals.length ? fmt(vals[vals.length - 1]) : "–", label);
    const svg = el("svg", {viewBox: "0 0 300 40", preserveAspectRatio: "none"}, box);
    if (vals.length < 2) continue;
    const maxV = Math.max(...vals, 1e-9), n = vals.length;
    const pts = vals.map((v, i) => `${(300 * (300 - n + i) / 299).toFixed(1)},${(38 - 34 * v / maxV).toFixed(1)}`);
    el("path", {class: "area", d: `M ${pts[0].split(",")[0]},40 L ${pts.join(" L ")} L 300,40 Z`}, svg);
    el("path", {d: "M " + pts.join(" L ")}, svg);
  }
}

async function startTap(addr, list) {
  const ctl = new AbortController();
  ui.tap = ctl;
  let first = true;
  const add = (line) => {
    if (first) { list.replaceChildren(); first = false; }
    let text;
    if (line.op === "skipped") text = `${line.dropped || line.limited} deltas left out`;
    else text = `${new Date(line.time).toLocaleTimeString()} ${line.key}${line.value !== undefined ? " " + JSON.stringify(line.value) : ""}`;
    const li = h("li", line.op, text);
    li.title = text;
    list.prepend(li);
    while (list.children.length > 100) list.lastChild.remove();
  };
  try {
    const r = await fetch("/tap?rate=20&node=" + encodeURIComponent(addr), {signal: ctl.signal});
    if (!r.ok) {
      list.replaceChildren(h("li", "skipped", r.status === 503 ? "every tap is in use; try again soon" : "no tap for this node"));
      return;
    }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const {value, done} = await reader.read();
      if (done) break;
      buf += dec.decode(value, {stream: true});
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line) add(JSON.parse(line));
      }
    }
  } catch (e) {
    if (e.name !== "AbortError") list.replaceChildren(h("li", "skipped", "tap closed"));
  }
}

// ---- explain ----

async function explain(key) {
  const box = $("explain");
  if (!key) { ui.explained = null; clearExplain(); box.hidden = true; return; }
  const r = await fetch("/explain?key=" + encodeURIComponent(key), {cache: "no-store"});
  box.hidden = false;
  box.replaceChildren();
  if (!r.ok) { h("div", "diag", await r.text(), box); return; }
  const ex = await r.json();
  ui.explained = ex;
  drawExplain(ex);
  const close = h("button", "close", "×", box);
  close.onclick = () => { $("key").value = ""; explain(""); };
  h("h3", "", "key " + ex.key, box);
  if (ex.absent) {
    h("div", "", "No sink holds or wants this key.", box);
    for (const st of ex.seen || []) stageLine(st, box);
    if (ex.gates && ex.gates.length) {
      h("h2", "", "What decides whether it reaches a sink", box);
      for (const gt of ex.gates) h("pre", "", `${gt.node} ${gt.attr} (${gt.pos})\n${gt.text}`, box);
    }
    return;
  }
  const withPath = ex.entries.find((e) => e.path && e.path.length);
  if (withPath && withPath.origin) {
    const o = withPath.origin;
    h("div", "pos", `origin ${o.source}${o.namespace ? " " + o.namespace + "/" + o.name : o.name ? " " + o.name : ""}${o.file ? " · " + o.file + (o.line ? ":" + o.line : "") : ""}`, box);
  }
  if (withPath) {
    h("h2", "", "Value at each stage", box);
    for (const st of withPath.path) stageLine(st, box);
  } else {
    h("div", "pos", "the stages before the sinks are not known for this record (its origin was not kept)", box);
  }
  h("h2", "", "Sink entries", box);
  for (const e of ex.entries) {
    const head = h("div", "sinkentry", undefined, box);
    h("strong", "", e.sink + " ", head);
    h("span", accepted(e.status) ? "status-applied" : e.wanted && !e.in_target ? "status-failing" : "status-other", e.status, head);
    if (e.target_key && e.target_key !== e.input_key) head.append(` as ${e.target_key}`);
    h("div", "pos", truthLine(e), box);
    if (e.last_error) h("div", "diag", `${e.attempts} attempts: ${e.last_error}`, box);
    if (e.conflict) h("div", "diag", e.conflict, box);
  }
}

// accepted reports whether a status says the target has the wanted entry:
// applied (read back and compared), or appended (an append-only target
// took it).
function accepted(status) { return status === "applied" || status === "appended"; }

// truthLine is what the sink wants at the key, what it last wrote, and what
// the target held there when read, with the time of that read.
function truthLine(e) {
  const want = e.wanted ? JSON.stringify(e.want) : "(none)";
  const wrote = e.written ? ` · wrote ${JSON.stringify(e.wrote)}` : "";
  let actual;
  if (e.read_error) actual = `target unknown: ${e.read_error}`;
  else if (!e.actual_read_at) actual = "target not readable (append-only)";
  else actual = `target ${e.in_target ? JSON.stringify(e.actual) : "(none)"} read ${new Date(e.actual_read_at).toLocaleTimeString()}`;
  return `want ${want}${wrote} · ${actual}`;
}

function stageLine(st, box) {
  const div = h("div", "stage" + (st.present ? "" : " absent"), undefined, box);
  h("div", "n", st.node, div);
  let text = st.present ? JSON.stringify(st.value) : "not in its output";
  if (st.pending_delete) text += ` · deletion held back until ${new Date(st.pending_delete).toLocaleTimeString()}`;
  h("div", "pos", text, div);
}

function clearExplain() {
  for (const n of ui.nodes.values()) {
    n.g.classList.remove("onpath", "dim");
    n.t.noteGroup.setAttribute("visibility", "hidden");
    n.g.dataset.explain = "";
  }
  for (const e of ui.edges) e.path.classList.remove("onpath");
}

// drawExplain marks the key's path on the graph: each stage with its value,
// each sink with its entry's status; every other node is dimmed.
function drawExplain(ex) {
  clearExplain();
  const notes = new Map(), kinds = new Map(), hops = [];
  const stages = (path, sink) => {
    let prev = "";
    for (const st of path || []) {
      const shown = st.node.startsWith("source.") ? st.key : JSON.stringify(st.value);
      let note = st.present ? clip(shown || "present", 30) : "absent";
      let kind = st.present ? "" : "absent";
      if (st.pending_delete) { note = "deletion held back"; kind = "pending"; }
      notes.set(st.node, note); kinds.set(st.node, kind);
      if (prev) hops.push([prev, st.node]);
      prev = st.node;
    }
    if (sink && prev) hops.push([prev, sink]);
  };
  for (const e of ex.entries || []) {
    stages(e.path, e.sink);
    notes.set(e.sink, e.status);
    kinds.set(e.sink, accepted(e.status) ? "" : "pending");
  }
  stages(ex.seen, "");
  for (const [addr, n] of ui.nodes) {
    const on = notes.has(addr);
    n.g.classList.toggle("onpath", on);
    n.g.classList.toggle("dim", !on);
    n.g.dataset.explain = on ? notes.get(addr) : "";
    if (on) {
      n.t.note.textContent = notes.get(addr);
      n.t.noteGroup.setAttribute("class", "pathnote " + kinds.get(addr));
      n.t.noteRect.setAttribute("width", Math.min(n.view.w - 20, 16 + 6.6 * notes.get(addr).length));
      n.t.noteGroup.setAttribute("visibility", "visible");
    }
  }
  const onEdge = new Set(hops.map(([a, b]) => a + "\n" + b));
  for (const e of ui.edges) e.path.classList.toggle("onpath", onEdge.has(e.from + "\n" + e.to));
}

$("keyform").addEventListener("submit", (ev) => { ev.preventDefault(); explain($("key").value.trim()); });

loadGraph().then(() => {
  connect();
  const key = new URLSearchParams(location.search).get("key"); // a link to a key's explain: /?key=KEY
  if (key) { $("key").value = key; explain(key); }
});
