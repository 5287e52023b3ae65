// ovmem ui: the page. Vanilla JS, no build step; every text from the store goes in through
// textContent, never as HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="ovmem-token"]').content;
// Kept for a reload of this tab (boot.js), where no other port's page can read it.
sessionStorage.setItem("ovmem-token", TOKEN);
// The token stays out of the address bar (and out of bookmarks and screenshots); and a page the
// token was posted to becomes a plain entry, which a reload asks for again (boot.js) instead of
// posting the form once more.
history.replaceState(null, "", location.pathname + location.hash);

const $ = (id) => document.getElementById(id);
const state = { bank: "", query: "", next: null, loading: false, items: [], session: null, mark: null, banks: [], default: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) e.append(c instanceof Node ? c : String(c));
  return e;
}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: "Bearer " + TOKEN } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const r = await fetch(path, opts);
  const data = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(data.error || r.status + " " + r.statusText);
  return data;
}

function toast(msg) {
  const t = $("toast");
  t.textContent = msg;
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.hidden = true), 3500);
}

const label = (bank) => bank.replace(/^project:/, "");
// A project's folder name (the whole bank is the title).
const project = (bank) => label(bank).split("/").filter(Boolean).pop() || label(bank);
function when(s) {
  const d = new Date(s * 1000);
  const ago = (Date.now() / 1000 - s) | 0;
  const rel = ago < 60 ? "just now" : ago < 3600 ? `${(ago / 60) | 0} min ago` : ago < 86400 ? `${(ago / 3600) | 0} h ago` : null;
  const abs = d.toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" }) + " " +
    d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
  return el("time", { datetime: d.toISOString(), title: abs }, rel || abs);
}
const shortSession = (s) => (s.length > 14 ? s.slice(0, 12) + "…" : s);

// Words of the passage that start with a matched (stemmed) term are marked.
function highlighted(text, terms) {
  const stems = (terms || []).filter((t) => t.length >= 2).map((t) => t.toLowerCase());
  const out = [];
  if (!stems.length) return [text];
  for (const part of text.split(/([\p{L}\p{N}_]+)/u)) {
    const w = part.toLowerCase();
    out.push(stems.some((s) => w.startsWith(s)) ? el("mark", {}, part) : part);
  }
  return out;
}

// A turn's text with "User:" and "Assistant:" set off.
// A search's matched words are marked in it.
function body(m) {
  const mark = (t) => (m.matched ? highlighted(t, m.matched) : [t]);
  if (m.kind === "fact") return mark(m.text);
  const parts = [];
  if (m.prompt) parts.push(el("span", { class: "who" }, "User: "), mark(m.prompt));
  if (m.prompt && m.reply) parts.push("\n");
  if (m.reply) parts.push(el("span", { class: "who" }, "Assistant: "), mark(m.reply));
  return parts;
}

// Long enough to be cut at eight lines.
const long = (t) => t.length > 700 || t.split("\n").length > 8;

function card(m) {
  const marks = m.marks || [];
  const text = el("div", { class: "text clip" }, body(m));
  const li = el("li", { class: "card" + (marks.includes("pinned") ? " pinned" : ""), tabindex: "0", "data-id": m.id },
    el("div", { class: "meta" },
      el("span", { class: "id" }, "#" + m.id),
      m.harness ? el("span", {}, m.harness) : null,
      when(m.created_at),
      m.session ? el("button", { class: "link", type: "button", title: "Open session " + m.session, onclick: () => openSession(m.session) }, "session " + shortSession(m.session)) : null,
      state.bank ? null : el("span", { title: m.bank }, project(m.bank)),
      ...marks.map((k) => el("span", { class: "badge " + k, title: k === "superseded" && m.superseded_by ? `a later memory (#${m.superseded_by.id}) says otherwise` : null }, k)),
      m.kind === "fact" ? el("span", { class: "badge" }, "fact") : null),
    m.passage && m.passage !== m.text ? el("div", { class: "passage" }, highlighted(m.passage, m.matched)) : null,
    text,
    el("div", { class: "actions" },
      el("button", { type: "button", onclick: () => pin(m), "aria-pressed": marks.includes("pinned") ? "true" : "false" }, marks.includes("pinned") ? "Unpin" : "Pin"),
      el("button", { type: "button", onclick: () => edit(m) }, "Edit"),
      el("button", { type: "button", class: "danger", onclick: () => forget([m]) }, "Forget"),
      long(m.text) ? el("button", { type: "button", class: "quiet", onclick: (e) => { text.classList.toggle("clip"); e.target.textContent = text.classList.contains("clip") ? "More" : "Less"; } }, "More") : null));
  li.memory = m;
  return li;
}

