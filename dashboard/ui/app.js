// Engram dashboard: a read-only view of one memory stack, served by
// `engram dashboard` from the binary itself. Plain DOM code, no framework
// and no build step. Every piece of data reaches the page through
// textContent or an attribute, never parsed as HTML, so stored text can
// never become markup; and nothing here needs an inline script or style, so
// a Content-Security-Policy of default-src 'self' holds.
"use strict";

(() => {
  const REFRESH_MS = 5000; // docs/decisions.md#dashboard: auto-refresh every 5 seconds
  const PREVIEW_CHARS = 120; // docs/decisions.md#dashboard: raw blob preview
  const LIST_LIMIT = 100; // memories and audit records per page (the API's default)
  const FOCUS_SCAN_PAGES = 50; // pages searched for a linked memory before giving up
  const RAW_LIMITS = [50, 100, 200, 300, 400, 500];
  const RAW_DEFAULT_LIMIT = 200;
  const MAX_LIMIT = 500; // the API's cap on every list

  // The memory sub-tabs and their columns (the fields docs/decisions.md#dashboard
  // says the dashboard names per memory type). `main` is the text the row expands from.
  const MEMORY_TYPES = [
    {
      type: "episode", path: "episodes", label: "Episodes",
      main: (c) => c.objective,
      columns: [
        ["Outcome", (c) => c.outcome],
        ["Confidence", (c) => num(c.confidence), "num"],
        ["Valence", (c) => num(c.emotional_valence), "num"],
        ["Arousal", (c) => num(c.emotional_arousal), "num"],
      ],
      mainLabel: "Objective",
    },
    {
      type: "belief", path: "beliefs", label: "Beliefs",
      main: (c) => c.statement, mainLabel: "Statement",
      columns: [
        ["Type", (c) => c.belief_type],
        ["Confidence", (c) => num(c.confidence), "num"],
        ["Scope", (c) => c.scope],
      ],
    },
    {
      type: "value", path: "values", label: "Values",
      main: (c) => c.name, mainLabel: "Name",
      columns: [
        ["Statement", (c) => c.statement],
        ["Priority", (c) => num(c.priority), "num"],
      ],
    },
    {
      type: "goal", path: "goals", label: "Goals",
      main: (c) => c.title, mainLabel: "Title",
      columns: [
        ["Type", (c) => c.goal_type],
        ["Priority", (c) => c.priority],
        ["Status", (c) => c.status],
      ],
    },
    {
      type: "note", path: "notes", label: "Notes",
      main: (c) => c.content, mainLabel: "Content",
      columns: [
        ["Type", (c) => c.note_type],
        ["Processed", (c, m) => yesNo(first(m.processed, c.processed))],
      ],
    },
    {
      type: "relationship", path: "relationships", label: "Relationships",
      main: (c) => c.entity_name, mainLabel: "Entity",
      columns: [
        ["Entity type", (c) => c.entity_type],
        ["Relationship", (c) => c.relationship_type],
        ["Sentiment", (c) => num(c.sentiment), "num"],
      ],
    },
    {
      type: "drive", path: "drives", label: "Drives",
      main: (c) => c.drive_type, mainLabel: "Type",
      columns: [
        ["Intensity", (c) => num(c.intensity), "num"],
        ["Focus areas", (c) => (Array.isArray(c.focus_areas) ? c.focus_areas.join(", ") : "")],
      ],
    },
  ];
  const MEMORY_TYPE = new Map(MEMORY_TYPES.map((t) => [t.type, t]));
  const TABS = ["overview", "raw", "memories", "suggestions", "audit", "settings"];
  const LEVELS = ["calm", "aware", "elevated", "high", "critical"];

  const state = {
    tab: "overview",
    stats: null,
    // Lists are read a page at a time from the API (cursor: the page shown,
    // prev: the cursors of the pages before it, next: the next page's).
    raw: { filter: "all", limit: RAW_DEFAULT_LIMIT, ...firstPage(), items: [], expanded: new Set(), focus: "" },
    mem: { type: MEMORY_TYPES[0].type, ...firstPage(), items: [], expanded: new Set(), focus: "" },
    sugg: { status: "", items: [], expanded: new Set(), focus: "" },
    audit: { ...firstPage(), items: [] },
    autoRefresh: false,
    timer: 0,
    generation: 0, // bumps on every navigation; late answers of older ones are dropped
  };

  // ---- small helpers -------------------------------------------------------

  function firstPage() {
    return { cursor: "", prev: [], next: null };
  }

  const $ = (id) => document.getElementById(id);

  // el builds an element: attrs may hold class, text, on (event handlers) and
  // plain attributes; children are nodes or strings (text nodes).
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = String(v);
      else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    append(node, children);
    return node;
  }

  function append(node, ...children) {
    for (const c of children.flat(Infinity)) {
      if (c === undefined || c === null || c === false) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }

  function clear(node) {
    node.replaceChildren();
    return node;
  }

  const first = (...vs) => vs.find((v) => v !== undefined && v !== null);
  const count = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : "0");
  const num = (v) => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : "");
  const yesNo = (v) => (v === undefined || v === null ? "" : v ? "yes" : "no");

  function when(ts) {
    if (!ts) return "";
    const d = new Date(ts);
    if (Number.isNaN(d.getTime())) return String(ts);
    const p = (n) => String(n).padStart(2, "0");
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }

  function preview(text, n = PREVIEW_CHARS) {
    const s = String(text ?? "").replace(/\s+/g, " ").trim();
    return s.length > n ? s.slice(0, n) + "…" : s;
  }

  // contentOf returns a memory's content object whatever shape the API
  // chose (an object, or JSON text).
  function contentOf(m) {
    let c = m && m.content;
    if (typeof c === "string") {
      try {
        c = JSON.parse(c);
      } catch {
        return { content: c };
      }
    }
    return c && typeof c === "object" ? c : {};
  }

  // listOf finds the array in a list answer: the answer itself, the named
  // key, or the first array it holds.
  function listOf(answer, key) {
    if (Array.isArray(answer)) return answer;
    if (!answer || typeof answer !== "object") return [];
    if (Array.isArray(answer[key])) return answer[key];
    return Object.values(answer).find(Array.isArray) || [];
  }

  async function api(path) {
    const res = await fetch(path, { headers: { Accept: "application/json" } });
    let body = null;
    try {
      body = await res.json();
    } catch {
      body = null;
    }
    if (!res.ok) {
      const msg = body && body.error ? (body.error.message || body.error) : res.statusText;
      const err = new Error(`${path}: ${res.status} ${msg}`);
      err.status = res.status;
      throw err;
    }
    return body && typeof body === "object" && "success" in body && "data" in body ? body.data : body;
  }

  function showError(err) {
    const banner = $("error-banner");
    if (!err) {
      banner.hidden = true;
      clear(banner);
      return;
    }
    banner.textContent = "Could not load: " + (err.message || String(err));
    banner.hidden = false;
  }

  // A reference to a memory: "type:id" strings (sources, promoted_to) or
  // {type, id} objects (provenance nodes).
  function parseRef(ref) {
    if (ref && typeof ref === "object") return { type: ref.type || "", id: ref.id || "" };
    const s = String(ref || "");
    const i = s.indexOf(":");
    return i < 0 ? { type: "", id: s } : { type: s.slice(0, i), id: s.slice(i + 1) };
  }

  function refHref(ref) {
    if (ref.type === "raw_entry") return "#raw/" + encodeURIComponent(ref.id);
    if (MEMORY_TYPE.has(ref.type)) return `#memories/${ref.type}/${encodeURIComponent(ref.id)}`;
    if (ref.type === "suggestion") return "#suggestions/" + encodeURIComponent(ref.id);
    return "";
  }

  // refLink links a memory reference to where the dashboard shows it.
  function refLink(ref) {
    const r = parseRef(ref);
    const label = `${r.type ? r.type.replace("_", " ") + " " : ""}${r.id}`;
    const href = refHref(r);
    return href ? el("a", { href, class: "ref", "data-ref": `${r.type}:${r.id}`, text: label }) : el("code", { text: label });
  }

  function tierOf(m) {
    if (m.forgotten) return "forgotten";
    if (m.tier) return m.tier;
    const s = m.strength;
    if (typeof s !== "number") return "";
    if (s >= 0.8) return "strong";
    if (s >= 0.5) return "fading";
    if (s >= 0.2) return "weak";
    return s > 0 ? "dormant" : "forgotten";
  }

  // strengthCell shows strength as a meter and a number coloured by tier.
  function strengthCell(m) {
    const s = typeof m.strength === "number" ? m.strength : contentOf(m).strength;
    const tier = tierOf({ ...m, strength: s });
    const td = el("td", { class: "strength-cell" });
    if (typeof s !== "number") return td;
    const meter = el("meter", { min: 0, max: 1, low: 0.2, high: 0.5, optimum: 1, value: s, "aria-label": "strength" });
    append(td, el("span", { class: "strength" }, meter, el("span", { class: `tier tier-${tier}`, title: tier, text: `${s.toFixed(2)} ${tier}` })));
    if (m.is_protected) append(td, el("span", { class: "flag", text: "protected" }));
    return td;
  }

  function rowClasses(m) {
    const tier = tierOf(m);
    return ["item", m.forgotten || tier === "forgotten" ? "is-forgotten" : "", tier === "weak" || tier === "dormant" ? "is-weak" : ""].filter(Boolean).join(" ");
  }

  // expanderRow renders a table row whose first cell is a button that
  // expands it (Enter and Space work because it is a button); detail()
  // fills the expansion and may be async.
  function expanderRow({ key, text, cells, expanded, classes, detail, colspan, onToggle }) {
    const button = el("button", { type: "button", class: "expander", "aria-expanded": expanded ? "true" : "false", "data-key": key }, el("span", { class: "preview", text }));
    const row = el("tr", { class: classes || "item", "data-key": key }, el("td", {}, button), cells);
    const detailRow = el("tr", { class: "detail", hidden: !expanded }, el("td", { colspan }));
    const fill = () => {
      const cell = clear(detailRow.firstChild);
      cell.append(el("p", { class: "muted", text: "Loading…" }));
      Promise.resolve(detail(cell)).catch((err) => {
        clear(cell).append(el("p", { class: "error-banner", text: "Could not load: " + err.message }));
      });
    };
    button.addEventListener("click", () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", open ? "true" : "false");
      detailRow.hidden = !open;
      onToggle(open);
      if (open) fill();
    });
    if (expanded) fill();
    return [row, detailRow];
  }

  // focusKeeper is called before a table's rows are rebuilt; the function
  // it returns puts the keyboard focus back on the row it was on, so a
  // refresh (auto-refresh every 5 s) never throws a keyboard user out of
  // the list.
  function focusKeeper(table) {
    const active = document.activeElement;
    const key = active && table.contains(active) && active.classList.contains("expander") ? active.dataset.key : "";
    return () => {
      const again = key && table.querySelector(`.expander[data-key="${CSS.escape(key)}"]`);
      if (again) again.focus({ preventScroll: true });
    };
  }

  function emptyRow(tbody, colspan, text) {
    tbody.append(el("tr", {}, el("td", { colspan, class: "empty", text })));
  }

  // cursorPager renders Previous/Next over the API's pages of a list s
  // (see state); size is the page size asked for.
  function cursorPager(node, s, size, what) {
    clear(node);
    const from = s.prev.length * size + 1;
    const to = from + s.items.length - 1;
    if (s.prev.length === 0 && !s.next) {
      if (s.items.length > 0) node.append(el("span", { class: "muted", text: `${count(s.items.length)} ${what}` }));
      return;
    }
    const go = (cursor, prev) => {
      Object.assign(s, { cursor, prev });
      refresh().then(() => node.parentElement.scrollIntoView({ block: "start" }));
    };
    node.append(
      el("button", { type: "button", "data-page": "prev", disabled: s.prev.length === 0, on: { click: () => go(s.prev[s.prev.length - 1], s.prev.slice(0, -1)) } }, "‹ Newer"),
      el("span", { class: "muted", text: `page ${s.prev.length + 1}: ${what} ${count(from)}–${count(Math.max(from, to))}` }),
      el("button", { type: "button", "data-page": "next", disabled: !s.next, on: { click: () => go(s.next, [...s.prev, s.cursor]) } }, "Older ›"),
    );
  }

  // kvList renders an object as a definition list; nested objects become
  // dotted keys, arrays are joined.
  function kvList(dl, obj, prefix = "") {
    for (const [k, v] of Object.entries(obj || {})) {
      const key = prefix + k;
      if (v && typeof v === "object" && !Array.isArray(v)) {
        kvList(dl, v, key + ".");
        continue;
      }
      let text;
      if (Array.isArray(v)) text = v.map((x) => (x && typeof x === "object" ? JSON.stringify(x) : String(x))).join(", ");
      else if (v === null || v === undefined) text = "—";
      else text = String(v);
      dl.append(el("dt", { text: key }), el("dd", { "data-key": key, text }));
    }
    return dl;
  }

  // ---- provenance ----------------------------------------------------------

  function provNodes(tree) {
    if (!tree) return [];
    if (Array.isArray(tree)) return tree;
    return Array.isArray(tree.nodes) ? tree.nodes : [];
  }

  function provList(nodes) {
    if (nodes.length === 0) return el("p", { class: "muted", text: "none" });
    return el("ul", {}, nodes.map((n) => el("li", {}, refLink(n), n.cycle ? " (cycle)" : "", n.truncated ? " (more below)" : "", provNodes(n).length ? provList(provNodes(n)) : null)));
  }

  async function provenanceSection(type, id) {
    const tree = await api(`/api/provenance/${encodeURIComponent(type)}/${encodeURIComponent(id)}`);
    return el("div", { class: "prov" },
      el("h4", { text: "Derived memories" }), provList(provNodes(tree.down)),
      el("h4", { text: "Sources" }), provList(provNodes(tree.up)));
  }

  // ---- header and overview ---------------------------------------------------

  async function loadHeader(gen) {
    const [stats, anxiety] = await Promise.all([api("/api/stats"), api("/api/anxiety")]);
    if (gen !== state.generation) return;
    state.stats = stats;
    $("stack-id").textContent = first(stats.stack, stats.stack_id, stats.agent_id, "") || "—";
    const sugg = stats.suggestions || {};
    const counts = [
      ["Memories", stats.total],
      ["Raw", (stats.by_type || {}).raw_entry || 0],
      ["Forgotten", stats.forgotten || 0],
      ["Pending suggestions", sugg.pending || 0],
    ];
    const dl = clear($("header-counts"));
    for (const [label, n] of counts) dl.append(el("div", {}, el("dt", { text: label }), el("dd", { "data-count": label, text: count(n) })));
    renderAnxietyBadge(anxiety);
    state.anxiety = anxiety;
  }

  function renderAnxietyBadge(a) {
    const badge = $("anxiety-badge");
    const level = String(a.overall_level || "");
    badge.className = "badge" + (LEVELS.includes(level.toLowerCase()) ? " level-" + level.toLowerCase() : "");
    badge.textContent = `Anxiety ${first(a.overall_score, "?")} · ${level || "unknown"}`;
  }

  async function loadOverview(gen) {
    const processing = await api("/api/processing");
    if (gen !== state.generation) return;
    renderCountCards(state.stats || {}, processing.raw || {});
    renderAnxiety(state.anxiety || {});
    renderProcessing(processing);
  }

  // renderCountCards: the processed counts of raw entries are the
  // pipeline's (/api/processing), the same state the Raw Entries filter
  // shows.
  function renderCountCards(stats, raw) {
    const byType = stats.by_type || {};
    const forgottenBy = stats.forgotten_by_type || {};
    const sugg = stats.suggestions || {};
    const cards = clear($("count-cards"));
    const card = (label, value, extra) =>
      el("div", { class: "card", "data-card": label }, el("div", { class: "label", text: label }), el("div", { class: "value", text: count(value) }), extra ? el("div", { class: "extra", text: extra }) : null);
    cards.append(card("All memories", stats.total || 0, `${count(stats.forgotten || 0)} forgotten · ${count(stats.weak || 0)} weak`));
    for (const t of MEMORY_TYPES) {
      const f = forgottenBy[t.type] || 0;
      cards.append(card(t.label, byType[t.type] || 0, f ? `${count(f)} forgotten` : ""));
    }
    cards.append(card("Raw entries", byType.raw_entry || 0, `${count(raw.unprocessed || 0)} unprocessed · ${count(raw.processed || 0)} processed`));
    const suggTotal = Object.values(sugg).reduce((a, b) => a + (typeof b === "number" ? b : 0), 0);
    cards.append(card("Suggestions", suggTotal, Object.entries(sugg).filter(([, v]) => v > 0).map(([k, v]) => `${count(v)} ${k}`).join(" · ")));
  }

  function renderAnxiety(a) {
    const level = String(a.overall_level || "unknown");
    $("anxiety-summary").textContent = `Overall ${first(a.overall_score, "?")} / 100 — ${level}` + (typeof a.overall_confidence === "number" ? ` (confidence ${a.overall_confidence.toFixed(2)})` : "");
    const bars = clear($("anxiety-dimensions"));
    const dims = Object.entries(a.dimensions || {}).sort((x, y) => (y[1].score || 0) - (x[1].score || 0));
    if (dims.length === 0) bars.append(el("p", { class: "muted", text: "No dimensions reported." }));
    for (const [name, d] of dims) {
      const label = name.replace(/_/g, " ");
      bars.append(el("div", { class: "bar", "data-dimension": name },
        el("span", { class: "name", title: label, text: label }),
        el("meter", { min: 0, max: 100, low: 31, high: 66, optimum: 0, value: d.score || 0, "aria-label": label }),
        el("span", { class: "score", text: String(d.score || 0) }),
        d.detail ? el("span", { class: "detail", text: d.detail }) : null));
    }
    const recs = clear($("anxiety-recommendations"));
    const list = a.recommendations || [];
    if (list.length === 0) recs.append(el("li", { class: "muted", text: "Nothing to do." }));
    for (const r of list) recs.append(el("li", {}, el("strong", { text: r.priority || "" }), " ", r.description || ""));
  }

  function renderProcessing(p) {
    const cfg = p.config || {};
    const layers = cfg.layers || {};
    const tbody = clear($("processing-layers").tBodies[0]);
    const names = Object.keys(layers);
    const runs = p.runs || [];
    const last = runs.length ? runs[runs.length - 1] : null;
    $("processing-summary").textContent = [
      p.processor ? `Processor ${p.processor.model || "?"}${p.processor.inference ? " (inference)" : ""}` : "",
      `auto-promote ${yesNo(cfg.auto_promote) || "—"}`,
      `suggestions expire after ${first(cfg.suggestion_expiry_hours, "?")} h`,
      last ? `last pass ${when(last.at)}` : "no pass yet",
    ].filter(Boolean).join(" · ");
    if (names.length === 0) emptyRow(tbody, 6, "No processing layers configured.");
    for (const name of names) {
      const l = layers[name] || {};
      const thresholds = [
        l.quantity_threshold !== undefined ? `quantity ${l.quantity_threshold}` : "",
        l.valence_threshold !== undefined ? `valence ${num(l.valence_threshold)}` : "",
        l.time_threshold_hours !== undefined ? `time ${num(l.time_threshold_hours)} h` : "",
      ].filter(Boolean).join(" · ");
      tbody.append(el("tr", { "data-layer": name },
        el("th", { scope: "row", text: name.replace(/_/g, " ") }),
        el("td", { class: l.enabled ? "yes" : "no", text: yesNo(l.enabled) }),
        el("td", { class: l.model ? "" : "muted", text: l.model || "processor's" }),
        el("td", { class: "num", text: num(l.batch_size) }),
        el("td", { text: thresholds }),
        el("td", { class: "num", text: num(l.max_passes_per_day) })));
    }
  }

  // ---- raw entries -------------------------------------------------------------

  async function loadRaw(gen) {
    const r = state.raw;
    const q = new URLSearchParams({ limit: String(r.limit) });
    if (r.filter !== "all") q.set("processed", r.filter === "processed" ? "true" : "false");
    if (r.cursor) q.set("cursor", r.cursor);
    const [answer, focused] = await Promise.all([
      api("/api/raw?" + q),
      r.focus ? api("/api/raw/" + encodeURIComponent(r.focus)).catch((err) => ({ error: err })) : null,
    ]);
    if (gen !== state.generation) return;
    r.items = listOf(answer, "raw_entries");
    r.next = answer.next_cursor || null;
    renderRawFocus(focused);
    renderRaw();
  }

  const rawText = (m) => first(contentOf(m).content, "");
  const rawSource = (m) => first(contentOf(m).source, "");
  const rawProcessed = (m) => Boolean(first(m.processed, contentOf(m).processed, false));

  function renderRaw() {
    const r = state.raw;
    document.querySelectorAll("#raw-filter [role=radio]").forEach((b) => {
      const on = b.dataset.filter === r.filter;
      b.setAttribute("aria-checked", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
    });
    $("raw-limit").value = String(r.limit);
    const inStack = ((state.stats || {}).by_type || {}).raw_entry || 0;
    $("raw-count").textContent = `${count(inStack)} raw entries in the stack; ${r.filter === "all" ? "all" : "the " + r.filter + " ones"}, newest first, ${r.limit} a page`;
    const restoreFocus = focusKeeper($("raw-table"));
    const tbody = clear($("raw-table").tBodies[0]);
    if (r.items.length === 0) emptyRow(tbody, 5, r.filter === "all" ? "No raw entries yet. Capture one with: engram raw TEXT" : `No ${r.filter} raw entries.`);
    for (const m of r.items) tbody.append(...rawRow(m));
    restoreFocus();
    cursorPager($("raw-pager"), r, r.limit, "entries");
  }

  function rawRow(m) {
    const r = state.raw;
    const processed = rawProcessed(m);
    return expanderRow({
      key: m.id,
      text: preview(rawText(m)) || "(empty)",
      classes: rowClasses(m),
      expanded: r.expanded.has(m.id),
      colspan: 5,
      onToggle: (open) => (open ? r.expanded.add(m.id) : r.expanded.delete(m.id)),
      cells: [
        el("td", { text: rawSource(m) }),
        el("td", { class: processed ? "yes" : "no", text: processed ? "processed" : "unprocessed" }),
        strengthCell(m),
        el("td", { class: "time", text: when(m.created_at) }),
      ],
      detail: (cell) => rawDetail(cell, m.id),
    });
  }

  async function rawDetail(cell, id) {
    const [full, prov] = await Promise.all([api("/api/raw/" + encodeURIComponent(id)), provenanceSection("raw_entry", id)]);
    clear(cell).append(rawBody(full), prov);
  }

  // rawBody shows a raw entry in full: the whole blob and what became of it.
  function rawBody(m) {
    const into = m.processed_into || [];
    return el("div", { class: "raw-body", "data-raw": m.id },
      el("pre", { class: "blob", text: rawText(m) }),
      el("dl", { class: "kv" },
        el("dt", { text: "id" }), el("dd", {}, el("code", { text: m.id })),
        el("dt", { text: "source" }), el("dd", { text: rawSource(m) }),
        el("dt", { text: "processed" }), el("dd", {}, rawProcessed(m) ? "yes" : "no", into.length ? [" → ", into.map((ref) => [refLink(ref), " "])] : null),
        el("dt", { text: "strength" }), el("dd", { class: "tier tier-" + tierOf(m), text: `${num(m.strength)} ${tierOf(m)}${m.is_protected ? ", protected" : ""}` }),
        el("dt", { text: "captured" }), el("dd", { text: when(m.created_at) }),
        el("dt", { text: "tags" }), el("dd", { text: (m.tags || []).join(", ") || "—" })));
  }

  // renderRawFocus shows the raw entry a link pointed at (#raw/ID), with
  // its provenance, above the list: it need not be on the page shown.
  function renderRawFocus(focused) {
    const box = clear($("raw-detail"));
    if (!focused) return;
    const close = el("button", { type: "button", class: "close", on: { click: () => (location.hash = "#raw") } }, "Close");
    if (focused.error) {
      box.append(el("div", { class: "box focused-raw" }, el("p", { class: "notice", text: focused.error.status === 404 ? `There is no raw entry ${state.raw.focus} in this stack.` : focused.error.message }), close));
      return;
    }
    const section = el("section", { class: "box focused-raw", tabindex: -1, "aria-label": "Raw entry " + focused.id }, el("h3", { text: "Raw entry" }), rawBody(focused));
    box.append(section);
    provenanceSection("raw_entry", focused.id).then(
      (p) => section.append(p, close),
      (err) => section.append(el("p", { class: "error-banner", text: err.message }), close));
    if (!section.contains(document.activeElement)) section.focus({ preventScroll: true });
  }

  // ---- memories ----------------------------------------------------------------

  // buildMemoryTabs makes the sub-tabs once; renderMemoryTabs only updates
  // them, so a click or the keyboard focus is never lost to a rebuild.
  function buildMemoryTabs() {
    const nav = $("memory-tabs");
    for (const t of MEMORY_TYPES) {
      nav.append(el("button", {
        type: "button", role: "tab", id: "subtab-" + t.type, "data-type": t.type,
        "aria-selected": "false", "aria-controls": "panel-memory-list", tabindex: -1,
        on: { click: () => (location.hash = "#memories/" + t.type) },
      }, t.label, " ", el("span", { class: "tab-count", text: "" })));
    }
  }

  function renderMemoryTabs() {
    const byType = (state.stats && state.stats.by_type) || {};
    for (const t of MEMORY_TYPES) {
      const b = $("subtab-" + t.type);
      const on = t.type === state.mem.type;
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
      b.querySelector(".tab-count").textContent = count(byType[t.type] || 0);
    }
    $("panel-memory-list").setAttribute("aria-labelledby", "subtab-" + state.mem.type);
  }

  async function memoryPage(t, cursor) {
    const q = new URLSearchParams({ limit: String(LIST_LIMIT) });
    if (cursor) q.set("cursor", cursor);
    const answer = await api(`/api/${t.path}?${q}`);
    return { items: listOf(answer, "memories"), next: answer.next_cursor || null };
  }

  async function loadMemories(gen) {
    const mem = state.mem;
    const t = MEMORY_TYPE.get(mem.type);
    let page = await memoryPage(t, mem.cursor);
    let found = !mem.focus || page.items.some((m) => m.id === mem.focus);
    if (!found) {
      // A link to a memory: walk the pages from the newest until it shows.
      let cursor = "";
      const prev = [];
      page = await memoryPage(t, cursor);
      for (let i = 0; i < FOCUS_SCAN_PAGES && !(found = page.items.some((m) => m.id === mem.focus)) && page.next; i++) {
        prev.push(cursor);
        cursor = page.next;
        page = await memoryPage(t, cursor);
      }
      if (found) Object.assign(mem, { cursor, prev });
      else Object.assign(mem, firstPage());
      if (!found) page = await memoryPage(t, "");
    }
    if (gen !== state.generation) return;
    mem.items = page.items;
    mem.next = page.next;
    const notice = $("memory-notice");
    notice.hidden = found;
    notice.textContent = found ? "" : `There is no ${t.type} ${mem.focus} in this stack.`;
    const focus = found ? mem.focus : "";
    if (focus) mem.expanded.add(focus);
    mem.focus = ""; // later refreshes keep the user's own place
    renderMemoryTabs();
    renderMemories();
    if (focus) focusRow("memory-table", focus);
  }

  // focusRow marks, scrolls to and focuses the row a link pointed at.
  function focusRow(tableId, key) {
    const button = document.querySelector(`#${tableId} .expander[data-key="${CSS.escape(key)}"]`);
    if (!button) return;
    button.closest("tr").classList.add("focused");
    button.focus({ preventScroll: true });
    button.scrollIntoView({ block: "center" });
  }

  function renderMemories() {
    const mem = state.mem;
    const t = MEMORY_TYPE.get(mem.type);
    const table = $("memory-table");
    const colspan = t.columns.length + 3;
    clear(table.tHead).append(el("tr", {},
      el("th", { scope: "col", text: t.mainLabel }),
      t.columns.map(([label]) => el("th", { scope: "col", text: label })),
      el("th", { scope: "col", text: "Strength" }),
      el("th", { scope: "col", text: "Created" })));
    const stats = state.stats || {};
    const inStack = (stats.by_type || {})[t.type] || 0;
    const forgotten = (stats.forgotten_by_type || {})[t.type] || 0;
    $("memory-count").textContent = `${count(inStack)} ${t.label.toLowerCase()} in the stack (${count(forgotten)} forgotten), newest first`;
    const restoreFocus = focusKeeper(table);
    const tbody = clear(table.tBodies[0]);
    if (mem.items.length === 0) emptyRow(tbody, colspan, `No ${t.label.toLowerCase()} yet.`);
    for (const m of mem.items) {
      const c = contentOf(m);
      const flags = [m.forgotten ? "forgotten" : "", m.is_protected ? "protected" : ""].filter(Boolean);
      tbody.append(...expanderRow({
        key: m.id,
        text: preview(t.main(c), 200) || "(empty)",
        classes: rowClasses(m),
        expanded: mem.expanded.has(m.id),
        colspan,
        onToggle: (open) => (open ? mem.expanded.add(m.id) : mem.expanded.delete(m.id)),
        cells: [
          t.columns.map(([, get, kind]) => el("td", { class: kind || "", text: get(c, m) ?? "" })),
          strengthCell(m),
          el("td", { class: "time", text: when(m.created_at) }, flags.map((f) => el("span", { class: "flag", text: f }))),
        ],
        detail: (cell) => memoryDetail(cell, m),
      }));
    }
    restoreFocus();
    cursorPager($("memory-pager"), mem, LIST_LIMIT, t.label.toLowerCase());
  }

  async function memoryDetail(cell, m) {
    const prov = await provenanceSection(m.type, m.id);
    const info = el("dl", { class: "kv" });
    kvList(info, contentOf(m));
    info.append(
      el("dt", { text: "id" }), el("dd", {}, el("code", { text: m.id })),
      el("dt", { text: "strength" }), el("dd", { class: "tier tier-" + tierOf(m), text: `${num(m.strength)} ${tierOf(m)}${m.is_protected ? ", protected" : ""}` }),
      el("dt", { text: "verified" }), el("dd", { text: `${m.verification_count || 0} times${m.last_verified_at ? ", last " + when(m.last_verified_at) : ""}` }),
      el("dt", { text: "forgotten" }), el("dd", { text: m.forgotten ? `yes, ${when(m.forgotten_at)}` : "no" }),
      el("dt", { text: "tags" }), el("dd", { text: (m.tags || []).join(", ") || "—" }),
      el("dt", { text: "updated" }), el("dd", { text: when(m.updated_at) }));
    clear(cell).append(info, prov);
  }

  // ---- suggestions, audit, settings -----------------------------------------------

  async function loadSuggestions(gen) {
    const s = state.sugg;
    const q = new URLSearchParams({ limit: String(MAX_LIMIT) });
    if (s.status) q.set("status", s.status);
    const answer = await api("/api/suggestions?" + q);
    if (gen !== state.generation) return;
    s.items = listOf(answer, "suggestions");
    const focus = s.focus;
    const found = !focus || s.items.some((sg) => sg.id === focus);
    if (focus && found) s.expanded.add(focus);
    const notice = $("suggestion-notice");
    notice.hidden = found;
    notice.textContent = found ? "" : `The suggestion ${focus} is not among those listed.`;
    s.focus = "";
    renderSuggestions();
    if (focus && found) focusRow("suggestion-table", focus);
  }

  function suggestionText(sg) {
    const c = contentOf(sg);
    const t = MEMORY_TYPE.get(sg.memory_type);
    return first(t ? t.main(c) : undefined, c.content, c.statement, JSON.stringify(c));
  }

  function renderSuggestions() {
    const s = state.sugg;
    $("suggestion-status").value = s.status;
    const byStatus = ((state.stats || {}).suggestions) || {};
    $("suggestion-count").textContent = Object.entries(byStatus).filter(([, v]) => v > 0).map(([k, v]) => `${count(v)} ${k}`).join(" · ");
    const restoreFocus = focusKeeper($("suggestion-table"));
    const tbody = clear($("suggestion-table").tBodies[0]);
    if (s.items.length === 0) emptyRow(tbody, 7, s.status ? `No ${s.status} suggestions.` : "No suggestions. A processing pass (engram process) turns raw entries into suggestions.");
    for (const sg of s.items) {
      const promoted = sg.promoted_to ? (sg.promoted_to.includes(":") ? sg.promoted_to : `${sg.memory_type}:${sg.promoted_to}`) : "";
      tbody.append(...expanderRow({
        key: sg.id,
        text: preview(suggestionText(sg), 200) || "(empty)",
        expanded: s.expanded.has(sg.id),
        colspan: 7,
        onToggle: (open) => (open ? s.expanded.add(sg.id) : s.expanded.delete(sg.id)),
        cells: [
          el("td", { class: "status-" + sg.status, text: sg.status || "" }),
          el("td", { text: sg.memory_type || "" }),
          el("td", { class: "num", text: num(sg.confidence) }),
          el("td", {}, (sg.sources || []).map((ref) => [refLink(ref), " "])),
          el("td", {}, promoted ? refLink(promoted) : ""),
          el("td", { class: "time", text: when(sg.created_at) }),
        ],
        detail: (cell) => {
          const dl = el("dl", { class: "kv" });
          kvList(dl, contentOf(sg));
          dl.append(
            el("dt", { text: "id" }), el("dd", {}, el("code", { text: sg.id })),
            el("dt", { text: "transition" }), el("dd", { text: (sg.transition || "").replace(/_/g, " ") }),
            el("dt", { text: "expires" }), el("dd", { text: when(sg.expires_at) }),
            el("dt", { text: "resolved" }), el("dd", { text: sg.resolved_at ? when(sg.resolved_at) + (sg.resolution_reason ? ": " + sg.resolution_reason : "") : "—" }));
          clear(cell).append(dl);
        },
      }));
    }
    restoreFocus();
    const more = s.items.length === MAX_LIMIT ? ` (the newest ${MAX_LIMIT}; filter by status to see others)` : "";
    clear($("suggestion-pager")).append(s.items.length ? el("span", { class: "muted", text: `${count(s.items.length)} listed${more}` }) : "");
  }

  async function loadAudit(gen) {
    const a = state.audit;
    const q = new URLSearchParams({ limit: String(LIST_LIMIT) });
    if (a.cursor) q.set("before", a.cursor);
    const answer = await api("/api/audit?" + q);
    if (gen !== state.generation) return;
    a.items = listOf(answer, "entries");
    a.next = answer.next_before || null;
    renderAudit();
  }

  function renderAudit() {
    const a = state.audit;
    $("audit-count").textContent = "Every change to the stack, newest first";
    const tbody = clear($("audit-table").tBodies[0]);
    if (a.items.length === 0) emptyRow(tbody, 5, "The audit log is empty.");
    for (const e of a.items) {
      tbody.append(el("tr", { class: "item" },
        el("td", { class: "time", text: when(e.at) }),
        el("td", { text: e.operation || "" }),
        el("td", { text: e.memory_type || "" }),
        el("td", {}, e.memory_id ? refLink({ type: e.memory_type, id: e.memory_id }) : ""),
        el("td", { text: e.actor || "" })));
    }
    cursorPager($("audit-pager"), a, LIST_LIMIT, "records");
  }

  async function loadSettings(gen) {
    const [settings, processing] = await Promise.all([api("/api/settings"), api("/api/processing")]);
    if (gen !== state.generation) return;
    kvList(clear($("settings-list")), settings);
    const dl = clear($("processing-list"));
    kvList(dl, { processor: processing.processor || {} });
    kvList(dl, processing.config || {});
  }

  const LOADERS = { overview: loadOverview, raw: loadRaw, memories: loadMemories, suggestions: loadSuggestions, audit: loadAudit, settings: loadSettings };

  // ---- navigation and refresh -------------------------------------------------------

  // The hash names the place: #overview, #raw, #raw/ID, #memories/TYPE,
  // #memories/TYPE/ID, #suggestions, #audit, #settings. Links (provenance,
  // sources) are plain anchors, so they work with the keyboard and history.
  function parseHash() {
    const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    const tab = TABS.includes(parts[0]) ? parts[0] : "overview";
    return { tab, sub: parts[1] || "", id: parts[2] || "" };
  }

  function applyHash() {
    const { tab, sub, id } = parseHash();
    state.tab = tab;
    if (tab === "raw") state.raw.focus = sub;
    if (tab === "suggestions") state.sugg.focus = sub;
    if (tab === "memories") {
      if (MEMORY_TYPE.has(sub) && sub !== state.mem.type) {
        Object.assign(state.mem, { type: sub, ...firstPage() });
        state.mem.expanded.clear();
      }
      state.mem.focus = id;
    }
    for (const b of document.querySelectorAll("#main-tabs [role=tab]")) {
      const on = b.dataset.tab === tab;
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
      $("panel-" + b.dataset.tab).hidden = !on;
    }
    if (tab === "memories") renderMemoryTabs();
    refresh();
  }

  let inFlight = null;

  // refresh reloads the header and the open tab; a refresh asked for while
  // one runs waits for it, so answers never interleave.
  async function refresh() {
    const gen = ++state.generation;
    // aria-busy tells assistive technology (and the browser test) when
    // the open tab shows the answer of its latest refresh.
    const panel = $("panel-" + state.tab);
    panel.setAttribute("aria-busy", "true");
    if (inFlight) await inFlight.catch(() => {});
    if (gen !== state.generation) return;
    inFlight = (async () => {
      await loadHeader(gen);
      await LOADERS[state.tab](gen);
    })();
    try {
      await inFlight;
      if (gen === state.generation) {
        showError(null);
        $("updated").textContent = "Updated " + when(new Date());
      }
    } catch (err) {
      if (gen === state.generation) showError(err);
    } finally {
      inFlight = null;
      if (gen === state.generation) panel.setAttribute("aria-busy", "false");
    }
  }

  function setAutoRefresh(on) {
    state.autoRefresh = on;
    const b = $("auto-refresh");
    b.setAttribute("aria-pressed", on ? "true" : "false");
    b.querySelector(".toggle-state").textContent = on ? "on" : "off";
    clearInterval(state.timer);
    state.timer = on ? setInterval(() => {
      if (!document.hidden) refresh();
    }, REFRESH_MS) : 0;
    store("autoRefresh", on ? "on" : "off");
  }

  const THEMES = ["auto", "light", "dark"];

  function setTheme(theme) {
    if (!THEMES.includes(theme)) theme = "auto";
    if (theme === "auto") document.documentElement.removeAttribute("data-theme");
    else document.documentElement.setAttribute("data-theme", theme);
    $("theme-name").textContent = theme;
    store("theme", theme);
  }

  // store and load keep the user's choices; storage may be unavailable
  // (private windows), which only loses the choice.
  function store(key, value) {
    try {
      localStorage.setItem("engram.dashboard." + key, value);
    } catch {
      /* choice not kept */
    }
  }

  function load(key) {
    try {
      return localStorage.getItem("engram.dashboard." + key);
    } catch {
      return null;
    }
  }

  // Arrow keys, Home and End move between the tabs of a tablist (WAI-ARIA
  // tabs pattern with automatic activation).
  function tablistKeys(list) {
    list.addEventListener("keydown", (ev) => {
      const tabs = [...list.querySelectorAll("[role=tab]")];
      const i = tabs.indexOf(document.activeElement);
      if (i < 0) return;
      const next = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[ev.key];
      if (next === undefined) return;
      ev.preventDefault();
      const target = tabs[(next + tabs.length) % tabs.length];
      target.focus();
      target.click();
    });
  }

  function init() {
    for (const b of document.querySelectorAll("#main-tabs [role=tab]")) {
      b.addEventListener("click", () => {
        const tab = b.dataset.tab;
        const hash = tab === "memories" ? "#memories/" + state.mem.type : "#" + tab;
        if (location.hash === hash) applyHash();
        else location.hash = hash;
      });
    }
    buildMemoryTabs();
    tablistKeys($("main-tabs"));
    tablistKeys($("memory-tabs"));
    for (const b of document.querySelectorAll("#raw-filter [role=radio]")) {
      b.addEventListener("click", () => {
        Object.assign(state.raw, { filter: b.dataset.filter, ...firstPage() });
        state.raw.expanded.clear();
        refresh();
      });
    }
    $("raw-filter").addEventListener("keydown", (ev) => {
      const radios = [...$("raw-filter").querySelectorAll("[role=radio]")];
      const i = radios.indexOf(document.activeElement);
      const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
      if (i < 0 || step === undefined) return;
      ev.preventDefault();
      const target = radios[(i + step + radios.length) % radios.length];
      target.focus();
      target.click();
    });
    $("suggestion-status").addEventListener("change", (ev) => {
      state.sugg.status = ev.target.value;
      state.sugg.expanded.clear();
      refresh();
    });
    $("raw-limit").addEventListener("change", (ev) => {
      const n = Number(ev.target.value);
      Object.assign(state.raw, { limit: RAW_LIMITS.includes(n) ? n : RAW_DEFAULT_LIMIT, ...firstPage() });
      refresh();
    });
    $("auto-refresh").addEventListener("click", () => setAutoRefresh(!state.autoRefresh));
    $("refresh-now").addEventListener("click", () => refresh());
    $("theme-toggle").addEventListener("click", () => {
      const cur = document.documentElement.getAttribute("data-theme") || "auto";
      setTheme(THEMES[(THEMES.indexOf(cur) + 1) % THEMES.length]);
    });
    window.addEventListener("hashchange", applyHash);
    setTheme(load("theme") || "auto");
    setAutoRefresh(load("autoRefresh") === "on");
    applyHash();
  }

  init();
})();
