// Drives the server example's AG-UI endpoint with `HttpAgent` of `@ag-ui/client` (which
// validates every event it receives and applies them to its messages and state), and
// prints what each run gave as one JSON object on stdout (examples/tests/protocols.rs
// checks it).
//
//   NODE_PATH=.../node_modules node agui_client.cjs http://127.0.0.1:PORT THREAD_ID USER_TOKEN OPERATOR_TOKEN
//
// Run 1: a message that fills the booking up to the confirmation; run 2: "yes", which
// ends in an interrupt (booking the room waits for a person's approval); then the
// chat user's resume, refused (only an operator decides); run 3: the operator resumes
// the interrupt as resolved, and the room is booked. Then a frontend with its own state,
// tools and context, on another thread.
"use strict";

const { HttpAgent } = require("@ag-ui/client");

async function main() {
  const [base, threadId, userToken, operatorToken] = process.argv.slice(2);
  if (!base || !threadId || !userToken || !operatorToken) {
    throw new Error("usage: agui_client.cjs BASE_URL THREAD_ID USER_TOKEN OPERATOR_TOKEN");
  }
  const agent = new HttpAgent({
    url: base.replace(/\/$/, "") + "/agui",
    threadId,
    headers: { Authorization: "Bearer " + userToken },
  });
  const runs = [];

  async function run(runId, params, userText) {
    if (userText !== undefined) {
      agent.addMessage({ id: runId + "-user", role: "user", content: userText });
    }
    const events = [];
    let failed = null;
    let finished = null;
    const result = await agent
      .runAgent(
        { runId, ...params },
        {
          onEvent({ event }) {
            events.push(event);
          },
          onRunFailed({ error }) {
            failed = String(error && error.message ? error.message : error);
          },
          onRunFinishedEvent(p) {
            finished = { outcome: p.outcome, interrupts: p.interrupts || [] };
          },
        },
      )
      .catch((e) => {
        failed = failed || String(e && e.message ? e.message : e);
        return null;
      });
    const last = [...agent.messages].reverse().find((m) => m.role === "assistant" && m.content);
    runs.push({
      runId,
      events,
      failed,
      finished,
      state: agent.state,
      pendingInterrupts: agent.pendingInterrupts,
      newMessages: result ? result.newMessages.map((m) => ({ role: m.role, id: m.id })) : null,
      reply: last ? last.content : null,
      messages: agent.messages.length,
    });
  }

  await run("run-1", {}, "A room in Lisbon on July 1st for 2 guests");
  await run("run-2", {}, "Yes, book it please");
  const interrupts = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved" }));
  await run("run-by-user", { resume: interrupts });
  const refused = runs.pop();
  agent.headers = { Authorization: "Bearer " + operatorToken };
  await run("run-3", { resume: interrupts });

  // A frontend that sends its own state, tools and context (on another thread): the
  // state's data is written to the session; the tools and context are logged as ignored.
  const ui = new HttpAgent({
    url: base.replace(/\/$/, "") + "/agui",
    threadId: threadId + "-ui",
    headers: { Authorization: "Bearer " + userToken },
    initialState: { data: { city: "Vienna" } },
  });
  ui.addMessage({ id: "ui-user", role: "user", content: "I'd like to book a hotel room" });
  let uiFailed = null;
  await ui
    .runAgent(
      {
        runId: "ui-run",
        tools: [{ name: "show_map", description: "Show a map in the page", parameters: { type: "object", properties: {} } }],
        context: [{ description: "the user's time zone", value: "Europe/Vienna" }],
      },
      {
        onRunFailed({ error }) {
          uiFailed = String(error && error.message ? error.message : error);
        },
      },
    )
    .catch((e) => {
      uiFailed = uiFailed || String(e && e.message ? e.message : e);
    });
  const frontend = { failed: uiFailed, state: ui.state };
  process.stdout.write(JSON.stringify({ runs, refused, frontend }) + "\n");
}

main().catch((e) => {
  process.stderr.write("agui_client: " + (e && e.stack ? e.stack : e) + "\n");
  process.exit(1);
});