function renderBar() {
  const bar = $("bar");
  bar.replaceChildren();
  const where = state.bank ? label(state.bank) : "every project";
  if (state.query) {
    bar.append(el("span", {}, el("strong", {}, String(state.items.length)), ` result${state.items.length === 1 ? "" : "s"} for `, el("strong", {}, `“${state.query}”`), " in " + where));
    bar.append(el("span", { class: "grow" }));
    if (state.items.length) bar.append(el("button", { type: "button", class: "danger", onclick: () => forget(state.items) }, `Forget these ${state.items.length}…`));
    bar.append(el("button", { type: "button", onclick: () => search("") }, "Clear search"));
  } else {
    bar.append(el("span", {}, "Newest first in ", el("strong", {}, where)));
  }
}

function renderList(reset) {
  const list = $("list");
  if (reset) list.replaceChildren();
  const shown = new Set([...list.children].map((c) => Number(c.dataset.id)));
  for (const m of state.items) if (!shown.has(m.id)) list.append(card(m));
  if (!state.items.length) list.append(el("li", { class: "empty" }, state.query ? "Nothing matches." : "No memories here yet. They appear as your agents work."));
  renderBar();
}

async function load(reset) {
  if (state.loading || (!reset && !state.next)) return;
  state.loading = true;
  try {
    const p = new URLSearchParams();
    if (state.bank) p.set("bank", state.bank);
    if (state.query) p.set("q", state.query);
    if (!reset && state.next) p.set("before", state.next);
    p.set("limit", state.query ? "100" : "50");
    const data = await api("GET", "/api/memories?" + p);
    state.next = data.next;
    state.items = reset ? data.memories : state.items.concat(data.memories);
    renderList(reset);
    // The script now owns the list the server rendered.
    document.documentElement.dataset.ready = "true";
  } catch (e) {
    toast("Could not load memories: " + e.message);
  } finally {
    state.loading = false;
  }
}

async function loadBanks() {
  const data = await api("GET", "/api/banks");
  state.banks = data.banks;
  state.default = data.default;
  const ul = $("banks");
  ul.replaceChildren();
  const item = (name, text, count, sub) => el("li", {}, el("button", { type: "button", "aria-current": state.bank === name ? "true" : "false", onclick: () => selectBank(name), title: name || "every project" },
    el("span", {}, text, sub ? el("span", { class: "sub" }, sub) : null), el("span", { class: "count" }, count)));
  ul.append(item("", "All projects", data.total));
  const banks = [...data.banks].sort((a, b) => (b.name === data.default) - (a.name === data.default));
  for (const b of banks) ul.append(item(b.name, project(b.name), b.memories, b.name === data.default ? "this project · " + b.label : b.label));
}

async function loadSessions() {
  const p = new URLSearchParams({ limit: "12" });
  if (state.bank) p.set("bank", state.bank);
  const data = await api("GET", "/api/sessions?" + p);
  const ul = $("sessions");
  ul.replaceChildren();
  for (const s of data.sessions) {
    ul.append(el("li", {}, el("button", { type: "button", onclick: () => openSession(s.session), "aria-current": state.session === s.session ? "true" : "false" },
      shortSession(s.session), el("span", { class: "sub" }, [s.harness || "", " · ", s.memories + " turn" + (s.memories === 1 ? "" : "s"), " · "], when(s.last_at)))));
  }
  if (!data.sessions.length) ul.append(el("li", { class: "sub" }, "none yet"));
}

