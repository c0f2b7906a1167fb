// studio.js: live updates for a thread page. One websocket per page; each
// message is one JSON event (runs.Event). Applying an event is idempotent
// (rows are keyed by step and task id), so the catch-up and the live
// stream may overlap. No framework, no build step.
(() => {
  "use strict";
  const body = document.body;
  // The status the server rendered the page with (the approval panel is
  // part of the page only when it was "interrupted").
  const renderedStatus = body.dataset.status;
  const thread = body.dataset.thread;
  if (!thread) return;
  const STATES = ["planned", "running", "done", "cached", "failed", "interrupted"];
  const $ = (id) => document.getElementById(id);

  function markNode(name, state) {
    const el = $("n-" + name);
    if (!el) return;
    if (state !== "retried") el.classList.remove(...STATES);
    el.classList.add(state);
  }
  function clearNodes() {
    document.querySelectorAll("g.gnode").forEach((el) => el.classList.remove(...STATES, "retried"));
  }
  function cells(tr, classes) {
    for (const c of classes) {
      const td = document.createElement("td");
      if (c) td.className = c;
      tr.appendChild(td);
    }
  }
  function setTask(ev, state) {
    const id = "task-" + ev.step + "-" + ev.task;
    let tr = $(id);
    if (!tr) {
      tr = document.createElement("tr");
      tr.id = id;
      tr.className = "task";
      cells(tr, ["num", "", "triggers", "tstatus", "num ms", "num attempts", "terror"]);
      tr.cells[0].textContent = ev.step;
      tr.cells[1].textContent = ev.node;
      $("timeline").appendChild(tr);
    }
    if (state !== "retried") tr.classList.remove(...STATES);
    tr.classList.add(state);
    tr.cells[3].textContent = state;
    if (ev.triggers) tr.cells[2].textContent = ev.triggers.join(", ");
    // Checkpoints do not keep durations: only live events carry them.
    if (ev.kind === "task_finished" && !ev.catchup) tr.cells[4].textContent = (ev.ms || 0).toFixed(1);
    if (ev.attempt) tr.cells[5].textContent = ev.attempt;
    if (ev.error) tr.cells[6].textContent = ev.error;
  }
  function bumps(list) {
    document.querySelectorAll("#channels tr.bumped").forEach((tr) => {
      tr.classList.remove("bumped");
      tr.cells[2].textContent = "";
    });
    for (const b of list || []) {
      let tr = $("ch-" + b.channel);
      if (!tr) {
        tr = document.createElement("tr");
        tr.id = "ch-" + b.channel;
        cells(tr, ["", "num version", "change"]);
        const code = document.createElement("code");
        code.textContent = b.channel;
        tr.cells[0].appendChild(code);
        $("channels").appendChild(tr);
      }
      tr.cells[1].textContent = b.new;
      tr.cells[2].textContent = b.old + " → " + b.new;
      tr.classList.add("bumped");
    }
  }
  function setStatus(status, error) {
    body.dataset.status = status;
    const el = $("status");
    el.textContent = status;
    el.className = "status status-" + status;
    $("cancel-form").hidden = status !== "running";
    const err = $("run-error");
    err.textContent = error || "";
    err.hidden = !error;
  }
  const taskState = { task_planned: "planned", task_started: "running", task_retried: "retried", task_failed: "failed", task_interrupted: "interrupted" };
  function apply(ev) {
    if (ev.kind in taskState || ev.kind === "task_finished") {
      const state = ev.kind === "task_finished" ? (ev.cached ? "cached" : "done") : taskState[ev.kind];
      markNode(ev.node, state);
      setTask(ev, state);
      return;
    }
    switch (ev.kind) {
      case "run_started":
        clearNodes();
        if (!ev.catchup) setStatus("running", "");
        break;
      case "barrier":
        bumps(ev.bumps);
        break;
      case "caught_up":
        setStatus(ev.status, ev.error);
        body.dataset.live = "1";
        $("live").textContent = "live";
        // The run may have stopped at an interrupt between this page being
        // rendered and the socket connecting: the approval panel is
        // rendered on the server, so fetch the page again (once).
        if (ev.status === "interrupted" && renderedStatus !== "interrupted") location.reload();
        break;
      case "run_finished":
        setStatus(ev.status, ev.error);
        body.dataset.runs = String(Number(body.dataset.runs || 0) + 1);
        // The approval panel is rendered on the server.
        if (ev.status === "interrupted") location.reload();
        break;
    }
  }
  function connect(delay) {
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/threads/" + encodeURIComponent(thread) + "/ws");
    ws.onmessage = (m) => apply(JSON.parse(m.data));
    ws.onclose = () => {
      body.dataset.live = "0";
      $("live").textContent = "disconnected; reconnecting…";
      setTimeout(() => connect(Math.min(delay * 2, 10000)), delay);
    };
  }
  connect(500);

  // Keys: a approves the first interrupt (or continues from a breakpoint),
  // r rejects it, Ctrl/Cmd+Enter in a response sends that response.
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (t.tagName === "TEXTAREA" && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      const b = t.form && t.form.querySelector('button[value="respond"]');
      if (b) { e.preventDefault(); b.click(); }
      return;
    }
    if (t.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey) return;
    const b = e.key === "a" ? ($("approve-0") || $("continue")) : e.key === "r" ? $("reject-0") : null;
    if (b) { e.preventDefault(); b.click(); }
  });
})();
