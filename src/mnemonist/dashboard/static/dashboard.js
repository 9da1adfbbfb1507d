// The dashboard's script layer: search-as-you-type and the memory actions.
// Pages are rendered (and escaped) by the daemon; this file only swaps in server-rendered
// fragments and sends actions to the JSON API. Memory text is only ever set as textContent.
"use strict";

// who the history names for changes made here
const BY = "dashboard";

// the dashboard is the owner's console: every action names every scope explicitly
const OWNER_SCOPE = "agents=*&users=*";

async function api(method, path, body) {
  const url = path + (path.includes("?") ? "&" : "?") + OWNER_SCOPE;
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  });
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const why = data && data.message ? data.message : `HTTP ${response.status}`;
    throw new Error(why);
  }
  return data;
}

// modify answers 200 with a status per patch: anything but a change (or no change) is an error
async function modify(patch, why) {
  const out = await api("POST", "/api/memory/modify",
                        { patches: [patch], reason: why, changed_by: BY });
  const result = out.results[0];
  if (result.status !== "updated" && result.status !== "unchanged") {
    throw new Error(result.message || result.status.replace(/_/g, " "));
  }
  return result;
}

function say(form, text, bad) {
  const status = form.querySelector(".status");
  status.textContent = text;
  status.classList.toggle("error", Boolean(bad));
}

// --- memories: search as you type --------------------------------------------------------
function searchAsYouType() {
  const form = document.getElementById("search");
  const results = document.getElementById("results");
  if (!form || !results) return;
  let timer = null;
  let latest = 0;
  const run = async () => {
    const ticket = ++latest;
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(form)) if (value) params.append(key, value);
    results.dataset.state = "loading";
    try {
      const response = await fetch(`/ui/memories/results?${params}`,
                                   { credentials: "same-origin" });
      const html = await response.text();
      if (ticket !== latest) return;  // a newer search is on its way
      results.innerHTML = html;  // server-rendered and escaped by the daemon
      results.dataset.query = params.get("q") || "";
      results.dataset.state = "done";
      history.replaceState(null, "", params.toString() ? `/?${params}` : "/");
    } catch (err) {
      if (ticket !== latest) return;
      results.textContent = `Search failed: ${err.message}`;
      results.dataset.state = "failed";
    }
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(run, 250); };
  form.addEventListener("input", soon);
  form.addEventListener("change", soon);
  form.addEventListener("submit", (event) => { event.preventDefault(); clearTimeout(timer); run(); });
}

// --- memories: rate a result for the search that found it (the learned ranker learns) -----
function rateResults() {
  const results = document.getElementById("results");
  const form = document.getElementById("search");
  if (!results || !form) return;
  results.addEventListener("click", async (event) => {
    const button = event.target.closest("button.thumb");
    if (!button) return;
    const item = button.closest("li.memory");
    const status = item.querySelector(".rate .status");
    const query = form.elements.q.value.trim();
    if (!query) return;
    const helpful = button.dataset.helpful === "true";
    for (const b of item.querySelectorAll("button.thumb")) b.disabled = true;
    try {
      await api("POST", `/api/memory/${encodeURIComponent(item.dataset.id)}/feedback`,
                { helpful, query });
      status.textContent = helpful ? "noted: helpful" : "noted: not helpful";
      status.classList.remove("error");
    } catch (err) {
      status.textContent = err.message;
      status.classList.add("error");
      for (const b of item.querySelectorAll("button.thumb")) b.disabled = false;
    }
  });
}

// --- one memory: edit, pin, forget (preview, confirm), recover ----------------------------
function onSubmit(id, handler) {
  const form = document.getElementById(id);
  if (!form) return;
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await handler(form);
    } catch (err) {
      say(form, err.message, true);
    } finally {
      button.disabled = false;
    }
  });
}

function reason(form) {
  return form.elements.reason.value.trim();
}

function memoryActions() {
  onSubmit("edit", async (form) => {
    const why = reason(form);
    if (!why) throw new Error("say why it changed: a reason is required");
    const patch = { id: form.dataset.id, content: form.elements.content.value,
                    if_version: Number(form.dataset.version) };
    await modify(patch, why);
    say(form, "Saved.");
    location.reload();
  });
  onSubmit("pin", async (form) => {
    const pinned = form.dataset.pinned !== "True";
    const why = reason(form) || (pinned ? "pinned in the dashboard" : "unpinned in the dashboard");
    await modify({ id: form.dataset.id, pinned }, why);
    location.reload();
  });
  const forget = document.getElementById("forget");
  if (forget) {
    let token = null;
    const confirm = forget.querySelector("button[name=confirm]");
    const preview = forget.querySelector(".preview");
    onSubmit("forget", async (form) => {
      if (!reason(form)) throw new Error("say why it goes: a reason is required");
      const out = await api("POST", "/api/memory/forget",
                            { ids: [form.dataset.id], mode: "preview" });
      token = out.confirmToken;
      preview.replaceChildren();
      const head = document.createElement("p");
      head.textContent = `${out.count} ${out.count === 1 ? "memory" : "memories"} will be`
                         + " forgotten (recoverable within the retention window):";
      const list = document.createElement("ul");
      for (const c of out.candidates) {
        const item = document.createElement("li");
        item.textContent = c.content;
        list.append(item);
      }
      preview.append(head, list);
      preview.hidden = false;
      confirm.hidden = out.count === 0;
      say(form, "");
    });
    if (confirm) {
      confirm.addEventListener("click", async () => {
        confirm.disabled = true;
        try {
          await api("POST", "/api/memory/forget",
                    { ids: [forget.dataset.id], mode: "execute", reason: reason(forget),
                      confirm_token: token, changed_by: BY });
          location.reload();
        } catch (err) {
          say(forget, err.message, true);
          confirm.disabled = false;
        }
      });
    }
  }
  onSubmit("recover", async (form) => {
    const why = reason(form);
    if (!why) throw new Error("say why it comes back: a reason is required");
    await api("POST", `/api/memory/${encodeURIComponent(form.dataset.id)}/recover`,
              { reason: why, changed_by: BY });
    location.reload();
  });
}

document.addEventListener("DOMContentLoaded", () => {
  searchAsYouType();
  rateResults();
  memoryActions();
  document.body.dataset.ready = "true";
});
