// The web chat: sends each message to POST /api/sessions/{id}/messages and reads the
// answer as server-sent events from the response body (fetch + ReadableStream), so the
// reply appears as it streams. The side panel shows the flow, the step, the collected
// data and the flow graph, current step highlighted: drawn as SVG by Mermaid when the
// server has it (GET /vendor/mermaid.min.js, from a local npm install; no CDN), else
// shown as Mermaid source text.
//
// A tool call that waits for a person's decision (an `approval` event, or the `done`
// event's `awaiting_approval`) is shown as a card with Approve and Deny buttons; the
// decision goes to POST /api/sessions/{id}/approvals/{call_id}, whose answer (the
// resumed turn) streams into the chat like a reply.
//
// Every API call carries the bearer token the page was opened with (`/#token=...` or `/?token=...`, as
// the server prints it at start; kept in sessionStorage for reloads). Deciding a call
// needs an operator's token.
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

  const token = (() => {
    const key = "concierge-token";
    const m = /(?:^|[?&#])token=([^&#]+)/.exec(location.search + "&" + location.hash);
    let t = m ? decodeURIComponent(m[1]) : null;
    try {
      if (t) {
        sessionStorage.setItem(key, t);
      } else {
        t = sessionStorage.getItem(key);
      }
    } catch (_) {
      // Storage may be unavailable; the token then lasts as long as the page.
    }
    return t;
  })();
  const auth = (headers) => (token ? { ...headers, authorization: "Bearer " + token } : headers);

  let turns = 0;
  let decisions = 0;
  let busy = false;

  function setStatus(state, text) {
    const s = $("status");
    s.dataset.state = state;
    s.textContent = text;
    document.body.dataset.busy = state === "streaming" ? "true" : "false";
  }

  // One answer at a time: while a turn streams, nothing else can be sent or decided.
  function setBusy(on) {
    busy = on;
    input.disabled = on;
    send.disabled = on;
    for (const b of transcript.querySelectorAll(".approval[data-state='pending'] button")) {
      b.disabled = on;
    }
    setStatus(on ? "streaming" : "idle", on ? "answering" : "ready");
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
    if (state.awaiting_approval !== undefined) {
      const waiting = state.awaiting_approval.map((c) => c.tool);
      $("awaiting").textContent = waiting.length ? waiting.join(", ") : "–";
      const ids = state.awaiting_approval.map((c) => c.id);
      for (const card of transcript.querySelectorAll(".approval[data-state='pending']")) {
        if (!ids.includes(card.dataset.call)) {
          // Decided elsewhere (another tab): it no longer waits.
          settle(card, "stale", "No longer waiting for a decision");
        }
      }
      for (const call of state.awaiting_approval) {
        showApproval(call);
      }
    }
  }

  function settle(card, state, text) {
    card.dataset.state = state;
    card.querySelector(".title").firstChild.textContent =
      state === "stale" ? "Asked for approval: " : "Decided: ";
    card.querySelector(".outcome").textContent = text;
    for (const b of card.querySelectorAll("button, input")) {
      b.disabled = true;
    }
  }

  function cardOf(id) {
    for (const card of transcript.querySelectorAll(".approval")) {
      if (card.dataset.call === id) {
        return card;
      }
    }
    return null;
  }

  // A call waiting for a decision, as a card in the chat (once per call).
  function showApproval(call) {
    if (cardOf(call.id)) {
      return;
    }
    const card = document.createElement("div");
    card.className = "approval";
    card.dataset.call = call.id;
    card.dataset.tool = call.tool;
    card.dataset.state = "pending";
    const title = document.createElement("div");
    title.className = "title";
    title.append("Needs your approval: ");
    const tool = document.createElement("code");
    tool.className = "tool";
    tool.textContent = call.tool;
    title.appendChild(tool);
    const args = document.createElement("pre");
    args.className = "arguments";
    args.textContent = JSON.stringify(call.arguments, null, 2);
    const actions = document.createElement("div");
    actions.className = "actions";
    const approve = document.createElement("button");
    approve.type = "button";
    approve.className = "approve";
    approve.textContent = "Approve";
    const reason = document.createElement("input");
    reason.type = "text";
    reason.className = "reason";
    reason.placeholder = "Reason to deny (optional)";
    reason.setAttribute("aria-label", "Reason to deny");
    const deny = document.createElement("button");
    deny.type = "button";
    deny.className = "deny";
    deny.textContent = "Deny";
    actions.append(approve, reason, deny);
    const outcome = document.createElement("div");
    outcome.className = "outcome";
    card.append(title, args, actions, outcome);
    approve.addEventListener("click", () => decide(card, { decision: "approve" }));
    deny.addEventListener("click", () =>
      decide(card, {
        decision: "deny",
        reason: reason.value.trim() || "denied in the web chat",
      }),
    );
    if (busy) {
      approve.disabled = true;
      deny.disabled = true;
    }
    transcript.appendChild(card);
    transcript.scrollTop = transcript.scrollHeight;
  }

  // Mermaid, loaded once from the server; null when the server does not have it (404)
  // or it does not start: the graph then stays as text.
  let mermaidReady = null;
  function loadMermaid() {
    if (!mermaidReady) {
      mermaidReady = new Promise((resolve) => {
        const s = document.createElement("script");
        s.src = "/vendor/mermaid.min.js";
        s.onload = () => {
          try {
            window.mermaid.initialize({
              startOnLoad: false,
              securityLevel: "strict",
              theme: "neutral",
            });
            resolve(window.mermaid);
          } catch (_) {
            resolve(null);
          }
        };
        s.onerror = () => resolve(null);
        document.head.appendChild(s);
      });
    }
    return mermaidReady;
  }

  // Draw every flow's Mermaid text as SVG into #graph-picture; the current step's node
  // comes out in the `current` class (the graph text sets it). Falls back to the text.
  let renders = 0;
  async function drawGraph(flows, current) {
    const picture = $("graph-picture");
    const source = $("graph-source");
    const mermaid = await loadMermaid();
    if (mermaid) {
      try {
        const figures = [];
        for (const flow of flows) {
          renders += 1;
          const { svg } = await mermaid.render("flow-graph-" + renders, flow.mermaid);
          const figure = document.createElement("figure");
          figure.className = "flow-graph";
          figure.dataset.flow = flow.id;
          figure.innerHTML = svg;
          figures.push(figure);
        }
        picture.replaceChildren(...figures);
        picture.dataset.current = current ? current.step : "";
        picture.hidden = false;
        source.open = false;
        document.body.dataset.graph = "svg";
        return;
      } catch (e) {
        console.warn("mermaid could not draw the graph:", e);
      }
    }
    picture.hidden = true;
    picture.replaceChildren();
    source.open = true;
    document.body.dataset.graph = "text";
  }

  async function loadGraph() {
    const res = await fetch("/api/graph?session=" + encodeURIComponent(sessionId), {
      headers: auth({}),
    });
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
    await drawGraph(g.flows, current);
  }

  async function loadSession() {
    const res = await fetch("/api/sessions/" + encodeURIComponent(sessionId), {
      headers: auth({}),
    });
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

  // POST `body` to `url` and stream the answer's events into `reply` (an assistant
  // message): deltas as they arrive, the state on `done`, the error otherwise. Returns
  // the `done` payload, or null when the turn failed (then `status` is the HTTP status
  // when the server refused the request).
  async function streamTurn(url, body, reply) {
    reply.dataset.deltas = "0";
    let done = null;
    let finished = false;
    let status = 0;

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
        case "approval":
          showApproval(ev.data);
          break;
        case "done":
          if (reply.textContent !== ev.data.message) {
            reply.textContent = ev.data.message;
          }
          reply.classList.remove("streaming");
          reply.classList.add("done");
          showState(ev.data);
          done = ev.data;
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
      const res = await fetch(url, {
        method: "POST",
        headers: auth({ "content-type": "application/json", accept: "text/event-stream" }),
        body: JSON.stringify(body),
      });
      if (!res.ok || !res.body) {
        status = res.status;
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
          const { value, done: end } = await reader.read();
          if (end) {
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
    return { done, status };
  }

  async function sendMessage(text) {
    turns += 1;
    const turn = turns;
    input.value = "";
    setBusy(true);
    addMessage("user", text).dataset.turn = String(turn);
    const reply = addMessage("assistant streaming", "");
    reply.dataset.turn = String(turn);
    await streamTurn(
      "/api/sessions/" + encodeURIComponent(sessionId) + "/messages",
      { text },
      reply,
    );
    setBusy(false);
    document.body.dataset.turns = String(turn);
    input.focus();
  }

  // Approve or deny a waiting call: the resumed turn streams in as a reply.
  async function decide(card, decision) {
    if (busy || card.dataset.state !== "pending") {
      return;
    }
    decisions += 1;
    const n = decisions;
    card.dataset.state = "deciding";
    setBusy(true);
    for (const b of card.querySelectorAll("button, input")) {
      b.disabled = true;
    }
    const approved = decision.decision === "approve";
    const outcome = card.querySelector(".outcome");
    outcome.textContent = approved ? "Approving…" : "Denying…";
    const reply = addMessage("assistant streaming", "");
    reply.dataset.call = card.dataset.call;
    reply.dataset.decision = String(n);
    const { done, status } = await streamTurn(
      "/api/sessions/" +
        encodeURIComponent(sessionId) +
        "/approvals/" +
        encodeURIComponent(card.dataset.call),
      decision,
      reply,
    );
    if (done) {
      settle(card, approved ? "approved" : "denied", approved ? "Approved" : "Denied: " + decision.reason);
    } else if (status === 409) {
      // Decided elsewhere (another tab): it no longer waits.
      settle(card, "stale", "No longer waiting for a decision");
    } else {
      // The turn failed and the session is unchanged: the call still waits.
      card.dataset.state = "pending";
      outcome.textContent = "The decision failed; try again";
      for (const b of card.querySelectorAll("button, input")) {
        b.disabled = false;
      }
    }
    setBusy(false);
    document.body.dataset.decisions = String(n);
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
  document.body.dataset.decisions = "0";
  loadSession()
    .then(loadGraph)
    .catch(() => {})
    .finally(() => {
      document.body.dataset.ready = "true";
      input.focus();
    });
})();
