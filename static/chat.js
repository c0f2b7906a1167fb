// chat.js: the thread page's chat (web.ChatArea). A reply streams into a
// bubble keyed by its message id as message_chunk events arrive (a live
// one appends its text, a catch-up one holds the whole text so far);
// when a step's checkpoint changes a key holding messages, the chat
// views are fetched again from the server (GET /threads/{id}/chat, the
// same function that rendered the page), and a bubble whose message is
// now there goes. Text only from events: never HTML from state.
//
// A bubble shows at most #chat-streaming's data-cap bytes of UTF-8, cut
// on a character as the server cuts what it keeps (internal/textcut), with
// the same mark as a reload shows (web.StreamCutNote): a live tab and a
// reload show the same text. A catch-up reply whose text the server
// dropped (more than runs.StreamReplies streaming at once) shows no text
// and its mark (web.StreamDroppedNote) until its step is saved.
(() => {
  "use strict";
  const thread = document.body.dataset.thread;
  const area = document.getElementById("chat-area");
  if (!thread || !area) return;
  const chats = document.getElementById("chats");
  const streaming = document.getElementById("chat-streaming");
  const cap = Number(streaming.dataset.cap) || Infinity;
  const utf8 = new TextEncoder();
  const CUT_NOTE = "(cut; the whole reply shows once its step is saved)";
  const DROPPED_NOTE = "(text not kept: too many replies stream at once; the whole reply shows once its step is saved)";
  // A fetch answered after a later one started is dropped.
  let asked = 0;
  let shown = 0;

  function finalIDs() {
    return new Set(Array.from(chats.querySelectorAll("[data-message]")).map((el) => el.dataset.message));
  }
  function show() {
    area.hidden = !chats.querySelector("section.chat") && !streaming.children.length;
  }
  function bubble(ev) {
    let li = streaming.querySelector('li[data-message="' + CSS.escape(ev.message) + '"]');
    if (li) return li;
    li = document.createElement("li");
    li.className = "msg ai streaming";
    li.id = "stream-" + ev.message;
    li.dataset.message = ev.message;
    const head = document.createElement("div");
    head.className = "msg-head";
    const role = document.createElement("span");
    role.className = "role";
    role.textContent = "ai";
    const note = document.createElement("span");
    note.className = "muted";
    // A subgraph's reply (a ReAct agent used as a node) names its node
    // as the drawing does, research:agent.
    note.textContent = (ev.path ? ev.path + ":" : "") + (ev.node || "") + " · streaming…";
    head.append(role, " ", note);
    const pre = document.createElement("pre");
    pre.className = "msg-text";
    li.append(head, pre);
    streaming.appendChild(li);
    return li;
  }
  // cutTo is the longest prefix of text of at most n UTF-8 bytes that
  // ends on a character.
  function cutTo(text, n) {
    const b = utf8.encode(text);
    if (b.length <= n) return text;
    n = Math.max(n, 0);
    while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
    return new TextDecoder().decode(b.subarray(0, n));
  }
  function mark(li, note) {
    let el = li.querySelector(".stream-cut");
    if (!el) {
      el = document.createElement("span");
      el.className = "muted stream-cut";
      li.appendChild(el);
    }
    el.textContent = note;
  }
  function chunk(ev) {
    if (finalIDs().has(ev.message)) return; // its step is saved already
    const li = bubble(ev);
    const pre = li.querySelector("pre.msg-text");
    if (ev.catchup) {
      pre.textContent = ev.text || "";
      li.dataset.bytes = String(utf8.encode(pre.textContent).length);
      if (ev.text_dropped) mark(li, DROPPED_NOTE);
      else if (ev.truncated) mark(li, CUT_NOTE);
    } else if (!li.querySelector(".stream-cut")) {
      const have = li.dataset.bytes ? Number(li.dataset.bytes) : utf8.encode(pre.textContent).length;
      const text = ev.text || "";
      const n = utf8.encode(text).length;
      if (have + n > cap) {
        pre.textContent += cutTo(text, cap - have);
        li.dataset.bytes = String(cap);
        mark(li, CUT_NOTE);
      } else {
        pre.textContent += text;
        li.dataset.bytes = String(have + n);
      }
    }
    show();
  }
  async function refresh(dropAll) {
    const n = ++asked;
    try {
      const res = await fetch("/threads/" + encodeURIComponent(thread) + "/chat", { credentials: "same-origin", headers: { Accept: "text/html" } });
      if (!res.ok) throw new Error(res.status + " " + res.statusText);
      const html = await res.text();
      if (n < shown) return;
      shown = n;
      // Our own server's templ output (escaped there), not state.
      chats.innerHTML = html;
      const have = finalIDs();
      for (const li of Array.from(streaming.children)) {
        if (dropAll || have.has(li.dataset.message)) li.remove();
      }
      show();
      area.dataset.refreshed = String(n);
    } catch (err) {
      console.error("chat: cannot refresh", err);
    }
  }
  // Keys shown as chats; a checkpoint that changes one (or adds a list,
  // which may be a new chat) refreshes them.
  function touchesChat(ev) {
    if (ev.reset) return true;
    const keys = new Set(Array.from(chats.querySelectorAll("section.chat")).map((s) => s.dataset.key));
    return (ev.values || []).some((c) => keys.has(c.key) || (c.json || "").startsWith("["));
  }
  document.addEventListener("studio:event", (e) => {
    const ev = e.detail;
    switch (ev.kind) {
      case "message_chunk":
        chunk(ev);
        break;
      case "checkpoint":
        if (!ev.catchup && touchesChat(ev)) refresh(false);
        break;
      case "caught_up":
        // A reconnect may have missed checkpoints.
        refresh(false);
        break;
      case "run_finished":
        // A reply whose step failed or was cancelled never reaches the
        // state: its bubble goes.
        refresh(true);
        break;
    }
  });
})();
