// promptcache.js: the thread page's prompt-cache panel (web.PromptCachePanel).
// When a model call is recorded (a prompt_cache event), or the socket
// catches up after a reconnect, the panel's contents are fetched again
// from the server (GET /threads/{id}/promptcache), rendered by the same
// function as the page (handlers.PromptCacheView), so a live tab and a
// reload show the same text. Never HTML from events.
(() => {
  "use strict";
  const thread = document.body.dataset.thread;
  const panel = document.getElementById("prompt-cache");
  if (!thread || !panel) return;
  const body = document.getElementById("pc-body");
  // A fetch answered after a later one started is dropped.
  let asked = 0;
  let shown = 0;
  async function refresh() {
    const n = ++asked;
    try {
      const res = await fetch("/threads/" + encodeURIComponent(thread) + "/promptcache", { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error(res.status + " " + res.statusText);
      const html = await res.text();
      if (n < shown) return;
      shown = n;
      // Our own server's templ output (escaped there), not event data.
      body.innerHTML = html;
      panel.hidden = !body.querySelector("tr.pc-call");
      panel.dataset.refreshed = String(n);
    } catch (err) {
      console.error("promptcache: cannot refresh", err);
    }
  }
  document.addEventListener("studio:event", (e) => {
    const ev = e.detail;
    switch (ev.kind) {
      case "prompt_cache":
        refresh();
        break;
      case "caught_up":
        // Calls recorded between the page's render and the socket (or
        // missed while reconnecting) have no event to come.
        refresh();
        break;
    }
  });
})();
