// graphview.js: what makes a drawn graph inspectable, on the graph page
// and the thread page (web.GraphTools). Nodes are buttons (the server
// gives them tabindex, role and data-node): a click, Enter or Space loads
// the node's details from the server into #node-details, Escape closes
// it. Pan and zoom change the drawing's viewBox: the wheel (or a pinch)
// zooms around the pointer, a drag pans, the +/−/reset buttons and the
// keys + − 0 and arrows (with the drawing focused) do the same from the
// keyboard. No framework, no build step.
(() => {
  "use strict";
  const tools = document.getElementById("graph-tools");
  const section = document.getElementById("graph");
  const svg = section && section.querySelector("svg");
  if (!tools || !svg) return;
  const panel = document.getElementById("node-details");
  // moved is set while a drag pans the drawing, so the click that ends
  // the drag opens no node.
  let moved = false;

  // --- node details ---
  let opener = null; // the node that opened the panel, focused again on close
  let asked = 0;
  function openDetails(node) {
    const name = node.dataset.node;
    const n = ++asked;
    opener = node;
    fetch(tools.dataset.details + encodeURIComponent(name) + "?fragment=1", { headers: { Accept: "text/html" } })
      .then((r) => r.text().then((t) => ({ ok: r.ok, t })))
      .then(({ ok, t }) => {
        if (n !== asked) return; // a later click won
        if (ok) {
          // The server renders the fragment with templ: every value in it
          // is escaped there, so it is safe to insert as markup.
          panel.innerHTML = t;
        } else {
          panel.textContent = "";
          const p = document.createElement("p");
          p.className = "error";
          p.textContent = "Cannot load the details of " + name + ".";
          panel.appendChild(p);
        }
        panel.hidden = false;
        panel.scrollIntoView({ block: "nearest" });
        document.querySelectorAll("g.gnode.selected").forEach((el) => el.classList.remove("selected"));
        node.classList.add("selected");
        const close = document.getElementById("node-details-close");
        if (close) close.focus();
      })
      .catch(() => {});
  }
  function closeDetails() {
    if (panel.hidden) return;
    panel.hidden = true;
    panel.textContent = "";
    document.querySelectorAll("g.gnode.selected").forEach((el) => el.classList.remove("selected"));
    if (opener) opener.focus();
  }
  // A link inside a node (a closed subgraph opens with it) keeps working.
  function onLink(target) {
    const a = target.closest("a");
    return !!(a && (a.getAttribute("href") || a.getAttributeNS("http://www.w3.org/1999/xlink", "href")));
  }
  svg.addEventListener("click", (e) => {
    if (moved) { e.preventDefault(); return; } // the end of a drag, not a click
    const node = e.target.closest("g.gnode[data-node]");
    if (!node || onLink(e.target)) return;
    openDetails(node);
  });
  svg.addEventListener("keydown", (e) => {
    const node = e.target.closest && e.target.closest("g.gnode[data-node]");
    if (node && (e.key === "Enter" || e.key === " ")) {
      e.preventDefault();
      e.stopPropagation();
      openDetails(node);
    }
  });
  panel.addEventListener("click", (e) => {
    if (e.target.closest("#node-details-close")) closeDetails();
  });
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && !panel.hidden) {
      e.preventDefault();
      closeDetails();
    }
  });

  // --- pan and zoom on the viewBox ---
  const home = (svg.getAttribute("viewBox") || "").trim().split(/[\s,]+/).map(Number);
  if (home.length !== 4 || home.some(isNaN)) return;
  let box = home.slice();
  const MIN = 0.1, MAX = 8; // zoom bounds, relative to the whole drawing
  function setBox(b) {
    const scale = home[2] / b[2];
    if (scale < MIN || scale > MAX) return;
    box = b;
    svg.setAttribute("viewBox", b.map((x) => +x.toFixed(2)).join(" "));
    svg.dataset.zoom = scale.toFixed(2);
  }
  // zoom by factor f (>1 zooms in) around the point (px, py) in drawing
  // units (the middle of the view by default).
  function zoom(f, px, py) {
    if (px === undefined) { px = box[0] + box[2] / 2; py = box[1] + box[3] / 2; }
    const w = box[2] / f, h = box[3] / f;
    setBox([px - (px - box[0]) / f, py - (py - box[1]) / f, w, h]);
  }
  function pan(dx, dy) { setBox([box[0] + dx, box[1] + dy, box[2], box[3]]); }
  function reset() { setBox(home.slice()); }
  // The drawing's units per screen pixel, and a screen point in them.
  function unitsPerPx() {
    const r = svg.getBoundingClientRect();
    return r.width ? box[2] / r.width : 1;
  }
  function toUnits(clientX, clientY) {
    const r = svg.getBoundingClientRect(), u = unitsPerPx();
    return [box[0] + (clientX - r.left) * u, box[1] + (clientY - r.top) * u];
  }
  document.getElementById("zoom-in").addEventListener("click", () => zoom(1.25));
  document.getElementById("zoom-out").addEventListener("click", () => zoom(1 / 1.25));
  document.getElementById("zoom-reset").addEventListener("click", reset);
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const [px, py] = toUnits(e.clientX, e.clientY);
    // Pinch on a trackpad arrives as a wheel with ctrlKey and small deltas.
    const f = Math.exp(-e.deltaY * (e.ctrlKey ? 0.01 : 0.0015));
    zoom(f, px, py);
  }, { passive: false });

  // Drag to pan (one pointer), pinch to zoom (two).
  const pointers = new Map();
  let pinch = 0;
  svg.addEventListener("pointerdown", (e) => {
    if (e.button !== 0) return;
    pointers.set(e.pointerId, [e.clientX, e.clientY]);
    moved = false;
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = Math.hypot(a[0] - b[0], a[1] - b[1]);
    }
  });
  svg.addEventListener("pointermove", (e) => {
    const last = pointers.get(e.pointerId);
    if (!last) return;
    const dx = e.clientX - last[0], dy = e.clientY - last[1];
    if (!moved && Math.hypot(dx, dy) < 3) return; // a click, so far
    if (!moved) {
      moved = true;
      svg.setPointerCapture(e.pointerId);
      svg.classList.add("panning");
    }
    pointers.set(e.pointerId, [e.clientX, e.clientY]);
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      const d = Math.hypot(a[0] - b[0], a[1] - b[1]);
      if (pinch > 0 && d > 0) {
        const [px, py] = toUnits((a[0] + b[0]) / 2, (a[1] + b[1]) / 2);
        zoom(d / pinch, px, py);
      }
      pinch = d;
      return;
    }
    const u = unitsPerPx();
    pan(-dx * u, -dy * u);
  });
  function up(e) {
    pointers.delete(e.pointerId);
    if (pointers.size < 2) pinch = 0;
    svg.classList.remove("panning");
    // moved stays set until the click that ends this drag has been seen.
    setTimeout(() => { if (pointers.size === 0) moved = false; }, 0);
  }
  svg.addEventListener("pointerup", up);
  svg.addEventListener("pointercancel", up);

  // The drawing itself is focusable: keys zoom and pan it.
  svg.setAttribute("tabindex", "0");
  svg.setAttribute("role", "group");
  svg.setAttribute("aria-label", "Graph drawing: Tab to a node and press Enter for its details; + and − zoom, arrow keys pan, 0 resets");
  svg.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const step = 40 * unitsPerPx();
    const keys = {
      "+": () => zoom(1.25), "=": () => zoom(1.25), "-": () => zoom(1 / 1.25), "0": reset,
      ArrowLeft: () => pan(-step, 0), ArrowRight: () => pan(step, 0), ArrowUp: () => pan(0, -step), ArrowDown: () => pan(0, step),
    };
    const f = keys[e.key];
    if (f) { e.preventDefault(); f(); }
  });
})();
