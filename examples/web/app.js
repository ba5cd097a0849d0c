// The web chat: sends each message to POST /api/sessions/{id}/messages and reads the
// answer as server-sent events from the response body (fetch + ReadableStream), so the
// reply appears as it streams. The side panel shows the flow, the step, the collected
// data and the flow graph (Mermaid source, current step highlighted).
(() => {
  "use strict";

  const $ = (id) => document.getElementById(id);
  const transcript = $("transcript");
  const input = $("input");
  const send = $("send");
  const composer = $("composer");

  const sessionId = (() => {
    const key = "concierge-session";
    let id = null;
    try {
      id = sessionStorage.getItem(key);
    } catch (_) {
      id = null;
    }
    if (!id) {
      id = "web-" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 8);
      try {
        sessionStorage.setItem(key, id);
      } catch (_) {
        // Storage may be unavailable; the id then lasts as long as the page.
      }
    }
    return id;
  })();
  document.body.dataset.session = sessionId;

  let turns = 0;

  function setStatus(state, text) {
    const s = $("status");
    s.dataset.state = state;
    s.textContent = text;
    document.body.dataset.busy = state === "streaming" ? "true" : "false";
  }

  function addMessage(role, text) {
    const div = document.createElement("div");
    div.className = "msg " + role;
    div.textContent = text;
    transcript.appendChild(div);
    transcript.scrollTop = transcript.scrollHeight;
    return div;
  }

  function showPosition(flow, step) {
    $("flow").textContent = flow || "–";
    $("step").textContent = step || "–";
  }

  function showState(state) {
    showPosition(state.flow, state.step);
    $("data").textContent = JSON.stringify(state.data || {}, null, 2);
    if (state.stopped !== undefined) {
      $("stopped").textContent = state.stopped ? state.stopped.kind : "–";
    }
  }

  async function loadGraph() {
    const res = await fetch("/api/graph?session=" + encodeURIComponent(sessionId));
    if (!res.ok) {
      return;
    }
    const g = await res.json();
    const current = g.current;
    const steps = $("steps");
    const graph = $("graph");
    steps.textContent = "";
    graph.textContent = "";
    graph.dataset.current = current ? current.step : "";
    for (const flow of g.flows) {
      const here = current && current.flow === flow.id ? current : null;
      for (const s of flow.steps) {
        const li = document.createElement("li");
        li.textContent = s.id;
        li.dataset.step = s.id;
        li.className = [s.kind, s.end ? "end" : "", here && here.step === s.id ? "current" : ""]
          .filter(Boolean)
          .join(" ");
        li.title = s.kind + " step" + (s.end ? ", end" : "");
        steps.appendChild(li);
      }
      const node = here ? here.node : null;
      for (const line of flow.mermaid.split("\n")) {
        if (line === "") {
          continue;
        }
        const span = document.createElement("span");
        span.textContent = line;
        const t = line.trim();
        if (node && t.startsWith(node) && /^[\[\{\(>]/.test(t.slice(node.length))) {
          span.className = "current";
        }
        graph.appendChild(span);
      }
    }
  }

  async function loadSession() {
    const res = await fetch("/api/sessions/" + encodeURIComponent(sessionId));
    if (!res.ok) {
      return;
    }
    const s = await res.json();
    for (const m of s.transcript) {
      const div = addMessage(m.role, m.text);
      if (m.role === "assistant") {
        div.classList.add("done");
      }
    }
    showState(s);
  }

  // One server-sent event block ("event: x\ndata: y\n...") to {event, data}.
  function parseBlock(block) {
    let event = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith(":")) {
        continue;
      }
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) {
        value = value.slice(1);
      }
      if (field === "event") {
        event = value;
      } else if (field === "data") {
        data.push(value);
      }
    }
    if (data.length === 0) {
      return null;
    }
    let payload;
    try {
      payload = JSON.parse(data.join("\n"));
    } catch (_) {
      payload = { text: data.join("\n") };
    }
    return { event, data: payload };
  }

  async function sendMessage(text) {
    turns += 1;
    const turn = turns;
    input.value = "";
    input.disabled = true;
    send.disabled = true;
    setStatus("streaming", "answering");
    addMessage("user", text).dataset.turn = String(turn);
    const reply = addMessage("assistant streaming", "");
    reply.dataset.turn = String(turn);
    reply.dataset.deltas = "0";
    let finished = false;

    const fail = (message) => {
      reply.classList.remove("streaming", "assistant");
      reply.classList.add("error");
      reply.textContent = message;
      finished = true;
    };

    const handle = (ev) => {
      switch (ev.event) {
        case "delta":
          reply.textContent += ev.data.text;
          reply.dataset.deltas = String(Number(reply.dataset.deltas) + 1);
          transcript.scrollTop = transcript.scrollHeight;
          break;
        case "step":
          showPosition(ev.data.flow, ev.data.step);
          break;
        case "transition":
          $("flow").textContent = ev.data.to;
          break;
        case "done":
          if (reply.textContent !== ev.data.message) {
            reply.textContent = ev.data.message;
          }
          reply.classList.remove("streaming");
          reply.classList.add("done");
          showState(ev.data);
          finished = true;
          break;
        case "error":
          fail("Error: " + ev.data.message);
          break;
        default:
          break;
      }
    };

    try {
      const res = await fetch("/api/sessions/" + encodeURIComponent(sessionId) + "/messages", {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ text }),
      });
      if (!res.ok || !res.body) {
        let why = res.status + " " + res.statusText;
        try {
          why = (await res.json()).error || why;
        } catch (_) {
          // Not JSON: keep the status line.
        }
        fail("Error: " + why);
      } else {
        const reader = res.body.getReader();
        const decoder = new TextDecoder();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            break;
          }
          buffer += decoder.decode(value, { stream: true });
          let cut;
          while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
            const ev = parseBlock(block);
            if (ev) {
              handle(ev);
            }
          }
        }
        const rest = parseBlock(buffer + decoder.decode());
        if (rest) {
          handle(rest);
        }
        if (!finished) {
          fail("Error: the answer stopped before the end of the turn");
        }
      }
    } catch (e) {
      fail("Error: " + e.message);
    }
    try {
      await loadGraph();
    } catch (_) {
      // The graph is informative; the conversation goes on without it.
    }
    input.disabled = false;
    send.disabled = false;
    setStatus("idle", "ready");
    document.body.dataset.turns = String(turn);
    input.focus();
  }

  composer.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (text && !send.disabled) {
      sendMessage(text);
    }
  });

  setStatus("idle", "ready");
  document.body.dataset.turns = "0";
  loadSession()
    .then(loadGraph)
    .catch(() => {})
    .finally(() => {
      document.body.dataset.ready = "true";
      input.focus();
    });
})();
