// checkpoints.js: the checkpoint page's "Show all of it" links fetch one
// state key's full value into its <pre> instead of navigating (without
// script the link opens the raw JSON). Text only: never HTML from state.
(() => {
  "use strict";
  document.addEventListener("click", async (e) => {
    const a = e.target.closest("a.expand");
    if (!a) return;
    const pre = document.getElementById(a.dataset.target);
    if (!pre) return;
    e.preventDefault();
    a.textContent = "loading…";
    try {
      const res = await fetch(a.href, { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!res.ok) throw new Error(res.status + " " + res.statusText);
      pre.textContent = await res.text();
      pre.dataset.expanded = "1";
      a.remove();
    } catch (err) {
      a.textContent = "could not load it (" + err.message + "); try again";
    }
  });
})();
