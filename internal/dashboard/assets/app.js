// The status page: one EventSource on /api/events; every message is a whole
// snapshot (see internal/dashboard). The browser reconnects by itself and sends
// Last-Event-ID, so the server resends what was missed.
(function () {
  "use strict";
  const token = new URLSearchParams(location.search).get("token");
  const q = (extra) => (token ? "?token=" + encodeURIComponent(token) + (extra ? "&" + extra : "") : extra ? "?" + extra : "");
  const $ = (id) => document.getElementById(id);
  const fmt = (n) => (n === undefined || n === null ? "–" : Number(n).toLocaleString("en-US"));
  const rate = (n) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2));
  const dur = (s) => (s < 1 ? "0 s" : s < 120 ? s.toFixed(0) + " s" : s < 7200 ? (s / 60).toFixed(0) + " min" : (s / 3600).toFixed(1) + " h");
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

  const windowSec = 15 * 60;
  const points = []; // {t, backlog: {name: n}, rate: {name: n}, append}
  let backlogChart = null, rateChart = null, seriesNames = [];

  function setState(cls, text) {
    const el = $("conn-state");
    el.className = "state " + cls;
    el.textContent = text;
  }

  function render(s) {
    $("head-seq").textContent = fmt(s.head_seq);
    $("append-rate").textContent = rate(s.outbox.append_rate || 0);
    $("retention").textContent = "seq " + fmt(s.outbox.retention_horizon);
    $("partitions").textContent = s.outbox.partitions.length + " partition(s)";
    $("updated").textContent = "sample " + s.id + " at " + new Date(s.at).toLocaleTimeString();
    const err = $("db-error");
    err.hidden = !s.error;
    err.textContent = s.error ? "database: " + s.error : "";

    $("consumers").tBodies[0].innerHTML = s.consumers.map((c) => {
      const state = c.halted ? '<span class="pill bad">halted</span>' : c.owner ? '<span class="pill ok">active</span>' : '<span class="pill warn">no owner</span>';
      const lease = c.owner ? esc(c.owner) + (c.lease_expires_at ? " (until " + new Date(c.lease_expires_at).toLocaleTimeString() + ")" : "") : "–";
      return `<tr id="consumer-${esc(c.consumer)}" title="${esc(c.halted_reason || "")}">
        <td>${esc(c.consumer)}</td><td>${state}</td><td class="num">${fmt(c.last_seq)}</td>
        <td class="num" data-field="backlog">${fmt(c.backlog)}</td><td class="num">${dur(c.lag_seconds)}</td>
        <td class="num">${rate(c.rate || 0)}</td><td>${lease}</td>
        <td class="num">${c.dead_letters ? '<span class="pill bad">' + fmt(c.dead_letters) + "</span>" : "0"}</td></tr>`;
    }).join("");

    const up = s.relays.filter((r) => r.up).length;
    $("relay-summary").textContent = s.relays.length ? up + " / " + s.relays.length + " up" : "none given";
    $("relays").tBodies[0].innerHTML = s.relays.map((r) => {
      const refused = Object.entries(r.events || {}).filter(([k]) => k !== "accepted" && k !== "duplicate")
        .map(([k, v]) => esc(k) + " " + rate(v)).join(", ");
      return `<tr><td>${esc(r.url)}</td><td>${r.up ? '<span class="pill ok">up</span>' : '<span class="pill bad">' + esc(r.error || "down") + "</span>"}</td>
        <td class="num">${fmt(r.connections)}</td><td class="num">${rate((r.events || {}).accepted || 0)}</td>
        <td>${refused || "–"}</td><td class="num">${rate(r.reqs_per_sec || 0)}</td></tr>`;
    }).join("");

    // Read pools (relays with --read-database-url): the primary, then each replica.
    const pools = s.relays.flatMap((r) => (r.pools || []).map((p) => ({ relay: r.url, ...p })));
    $("pools-none").hidden = pools.length > 0;
    $("pools").tBodies[0].innerHTML = pools.map((p) => {
      const state = p.usable === undefined ? "–" : p.usable ? '<span class="pill ok">usable</span>' : '<span class="pill bad">skipped</span>';
      const ms = p.mean_read_seconds === undefined ? "–" : (p.mean_read_seconds * 1000).toFixed(1) + " ms";
      const lag = p.lag_seconds === undefined ? "–" : p.lag_seconds.toFixed(1) + " s";
      return `<tr data-relay="${esc(p.relay)}" data-pool="${esc(p.pool)}"><td>${esc(p.relay)}</td><td>${esc(p.pool)}</td>
        <td data-field="state">${state}</td><td class="num" data-field="reads">${rate(p.reads_per_sec || 0)}</td>
        <td class="num" data-field="errors">${p.errors_per_sec ? '<span class="pill bad">' + rate(p.errors_per_sec) + "</span>" : "0"}</td>
        <td class="num" data-field="latency">${ms}</td><td class="num" data-field="lag">${lag}</td></tr>`;
    }).join("");
  }

  function record(s) {
    const p = { t: new Date(s.at).getTime() / 1000, backlog: {}, rate: {}, append: s.outbox.append_rate || 0 };
    for (const c of s.consumers) { p.backlog[c.consumer] = c.backlog; p.rate[c.consumer] = c.rate || 0; }
    if (points.length && points[points.length - 1].t >= p.t) return;
    points.push(p);
    while (points.length && points[0].t < p.t - windowSec) points.shift();
  }

  const palette = ["#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2"];
  function draw() {
    if (typeof uPlot === "undefined" || !points.length) return;
    const names = [...new Set(points.flatMap((p) => Object.keys(p.backlog)))].sort();
    const ts = points.map((p) => p.t);
    const backlogData = [ts, ...names.map((n) => points.map((p) => p.backlog[n] ?? null))];
    const rateData = [ts, points.map((p) => p.append), ...names.map((n) => points.map((p) => p.rate[n] ?? null))];
    if (names.join() !== seriesNames.join()) {
      seriesNames = names;
      for (const id of ["chart-backlog", "chart-rate"]) $(id).innerHTML = "";
      const width = () => Math.max(300, $("chart-backlog").clientWidth);
      const series = names.map((n, i) => ({ label: n, stroke: palette[i % palette.length], width: 2 }));
      backlogChart = new uPlot({ width: width(), height: 220, series: [{}, ...series], axes: [{}, { size: 60 }] }, backlogData, $("chart-backlog"));
      rateChart = new uPlot({ width: width(), height: 220,
        series: [{}, { label: "outbox appends", stroke: "#111827", width: 2, dash: [4, 4] }, ...series], axes: [{}, { size: 60 }] }, rateData, $("chart-rate"));
      return;
    }
    backlogChart.setData(backlogData);
    rateChart.setData(rateData);
  }

  function onSnapshot(s) { render(s); record(s); draw(); }

  // History first (the charts), then the live stream.
  fetch("api/history" + q()).then((r) => r.json()).then((h) => {
    for (const s of h) record(s);
    if (h.length) render(h[h.length - 1]);
    draw();
  }).catch(() => {}).finally(connect);

  function connect() {
    const es = new EventSource("api/events" + q());
    es.addEventListener("status", (e) => { setState("live", "live"); onSnapshot(JSON.parse(e.data)); });
    es.onopen = () => setState("live", "live");
    // EventSource reconnects by itself (retry: 1000) with Last-Event-ID.
    es.onerror = () => setState("reconnecting", "reconnecting…");
  }
})();