async function loadBackend() {
  try {
    const d = await api("GET", "/api/backend");
    const b = d.backend, q = d.queue;
    const rows = [["kind", b.kind]];
    if (b.url) rows.push(["url", b.url]);
    if (b.bank) rows.push(["bank", b.bank]);
    if (b.reachable !== undefined && b.reachable !== null) rows.push(["reachable", el("span", { class: b.reachable ? "good" : "bad" }, b.reachable ? "yes" : "no" + (b.error ? ": " + b.error : ""))]);
    rows.push(["stored", String(q.memories)]);
    rows.push(["queued", String(q.outbox) + (q.outbox_oldest ? " (oldest " : ""), q.outbox_oldest ? when(q.outbox_oldest) : "", q.outbox_oldest ? ")" : ""]);
    rows.push(["spooled", String(q.spooled)]);
    if (d.failing.length) rows.push(["failing", el("span", { class: "bad" }, `${d.failing.length}: ${d.failing[0].last_error || ""}`)]);
    if (d.parked.length) rows.push(["parked", el("span", { class: "bad" }, `${d.parked.length}: ${d.parked[0].last_error || ""} (ovmem sync --retry-parked sends them again)`)]);
    if (!d.failing.length && !d.parked.length && q.last_send_error) rows.push(["last error", el("span", { class: "bad" }, q.last_send_error)]);
    $("backend").replaceChildren(el("dl", {}, rows.map(([k, ...v]) => [el("dt", {}, k), el("dd", {}, ...v)])));
  } catch (e) {
    $("backend").textContent = "unavailable: " + e.message;
  }
}

function selectBank(name) {
  state.bank = name;
  closeSession();
  loadBanks().catch(() => {});
  loadSessions().catch(() => {});
  load(true);
}

function search(q) {
  state.query = q.trim();
  $("q").value = state.query;
  closeSession();
  load(true);
}

async function pin(m) {
  const pinned = !(m.marks || []).includes("pinned");
  try {
    await api(pinned ? "POST" : "DELETE", `/api/memories/${m.id}/pin`);
    m.marks = pinned ? ["pinned", ...(m.marks || [])] : m.marks.filter((k) => k !== "pinned");
    replaceCard(m);
    toast(pinned ? `#${m.id} pinned: recalled first in ${label(m.bank)}` : `#${m.id} unpinned`);
  } catch (e) {
    toast("Could not pin: " + e.message);
  }
}

function replaceCard(m, old) {
  const li = $("list").querySelector(`[data-id="${old || m.id}"]`);
  const i = state.items.findIndex((x) => x.id === (old || m.id));
  if (i >= 0) state.items[i] = m;
  if (li) {
    const fresh = card(m);
    li.replaceWith(fresh);
    fresh.focus();
  }
}

function ask(dialog) {
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.returnValue = "";
    dialog.showModal();
  });
}

async function forget(memories) {
  const list = $("confirm-list");
  list.replaceChildren(...memories.map((m) => el("li", {}, el("strong", {}, "#" + m.id + " "), m.text.length > 160 ? m.text.slice(0, 160) + "…" : m.text)));
  $("confirm-title").textContent = memories.length === 1 ? `Forget memory #${memories[0].id}?` : `Forget these ${memories.length} memories?`;
  $("confirm-ok").textContent = memories.length === 1 ? "Forget" : `Forget ${memories.length}`;
  if (!(await ask($("confirm")))) return;
  try {
    // One request for all of them: the store rewrites its file once.
    const r = memories.length === 1
      ? await api("DELETE", `/api/memories/${memories[0].id}`).then((x) => ({ ...x, forgotten: [x.forgotten] }))
      : await api("POST", "/api/forget", { ids: memories.map((m) => m.id) });
    for (const id of r.forgotten) {
      state.items = state.items.filter((x) => x.id !== id);
      $("list").querySelector(`[data-id="${id}"]`)?.remove();
    }
    const n = r.forgotten.length;
    toast(`Forgot ${n} memor${n === 1 ? "y" : "ies"}` + (r.not_scrubbed ? ` (not yet erased from the file: ${r.not_scrubbed})` : ""));
  } catch (e) {
    toast("Could not forget: " + e.message);
  }
  renderBar();
  loadBanks().catch(() => {});
}

