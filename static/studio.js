// studio.js: live updates for a thread page. One websocket per page; each
// message is a JSON array of events (runs.Event), applied in order (see
// handlers.ThreadEvents: a burst of events comes as one message). The page is rendered with the
// thread's history and a cursor; the socket resumes after that cursor (and
// a reconnecting socket after the last event applied), so the server sends
// no second catch-up. Applying an event is idempotent (rows are keyed by
// step and task id, values by key), so a catch-up and the live stream may
// overlap. No framework, no build step.
(() => {
  "use strict";
  const body = document.body;
  // The status the server rendered the page with (the approval panel is
  // part of the page only when it was "interrupted").
  const renderedStatus = body.dataset.status;
  const thread = body.dataset.thread;
  if (!thread) return;
  const STATES = ["planned", "running", "done", "cached", "failed", "cancelled", "interrupted", "answered"];
  const $ = (id) => document.getElementById(id);
  // Where this page stands in the thread's live events ("<epoch>:<seq>").
  let cursor = body.dataset.cursor || "";
  // The run whose rows #timeline holds, and the last checkpoint of the
  // branch the page shows (see handlers.ThreadPage): a live checkpoint on
  // another branch (a fork) reloads the page, which the server builds
  // from the new head's lineage.
  let currentRun = body.dataset.run || "";
  let edits = 0; // state-edit groups so far (they have no run id)
  let head = body.dataset.head || "";
  const lineage = new Set();
  // fullCatchup is set from a catch-up's first run_started to its
  // caught_up.
  let fullCatchup = false;

  function markNode(name, state) {
    const el = $("n-" + name);
    if (!el) return;
    if (state !== "retried") el.classList.remove(...STATES);
    el.classList.add(state);
  }
  // A new run keeps the nodes' colours (an earlier run of the lineage
  // ran them) and starts its own fired edges.
  function clearEdges() {
    document.querySelectorAll("g.gedge.fired").forEach((el) => el.classList.remove("fired", "fired-now"));
    nowStep = null;
  }
  // Run titles and times as the server writes them (web.runTitle).
  function utc(t) {
    const d = new Date(t);
    return isNaN(d) ? "" : d.toISOString().slice(0, 19).replace("T", " ");
  }
  function runTitle(ev) {
    const kind = ev.run_kind || "";
    let s = { resume: "Resume", rerun: "Re-run" }[kind] || (kind === "start" || kind === "" ? (ev.run ? "Run" : "State edit") : kind);
    s += " · " + utc(ev.time) + " UTC";
    if (kind === "resume" && ev.origin) s += " · via " + ev.origin;
    return s;
  }
  // startRun moves the rows of the run the page shows into a collapsed
  // group above it, and makes ev's run the current one.
  function startRun(ev) {
    const run = ev.run || "";
    // A run's start seen twice (catch-up and live) starts it once. A state
    // edit has no run id and is a group of its own each time, as the
    // server folds it (a live edit reloads the page, so it never repeats).
    if (run !== "" && (run === currentRun || $("run-" + run))) return;
    // A task the run only planned is the next run's to run (as the
    // server folds it).
    for (const r of Array.from($("timeline").rows)) if (r.classList.contains("planned")) r.remove();
    const rows = Array.from($("timeline").rows);
    const title = $("current-run").textContent;
    if (rows.length || title) {
      const d = document.createElement("details");
      d.className = "run";
      d.id = "run-" + (currentRun || "edit-" + (++edits));
      d.dataset.run = currentRun;
      const sum = document.createElement("summary");
      sum.textContent = title + " ";
      const n = document.createElement("span");
      n.className = "muted";
      const count = rows.filter((r) => r.classList.contains("task")).length;
      n.textContent = "(" + count + (count === 1 ? " task)" : " tasks)");
      sum.appendChild(n);
      d.appendChild(sum);
      const table = document.createElement("table");
      table.className = "list";
      table.appendChild($("timeline-table").tHead.cloneNode(true));
      const tb = document.createElement("tbody");
      for (const r of rows) tb.appendChild(r);
      table.appendChild(tb);
      d.appendChild(table);
      $("earlier-runs").appendChild(d);
    }
    currentRun = run;
    body.dataset.run = run;
    $("current-run").textContent = runTitle(ev);
    clearEdges();
  }
  // An answer: a row in the run it resumed, the interrupted rows of its
  // node marked answered, and every other tab's approval panel retired.
  function answered(ev) {
    const intr = (ev.interrupts || [])[0];
    const id = "answer-" + (ev.run || "") + "-" + (intr ? intr.id : "continue");
    if ($(id)) return; // a catch-up repeating what the page shows
    const tr = document.createElement("tr");
    tr.id = id;
    tr.className = "answer";
    cells(tr, ["num", "", "answer-text"]);
    tr.cells[1].textContent = ev.node || "";
    const td = tr.cells[2];
    td.colSpan = 5;
    const span = (cls, text, code) => {
      const el = document.createElement("span");
      el.className = cls;
      el.textContent = text;
      if (code !== undefined) {
        const c = document.createElement("code");
        c.textContent = code;
        el.appendChild(c);
      }
      if (td.firstChild) td.appendChild(document.createTextNode(" "));
      td.appendChild(el);
    };
    if (intr) {
      span("question", "Asked ", intr.preview || "");
      span("reply", "answered ", ev.answer || "");
    } else span("reply", "Continued from a breakpoint");
    span("via", "via " + (ev.origin || ""));
    span("at", "at " + utc(ev.time) + " UTC");
    const first = Array.from($("timeline").rows).find((r) => !r.classList.contains("answer"));
    $("timeline").insertBefore(tr, first || null);
    document.querySelectorAll("tr.task.interrupted").forEach((r) => {
      if (!ev.node || r.cells[1].textContent === ev.node) {
        r.classList.replace("interrupted", "answered");
        r.cells[3].textContent = "answered";
      }
    });
    const n = ev.node && $("n-" + ev.node);
    if (n && n.classList.contains("interrupted")) markNode(ev.node, "answered");
    if (!ev.catchup) retireApproval(ev);
  }
  // retireApproval closes a stale approval panel: the interrupt it asks
  // about was answered (here or in another tab), so its buttons can no
  // longer send a second answer, and it says who answered and when.
  function retireApproval(ev) {
    const panel = $("approval");
    if (!panel) return;
    panel.classList.add("retired");
    panel.dataset.retired = "1";
    panel.querySelectorAll("button, input, textarea, select").forEach((el) => { el.disabled = true; });
    panel.querySelectorAll("form").forEach((f) => f.addEventListener("submit", (e) => e.preventDefault()));
    let note = $("approval-retired");
    if (!note) {
      note = document.createElement("p");
      note.id = "approval-retired";
      note.className = "retired-notice";
      note.setAttribute("role", "status");
      panel.prepend(note);
    }
    const what = ev.interrupts && ev.interrupts.length ? "Answered" : "Continued";
    note.textContent = what + " via " + (ev.origin || "API") + " at " + utc(ev.time) + " UTC. This panel is closed.";
  }
  // Fired edges: the page's edge index gives each edge's element ids by
  // its ends (node names may hold "-", so ids are never taken apart); a
  // Send's edge is indexed by its sender and target like any other.
  let nowStep = null;
  const edgeIds = new Map();
  function edgeEls(from, to) {
    const ids = edgeIds.get(JSON.stringify([from, to])) || [];
    return ids.map($).filter(Boolean);
  }
  function fireEdges(step, edges) {
    if (nowStep === null || step > nowStep) {
      nowStep = step;
      document.querySelectorAll("g.gedge.fired-now").forEach((el) => el.classList.remove("fired-now"));
    }
    for (const [from, to] of edges) for (const el of edgeEls(from, to)) el.classList.add("fired", "fired-now");
  }
  function cells(tr, classes) {
    for (const c of classes) {
      const td = document.createElement("td");
      if (c) td.className = c;
      tr.appendChild(td);
    }
  }
  function setTask(ev, node, state) {
    const id = "task-" + ev.step + "-" + ev.task + "-r" + currentRun;
    let tr = $(id);
    if (!tr) {
      tr = document.createElement("tr");
      tr.id = id;
      tr.className = "task";
      cells(tr, ["num", "", "triggers", "tstatus", "num ms", "num attempts", "terror"]);
      tr.cells[0].textContent = ev.step;
      tr.cells[1].textContent = node;
      $("timeline").appendChild(tr);
    }
    if (state !== "retried") tr.classList.remove(...STATES);
    tr.classList.add(state);
    tr.cells[3].textContent = state;
    if (ev.triggers) tr.cells[2].textContent = ev.triggers.join(", ");
    // Checkpoints do not keep durations: live events carry them, and a
    // catch-up has them for tasks the server saw finish.
    if (ev.kind === "task_finished" && !ev.cached && (!ev.catchup || ev.ms !== undefined)) tr.cells[4].textContent = msText(ev.ms || 0);
    if (ev.attempt) tr.cells[5].textContent = ev.attempt;
    if (ev.error) tr.cells[6].textContent = ev.error;
  }
  // A duration to a tenth of a millisecond, half up on whole microseconds,
  // as the server writes it (handlers' msText).
  function msText(ms) {
    const t = Math.floor((Math.round(ms * 1000) + 50) / 100);
    return Math.floor(t / 10) + "." + (t % 10);
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
        // Sorted by name, as the server renders the table.
        const after = Array.from($("channels").rows).find((r) => r.id > tr.id);
        $("channels").insertBefore(tr, after || null);
      }
      tr.cells[1].textContent = b.new;
      tr.cells[2].textContent = b.old + " → " + b.new;
      tr.classList.add("bumped");
    }
  }
  // The values panel: a checkpoint event carries the keys its step
  // changed (or, with reset, the whole state); rows change only for those
  // keys, and are marked until the next checkpoint.
  function sizeText(n) {
    if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MB";
    if (n >= 1 << 10) return (n / (1 << 10)).toFixed(1) + " KB";
    return n + " bytes";
  }
  function setValues(ev) {
    document.querySelectorAll("#values tr.changed").forEach((tr) => { tr.classList.remove("changed"); tr.dataset.op = ""; });
    if (ev.reset) document.querySelectorAll("#values tr").forEach((tr) => tr.remove());
    for (const c of ev.values || []) {
      let tr = $("v-" + c.key);
      if (c.op === "removed") { if (tr) tr.remove(); continue; }
      if (!tr) {
        tr = document.createElement("tr");
        tr.id = "v-" + c.key;
        tr.className = "value-row";
        cells(tr, ["", ""]);
        const code = document.createElement("code");
        code.textContent = c.key;
        tr.cells[0].appendChild(code);
        const rows = Array.from($("values").rows);
        const after = rows.find((r) => r.id > tr.id);
        $("values").insertBefore(tr, after || null);
      }
      const td = tr.cells[1];
      td.textContent = "";
      const pre = document.createElement("pre");
      pre.className = "value";
      pre.id = "vp-" + c.key;
      pre.textContent = c.json || "";
      td.appendChild(pre);
      if (c.truncated) {
        const a = document.createElement("a");
        a.className = "expand";
        a.dataset.target = pre.id;
        a.href = "/threads/" + encodeURIComponent(thread) + "/checkpoints/" + encodeURIComponent(ev.checkpoint) + "/values/" + encodeURIComponent(c.key);
        a.textContent = "Show all of it (" + sizeText(c.size || 0) + ")";
        td.appendChild(a);
      }
      tr.dataset.op = c.op || "";
      if (c.op) tr.classList.add("changed");
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
  const taskState = { task_planned: "planned", task_started: "running", task_retried: "retried", task_failed: "failed", task_cancelled: "cancelled", task_interrupted: "interrupted" };
  function apply(ev) {
    if (ev.seq && cursor) cursor = cursor.split(":")[0] + ":" + ev.seq;
    if (ev.kind in taskState || ev.kind === "task_finished") {
      const state = ev.kind === "task_finished" ? (ev.cached ? "cached" : "done") : taskState[ev.kind];
      // A subgraph's task (ev.path, e.g. "research") is its node in the
      // expanded drawing, n-research:plan; its step is the subgraph's, so
      // it leaves the thread graph's fired edges alone.
      const node = ev.path ? ev.path + ":" + ev.node : ev.node;
      markNode(node, state);
      setTask(ev, node, state);
      if (ev.kind === "task_planned" && !ev.path) fireEdges(ev.step, ev.edges || []);
      return;
    }
    switch (ev.kind) {
      case "run_started":
        if (ev.catchup && !fullCatchup) {
          // A full catch-up (the server could not resume after our
          // cursor): it retells the lineage, so the page starts over.
          fullCatchup = true;
          $("earlier-runs").textContent = "";
          $("timeline").textContent = "";
          $("current-run").textContent = "";
          document.querySelectorAll("g.gnode").forEach((el) => el.classList.remove(...STATES, "retried"));
          currentRun = null;
          lineage.clear();
          head = "";
        }
        startRun(ev);
        if (!ev.catchup) setStatus("running", "");
        break;
      case "run_takeover": {
        // Another Studio continues the run (the one running it stopped):
        // the run goes on, and its title says so.
        if ((ev.run || "") !== currentRun) startRun(ev);
        const title = $("current-run");
        title.textContent = title.textContent.replace(/ · taken over at .*$/, "") + " · taken over at " + utc(ev.time) + " UTC (attempt " + ev.attempt + ")";
        if (!ev.catchup) setStatus("running", "");
        break;
      }
      case "interrupt_answered":
        answered(ev);
        break;
      case "barrier":
        bumps(ev.bumps);
        break;
      case "checkpoint":
        if (!ev.catchup && !lineage.has(ev.checkpoint)) {
          // Another branch, or a state edit (a run of its own): the
          // server rebuilds the page from the new head's lineage.
          if ((ev.parent && head && ev.parent !== head) || ev.source === "update" || ev.source === "fork") {
            location.reload();
            return;
          }
        }
        lineage.add(ev.checkpoint);
        head = ev.checkpoint;
        setValues(ev);
        break;
      case "caught_up":
        fullCatchup = false;
        backoff = firstDelay; // the server has us going again
        if (ev.cursor) cursor = ev.cursor;
        setStatus(ev.status, ev.error);
        body.dataset.live = "1";
        $("live").textContent = "live";
        // The run may have stopped at an interrupt between this page being
        // rendered and the socket connecting: the approval panel is
        // rendered on the server, so fetch the page again (once).
        if (ev.status === "interrupted" && renderedStatus !== "interrupted") location.reload();
        // And the other way: answered by someone between the render and
        // the socket (its interrupt_answered fell before the cursor), the
        // panel must not stay live.
        if (ev.status !== "interrupted" && $("approval") && !$("approval").dataset.retired) {
          retireApproval({ origin: "another page or the API", time: ev.time });
        }
        break;
      case "run_finished":
        setStatus(ev.status, ev.error);
        body.dataset.runs = String(Number(body.dataset.runs || 0) + 1);
        // The approval panel is rendered on the server. A catch-up's
        // run_finished is history (an earlier run that stopped at an
        // interrupt since answered): caught_up says whether the thread
        // waits now.
        if (ev.status === "interrupted" && !ev.catchup) location.reload();
        break;
    }
  }
  // Reconnects back off from firstDelay to 10 s while the server cannot be
  // reached, or takes the socket and closes it again; the catch-up's end
  // (caught_up) starts the back-off over, so a tab that was live for hours
  // reconnects quickly after a blip.
  const firstDelay = 500;
  let backoff = firstDelay;
  function connect() {
    const after = cursor ? "?after=" + encodeURIComponent(cursor) : "";
    const ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/threads/" + encodeURIComponent(thread) + "/ws" + after);
    ws.onmessage = (m) => {
      for (const ev of JSON.parse(m.data)) {
        // One event the page cannot show must not lose the rest.
        try { apply(ev); } catch (err) { console.error("studio: cannot apply event", ev, err); }
        // Other scripts of the page (chat.js) follow the same events.
        document.dispatchEvent(new CustomEvent("studio:event", { detail: ev }));
      }
    };
    ws.onclose = (e) => {
      body.dataset.live = "0";
      // 1013: the server is shedding load (too many sockets, or this tab
      // fell behind); its reason says which.
      $("live").textContent = (e.code === 1013 && e.reason ? e.reason + "; " : "disconnected; ") + "reconnecting…";
      setTimeout(connect, backoff);
      backoff = Math.min(backoff * 2, 10000);
    };
  }
  // The overlay the page was rendered with: node states and fired edges
  // of the thread's last run.
  const overlay = $("graph-state");
  if (overlay) {
    const g = JSON.parse(overlay.textContent);
    for (const [from, to, id] of g.edges || []) {
      const k = JSON.stringify([from, to]);
      if (!edgeIds.has(k)) edgeIds.set(k, []);
      edgeIds.get(k).push(id);
    }
    for (const [node, state] of Object.entries(g.nodes || {})) markNode(node, state);
    for (const node of g.retried || []) markNode(node, "retried");
    for (const [from, to] of g.fired || []) for (const el of edgeEls(from, to)) el.classList.add("fired");
    for (const [from, to] of g.now || []) for (const el of edgeEls(from, to)) el.classList.add("fired-now");
    if (g.step >= 0) nowStep = g.step;
    for (const id of g.lineage || []) lineage.add(id);
  }
  connect();

  // Answers are never sent by one stray key or click: a button that
  // resumes the run (data-resume) first turns into "Confirm: …" and only
  // a second, separate click (or Enter/Space on it) within CONFIRM_MS
  // sends; the second click of a double click does not count. Keys only
  // pick a button: a picks Approve (or Continue), r picks Reject; with
  // Ctrl/Cmd, Enter in an answer's field sends that form at once (the
  // modifier is the deliberate act). Enter alone in a field does nothing
  // (each form's first submit button is a disabled one, which turns off
  // the browser's implicit submission, with or without this script).
  const CONFIRM_MS = 8000;
  function disarm(b) {
    if (!b.classList.contains("confirming")) return;
    clearTimeout(Number(b.dataset.timer));
    b.classList.remove("confirming");
    b.textContent = b.dataset.label;
  }
  // confirmText says what a second click will send: for a typed form,
  // the fields chosen.
  function confirmText(b) {
    let text = b.dataset.confirm || "Confirm?";
    if (b.value === "form" && b.form) {
      const parts = [];
      for (const el of b.form.elements) {
        if (!el.name || !el.name.startsWith("field.") || !el.value) continue;
        const v = el.tagName === "SELECT" ? el.options[el.selectedIndex].text : el.value;
        parts.push(el.name.slice(6) + " " + v);
      }
      text += " " + (parts.join(", ") || "an empty answer") + "?";
    }
    return text;
  }
  function arm(b) {
    document.querySelectorAll("button.confirming").forEach((o) => { if (o !== b) disarm(o); });
    if (b.classList.contains("confirming")) return;
    // A form the browser would refuse is not armed: say why at once.
    if (b.form && !b.form.checkValidity()) { b.form.reportValidity(); return; }
    b.dataset.label = b.textContent;
    b.textContent = confirmText(b);
    b.classList.add("confirming");
    b.focus();
    b.dataset.timer = String(setTimeout(() => disarm(b), CONFIRM_MS));
  }
  document.addEventListener("click", (e) => {
    const b = e.target.closest && e.target.closest("button[data-resume]");
    if (!b) return;
    // detail: 0 from the keyboard, 1 for a single click, 2+ inside a
    // double click.
    if (b.classList.contains("confirming") && e.detail <= 1) return; // send
    e.preventDefault();
    if (e.detail <= 1) arm(b);
  }, true);
  // Exclusive bounds (JSON Schema exclusiveMinimum/Maximum) have no HTML
  // attribute: checked here, and always again on the server.
  function checkExclusive(el) {
    if (!el.dataset || (el.dataset.xmin === undefined && el.dataset.xmax === undefined)) return;
    const n = Number(el.value);
    let msg = "";
    if (el.value !== "" && el.dataset.xmin !== undefined && !(n > Number(el.dataset.xmin))) msg = "Must be greater than " + el.dataset.xmin + ".";
    if (el.value !== "" && el.dataset.xmax !== undefined && !(n < Number(el.dataset.xmax))) msg = "Must be less than " + el.dataset.xmax + ".";
    el.setCustomValidity(msg);
  }
  document.addEventListener("input", (e) => checkExclusive(e.target));
  // A refused answer comes back with its values kept: check them too.
  document.querySelectorAll("input[data-xmin], input[data-xmax]").forEach(checkExclusive);
  // A refused answer comes back as this page at the form's address
  // (…/resume); show the thread's own address, so a reload reads the
  // page again instead of posting the answer again.
  if (/\/resume$/.test(location.pathname)) history.replaceState(null, "", location.pathname.replace(/\/resume$/, "") + location.search);
  document.addEventListener("keydown", (e) => {
    const t = e.target;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && t.form && t.closest("#approval")) {
      const b = t.form.querySelector("button[data-resume]:not([value=approve]):not([value=reject])");
      e.preventDefault();
      if (b) t.form.requestSubmit(b);
      return;
    }
    if (t.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey) return;
    const b = e.key === "a" ? ($("approve-0") || $("continue")) : e.key === "r" ? $("reject-0") : null;
    if (b) { e.preventDefault(); arm(b); }
  });
})();
