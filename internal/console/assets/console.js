// The community console (internal/console). Lists come from the console's
// read-only JSON (api/...); every change is signed by the signed-in key through
// NIP-07 (window.nostr) and checked by the relay: NIP-86 calls with NIP-98
// auth against its admin list, NIP-29 moderation events against the group's
// roles. The status page's event stream (../api/events) says when to read a
// list again, so no page needs a reload.
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const now = () => Math.floor(Date.now() / 1000);
  const when = (t) => (t ? new Date(t * 1000).toLocaleString() : "–");
  const token = new URLSearchParams(location.search).get("token");
  const q = (path, params) => {
    const u = new URLSearchParams(params || {});
    if (token) u.set("token", token);
    const s = u.toString();
    return path + (s ? "?" + s : "");
  };
  const pageName = document.body.dataset.page;
  const relayURL = document.body.dataset.relay;
  const relayHTTP = relayURL.replace(/^ws/, "http");
  if (token) for (const a of document.querySelectorAll("nav a")) a.href = q(a.getAttribute("href"));

  // ---- what each action did
  function say(text, ok) {
    const el = $("result");
    el.textContent = text;
    el.className = ok === true ? "ok" : ok === false ? "bad" : "";
    if (ok === undefined) return;
    const li = document.createElement("li");
    li.textContent = new Date().toLocaleTimeString() + " · " + text;
    $("log").prepend(li);
    while ($("log").children.length > 10) $("log").lastChild.remove();
  }
  async function act(label, fn) {
    say(label + "…");
    try {
      const text = await fn();
      say(label + ": " + text, true);
      reloadSoon(0);
      return true;
    } catch (e) {
      say(label + " failed: " + e.message, false);
      return false;
    }
  }

  // ---- keys: hex and npub (bech32, BIP-173)
  const CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";
  function polymod(values) {
    const G = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];
    let chk = 1;
    for (const v of values) {
      const b = chk >> 25;
      chk = ((chk & 0x1ffffff) << 5) ^ v;
      for (let i = 0; i < 5; i++) if ((b >> i) & 1) chk ^= G[i];
    }
    return chk;
  }
  const hrpExpand = (hrp) => [...[...hrp].map((c) => c.charCodeAt(0) >> 5), 0, ...[...hrp].map((c) => c.charCodeAt(0) & 31)];
  function convert(data, from, to, pad) {
    let acc = 0, bits = 0;
    const out = [];
    for (const v of data) {
      acc = (acc << from) | v;
      bits += from;
      while (bits >= to) { bits -= to; out.push((acc >> bits) & ((1 << to) - 1)); }
    }
    if (pad && bits > 0) out.push((acc << (to - bits)) & ((1 << to) - 1));
    else if (!pad && (bits >= from || ((acc << (to - bits)) & ((1 << to) - 1)))) throw new Error("bad padding");
    return out;
  }
  const hexToBytes = (h) => h.match(/../g).map((b) => parseInt(b, 16));
  const bytesToHex = (b) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  function npub(hex) {
    const data = convert(hexToBytes(hex), 8, 5, true);
    const mod = polymod([...hrpExpand("npub"), ...data, 0, 0, 0, 0, 0, 0]) ^ 1;
    const chk = [0, 1, 2, 3, 4, 5].map((i) => (mod >> (5 * (5 - i))) & 31);
    return "npub1" + [...data, ...chk].map((d) => CHARSET[d]).join("");
  }
  function parsePubkey(s) {
    s = String(s || "").trim().toLowerCase();
    if (/^[0-9a-f]{64}$/.test(s)) return s;
    if (s.startsWith("npub1")) {
      const data = [...s.slice(5)].map((c) => CHARSET.indexOf(c));
      if (!data.includes(-1) && polymod([...hrpExpand("npub"), ...data]) === 1) {
        const bytes = convert(data.slice(0, -6), 5, 8, false);
        if (bytes.length === 32) return bytesToHex(bytes);
      }
    }
    throw new Error("not a pubkey: give 64 hex characters or an npub1…");
  }
  const who = (hex) => `<span class="mono" title="${esc(hex)}">${esc(npub(hex).slice(0, 16))}…${esc(npub(hex).slice(-6))}</span>`;
  const rank = (r) => (r === undefined || r === null ? '<span class="muted">unranked</span>' : esc(r));

  // ---- sign-in: NIP-07 (window.nostr) or a NIP-46 bunker
  let signer = null; // {pubkey, via: "NIP-07" | "NIP-46", admin: true | false | null, sign(ev)}
  async function signIn() {
    if (!window.nostr) {
      say("Sign-in: no NIP-07 extension found (window.nostr). Install one (for example nos2x or Alby), or use a bunker; the lists stay readable without either.", false);
      return;
    }
    try {
      const pk = parsePubkey(await window.nostr.getPublicKey());
      signer = { pubkey: pk, via: "NIP-07", admin: null, sign: (ev) => window.nostr.signEvent(ev) };
      sessionStorage.setItem("cn-console-signin", JSON.stringify({ via: "NIP-07" }));
      renderWho();
      await checkAdmin();
    } catch (e) {
      say("Sign-in failed: " + e.message, false);
    }
  }

  // A NIP-46 remote signer: the page holds a key of its own (kept for this
  // browser tab's session) and asks the bunker, over its relay with kind 24133
  // messages encrypted with NIP-44 (NIP-04 answers are read too), to sign.
  function loadTools() {
    if (window.NostrTools) return Promise.resolve(window.NostrTools);
    return new Promise((resolve, reject) => {
      const s = document.createElement("script");
      s.src = "assets/vendor/nostr-tools/nostr.bundle.js";
      s.onload = () => resolve(window.NostrTools);
      s.onerror = () => reject(new Error("could not load the NIP-46 library"));
      document.head.append(s);
    });
  }
  async function bunkerSignIn(url, localHex) {
    const NT = await loadTools();
    const m = /^bunker:\/\/([0-9a-f]{64})\?(.*)$/i.exec(String(url).trim());
    if (!m) throw new Error("a bunker URL looks like bunker://<64 hex>?relay=wss://…&secret=…");
    const remote = m[1].toLowerCase(), params = new URLSearchParams(m[2]);
    const relays = params.getAll("relay");
    if (!relays.length) throw new Error("the bunker URL names no relay");
    const sk = localHex ? hexToBytes(localHex) : NT.generateSecretKey();
    const me = NT.getPublicKey(sk);
    const ck = NT.nip44.getConversationKey(sk, remote);
    const waiting = new Map();
    const ws = new WebSocket(relays[0]);
    await new Promise((resolve, reject) => {
      ws.onopen = resolve;
      ws.onerror = () => reject(new Error("the bunker's relay " + relays[0] + " could not be reached"));
    });
    ws.onmessage = async (msg) => {
      const [type, , ev] = JSON.parse(msg.data);
      if (type !== "EVENT" || ev.pubkey !== remote) return;
      let plain;
      try { plain = NT.nip44.decrypt(ev.content, ck); } catch { plain = await NT.nip04.decrypt(sk, remote, ev.content); }
      const r = JSON.parse(plain);
      if (waiting.has(r.id)) { waiting.get(r.id)(r); waiting.delete(r.id); }
    };
    ws.send(JSON.stringify(["REQ", "nip46", { kinds: [24133], "#p": [me], since: now() - 10 }]));
    const rpc = (method, params) => new Promise((resolve, reject) => {
      const id = bytesToHex(crypto.getRandomValues(new Uint8Array(8)));
      const timer = setTimeout(() => { waiting.delete(id); reject(new Error("the bunker did not answer " + method + " within 30 s")); }, 30000);
      waiting.set(id, (r) => {
        clearTimeout(timer);
        if (r.error) reject(new Error("the bunker refused " + method + ": " + r.error)); else resolve(r.result);
      });
      const ev = NT.finalizeEvent({ kind: 24133, created_at: now(), tags: [["p", remote]],
        content: NT.nip44.encrypt(JSON.stringify({ id, method, params }), ck) }, sk);
      ws.send(JSON.stringify(["EVENT", ev]));
    });
    await rpc("connect", [remote, params.get("secret") || ""]);
    const pk = parsePubkey(await rpc("get_public_key", []));
    sessionStorage.setItem("cn-console-signin", JSON.stringify({ via: "NIP-46", url, local: bytesToHex(sk) }));
    signer = { pubkey: pk, via: "NIP-46", admin: null, sign: async (ev) => JSON.parse(await rpc("sign_event", [JSON.stringify(ev)])), close: () => ws.close() };
    renderWho();
    await checkAdmin();
  }
  $("signin-nip46-form").addEventListener("submit", (e) => {
    e.preventDefault();
    say("Connecting to the bunker…");
    bunkerSignIn($("bunker-url").value).catch((err) => say("Sign-in with the bunker failed: " + err.message, false));
  });
  async function checkAdmin() {
    try {
      const methods = await nip86("supportedmethods", []);
      signer.admin = true;
      signer.methods = Array.isArray(methods) ? methods : null;
      say("Signed in as " + npub(signer.pubkey) + " (" + signer.via + "): an admin of this relay.", true);
    } catch (e) {
      signer.admin = false;
      say("Signed in as " + npub(signer.pubkey) + " (" + signer.via + "): not an admin of this relay (" + e.message + "). Group roles still apply to group actions.", e.status === 403 ? undefined : false);
    }
    renderWho();
    reloadSoon(0);
  }
  function renderWho() {
    $("who").innerHTML = signer
      ? "Signed in (" + signer.via + ") as " + who(signer.pubkey) + (signer.admin === true ? ' <span class="pill ok">relay admin</span>' : signer.admin === false ? ' <span class="pill warn">not a relay admin: group roles only</span>' : "")
      : "Not signed in: read-only view.";
    $("signin-nip07").hidden = !!signer;
    $("signin-nip46-form").hidden = !!signer;
    $("signout").hidden = !signer;
  }
  $("signin-nip07").addEventListener("click", signIn);
  $("signout").addEventListener("click", () => {
    if (signer && signer.close) signer.close();
    signer = null;
    sessionStorage.removeItem("cn-console-signin");
    renderWho();
    say("Signed out.", true);
    reloadSoon(0);
  });
  async function sign(ev) {
    if (!signer) throw new Error("sign in first (NIP-07 or NIP-46)");
    const signed = await signer.sign(ev);
    if (!signed || signed.pubkey !== signer.pubkey) throw new Error("the signer signed with another key; sign in again");
    return signed;
  }

  // ---- NIP-86 with NIP-98
  async function sha256hex(text) {
    const data = new TextEncoder().encode(text);
    if (crypto.subtle) return bytesToHex(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
    throw new Error("this page needs a secure context (https, or loopback) to hash NIP-98 payloads");
  }
  const b64 = (text) => btoa(String.fromCharCode(...new TextEncoder().encode(text)));
  async function nip86(method, params) {
    const body = JSON.stringify({ method, params });
    const auth = await sign({ kind: 27235, created_at: now(), content: "",
      // A fresh nonce: the relay accepts a NIP-98 event once, and the same
      // call twice within a second would otherwise be the same event.
      tags: [["u", relayHTTP], ["method", "POST"], ["payload", await sha256hex(body)], ["nonce", bytesToHex(crypto.getRandomValues(new Uint8Array(16)))]] });
    let resp;
    try {
      resp = await fetch(relayHTTP, { method: "POST", body,
        headers: { "Content-Type": "application/nostr+json+rpc", Authorization: "Nostr " + b64(JSON.stringify(auth)) } });
    } catch (e) {
      throw new Error("the relay at " + relayHTTP + " could not be reached (" + e.message + ")");
    }
    let data = {};
    try { data = await resp.json(); } catch { /* not JSON */ }
    if (!resp.ok) {
      const err = new Error((data.error || resp.status + " " + resp.statusText) + " (HTTP " + resp.status + ")");
      err.status = resp.status;
      throw err;
    }
    return data.result;
  }

  // ---- the relay over WebSocket (NIP-01, NIP-42)
  const relay = {
    ws: null, opening: null, waiting: new Map(), subs: new Map(), challenge: null, n: 0,
    open() {
      if (this.ws && this.ws.readyState === WebSocket.OPEN) return Promise.resolve();
      if (this.opening) return this.opening;
      this.opening = new Promise((resolve, reject) => {
        const ws = new WebSocket(relayURL);
        ws.onopen = () => { this.ws = ws; this.opening = null; resolve(); };
        ws.onerror = () => { this.opening = null; reject(new Error("the relay at " + relayURL + " could not be reached")); };
        ws.onclose = () => {
          if (this.ws === ws) this.ws = null;
          for (const [, w] of this.waiting) w([false, "error: the connection to the relay closed"]);
          this.waiting.clear();
        };
        ws.onmessage = (m) => this.onMessage(JSON.parse(m.data));
      });
      return this.opening;
    },
    onMessage(msg) {
      const [type, a, b, c] = msg;
      if (type === "OK" && this.waiting.has(a)) { this.waiting.get(a)([b, c || ""]); this.waiting.delete(a); }
      if (type === "AUTH") this.challenge = a;
      if (type === "EVENT" && this.subs.has(a)) this.subs.get(a).events.push(b);
      if ((type === "EOSE" || type === "CLOSED") && this.subs.has(a)) {
        const s = this.subs.get(a);
        this.subs.delete(a);
        this.ws.send(JSON.stringify(["CLOSE", a]));
        s.done(type === "CLOSED" ? b : null);
      }
    },
    send(ev) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => { this.waiting.delete(ev.id); resolve([false, "error: no answer from the relay within 10 s"]); }, 10000);
        this.waiting.set(ev.id, (r) => { clearTimeout(timer); resolve(r); });
        this.ws.send(JSON.stringify(["EVENT", ev]));
      });
    },
    async publish(ev) {
      await this.open();
      let [ok, message] = await this.send(ev);
      if (!ok && message.startsWith("auth-required:") && this.challenge) {
        const auth = await sign({ kind: 22242, created_at: now(), content: "", tags: [["relay", relayURL], ["challenge", this.challenge]] });
        await new Promise((resolve) => {
          this.waiting.set(auth.id, resolve);
          this.ws.send(JSON.stringify(["AUTH", auth]));
        });
        [ok, message] = await this.send(ev);
      }
      return [ok, message];
    },
  };

  // groupEvent signs a NIP-29 event for group and publishes it; the relay's
  // answer is the result.
  async function groupEvent(kind, group, tags, content) {
    const ev = await sign({ kind, created_at: now(), content: content || "", tags: [["h", group], ...tags] });
    const [ok, message] = await relay.publish(ev);
    if (!ok) throw new Error("the relay refused it: " + message);
    // OK true with "duplicate:" changes nothing: the same event (same content,
    // same second) was sent before.
    if (message.startsWith("duplicate:")) throw new Error("nothing changed, the relay already had this event (" + message + "); try again in a second");
    return ev;
  }

  // ---- reading lists
  async function getJSON(path, params) {
    const kept = Object.fromEntries(Object.entries(params || {}).filter(([, v]) => v !== "" && v !== null && v !== undefined));
    const r = await fetch(q(path, kept), { cache: "no-store" });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(data.error || r.status + " " + r.statusText);
    return data;
  }

  // edited reports whether the user changed a field from what the page
  // rendered into it (its default value, checked state or selected option).
  function edited(el) {
    if (el.type === "checkbox") return el.checked !== el.defaultChecked;
    if (el.tagName === "SELECT") {
      const def = [...el.options].find((o) => o.defaultSelected) || el.options[0];
      return def ? el.value !== def.value : false;
    }
    return el.value !== el.defaultValue;
  }

  // render replaces #page's content, keeping what the user was typing, which
  // <details> were open, and the focus. Only fields the user changed are
  // kept: the others show the state just read (a form rendered before the
  // group's metadata arrived must not hold on to its empty fields, which an
  // edit would then send).
  function render(html) {
    const root = $("page");
    const kept = {};
    for (const el of root.querySelectorAll("input, select, textarea")) {
      if (el.dataset.keep && edited(el)) kept[el.dataset.keep] = el.type === "checkbox" ? el.checked : el.value;
    }
    const open = [...root.querySelectorAll("details[open]")].map((d) => d.id);
    const focus = document.activeElement && root.contains(document.activeElement) ? document.activeElement.dataset.keep || document.activeElement.id : null;
    const extra = [...root.querySelectorAll("[data-persist]")].map((el) => [el.id, el.outerHTML]);
    root.innerHTML = html;
    for (const el of root.querySelectorAll("input, select, textarea")) {
      if (el.dataset.keep && el.dataset.keep in kept) {
        if (el.type === "checkbox") el.checked = kept[el.dataset.keep]; else el.value = kept[el.dataset.keep];
      }
    }
    for (const id of open) { const d = document.getElementById(id); if (d) d.open = true; }
    for (const [id, html] of extra) { const el = document.getElementById(id); if (el) el.outerHTML = html; }
    if (focus) {
      const el = root.querySelector(`[data-keep="${CSS.escape(focus)}"]`) || document.getElementById(focus);
      if (el) el.focus();
    }
  }
  // resetForm empties a form after its action succeeded: the form in the page
  // now, which a re-render may have replaced while the action ran.
  function resetForm(form) {
    for (const el of form.elements) {
      if (!el.dataset.keep) continue;
      const now = $("page").querySelector(`[data-keep="${CSS.escape(el.dataset.keep)}"]`) || el;
      if (now.type === "checkbox") now.checked = false; else if (now.tagName === "SELECT") now.selectedIndex = 0; else now.value = "";
    }
  }
  const signedNote = () => (signer ? "" : '<p class="muted">Sign in to act; the lists below are read-only.</p>');

  // ---- paging: every list comes from the server a page at a time (its
  // API's ?limit= and ?after=); where each list is (its cursor) and what it
  // searches for live in this page's URL, so a re-read keeps the page, and
  // the browser's back button goes to the page before.
  const here = (name) => new URLSearchParams(location.search).get(name) || "";
  function linkWith(changes) {
    const u = new URLSearchParams(location.search);
    for (const [k, v] of Object.entries(changes)) if (v) u.set(k, v); else u.delete(k);
    const s = u.toString();
    return location.pathname + (s ? "?" + s : "");
  }
  // pager is the navigation of one list whose cursor is the URL's param:
  // its first page when it is not there, and its next page when there is one.
  function pager(param, next, label) {
    const first = here(param) ? `<a href="${esc(linkWith({ [param]: "" }))}" data-page-link>First page</a>` : "";
    const more = next ? `<a href="${esc(linkWith({ [param]: next }))}" data-page-link data-next="${esc(param)}">Next page</a>` : "";
    return first || more ? `<nav class="pager" aria-label="${esc(label)}">${first} ${more}</nav>` : "";
  }
  // searchForm searches a list (the URL's q), from its first page.
  const searchForm = (label, hint, reset) => `<form class="inline search" data-form="search" data-reset="${esc(reset)}" role="search">
      <label>${esc(label)}<input type="search" name="q" data-keep="search:q" value="${esc(here("q"))}" placeholder="${esc(hint)}" maxlength="128"></label>
      <button type="submit" class="secondary">Search</button></form>`;
  function go(href) {
    history.pushState(null, "", href);
    reloadSoon(0);
  }
  window.addEventListener("popstate", () => reloadSoon(0));

  // ---- groups page
  const pages = {};
  let groupData = {}; // the groups as last read, by id
  pages.groups = {
    async load() {
      const one = here("group");
      let groups, next = "";
      if (one) {
        groups = [await getJSON("api/groups", { group: one, limit: 100, members_after: here("members_after") })];
      } else {
        const page = await getJSON("api/groups", { limit: 20, after: here("after"), q: here("q") });
        groups = page.items;
        next = page.next;
      }
      groupData = Object.fromEntries(groups.map((g) => [g.id, g]));
      const flags = (g) => [g.closed ? '<span class="pill warn">closed</span>' : '<span class="pill ok">open</span>',
        g.restricted ? '<span class="pill warn">restricted</span>' : "", g.private ? '<span class="pill warn">private</span>' : "",
        g.hidden ? '<span class="pill warn">hidden</span>' : "", g.deleted ? '<span class="pill bad">deleted</span>' : ""].join(" ");
      const k = (g, name) => `data-keep="${esc(g.id)}:${name}"`;
      // parent is the field that names a group's parent by its id (empty: a
      // root group); the relay refuses an unknown parent or a cycle and says so.
      const parent = (attrs, cur) => `<label>Parent group id (empty: a root group)<input name="parent" value="${esc(cur || "")}" pattern="[A-Za-z0-9_\\-]{1,64}" maxlength="64" ${attrs}></label>`;
      const members = (g) => one ? pager("members_after", g.members_next, "pages of the members of " + g.id)
        : g.member_count > g.members.length ? `<p><a href="${esc(linkWith({ group: g.id, after: "", q: "" }))}" data-page-link>All ${esc(g.member_count)} members of ${esc(g.name || g.id)}</a> <span class="muted">(the first ${esc(g.members.length)} are shown)</span></p>` : "";
      const tree = (g) => [g.parent ? `subgroup of <span class="mono">${esc(g.parent)}</span>` : "",
        (g.children || []).length ? `subgroups: ${g.children.map((c) => `<span class="mono">${esc(c)}</span>`).join(", ")}` : ""].filter(Boolean).join(" · ");
      render(`${signedNote()}
        <section aria-labelledby="create-h"><h2 id="create-h">Create a group</h2>
          <form id="create-group" data-form="create">
            <label>Group id (a-z A-Z 0-9 - _)<input name="id" data-keep="create:id" required pattern="[A-Za-z0-9_\\-]{1,64}" maxlength="64"></label>
            <label>Name<input name="name" data-keep="create:name"></label>
            <label>About<input name="about" data-keep="create:about"></label>
            <label class="check"><input type="checkbox" name="closed" data-keep="create:closed"> Closed (joins need an admin or an invite code)</label>
            <label class="check"><input type="checkbox" name="restricted" data-keep="create:restricted"> Restricted (only members write)</label>
            <label class="check"><input type="checkbox" name="private" data-keep="create:private"> Private (only members read its messages)</label>
            <label class="check"><input type="checkbox" name="hidden" data-keep="create:hidden"> Hidden (only members see its metadata)</label>
            ${parent('data-keep="create:parent"', "")}
            <button type="submit">Create group</button>
          </form>
          <p class="muted">Creating sends a NIP-29 create-group (9007) and its metadata (9002), signed by you. A parent makes it a subgroup: you must be an admin of the parent; membership is not inherited.</p>
        </section>
        ${one ? `<h2>Group ${esc(one)}</h2><p><a href="${esc(linkWith({ group: "", members_after: "" }))}" data-page-link>All groups</a></p>`
          : `<h2 id="groups-h">Groups${here("q") ? " matching “" + esc(here("q")) + "”" : ""}</h2>
          ${searchForm("Find a group (id or name)", "id or name", "after")}
          <p class="muted">By id, ${esc(groups.length)} on this page.</p>${pager("after", next, "pages of groups")}`}
        ${groups.length ? "" : `<p class="muted">${here("q") ? "No group matches." : "No group yet."}</p>`}
        ${groups.map((g) => `<article id="group-${esc(g.id)}" data-group="${esc(g.id)}" aria-labelledby="group-h-${esc(g.id)}">
          <h3 id="group-h-${esc(g.id)}">${esc(g.name || g.id)} <span class="muted mono">${esc(g.id)}</span> ${flags(g)}</h3>
          <p>${esc(g.about) || '<span class="muted">no description</span>'} <span class="muted">· created ${when(g.created_at)} by</span> ${g.creator ? who(g.creator) : "–"}</p>
          ${tree(g) ? `<p class="muted" data-tree>${tree(g)}</p>` : ""}
          <details id="meta-${esc(g.id)}"><summary>Edit metadata and flags</summary>
            <form data-form="meta" data-group="${esc(g.id)}">
              <label>Name<input name="name" value="${esc(g.name)}" ${k(g, "name")}></label>
              <label>About<input name="about" value="${esc(g.about)}" ${k(g, "about")}></label>
              <label>Picture URL<input name="picture" value="${esc(g.picture)}" ${k(g, "picture")}></label>
              <label class="check"><input type="checkbox" name="closed" ${g.closed ? "checked" : ""} ${k(g, "closed")}> Closed</label>
              <label class="check"><input type="checkbox" name="restricted" ${g.restricted ? "checked" : ""} ${k(g, "restricted")}> Restricted</label>
              <label class="check"><input type="checkbox" name="private" ${g.private ? "checked" : ""} ${k(g, "private")}> Private</label>
              <label class="check"><input type="checkbox" name="hidden" ${g.hidden ? "checked" : ""} ${k(g, "hidden")}> Hidden</label>
              ${parent(k(g, "parent"), g.parent)}
              <button type="submit">Save metadata</button>
            </form></details>
          <h4>Pending join requests (${g.pending_count})</h4>
          ${g.pending.length ? `<table><caption class="muted">Kind 9021 requests waiting for an admin</caption><thead><tr><th scope="col">who</th><th scope="col">asked</th><th scope="col" class="num">trust rank</th><th scope="col">action</th></tr></thead><tbody>
            ${g.pending.map((p) => `<tr data-pending="${esc(p.pubkey)}"><td>${who(p.pubkey)}</td><td>${when(p.at)}</td><td class="num">${rank(p.rank)}</td>
              <td><button type="button" data-act="approve" data-group="${esc(g.id)}" data-pubkey="${esc(p.pubkey)}">Approve</button></td></tr>`).join("")}
            </tbody></table>` : '<p class="muted">None.</p>'}
          <h4>Members (${g.member_count})</h4>
          <table><thead><tr><th scope="col">member</th><th scope="col">roles</th><th scope="col" class="num">trust rank</th><th scope="col">since</th><th scope="col">actions</th></tr></thead><tbody>
            ${g.members.map((m) => `<tr data-member="${esc(m.pubkey)}"><td>${who(m.pubkey)}</td><td>${esc((m.roles || []).join(", ")) || '<span class="muted">member</span>'}</td>
              <td class="num">${rank(m.rank)}</td><td>${when(m.at)}</td><td><div class="actions">
              <button type="button" class="secondary" data-act="role" data-role="admin" data-group="${esc(g.id)}" data-pubkey="${esc(m.pubkey)}">Make admin</button>
              <button type="button" class="secondary" data-act="role" data-role="moderator" data-group="${esc(g.id)}" data-pubkey="${esc(m.pubkey)}">Make moderator</button>
              <button type="button" class="secondary" data-act="role" data-role="" data-group="${esc(g.id)}" data-pubkey="${esc(m.pubkey)}">No role</button>
              <button type="button" class="danger" data-act="remove" data-group="${esc(g.id)}" data-pubkey="${esc(m.pubkey)}">Remove</button></div></td></tr>`).join("")}
          </tbody></table>
          ${members(g)}
          <form data-form="add" data-group="${esc(g.id)}">
            <label>Add a member (npub or hex)<input name="pubkey" ${k(g, "add")} required></label>
            <label>Role<select name="role" ${k(g, "addrole")}><option value="">member</option><option value="moderator">moderator</option><option value="admin">admin</option></select></label>
            <button type="submit">Add member</button>
          </form>
          <h4>Invite codes (${g.invite_count})</h4>
          ${g.invites.length ? `<ul>${g.invites.map((i) => `<li><span class="mono">${esc(i.code_masked)}</span> <span class="muted">minted ${when(i.created_at)}${i.expires ? ", expires " + when(i.expires) : ""}</span></li>`).join("")}</ul>` : '<p class="muted">None. Codes are secrets: only their first characters are shown here.</p>'}
          <div class="actions"><button type="button" data-act="invite" data-group="${esc(g.id)}">Mint an invite code</button></div>
          <output id="invite-${esc(g.id)}" class="secret" data-persist hidden></output>
          <form data-form="delete-event" data-group="${esc(g.id)}">
            <label>Delete an event from this group (event id)<input name="id" ${k(g, "delev")} pattern="[0-9a-f]{64}" required></label>
            <button type="submit" class="danger">Delete event (9005)</button>
          </form>
        </article>`).join("")}
        ${one ? "" : pager("after", next, "pages of groups")}`);
    },
    async submit(form, data) {
      const g = form.dataset.group;
      const metaTags = (d) => [...(d.name ? [["name", d.name]] : []), ...(d.about ? [["about", d.about]] : []), ...(d.picture ? [["picture", d.picture]] : []),
        ...(d.closed ? [["closed"]] : []), ...(d.restricted ? [["restricted"]] : []), ...(d.private ? [["private"]] : []),
        ...(d.hidden ? [["hidden"]] : []), ...(d.parent ? [["parent", d.parent]] : [])];
      switch (form.dataset.form) {
        case "create":
          return act("Create group " + data.id, async () => {
            await groupEvent(9007, data.id, []);
            await groupEvent(9002, data.id, metaTags(data));
            resetForm(form);
            return "created (9007) with its metadata (9002); you are its admin";
          });
        case "meta": {
          // A 9002 replaces every field: keep what this form does not edit,
          // and list every subgroup in its order (NIP-29 refuses a 9002 that
          // leaves one out).
          const cur = groupData[g] || {};
          const keep = [...(cur.banner ? [["banner", cur.banner]] : []),
            ...(Array.isArray(cur.supported_kinds) ? [["supported_kinds", ...cur.supported_kinds.map(String)]] : []),
            ...(cur.children || []).map((c) => ["child", c])];
          return act("Save metadata of " + g, async () => { await groupEvent(9002, g, [...metaTags(data), ...keep]); return "saved (9002)"; });
        }
        case "add":
          return act("Add member to " + g, async () => {
            const pk = parsePubkey(data.pubkey);
            await groupEvent(9000, g, [["p", pk, ...(data.role ? [data.role] : [])]]);
            resetForm(form);
            return npub(pk) + " added" + (data.role ? " as " + data.role : "") + " (9000)";
          });
        case "delete-event":
          return act("Delete event from " + g, async () => { await groupEvent(9005, g, [["e", data.id]]); resetForm(form); return "deleted (9005)"; });
      }
    },
    async click(b) {
      const g = b.dataset.group, pk = b.dataset.pubkey;
      switch (b.dataset.act) {
        case "approve":
          return act("Approve " + npub(pk) + " in " + g, async () => { await groupEvent(9000, g, [["p", pk]]); return "approved: now a member (9000)"; });
        case "role":
          return act("Set role of " + npub(pk) + " in " + g, async () => {
            await groupEvent(9000, g, [["p", pk, ...(b.dataset.role ? [b.dataset.role] : [])]]);
            return b.dataset.role ? "now " + b.dataset.role + " (9000)" : "no role now (9000)";
          });
        case "remove":
          return act("Remove " + npub(pk) + " from " + g, async () => { await groupEvent(9001, g, [["p", pk]]); return "removed (9001)"; });
        case "invite": {
          const code = bytesToHex(crypto.getRandomValues(new Uint8Array(12)));
          const ok = await act("Mint an invite code for " + g, async () => { await groupEvent(9009, g, [["code", code]]); return "minted (9009); the code is shown once, below the button"; });
          if (ok) {
            const out = $("invite-" + g);
            out.hidden = false;
            out.textContent = "New invite code for " + g + ": " + code + " (share it with the person you invite; a join request carrying it is accepted at once)";
          }
          return;
        }
      }
    },
  };

  // ---- members page
  // NIP-43 lists come from the console's JSON (the same code as the NIP-86
  // list methods, read-only), so every signed-in key sees the actions; the
  // relay decides each one (NIP-86 with NIP-98: admins only).
  pages.members = {
    async load() {
      const [community, m43, m43members, m43pending, m43invites] = await Promise.all([
        getJSON("api/members", { limit: 50, after: here("after"), q: here("q") }), getJSON("api/nip43"),
        getJSON("api/nip43/members", { limit: 50, after: here("m_after") }), getJSON("api/nip43/pending", { limit: 50, after: here("p_after") }),
        getJSON("api/nip43/invites", { limit: 50, after: here("i_after") })]);
      const members = community.items;
      const off = signer && signer.admin && signer.methods && !signer.methods.includes("mintinvite")
        ? '<p class="warn">This relay does not offer NIP-43 membership management (its NIP-86 <code>supportedmethods</code> lacks the membership methods): run it with a node key (<code>--node-key-file</code>), and <code>--membership invite</code> to let only members write.</p>' : "";
      const list = m43members.items, pending = m43pending.items, invites = m43invites.items, roles = m43.roles || [];
      const roleName = (id) => { const r = roles.find((x) => x.id === id); return r && r.label ? `${r.label} (${id})` : id; };
      const roleOptions = roles.map((r) => `<option value="${esc(r.id)}">${esc(roleName(r.id))}</option>`).join("");
      const nip43 = `${off}<p class="muted">Every change is signed by your key and checked by the relay (NIP-86, admins only).</p>
            <h3 id="nip43-members-h">Members (${esc(m43.member_count)})</h3>
            ${list.length ? `<table aria-labelledby="nip43-members-h"><thead><tr><th scope="col">member</th><th scope="col">roles</th><th scope="col">via</th><th scope="col">since</th><th scope="col">actions</th></tr></thead><tbody>
            ${list.map((m) => `<tr data-nip43-member="${esc(m.pubkey)}"><td>${who(m.pubkey)}</td>
              <td data-field="roles">${(m.roles || []).map((id) => `<span class="pill ok">${esc(roleName(id))} <button type="button" class="link" data-act="unassignrole" data-pubkey="${esc(m.pubkey)}" data-role="${esc(id)}" aria-label="take role ${esc(id)} from this member">×</button></span>`).join(" ") || '<span class="muted">none</span>'}</td>
              <td>${esc(m.via)}</td><td>${when(m.since)}</td>
              <td><div class="actions">${roles.length ? `<form class="inline" data-form="assignrole" data-pubkey="${esc(m.pubkey)}"><label class="sr-only" for="assign-${esc(m.pubkey)}">role to give</label><select id="assign-${esc(m.pubkey)}" name="role" data-keep="assign:${esc(m.pubkey)}">${roleOptions}</select><button type="submit" class="secondary">Give role</button></form>` : ""}
              <button type="button" class="danger" data-act="removemember" data-pubkey="${esc(m.pubkey)}">Remove</button></div></td></tr>`).join("")}</tbody></table>` : '<p class="muted">None.</p>'}
            ${pager("m_after", m43members.next, "pages of NIP-43 members")}
            <form data-form="addmember"><label>Add a member (npub or hex)<input name="pubkey" data-keep="addmember" required></label><button type="submit">Add member</button></form>
            <h3 id="nip43-roles-h">Roles (${roles.length})</h3>
            <p class="muted">NIP-43 roles (kind 33534, signed by the relay): names apps show beside members; they give no access here.</p>
            ${roles.length ? `<table aria-labelledby="nip43-roles-h"><thead><tr><th scope="col">id</th><th scope="col">label</th><th scope="col">description</th><th scope="col">color</th><th scope="col">order</th><th scope="col">action</th></tr></thead><tbody>
            ${roles.map((r) => `<tr data-role="${esc(r.id)}"><td class="mono">${esc(r.id)}</td><td>${esc(r.label)}</td><td>${esc(r.description)}</td><td>${esc(r.color)}</td><td>${esc(r.order)}</td>
              <td><button type="button" class="danger" data-act="removerole" data-role="${esc(r.id)}">Remove role</button></td></tr>`).join("")}</tbody></table>` : '<p class="muted">None.</p>'}
            <form data-form="setrole"><label>Role id<input name="id" data-keep="setrole:id" required></label><label>Label<input name="label" data-keep="setrole:label"></label>
              <label>Description<input name="description" data-keep="setrole:description"></label><label>Color (hue 0-360)<input name="color" data-keep="setrole:color" inputmode="numeric"></label>
              <label>Order<input name="order" data-keep="setrole:order" inputmode="numeric"></label><button type="submit">Define or change role</button></form>
            <h3 id="nip43-pending-h">Pending admissions (${esc(m43.pending_count)})</h3>
            ${pending.length ? `<table aria-labelledby="nip43-pending-h"><thead><tr><th scope="col">who</th><th scope="col">asked</th><th scope="col" class="num">trust rank</th><th scope="col">actions</th></tr></thead><tbody>
            ${pending.map((p) => `<tr data-nip43-pending="${esc(p.pubkey)}"><td>${who(p.pubkey)}</td><td>${when(p.requested_at)}</td><td class="num">${rank(p.rank)}</td>
              <td><div class="actions"><button type="button" data-act="admitmember" data-pubkey="${esc(p.pubkey)}">Admit</button>
              <button type="button" class="danger" data-act="denymember" data-pubkey="${esc(p.pubkey)}">Deny</button></div></td></tr>`).join("")}</tbody></table>` : '<p class="muted">None.</p>'}
            ${pager("p_after", m43pending.next, "pages of pending admissions")}
            <h3 id="nip43-invites-h">Invites (${esc(m43.open_invites)} open)</h3>
            ${invites.length ? `<table aria-labelledby="nip43-invites-h"><thead><tr><th scope="col">id</th><th scope="col">state</th><th scope="col">issued by</th><th scope="col">issued</th><th scope="col">expires</th><th scope="col">used by</th><th scope="col">action</th></tr></thead><tbody>
            ${invites.map((i) => `<tr data-invite="${esc(i.id)}"><td class="mono">${esc(i.id)}</td><td data-field="state">${esc(i.state)}</td><td>${who(i.issuer)}</td><td>${when(i.issued_at)}</td><td>${when(i.expires_at)}</td><td>${i.used_by ? who(i.used_by) : "–"}</td>
              <td>${i.state === "open" ? `<button type="button" class="danger" data-act="revokeinvite" data-id="${esc(i.id)}">Revoke</button>` : ""}</td></tr>`).join("")}</tbody></table>` : '<p class="muted">None.</p>'}
            ${pager("i_after", m43invites.next, "pages of invites")}
            <div class="actions"><button type="button" id="mintinvite" data-act="mintinvite">Mint a membership invite</button></div>
            <output id="member-invite" class="secret" data-persist hidden></output>`;
      render(`${signedNote()}
        <section aria-labelledby="nip43-h"><h2 id="nip43-h">Relay membership (NIP-43)</h2>${nip43}</section>
        <section aria-labelledby="community-h"><h2 id="community-h">Community members${here("q") ? " whose key starts with " + esc(here("q")) : ""}</h2>
        <p class="muted">Keys whose first event the relay stored, or that an admin allowed, newest first; ${esc(members.length)} on this page.</p>
        ${searchForm("Find a member (npub, or the start of a hex key)", "npub1… or hex", "after")}
        ${pager("after", community.next, "pages of community members")}
        <table><thead><tr><th scope="col">member</th><th scope="col">since</th><th scope="col" class="num">trust rank</th><th scope="col">status</th><th scope="col">actions</th></tr></thead><tbody>
        ${members.map((m) => `<tr data-community="${esc(m.pubkey)}"><td>${who(m.pubkey)}</td><td>${when(m.at)}</td><td class="num">${rank(m.rank)}</td>
          <td>${m.status ? `<span class="pill ${m.status === "banned" ? "bad" : "ok"}">${esc(m.status)}</span>` : ""}</td>
          <td><div class="actions">${m.status === "banned" ? `<button type="button" class="secondary" data-act="nip86" data-method="unbanpubkey" data-arg="${esc(m.pubkey)}">Unban</button>`
            : `<button type="button" class="danger" data-act="nip86" data-method="banpubkey" data-arg="${esc(m.pubkey)}">Ban</button>`}
          ${m.status === "allowed" ? "" : `<button type="button" class="secondary" data-act="nip86" data-method="allowpubkey" data-arg="${esc(m.pubkey)}">Allow</button>`}</div></td></tr>`).join("")}
        </tbody></table>${pager("after", community.next, "pages of community members")}</section>`);
    },
    async submit(form, data) {
      if (form.dataset.form === "addmember") {
        return act("Add member", async () => { const pk = parsePubkey(data.pubkey); await nip86("addmember", [pk]); resetForm(form); return npub(pk) + " is a member (addmember)"; });
      }
      if (form.dataset.form === "setrole") {
        // Fields left empty keep their value (setrole); the relay publishes its 33534.
        const patch = {};
        for (const f of ["label", "description", "color", "order"]) if (data[f]) patch[f] = data[f];
        return act("Define role " + data.id, async () => { await nip86("setrole", [data.id, patch]); resetForm(form); return "role " + data.id + " published (setrole, kind 33534)"; });
      }
      if (form.dataset.form === "assignrole") {
        const pk = form.dataset.pubkey;
        return act("Give role " + data.role + " to " + npub(pk), async () => { await nip86("assignrole", [pk, data.role]); return "given (assignrole); the relay's 13534 lists it"; });
      }
    },
    async click(b) {
      const pk = b.dataset.pubkey;
      const done = { removemember: "removed; in invite mode the relay refuses their next post (removemember)",
        admitmember: "admitted; they may post now (admitmember)", denymember: "request dropped (denymember)" };
      switch (b.dataset.act) {
        case "removemember": case "admitmember": case "denymember":
          return act(b.textContent + " " + npub(pk), async () => { await nip86(b.dataset.act, [pk]); return done[b.dataset.act]; });
        case "unassignrole":
          return act("Take role " + b.dataset.role + " from " + npub(pk), async () => { await nip86("unassignrole", [pk, b.dataset.role]); return "taken away (unassignrole)"; });
        case "removerole":
          return act("Remove role " + b.dataset.role, async () => { await nip86("removerole", [b.dataset.role]); return "removed from every member; the relay deleted its 33534 (removerole)"; });
        case "revokeinvite":
          return act("Revoke invite " + b.dataset.id, async () => { await nip86("revokeinvite", [b.dataset.id]); return "revoked (revokeinvite)"; });
        case "mintinvite": {
          let claim = null;
          const out = $("member-invite");
          out.hidden = true;
          out.textContent = "";
          const ok = await act("Mint a membership invite", async () => {
            const r = await nip86("mintinvite", []);
            if (!r || !r.claim) throw new Error("the relay's answer has no claim");
            claim = r;
            return "minted invite " + r.id + ", expires " + when(r.expires_at) + "; the claim is shown once, below the button";
          });
          if (ok && claim) {
            const el = $("member-invite");
            el.hidden = false;
            el.textContent = "Invite claim (shown once): " + claim.claim;
          }
          return;
        }
      }
    },
  };

  // ---- reports page
  pages.reports = {
    async load() {
      const filter = here("group");
      const page = await getJSON("api/reports", { group: filter, limit: 20, after: here("after") });
      const reports = page.items;
      render(`${signedNote()}
        <form id="report-filter" data-form="filter"><label>Queue: a group id, <code>node</code> (outside groups), or empty (every report)<input name="group" id="group-filter" value="${esc(filter)}" pattern="[A-Za-z0-9_\\-]{1,64}" maxlength="64"></label><button type="submit" class="secondary">Show</button></form>
        <h2>Waiting for a decision${filter === "node" ? " (outside groups)" : filter ? " in group " + esc(filter) : ""}</h2>
        <p class="muted">The newest report first; ${esc(reports.length)} on this page.</p>${pager("after", page.next, "pages of reports")}
        ${reports.length ? "" : '<p class="muted">Nothing to decide.</p>'}
        ${reports.map((r) => {
          const ev = r.event;
          return `<article id="report-${esc(r.event_id)}" data-report="${esc(r.event_id)}" aria-labelledby="report-h-${esc(r.event_id)}">
          <h3 id="report-h-${esc(r.event_id)}">Event <span class="mono">${esc(r.event_id.slice(0, 16))}…</span>
            ${r.group ? `in group <span class="mono">${esc(r.group)}</span>` : "outside groups"}
            ${r.hidden ? '<span class="pill bad">hidden</span>' : '<span class="pill ok">visible</span>'}</h3>
          ${ev ? `<p>by ${who(ev.pubkey)} <span class="muted">kind ${ev.kind}, ${when(ev.created_at)}</span></p><div class="content">${esc(ev.content)}</div>`
            : '<p class="muted">The relay does not hold this event.</p>'}
          <p>${r.reporters} reporter(s)${r.held_by && r.held_by.length ? ", held by rule " + esc(r.held_by.join(", ")) : ""}</p>
          ${r.reporter_list.length ? `<table><thead><tr><th scope="col">reporter</th><th scope="col">type</th><th scope="col" class="num">rank now</th><th scope="col" class="num">rank then</th><th scope="col">when</th></tr></thead><tbody>
            ${r.reporter_list.map((p) => `<tr><td>${who(p.pubkey)}</td><td>${esc(p.type)}</td><td class="num">${rank(p.rank)}</td><td class="num">${esc(p.rank_then)}</td><td>${when(p.at)}</td></tr>`).join("")}</tbody></table>` : ""}
          <p>Labels the node published: ${r.labels.length ? r.labels.map((l) => `<span class="pill ${l.retracted ? "" : "warn"}">${esc(l.label)} (${esc(l.rule)})${l.retracted ? " retracted" : ""}</span>`).join(" ") : '<span class="muted">none</span>'}</p>
          <div class="actions">
            <button type="button" class="danger" data-act="hide" data-id="${esc(r.event_id)}">Hide event</button>
            <button type="button" class="secondary" data-act="keep" data-id="${esc(r.event_id)}">Keep (dismiss the reports)</button>
            ${r.group ? `<button type="button" class="danger" data-act="group-delete" data-group="${esc(r.group)}" data-id="${esc(r.event_id)}">Delete from group (9005)</button>` : ""}
            ${ev ? `<button type="button" class="danger" data-act="ban-author" data-pubkey="${esc(ev.pubkey)}" data-id="${esc(r.event_id)}">Ban the author</button>` : ""}
          </div></article>`;
        }).join("")}
        ${pager("after", page.next, "pages of reports")}`);
    },
    async submit(form, data) {
      go(linkWith({ group: data.group.trim(), after: "" }));
    },
    async click(b) {
      const id = b.dataset.id;
      switch (b.dataset.act) {
        case "hide":
          return act("Hide event " + id.slice(0, 12), async () => { await nip86("banevent", [id, "reported"]); return "hidden from every reader (banevent)"; });
        case "keep":
          return act("Keep event " + id.slice(0, 12), async () => { await nip86("allowevent", [id, "reports dismissed"]); return "kept; rules leave it alone (allowevent)"; });
        case "group-delete":
          return act("Delete event " + id.slice(0, 12) + " from " + b.dataset.group, async () => { await groupEvent(9005, b.dataset.group, [["e", id]]); return "deleted (9005)"; });
        case "ban-author":
          return act("Ban " + npub(b.dataset.pubkey), async () => { await nip86("banpubkey", [b.dataset.pubkey, "reported event " + id]); return "banned; their events are hidden (banpubkey)"; });
      }
    },
  };

  // ---- bans and policy page
  pages.policy = {
    async load() {
      const p = await getJSON("api/policy");
      const table = (title, rows, undo, label, fmtKey) => `<h3>${title} (${rows.length})</h3>${rows.length ? `<table><thead><tr><th scope="col">${label}</th><th scope="col">reason</th><th scope="col">action</th></tr></thead><tbody>
        ${rows.map((r) => `<tr data-listed="${esc(r.key)}"><td>${fmtKey(r.key)}</td><td>${esc(r.reason) || '<span class="muted">–</span>'}</td>
          <td><button type="button" class="secondary" data-act="nip86" data-method="${undo}" data-arg="${esc(r.key)}">${undo.replace(/(pubkey|event|ip)$/, "")}</button></td></tr>`).join("")}</tbody></table>` : '<p class="muted">None.</p>'}`;
      const mono = (k) => `<span class="mono">${esc(k)}</span>`;
      render(`${signedNote()}
        <section aria-labelledby="act-h"><h2 id="act-h">Change the policy</h2>
          <form data-form="nip86" data-method="banpubkey"><label>Ban a pubkey (npub or hex)<input name="arg" data-keep="ban:pk" required></label><label>Reason<input name="reason" data-keep="ban:reason"></label><button type="submit" class="danger">Ban pubkey</button></form>
          <form data-form="nip86" data-method="allowpubkey"><label>Allow a pubkey (npub or hex)<input name="arg" data-keep="allow:pk" required></label><label>Reason<input name="reason" data-keep="allow:reason"></label><button type="submit">Allow pubkey</button></form>
          <form data-form="nip86" data-method="banevent"><label>Ban (hide) an event id<input name="arg" data-keep="banev:id" required pattern="[0-9a-f]{64}"></label><label>Reason<input name="reason" data-keep="banev:reason"></label><button type="submit" class="danger">Ban event</button></form>
          <form data-form="nip86" data-method="blockip"><label>Block an IP address or prefix<input name="arg" data-keep="ip:ip" required></label><label>Reason<input name="reason" data-keep="ip:reason"></label><button type="submit" class="danger">Block</button></form>
          <form data-form="kind"><label>Kind<input name="kind" type="number" min="0" max="65535" data-keep="kind" required></label>
            <button type="submit" name="method" value="allowkind">Allow kind</button><button type="submit" name="method" value="disallowkind" class="danger">Disallow kind</button></form>
        </section>
        <section aria-labelledby="lists-h"><h2 id="lists-h">Lists (NIP-86, version ${esc(p.version)})</h2>
          ${table("Banned pubkeys", p.banned_pubkeys, "unbanpubkey", "pubkey", who)}
          ${table("Allowed pubkeys", p.allowed_pubkeys, "unallowpubkey", "pubkey", who)}
          ${table("Banned events", p.banned_events, "unbanevent", "event id", mono)}
          ${table("Allowed events", p.allowed_events, "unallowevent", "event id", mono)}
          ${table("Blocked addresses", p.blocked_ips, "unblockip", "address", mono)}
          <h3>Kinds</h3><p>Allowed: ${p.allowed_kinds.length ? p.allowed_kinds.map(esc).join(", ") : '<span class="muted">every kind the relay accepts</span>'}.
            Disallowed: ${p.disallowed_kinds.length ? p.disallowed_kinds.map(esc).join(", ") : '<span class="muted">none</span>'}.</p>
        </section>`);
    },
    async submit(form, data, submitter) {
      if (form.dataset.form === "kind") {
        const method = submitter ? submitter.value : "allowkind";
        return act(method + " " + data.kind, async () => { await nip86(method, [Number(data.kind)]); resetForm(form); return "done (" + method + ")"; });
      }
      const method = form.dataset.method;
      return act(method, async () => {
        const arg = method.endsWith("pubkey") ? parsePubkey(data.arg) : data.arg.trim();
        await nip86(method, data.reason ? [arg, data.reason] : [arg]);
        resetForm(form);
        return (method.endsWith("pubkey") ? npub(arg) : arg) + ": done (" + method + ")";
      });
    },
  };

  // ---- media page (Blossom)
  const bytes = (n) => (n < 1024 ? n + " B" : n < 1048576 ? (n / 1024).toFixed(1) + " KiB" : n < 1073741824 ? (n / 1048576).toFixed(1) + " MiB" : (n / 1073741824).toFixed(2) + " GiB");
  pages.media = {
    async load() {
      const m = await getJSON("api/media", { limit: 50 });
      render(`${signedNote()}
        <section aria-labelledby="flagged-h"><h2 id="flagged-h">Reported or hidden blobs (${esc(m.blobs.length)})</h2>
          <p class="muted">Most open reports first. Hiding (NIP-86 <code>hideblob</code>) stops the node serving a blob (451) and refuses its re-upload; unhiding (<code>unhideblob</code>) is final for the report rules.</p>
          ${m.blobs.length ? `<table id="flagged-blobs"><thead><tr><th scope="col">hash</th><th scope="col" class="num">size</th><th scope="col">type</th><th scope="col" class="num">reports</th><th scope="col">owners</th><th scope="col">state</th><th scope="col">action</th></tr></thead><tbody>
            ${m.blobs.map((b) => `<tr data-blob="${esc(b.sha256)}"><td class="mono" title="${esc(b.sha256)}">${esc(b.sha256.slice(0, 16))}…</td><td class="num">${esc(bytes(b.size))}</td><td>${esc(b.type)}</td>
              <td class="num">${esc(b.reports)}</td><td>${b.owners.length ? b.owners.map(who).join("<br>") : '<span class="muted">none (file removed)</span>'}</td>
              <td>${b.hidden ? `<span class="pill bad">hidden</span> ${esc(b.hidden)}` : '<span class="pill ok">served</span>'}</td>
              <td>${b.hidden ? `<button type="button" class="secondary" data-act="unhideblob" data-hash="${esc(b.sha256)}">Unhide</button>`
                : `<button type="button" class="danger" data-act="hideblob" data-hash="${esc(b.sha256)}">Hide</button>`}</td></tr>`).join("")}</tbody></table>` : '<p class="muted">No reported or hidden blob.</p>'}
          <form data-form="hideblob"><label>Hide a blob by its sha256<input name="hash" data-keep="blob:hash" required pattern="[0-9a-f]{64}"></label><label>Reason<input name="reason" data-keep="blob:reason"></label><button type="submit" class="danger">Hide blob</button></form>
        </section>
        <section aria-labelledby="uploaders-h"><h2 id="uploaders-h">Largest uploaders</h2>
          ${m.uploaders.length ? `<table id="uploaders"><thead><tr><th scope="col">pubkey</th><th scope="col" class="num">bytes</th><th scope="col" class="num">blobs</th></tr></thead><tbody>
            ${m.uploaders.map((u) => `<tr data-uploader="${esc(u.pubkey)}"><td>${who(u.pubkey)}</td><td class="num" title="${esc(u.bytes)} bytes">${esc(bytes(u.bytes))}</td><td class="num">${esc(u.blobs)}</td></tr>`).join("")}</tbody></table>` : '<p class="muted">No blob stored.</p>'}
        </section>`);
    },
    async submit(form, data) {
      const hash = data.hash.trim().toLowerCase();
      return act("Hide blob " + hash.slice(0, 12), async () => {
        const changed = await nip86("hideblob", data.reason ? [hash, data.reason] : [hash]);
        resetForm(form);
        return changed ? "hidden (hideblob)" : "already hidden";
      });
    },
    async click(b) {
      const hash = b.dataset.hash;
      if (b.dataset.act === "hideblob") {
        return act("Hide blob " + hash.slice(0, 12), async () => (await nip86("hideblob", [hash, "hidden from the console"])) ? "hidden (hideblob)" : "already hidden");
      }
      if (b.dataset.act === "unhideblob") {
        return act("Unhide blob " + hash.slice(0, 12), async () => (await nip86("unhideblob", [hash])) ? "served again (unhideblob)" : "already served");
      }
    },
  };

  // ---- backlog page
  let snapshot = null;
  pages.backlog = {
    async load() {
      const b = await getJSON("api/backlog");
      render(`<p class="muted">Consumers follow the outbox (head seq <span id="head-seq">${esc(b.head_seq)}</span>); the table follows the status page's stream.</p>
        <table id="consumers"><caption class="muted">Consumers</caption><thead><tr><th scope="col">consumer</th><th scope="col">state</th><th scope="col" class="num">last seq</th>
          <th scope="col" class="num">backlog</th><th scope="col" class="num">lag</th><th scope="col" class="num">dead letters</th></tr></thead><tbody></tbody></table>
        <h2>Dead letters</h2>
        ${Object.keys(b.dead_letters).length ? Object.entries(b.dead_letters).map(([c, rows]) => `<h3>${esc(c)}</h3><table><thead><tr><th scope="col" class="num">seq</th><th scope="col">event</th><th scope="col">kind</th><th scope="col">error</th><th scope="col" class="num">attempts</th><th scope="col">parked</th></tr></thead><tbody>
          ${rows.map((d) => `<tr><td class="num">${esc(d.seq)}</td><td class="mono">${esc(d.event_id.slice(0, 16))}…</td><td>${esc(d.kind)}</td><td>${esc(d.error)}</td><td class="num">${esc(d.attempts)}</td><td>${new Date(d.parked_at).toLocaleString()}</td></tr>`).join("")}
          </tbody></table>`).join("") : '<p class="muted">No parked rows.</p>'}
        <section aria-labelledby="reset-h"><h2 id="reset-h">Reset a consumer's offset</h2>
          <form data-form="plan"><label>Consumer<select name="consumer" data-keep="reset:consumer">${b.consumers.map((c) => `<option>${esc(c.consumer)}</option>`).join("")}</select></label>
            <label>Resume after seq<input name="seq" type="number" min="0" data-keep="reset:seq" required></label><button type="submit" class="secondary">Preview the reset</button></form>
          <div id="reset-plan" data-persist></div>
        </section>`);
      if (snapshot) renderConsumers(snapshot); else renderConsumers({ consumers: b.consumers.map((c) => ({ ...c })) });
    },
    async submit(form, data) {
      const plan = await getJSON("api/reset-plan", { consumer: data.consumer, seq: data.seq }).catch((e) => { say("Preview failed: " + e.message, false); });
      if (!plan) return;
      const what = plan.Replay > 0 ? `${plan.Replay} retained row(s), seq ${plan.To + 1} to ${plan.From}, will be applied again`
        : plan.Skip > 0 ? `${plan.Skip} row(s), seq ${plan.From + 1} to ${plan.To}, will never be applied` : "nothing changes: the offset is already there";
      const text = `Reset ${plan.Consumer} from seq ${plan.From} to seq ${plan.To}: ${what}.` + (plan.Clamped ? ` The outbox is pruned through seq ${plan.Horizon}, so the reset starts there, not at ${plan.Requested}.` : "")
        + (plan.Owner ? ` ${plan.Owner} runs the consumer now: it takes the new offset at its next commit.` : "");
      const cmd = `cnctl reset-offset --consumer ${plan.Consumer} --seq ${plan.To}`;
      const replay = plan.Replay > 0 && !plan.Clamped;
      $("reset-plan").outerHTML = `<div id="reset-plan" data-persist class="confirm" role="alert"><p id="reset-text">${esc(text)}</p>
        ${replay ? `<div class="actions"><button type="button" class="danger" id="reset-confirm" data-act="replay" data-consumer="${esc(plan.Consumer)}" data-to="${esc(plan.To)}" data-from="${esc(plan.From)}">Replay these ${esc(plan.Replay)} row(s)</button></div>
          <p class="muted">Signed with your key (NIP-86 <code>replayconsumer</code>); the relay refuses it if the offset moved since this preview.</p>`
          : `<p>The console only replays. To apply this, run on the node: <code class="mono">${esc(cmd)}</code></p>`}</div>`;
      say("Preview: " + text, true);
    },
    async click(b) {
      if (b.dataset.act !== "replay") return;
      const c = b.dataset.consumer, to = Number(b.dataset.to), from = Number(b.dataset.from);
      const ok = await act("Replay " + c, async () => {
        const r = await nip86("replayconsumer", [c, to, from]);
        return `${r.consumer} moved back from seq ${r.from} to seq ${r.to}: ${r.replayed} row(s) will be applied again`;
      });
      if (ok) $("reset-plan").innerHTML = "";
    },
  };
  function renderConsumers(s) {
    const t = $("consumers");
    if (!t) return;
    const dur = (x) => (x < 1 ? "0 s" : x < 120 ? x.toFixed(0) + " s" : x < 7200 ? (x / 60).toFixed(0) + " min" : (x / 3600).toFixed(1) + " h");
    if (s.head_seq !== undefined && $("head-seq")) $("head-seq").textContent = s.head_seq;
    t.tBodies[0].innerHTML = s.consumers.map((c) => `<tr id="consumer-${esc(c.consumer)}"><td>${esc(c.consumer)}</td>
      <td>${c.halted ? '<span class="pill bad">halted</span>' : c.owner ? '<span class="pill ok">active</span>' : '<span class="pill warn">no owner</span>'}</td>
      <td class="num">${esc(c.last_seq)}</td><td class="num" data-field="backlog">${esc(c.backlog)}</td><td class="num">${dur(c.lag_seconds || 0)}</td>
      <td class="num">${c.dead_letters ? '<span class="pill bad">' + esc(c.dead_letters) + "</span>" : "0"}</td></tr>`).join("");
  }

  // ---- wiring
  const current = pages[pageName];
  let loading = false, again = false, timer = null;
  async function reload() {
    if (loading) { again = true; return; }
    loading = true;
    try { await current.load(); } catch (e) { say("Could not read this page's list: " + e.message, false); }
    loading = false;
    if (again) { again = false; reload(); }
  }
  function reloadSoon(ms) { clearTimeout(timer); timer = setTimeout(reload, ms); }
  $("page").addEventListener("submit", (e) => {
    e.preventDefault();
    const form = e.target;
    const data = {};
    for (const el of form.elements) if (el.name) data[el.name] = el.type === "checkbox" ? el.checked : el.value;
    if (form.dataset.form === "search") {
      let text = data.q.trim();
      if (text.startsWith("npub1")) {
        try { text = parsePubkey(text); } catch (err) { say("Search: " + err.message, false); return; }
      }
      go(linkWith({ q: text, [form.dataset.reset]: "" }));
      return;
    }
    if (form.dataset.form === "nip86" && !current.submit) return;
    current.submit(form, data, e.submitter);
  });
  $("page").addEventListener("click", (e) => {
    const a = e.target.closest("a[data-page-link]");
    if (a) {
      e.preventDefault();
      go(a.getAttribute("href"));
      return;
    }
    const b = e.target.closest("button[data-act]");
    if (!b) return;
    if (b.dataset.act === "nip86") {
      const m = b.dataset.method;
      act(m + " " + b.dataset.arg.slice(0, 16), async () => { await nip86(m, [b.dataset.arg]); return "done (" + m + ")"; });
      return;
    }
    current.click(b);
  });

  // Live: the status page's stream. A snapshot whose change markers moved
  // means some list may have changed: read it again.
  let mark = null;
  function connect() {
    const es = new EventSource(q("../api/events"));
    const state = (cls, text) => { $("conn-state").className = "state " + cls; $("conn-state").textContent = text; };
    es.onopen = () => state("live", "live");
    es.onerror = () => state("reconnecting", "reconnecting…");
    es.addEventListener("status", (e) => {
      state("live", "live");
      const s = JSON.parse(e.data);
      snapshot = s;
      if (pageName === "backlog") renderConsumers(s);
      const m = [s.head_seq, s.admin_version, s.groups_changed_at, s.members_mark].join("|");
      if (mark !== null && m !== mark && pageName !== "backlog") reloadSoon(100);
      mark = m;
    });
  }

  let saved = null;
  try { saved = JSON.parse(sessionStorage.getItem("cn-console-signin")); } catch { /* none */ }
  renderWho();
  reload().then(() => {
    connect();
    if (saved && saved.via === "NIP-07" && window.nostr) signIn();
    if (saved && saved.via === "NIP-46") bunkerSignIn(saved.url, saved.local).catch((err) => say("Sign-in with the bunker failed: " + err.message, false));
  });
})();