async function edit(m) {
  $("editor-text").value = m.text;
  $("editor-hint").textContent = m.kind === "fact" ? "A fact: its text is recalled as it is." :
    "A captured turn: keep the “User:” and “Assistant:” lines. It is stored again under a new id with the same date; secrets are redacted.";
  $("editor-error").hidden = true;
  const dialog = $("editor");
  while (await ask(dialog)) {
    try {
      const r = await api("PUT", `/api/memories/${m.id}`, { text: $("editor-text").value });
      replaceCard(r.memory, m.id);
      toast(`Saved as #${r.memory.id}`);
      return;
    } catch (e) {
      $("editor-error").textContent = e.message;
      $("editor-error").hidden = false;
    }
  }
}

async function openSession(id) {
  state.session = id;
  const sec = $("session");
  try {
    const d = await api("GET", "/api/sessions?id=" + encodeURIComponent(id));
    const events = [
      ...d.turns.map((m) => ({ at: m.created_at, turn: m })),
      ...d.injections.map((i) => ({ at: i.at, inject: i })),
    ].sort((a, b) => a.at - b.at || (a.inject ? -1 : 1));
    const chars = d.injections.reduce((n, i) => n + i.chars, 0);
    sec.replaceChildren(
      el("div", { class: "bar" }, el("button", { type: "button", onclick: closeSession }, "← Back"), el("span", { class: "grow" })),
      el("h2", {}, "Session " + id),
      el("p", { class: "hint" }, `${d.turns.length} captured turn${d.turns.length === 1 ? "" : "s"} · ${d.injections.length} injection${d.injections.length === 1 ? "" : "s"} · ${chars.toLocaleString()} characters injected`),
      el("ol", { class: "timeline" }, events.map((e) => e.turn ? el("li", {}, card(e.turn)) : el("li", { class: "inject" },
        el("div", { class: "card" },
          el("div", { class: "meta" }, el("strong", {}, "Injected"), e.inject.harness ? el("span", {}, e.inject.harness) : null, el("span", {}, e.inject.event), when(e.inject.at),
            el("span", {}, `${e.inject.memories.length} memor${e.inject.memories.length === 1 ? "y" : "ies"}, ${e.inject.chars.toLocaleString()} characters`)),
          el("ol", { class: "injected" }, e.inject.memories.map((m) => m.present
            ? el("li", {}, el("strong", {}, "#" + m.id + " "), m.pinned ? el("span", { class: "badge pinned" }, "pinned") : null, " ", m.text)
            : el("li", { class: "gone" }, `#${m.id} (forgotten since)`))))))));
    $("list").hidden = true;
    $("bar").hidden = true;
    $("more").hidden = true;
    sec.hidden = false;
    window.scrollTo(0, 0);
    sec.querySelector("button").focus();
    loadSessions().catch(() => {});
  } catch (e) {
    toast("Could not open the session: " + e.message);
  }
}

function closeSession() {
  if (!state.session) return;
  state.session = null;
  $("session").hidden = true;
  $("list").hidden = false;
  $("bar").hidden = false;
  $("more").hidden = false;
  loadSessions().catch(() => {});
}

// Live updates: new captures appear at the top, counts and the open session follow.
let source = null;
// The viewer answers about once a second. A stream that has said nothing for this long is stuck
// (a connection that stalled, or an answer that was not a stream, which closes an EventSource for
// good): the page would never update again, so it starts over. A hidden tab holds no stream and
// no such timer.
const STALLED_MS = 8000;
function watchStall() {
  clearTimeout(listen.watch);
  listen.watch = setTimeout(() => { source.close(); source = null; listen(); }, STALLED_MS);
}
function listen() {
  if (source) return;
  // Each answer is one event and the end of the stream; EventSource asks again a second later.
  source = new EventSource("/api/events?token=" + encodeURIComponent(TOKEN));
  watchStall();
  source.addEventListener("change", async (ev) => {
    watchStall();
    $("live").classList.add("on");
    clearTimeout(listen.quiet);
    listen.quiet = setTimeout(() => $("live").classList.remove("on"), 5000);
    const mark = JSON.parse(ev.data);
    const before = state.mark;
    state.mark = mark;
    if (!before) return;
    loadBanks().catch(() => {});
    loadBackend();
    if (mark.last_memory !== before.last_memory || mark.last_injection !== before.last_injection) loadSessions().catch(() => {});
    if (state.session && (mark.last_injection !== before.last_injection || mark.last_memory !== before.last_memory)) openSession(state.session);
    if (!state.query && mark.last_memory > before.last_memory) {
      const p = new URLSearchParams({ limit: "50" });
      if (state.bank) p.set("bank", state.bank);
      const data = await api("GET", "/api/memories?" + p).catch(() => null);
      if (!data) return;
      const known = new Set(state.items.map((m) => m.id));
      const fresh = data.memories.filter((m) => !known.has(m.id));
      state.items = fresh.concat(state.items);
      const list = $("list");
      list.querySelector(".empty")?.remove();
      for (const m of fresh.reverse()) list.prepend(card(m));
      renderBar();
    }
  });
}
// A hidden tab lets go of its stream, so the viewer's idle timer can run.
document.addEventListener("visibilitychange", () => {
  if (document.hidden && source) { source.close(); source = null; clearTimeout(listen.watch); $("live").classList.remove("on"); }
  else if (!document.hidden) listen();
});

// Keyboard: / search, j/k move, p pin, e edit, x or Delete forget, s session, Esc back.
document.addEventListener("keydown", (e) => {
  if (e.target.closest("input, textarea, dialog") || e.ctrlKey || e.metaKey || e.altKey) {
    if (e.key === "Escape" && e.target.id === "q") { e.target.blur(); if (state.query) search(""); }
    return;
  }
  const cards = [...document.querySelectorAll(state.session ? "#session .card[data-id]" : "#list .card")];
  const current = document.activeElement.closest?.(".card[data-id]");
  const i = cards.indexOf(current);
  const m = current?.memory;
  const move = (d) => { const next = cards[Math.max(0, Math.min(cards.length - 1, i + d))]; if (next) { next.focus(); next.scrollIntoView({ block: "nearest" }); } };
  if (e.key === "/") { e.preventDefault(); $("q").focus(); $("q").select(); }
  else if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); move(1); }
  else if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); move(-1); }
  else if (e.key === "Escape") { if (state.session) closeSession(); else if (state.query) search(""); }
  else if (m && e.key === "p") pin(m);
  else if (m && e.key === "e") { e.preventDefault(); edit(m); }
  else if (m && (e.key === "x" || e.key === "Delete")) forget([m]);
  else if (m && e.key === "s" && m.session) openSession(m.session);
});

let typing = null;
$("search-form").addEventListener("submit", (e) => { e.preventDefault(); clearTimeout(typing); search($("q").value); });
$("q").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(() => search($("q").value), 250); });
$("home").addEventListener("click", (e) => { e.preventDefault(); search(""); selectBank(""); });

new IntersectionObserver((entries) => { if (entries.some((x) => x.isIntersecting) && !state.query && !state.session) load(false); })
  .observe($("more"));

loadBanks().catch((e) => toast("Could not load projects: " + e.message));
loadSessions().catch(() => {});
loadBackend();
load(true);
listen();
