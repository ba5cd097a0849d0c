//! One file over 600 lines: one browser session drives every page scenario (the booking,
//! Approve, Deny after a reload) with the driver and page helpers here, and the approval
//! route's plain-HTTP checks replay the same booking.
//!
//! The web chat page in headless Chromium: a full hotel booking typed into the page,
//! checking after each turn that the reply streamed in, and that the step, the
//! collected data and the highlighted graph node follow the conversation. Booking the
//! room waits for a person's approval (as the server runs by default): the page shows
//! the call with Approve and Deny buttons; Approve books it, and in a second conversation
//! (after a reload, which shows the waiting call again) Deny does not.
//!
//! The approval route itself (its events, refusals and the `GET` of a session's waiting
//! calls) and the booking without approvals (`APPROVE_BOOKINGS=0`) are checked over
//! plain HTTP, without a browser.
//!
//! With Mermaid (`AGENT_MERMAID_JS`, from `scripts/protocols.sh`) the page draws the
//! flow graph as SVG: the test checks the picture after each turn (one SVG, the current
//! step's node in the `current` class and filled with the highlight colour) and saves a
//! screenshot of the graph panel as `target/web-chat/graph.png` (a PNG of non-trivial
//! size). Without Mermaid that part is skipped (the page shows the graph as text), except
//! under `CI=true`, where it fails.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/browser.sh` installs them;
//! `CHROMIUM` and `CHROMEDRIVER` override the paths). Without them the test is skipped,
//! except under `CI=true`, where it fails. `WEB_CHAT_SCREENSHOT=FILE.png` saves the page
//! as it looks at the end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "../examples/server/main.rs"]
mod server;

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// One turn wait: the scripted model streams in small pieces, so a turn takes well under
/// a second; the margin is for a loaded machine.
const TURN_TIMEOUT: Duration = Duration::from_secs(30);

fn tool_path(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default))
}

/// Kills the driver and removes the browser profile, also when the test fails.
struct Driver {
    child: Child,
    profile: PathBuf,
    log: PathBuf,
}

impl Driver {
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free local port")
}

async fn start_driver(chromedriver: &Path) -> (Driver, u16) {
    let port = free_port();
    let profile = std::env::temp_dir().join(format!(
        "web-chat-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir_all(&profile).expect("create a temporary browser profile");
    let log = profile.join("chromedriver.log");
    let log_file = std::fs::File::create(&log).expect("create the driver log");
    let child = Command::new(chromedriver)
        .arg(format!("--port={port}"))
        .arg(format!("--log-path={}", log.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {}: {e}", chromedriver.display()));
    let driver = Driver {
        child,
        profile,
        log,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "chromedriver did not listen on port {port} within 20 s; its log:\n{}",
            driver.log_tail()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (driver, port)
}

async fn connect(port: u16, chromium: &Path, profile: &Path) -> Result<Client, String> {
    let args = [
        "--headless".to_owned(),
        "--no-sandbox".to_owned(),
        "--disable-gpu".to_owned(),
        "--disable-dev-shm-usage".to_owned(),
        "--disable-quic".to_owned(),
        "--no-first-run".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--window-size=1280,900".to_owned(),
        format!("--user-data-dir={}", profile.join("chromium").display()),
    ];
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("chrome"));
    caps.insert(
        "goog:chromeOptions".into(),
        json!({ "binary": chromium.display().to_string(), "args": args }),
    );
    let mut builder = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
    builder.capabilities(caps);
    builder
        .connect(&format!("http://127.0.0.1:{port}"))
        .await
        .map_err(|e| format!("could not open a Chromium session: {e}"))
}

async fn js(c: &Client, script: &str) -> Result<Value, String> {
    c.execute(script, Vec::new())
        .await
        .map_err(|e| format!("script `{script}` failed: {e}"))
}

async fn text_of(c: &Client, id: &str) -> Result<String, String> {
    let v = js(
        c,
        &format!("return document.getElementById('{id}').textContent;"),
    )
    .await?;
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("#{id} has no text: {v}"))
}

/// What the page shows, for failure messages.
async fn page_state(c: &Client) -> String {
    js(
        c,
        "return JSON.stringify({status: document.getElementById('status').textContent, \
         turns: document.body.dataset.turns, flow: document.getElementById('flow').textContent, \
         step: document.getElementById('step').textContent, \
         transcript: [...document.querySelectorAll('#transcript .msg')].map(m => m.className + ': ' + m.textContent)});",
    )
    .await
    .map_or_else(|e| e, |v| v.as_str().unwrap_or_default().to_owned())
}

/// Poll `condition` (a JS expression) until it holds.
async fn wait_for(c: &Client, what: &str, condition: &str) -> Result<(), String> {
    let deadline = Instant::now() + TURN_TIMEOUT;
    let script = format!("return Boolean({condition});");
    loop {
        if js(c, &script).await? == Value::Bool(true) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "timed out after {TURN_TIMEOUT:?} waiting for {what}; the page shows {}",
                page_state(c).await
            ));
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
}

struct Turn {
    say: &'static str,
    step: &'static str,
    flow: &'static str,
    reply_has: &'static str,
    data: Value,
    /// The reply arrives as several text deltas (the model's text as it streams);
    /// the code-written approval notice comes in one piece.
    streamed: bool,
}

/// Type `text` into the page, send it, and wait for turn `n` to finish.
async fn say(c: &Client, n: usize, text: &str) -> Result<(), String> {
    let input = c
        .find(Locator::Css("#input"))
        .await
        .map_err(|e| format!("no #input: {e}"))?;
    input
        .send_keys(text)
        .await
        .map_err(|e| format!("typing: {e}"))?;
    click(c, "#send").await?;
    wait_for(
        c,
        &format!("turn {n} to finish"),
        &format!("document.body.dataset.turns === '{n}'"),
    )
    .await
}

async fn click(c: &Client, css: &str) -> Result<(), String> {
    c.find(Locator::Css(css))
        .await
        .map_err(|e| format!("no `{css}`: {e}"))?
        .click()
        .await
        .map_err(|e| format!("clicking `{css}`: {e}"))
}

/// The data panel, parsed.
async fn data_panel(c: &Client) -> Result<Value, String> {
    let text = text_of(c, "data").await?;
    serde_json::from_str(&text).map_err(|e| format!("#data is not JSON ({e}): {text}"))
}

/// What the page shows of the approval card of call `id` (null when there is none).
async fn card(c: &Client, id: &str) -> Result<Value, String> {
    js(
        c,
        &format!(
            "const cards = [...document.querySelectorAll('#transcript .approval')]; \
             const a = cards.find(a => a.dataset.call === '{id}'); \
             return a && {{ cards: cards.length, state: a.dataset.state, \
               tool: a.querySelector('.tool').textContent, \
               arguments: JSON.parse(a.querySelector('.arguments').textContent), \
               approve: a.querySelector('button.approve').textContent, \
               deny: a.querySelector('button.deny').textContent, \
               enabled: [...a.querySelectorAll('button')].filter(b => !b.disabled).length, \
               outcome: a.querySelector('.outcome').textContent, \
               last: a === document.querySelector('#transcript').lastElementChild }};"
        ),
    )
    .await
}

/// The reply the decision on call `id` streamed into the chat.
async fn decision_reply(c: &Client, id: &str) -> Result<Value, String> {
    js(
        c,
        &format!(
            "const m = [...document.querySelectorAll('#transcript .msg')].find(m => m.dataset.call === '{id}'); \
             return m && {{ cls: m.className, text: m.textContent, deltas: Number(m.dataset.deltas) }};"
        ),
    )
    .await
}

/// Start a new conversation: forget the session id and load the page again.
async fn new_session(c: &Client, base: &str) -> Result<(), String> {
    js(c, "sessionStorage.clear(); return true;").await?;
    reload(c, base).await
}

async fn reload(c: &Client, base: &str) -> Result<(), String> {
    c.goto(base)
        .await
        .map_err(|e| format!("open {base}: {e}"))?;
    wait_for(
        c,
        "the page to load",
        "document.body.dataset.ready === 'true'",
    )
    .await
}

/// The highlight colour of the current step (`classDef current` of the graph text).
const HIGHLIGHT_FILL: &str = "rgb(255, 224, 138)";

/// What the graph picture shows: its SVGs, nodes, and the nodes in the `current` class
/// with the fill of their shape.
async fn picture(c: &Client) -> Result<Value, String> {
    js(
        c,
        "const p = document.getElementById('graph-picture'); \
         const current = [...p.querySelectorAll('g.node.current')]; \
         const shape = (n) => n.querySelector('rect, polygon, path, circle'); \
         return { mode: document.body.dataset.graph, hidden: p.hidden, \
           svgs: p.querySelectorAll('svg').length, nodes: p.querySelectorAll('g.node').length, \
           current: current.map(n => n.id), \
           fills: current.map(n => shape(n) ? getComputedStyle(shape(n)).fill : null), \
           source_open: document.getElementById('graph-source').open };",
    )
    .await
}

/// The picture highlights `step` (or nothing when `None`).
async fn check_picture(c: &Client, step: Option<&str>) -> Result<(), String> {
    let shown = picture(c).await?;
    let ok = shown["mode"] == "svg"
        && shown["hidden"] == false
        && shown["svgs"] == 1
        && shown["nodes"] == 6
        && shown["source_open"] == false;
    if !ok {
        return Err(format!(
            "the graph is not drawn as one SVG of 6 steps: {shown}"
        ));
    }
    let current = shown["current"].as_array().cloned().unwrap_or_default();
    match step {
        Some(step) => {
            let node = format!("-s_{step}-");
            if current.len() != 1 || !current[0].as_str().is_some_and(|id| id.contains(&node)) {
                return Err(format!(
                    "the picture should highlight the node of {step:?} (an id with {node:?}): {shown}"
                ));
            }
            if shown["fills"][0] != HIGHLIGHT_FILL {
                return Err(format!(
                    "the current node is not filled with {HIGHLIGHT_FILL}: {shown}"
                ));
            }
        }
        None if !current.is_empty() => {
            return Err(format!(
                "the picture highlights a step, and none is current: {shown}"
            ));
        }
        None => {}
    }
    Ok(())
}

/// A screenshot of the graph panel in `target/web-chat/graph.png`, checked to be a PNG
/// of some size.
async fn screenshot_graph(c: &Client) -> Result<PathBuf, String> {
    js(
        c,
        "document.getElementById('graph-picture').scrollIntoView({ block: 'center' }); return true;",
    )
    .await?;
    let png = c
        .find(Locator::Css("#graph-picture"))
        .await
        .map_err(|e| format!("no #graph-picture: {e}"))?
        .screenshot()
        .await
        .map_err(|e| format!("screenshot of #graph-picture: {e}"))?;
    if !png.starts_with(b"\x89PNG\r\n\x1a\n") || png.len() < 24 {
        return Err(format!("the screenshot is not a PNG ({} bytes)", png.len()));
    }
    let width = u32::from_be_bytes([png[16], png[17], png[18], png[19]]);
    let height = u32::from_be_bytes([png[20], png[21], png[22], png[23]]);
    if png.len() < 5_000 || width < 150 || height < 150 {
        return Err(format!(
            "the screenshot is too small for a graph: {width}x{height}, {} bytes",
            png.len()
        ));
    }
    // target/debug/deps/web_chat-HASH: target is three levels up.
    let target = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir);
    let dir = target.join("web-chat");
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let path = dir.join("graph.png");
    std::fs::write(&path, &png).map_err(|e| format!("write {}: {e}", path.display()))?;
    println!(
        "graph screenshot: {} ({width}x{height}, {} bytes)",
        path.display(),
        png.len()
    );
    Ok(path)
}

async fn converse(c: &Client, base: &str, mermaid: bool) -> Result<(), String> {
    c.goto(base)
        .await
        .map_err(|e| format!("open {base}: {e}"))?;
    wait_for(
        c,
        "the page to load",
        "document.body.dataset.ready === 'true'",
    )
    .await?;
    let graph = text_of(c, "graph").await?;
    for node in [
        "s_ask_city[\"ask_city\"]",
        "s_route{{\"route\"}}",
        "s_large_group([\"large_group\"])",
        "s_route -->|\"else\"| s_confirm",
    ] {
        if !graph.contains(node) {
            return Err(format!("the graph lacks `{node}`:\n{graph}"));
        }
    }
    let chips = js(
        c,
        "return [...document.querySelectorAll('#steps li')].map(li => li.textContent);",
    )
    .await?;
    let want_steps = json!([
        "ask_city",
        "ask_date",
        "ask_guests",
        "route",
        "confirm",
        "large_group"
    ]);
    if chips != want_steps {
        return Err(format!(
            "the step list shows {chips}, expected {want_steps}"
        ));
    }

    let nothing = json!({ "city": null, "check_in": null, "guests": null, "booking_id": null });
    let turns = [
        Turn {
            say: "Hi, I'd like to book a hotel room",
            step: "ask_city",
            flow: "booking",
            reply_has: "Which city",
            data: nothing,
            streamed: true,
        },
        Turn {
            say: "Lisbon, please",
            step: "ask_date",
            flow: "booking",
            reply_has: "check in",
            data: json!({ "city": "Lisbon", "check_in": null, "guests": null, "booking_id": null }),
            streamed: true,
        },
        Turn {
            say: "July 1st",
            step: "ask_guests",
            flow: "booking",
            reply_has: "How many guests",
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": null, "booking_id": null }),
            streamed: true,
        },
        Turn {
            say: "We are 2 guests",
            step: "confirm",
            flow: "booking",
            reply_has: "a room in Lisbon from 2026-07-01 for 2 guest(s). Shall I book it?",
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": null }),
            streamed: true,
        },
        // The model calls book_room, which waits for a person's approval: nothing is
        // booked yet, the flow stays at the confirmation.
        Turn {
            say: "Yes, book it please",
            step: "confirm",
            flow: "booking",
            reply_has: server::APPROVAL_REPLY,
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": null }),
            streamed: false,
        },
    ];

    for (n, t) in turns.iter().enumerate() {
        let n = n + 1;
        let ctx = |e: String| format!("turn {n} ({:?}): {e}", t.say);
        say(c, n, t.say).await.map_err(ctx)?;

        let reply = js(
            c,
            &format!(
                "const m = document.querySelector('#transcript [data-turn=\"{n}\"]:not(.user)'); \
                 return m && {{ cls: m.className, text: m.textContent, deltas: Number(m.dataset.deltas) }};"
            ),
        )
        .await
        .map_err(ctx)?;
        let cls = reply["cls"].as_str().unwrap_or_default();
        let text = reply["text"].as_str().unwrap_or_default();
        if !cls.split(' ').any(|c| c == "done") {
            return Err(ctx(format!("the reply did not finish: {reply}")));
        }
        if !text.contains(t.reply_has) {
            return Err(ctx(format!(
                "the reply {text:?} does not contain {:?}",
                t.reply_has
            )));
        }
        // Streamed: the reply arrived as several text deltas, not in one piece.
        if t.streamed && reply["deltas"].as_u64().unwrap_or(0) < 2 {
            return Err(ctx(format!("the reply was not streamed: {reply}")));
        }

        let step = text_of(c, "step").await.map_err(ctx)?;
        let flow = text_of(c, "flow").await.map_err(ctx)?;
        if step != t.step || flow != t.flow {
            return Err(ctx(format!(
                "the panel shows flow {flow:?} step {step:?}, expected {:?} {:?}",
                t.flow, t.step
            )));
        }
        let data = data_panel(c).await.map_err(ctx)?;
        if data != t.data {
            return Err(ctx(format!("#data shows {data}, expected {}", t.data)));
        }

        // The graph highlights the current step (nothing once the flow completed).
        let current = js(
            c,
            "return { step: document.getElementById('graph').dataset.current, \
             lines: [...document.querySelectorAll('#graph .current')].map(s => s.textContent), \
             chips: [...document.querySelectorAll('#steps li.current')].map(s => s.textContent) };",
        )
        .await
        .map_err(ctx)?;
        let want = if t.flow == "booking" {
            json!({
                "step": t.step,
                "lines": [format!("    s_{0}[\"{0}\"]", t.step)],
                "chips": [t.step],
            })
        } else {
            json!({ "step": "", "lines": [], "chips": [] })
        };
        if current != want {
            return Err(ctx(format!(
                "the graph highlights {current}, expected {want}"
            )));
        }
        if mermaid {
            check_picture(c, (t.flow == "booking").then_some(t.step))
                .await
                .map_err(ctx)?;
        } else {
            let mode = js(c, "return document.body.dataset.graph;").await?;
            if mode != "text" {
                return Err(ctx(format!(
                    "without Mermaid the graph should stay text, the page says {mode}"
                )));
            }
        }
    }
    if mermaid {
        screenshot_graph(c).await?;
    }
    approve(c).await?;
    if mermaid {
        check_picture(c, None)
            .await
            .map_err(|e| format!("after the booking: {e}"))?;
    }
    deny(c, base).await
}

/// After "yes": the waiting `book_room` call as a card; Approve books the room.
async fn approve(c: &Client) -> Result<(), String> {
    let ctx = |e: String| format!("approving: {e}");
    let shown = card(c, "call_book").await.map_err(ctx)?;
    let want = json!({
        "cards": 1,
        "state": "pending",
        "tool": "book_room",
        "arguments": { "hotel": "Grand Hotel Lisbon" },
        "approve": "Approve",
        "deny": "Deny",
        "enabled": 2,
        "outcome": "",
        "last": true,
    });
    if shown != want {
        return Err(ctx(format!("the card shows {shown}, expected {want}")));
    }
    for (id, want) in [("stopped", "awaiting_approval"), ("awaiting", "book_room")] {
        let shown = text_of(c, id).await.map_err(ctx)?;
        if shown != want {
            return Err(ctx(format!("#{id} shows {shown:?}, expected {want:?}")));
        }
    }

    click(c, ".approval[data-call='call_book'] button.approve")
        .await
        .map_err(ctx)?;
    wait_for(
        c,
        "the approved booking",
        "document.body.dataset.decisions === '1'",
    )
    .await
    .map_err(ctx)?;
    let reply = decision_reply(c, "call_book").await.map_err(ctx)?;
    let text = reply["text"].as_str().unwrap_or_default();
    if !reply["cls"]
        .as_str()
        .is_some_and(|c| c.split(' ').any(|c| c == "done"))
        || !text.contains("Your confirmation number is LIS-0701-2")
    {
        return Err(ctx(format!("the reply after Approve is {reply}")));
    }
    if reply["deltas"].as_u64().unwrap_or(0) < 2 {
        return Err(ctx(format!(
            "the reply after Approve was not streamed: {reply}"
        )));
    }
    let data = data_panel(c).await.map_err(ctx)?;
    let want = json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": "LIS-0701-2" });
    if data != want {
        return Err(ctx(format!("#data shows {data}, expected {want}")));
    }
    let shown = card(c, "call_book").await.map_err(ctx)?;
    if shown["state"] != "approved" || shown["outcome"] != "Approved" || shown["enabled"] != 0 {
        return Err(ctx(format!("after Approve the card shows {shown}")));
    }
    for (id, want) in [
        ("stopped", "flow_completed"),
        ("awaiting", "–"),
        ("flow", "–"),
        ("step", "–"),
    ] {
        let shown = text_of(c, id).await.map_err(ctx)?;
        if shown != want {
            return Err(ctx(format!("#{id} shows {shown:?}, expected {want:?}")));
        }
    }
    Ok(())
}

/// A second conversation: the booking waits, a reload shows the waiting call again, and
/// Deny (with a reason) leaves the room unbooked.
async fn deny(c: &Client, base: &str) -> Result<(), String> {
    let ctx = |e: String| format!("denying: {e}");
    let first = js(c, "return document.body.dataset.session;").await?;
    new_session(c, base).await.map_err(ctx)?;
    let state = js(
        c,
        "return { session: document.body.dataset.session, \
         messages: document.querySelectorAll('#transcript > *').length };",
    )
    .await?;
    if state["session"] == first || state["messages"] != 0 {
        return Err(ctx(format!(
            "no new conversation: {state} (the first was {first})"
        )));
    }
    say(c, 1, "A room in Porto on August 3rd for 3 guests")
        .await
        .map_err(ctx)?;
    let step = text_of(c, "step").await.map_err(ctx)?;
    if step != "confirm" {
        return Err(ctx(format!("after one message the step is {step:?}")));
    }
    say(c, 2, "Yes, please book it").await.map_err(ctx)?;
    wait_for(
        c,
        "the approval card",
        "document.querySelector(\".approval[data-call='call_book']\")",
    )
    .await
    .map_err(ctx)?;

    // The call still waits after a reload.
    reload(c, base).await.map_err(ctx)?;
    let shown = card(c, "call_book").await.map_err(ctx)?;
    if shown["state"] != "pending"
        || shown["arguments"] != json!({ "hotel": "Grand Hotel Porto" })
        || shown["enabled"] != 2
    {
        return Err(ctx(format!("after a reload the card shows {shown}")));
    }
    let awaiting = text_of(c, "awaiting").await.map_err(ctx)?;
    if awaiting != "book_room" {
        return Err(ctx(format!("after a reload #awaiting shows {awaiting:?}")));
    }

    c.find(Locator::Css(
        ".approval[data-call='call_book'] input.reason",
    ))
    .await
    .map_err(|e| ctx(format!("no reason input: {e}")))?
    .send_keys("the hotel is full")
    .await
    .map_err(|e| ctx(format!("typing the reason: {e}")))?;
    click(c, ".approval[data-call='call_book'] button.deny")
        .await
        .map_err(ctx)?;
    wait_for(
        c,
        "the denied booking",
        "document.body.dataset.decisions === '1'",
    )
    .await
    .map_err(ctx)?;
    let reply = decision_reply(c, "call_book").await.map_err(ctx)?;
    let text = reply["text"].as_str().unwrap_or_default();
    if !text.contains("the room was not booked: the booking was declined (the hotel is full)") {
        return Err(ctx(format!("the reply after Deny is {reply}")));
    }
    let data = data_panel(c).await.map_err(ctx)?;
    let want =
        json!({ "city": "Porto", "check_in": "2026-08-03", "guests": 3, "booking_id": null });
    if data != want {
        return Err(ctx(format!("#data shows {data}, expected {want}")));
    }
    let shown = card(c, "call_book").await.map_err(ctx)?;
    if shown["state"] != "denied"
        || shown["outcome"] != "Denied: the hotel is full"
        || shown["enabled"] != 0
    {
        return Err(ctx(format!("after Deny the card shows {shown}")));
    }

    // Decided: a reload shows no waiting call.
    reload(c, base).await.map_err(ctx)?;
    let left = js(
        c,
        "return { cards: document.querySelectorAll('.approval').length, \
         awaiting: document.getElementById('awaiting').textContent };",
    )
    .await?;
    if left != json!({ "cards": 0, "awaiting": "–" }) {
        return Err(ctx(format!("after the decision a reload shows {left}")));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_booking_conversation_in_the_browser() {
    let chromium = tool_path("CHROMIUM", "/usr/bin/chromium");
    let chromedriver = tool_path("CHROMEDRIVER", "/usr/bin/chromedriver");
    if !chromium.exists() || !chromedriver.exists() {
        let what = format!(
            "{} and {} are needed: run scripts/browser.sh to install Chromium and its driver",
            chromium.display(),
            chromedriver.display()
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{what}");
        }
        println!("skipped: {what}");
        return;
    }
    let mermaid = std::env::var_os("AGENT_MERMAID_JS").is_some_and(|p| Path::new(&p).is_file());
    if !mermaid {
        let what = "AGENT_MERMAID_JS does not name mermaid.min.js: run scripts/protocols.sh to check the graph picture";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{what}");
        }
        println!("skipped the graph picture: {what}");
    }
    let started = Instant::now();

    let model = server::Typewriter::new(server::scripted_model(), 4, Duration::from_millis(5));
    let agent = Arc::new(
        server::booking_agent_approving(
            Arc::new(model),
            agent_core::prelude::AgentConfig::default(),
            server::Approvals::Bookings,
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    // The page is opened with the operator's token: its Approve and Deny buttons decide.
    let base = format!(
        "http://{}/?token={OPERATOR}",
        listener.local_addr().unwrap()
    );
    let app = server::app(agent, &tokens()).unwrap();
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // Two more servers on other origins (another port): one allows the page's origin
    // (CORS), one allows none.
    let page_origin = base.split("/?").next().unwrap().to_owned();
    let mut others = Vec::new();
    for origins in [vec![page_origin], vec![]] {
        let agent = Arc::new(
            server::booking_agent_approving(
                Arc::new(server::scripted_model()),
                agent_core::prelude::AgentConfig::default(),
                server::Approvals::Bookings,
            )
            .unwrap(),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = server::app_with(
            agent,
            tokens().auth(),
            &origins,
            Arc::new(|line: &str| eprintln!("{line}")),
        )
        .unwrap();
        others.push((
            port,
            tokio::spawn(async move { axum::serve(listener, app).await }),
        ));
    }
    let (allowed, closed) = (others[0].0, others[1].0);

    let (driver, port) = start_driver(&chromedriver).await;
    let client = match connect(port, &chromium, &driver.profile).await {
        Ok(c) => c,
        Err(e) => panic!("{e}; chromedriver's log:\n{}", driver.log_tail()),
    };
    let outcome = tokio::time::timeout(Duration::from_secs(180), async {
        converse(&client, &base, mermaid).await?;
        cross_origin(&client, allowed, closed).await
    })
    .await;
    if let Some(path) = std::env::var_os("WEB_CHAT_SCREENSHOT") {
        match client.screenshot().await {
            Ok(png) => std::fs::write(&path, png).unwrap(),
            Err(e) => println!("no screenshot: {e}"),
        }
    }
    let _ = client.close().await;
    server.abort();
    for (_, serving) in others {
        serving.abort();
    }
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the conversation did not finish within 180 s"),
    }
    drop(driver);
    println!("browser conversation: {:?}", started.elapsed());
}

/// The tokens of the server under test: the chat user's and the operator's.
const USER: &str = "user-token-under-test";
const OPERATOR: &str = "operator-token-under-test";
/// Another user's token.
const OTHER: &str = "other-token-under-test";

fn tokens() -> server::Tokens {
    server::Tokens {
        user: USER.into(),
        operator: OPERATOR.into(),
    }
}

/// From the page (its origin: the first server's), an AG-UI run on a server of another
/// origin: the browser lets it through where that server allows the page's origin
/// (CORS), and blocks it where it does not.
async fn cross_origin(c: &Client, allowed: u16, closed: u16) -> Result<(), String> {
    let run = |port: u16| {
        format!(
            "return fetch('http://127.0.0.1:{port}/agui', {{ method: 'POST', \
               headers: {{ 'content-type': 'application/json', accept: 'text/event-stream', \
                           authorization: 'Bearer {USER}' }}, \
               body: JSON.stringify({{ threadId: 'cors-1', runId: 'r1', \
                 messages: [{{ id: 'm1', role: 'user', content: 'A room in Rome' }}] }}) }}) \
             .then(r => r.text().then(t => ({{ status: r.status, \
                   finished: t.includes('RUN_FINISHED'), \
                   session: r.headers.get('x-session-id') }}))) \
             .catch(e => ({{ blocked: String(e) }}));"
        )
    };
    let ok = js(c, &run(allowed)).await?;
    if ok["status"] != 200 || ok["finished"] != true {
        return Err(format!(
            "the allowed origin's AG-UI run did not go through: {ok}"
        ));
    }
    let blocked = js(c, &run(closed)).await?;
    if !blocked["blocked"].is_string() {
        return Err(format!(
            "a server that allows no other origin answered the page: {blocked}"
        ));
    }
    Ok(())
}

/// One HTTP/1.0 exchange (no chunked encoding, the answer ends when the server closes):
/// the status and the body. Approval decisions carry the operator's token, the rest
/// the chat user's.
fn http(port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
    let token = if path.contains("/approvals/") {
        OPERATOR
    } else {
        USER
    };
    http_as(token, port, method, path, body)
}

/// [`http`] with `token`.
fn http_as(token: &str, port: u16, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
    use std::io::{Read, Write};
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(TURN_TIMEOUT)).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, body.to_owned())
}

/// The server-sent events of a body, as (event, data) pairs.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|block| {
            let mut event = None;
            let mut data = String::new();
            for line in block.lines() {
                if let Some(e) = line.strip_prefix("event: ").or(line.strip_prefix("event:")) {
                    event = Some(e.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ").or(line.strip_prefix("data:")) {
                    data.push_str(d);
                }
            }
            Some((event?, serde_json::from_str(&data).unwrap_or(Value::Null)))
        })
        .collect()
}

fn done_of(events: &[(String, Value)]) -> Value {
    match events.last() {
        Some((e, d)) if e == "done" => d.clone(),
        _ => panic!("the stream does not end with `done`: {events:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_approval_route_resumes_the_booking_and_refuses_calls_that_do_not_wait() {
    let agent = Arc::new(
        server::booking_agent_approving(
            Arc::new(server::scripted_model()),
            agent_core::prelude::AgentConfig::default(),
            server::Approvals::Bookings,
        )
        .unwrap(),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = server::app_with(
        agent,
        tokens().auth().user(OTHER, "other"),
        &[],
        Arc::new(|line: &str| eprintln!("{line}")),
    )
    .unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let call = move |method: &'static str, path: String, body: Option<Value>| {
        tokio::task::spawn_blocking(move || http(port, method, &path, body))
    };
    let call_as = move |token: &'static str,
                        method: &'static str,
                        path: &'static str,
                        body: Option<Value>| {
        tokio::task::spawn_blocking(move || http_as(token, port, method, path, body))
    };

    let (status, body) = call(
        "POST",
        "/api/sessions/a1/messages".into(),
        Some(json!({ "text": "A room in Lisbon on July 1st for 2 guests" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let done = done_of(&events(&body));
    assert_eq!(done["step"], "confirm", "{done}");

    // "Yes": the model calls book_room, which waits for a decision.
    let (_, body) = call(
        "POST",
        "/api/sessions/a1/messages".into(),
        Some(json!({ "text": "Yes, book it please" })),
    )
    .await
    .unwrap();
    let evs = events(&body);
    let asked: Vec<&Value> = evs
        .iter()
        .filter(|(e, _)| e == "approval")
        .map(|(_, d)| d)
        .collect();
    let pending = json!({
        "id": "call_book",
        "tool": "book_room",
        "arguments": { "hotel": "Grand Hotel Lisbon" },
    });
    assert_eq!(asked, [&pending], "{evs:?}");
    assert!(
        !evs.iter().any(|(e, _)| e == "tool_result"),
        "book_room must not run before the decision: {evs:?}"
    );
    let done = done_of(&evs);
    assert_eq!(
        done["stopped"],
        json!({ "kind": "awaiting_approval", "calls": ["call_book"] })
    );
    assert_eq!(done["awaiting_approval"], json!([pending]));
    assert_eq!(done["data"]["booking_id"], Value::Null);
    assert_eq!(done["message"], server::APPROVAL_REPLY);

    let (status, body) = call("GET", "/api/sessions/a1".into(), None).await.unwrap();
    assert_eq!(status, 200);
    let session: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(session["awaiting_approval"], json!([pending]), "{session}");

    // Only the operator decides: the chat user's decision is refused, and so is one
    // without a credential.
    for token in [USER, OTHER, "not-a-token"] {
        let (status, body) = call_as(
            token,
            "POST",
            "/api/sessions/a1/approvals/call_book",
            Some(json!({ "decision": "approve" })),
        )
        .await
        .unwrap();
        let expected = if token == "not-a-token" { 401 } else { 403 };
        assert_eq!(status, expected, "{token}: {body}");
    }
    // Another user can neither read, continue nor see the session.
    for (method, path, body) in [
        ("GET", "/api/sessions/a1", None),
        ("GET", "/api/graph?session=a1", None),
        (
            "POST",
            "/api/sessions/a1/messages",
            Some(json!({ "text": "Yes" })),
        ),
    ] {
        let (status, answer) = call_as(OTHER, method, path, body).await.unwrap();
        assert_eq!(status, 403, "{method} {path}: {answer}");
    }
    // The operator reads it, but does not speak in it.
    let (status, _) = call_as(OPERATOR, "GET", "/api/sessions/a1", None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, answer) = call_as(
        OPERATOR,
        "POST",
        "/api/sessions/a1/messages",
        Some(json!({ "text": "Yes" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 403, "{answer}");
    let (_, mine) = call_as(USER, "GET", "/api/sessions", None).await.unwrap();
    let (_, theirs) = call_as(OTHER, "GET", "/api/sessions", None).await.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&mine).unwrap()["sessions"],
        json!(["a1"])
    );
    assert_eq!(
        serde_json::from_str::<Value>(&theirs).unwrap()["sessions"],
        json!([])
    );
    let (status, _) = call_as("not-a-token", "GET", "/api/sessions", None)
        .await
        .unwrap();
    assert_eq!(status, 401);

    // A call that does not wait, a denial without a reason, a body that is no decision.
    let (status, body) = call(
        "POST",
        "/api/sessions/a1/approvals/call_other".into(),
        Some(json!({ "decision": "approve" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["waiting"],
        json!(["call_book"])
    );
    for bad in [
        json!({ "decision": "deny", "reason": " " }),
        json!({ "decision": "maybe" }),
    ] {
        let (status, body) = call(
            "POST",
            "/api/sessions/a1/approvals/call_book".into(),
            Some(bad.clone()),
        )
        .await
        .unwrap();
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(serde_json::from_str::<Value>(&body).unwrap()["error"].is_string());
    }

    // Approved: the call runs and the resumed turn reports the booking.
    let (status, body) = call(
        "POST",
        "/api/sessions/a1/approvals/call_book".into(),
        Some(json!({ "decision": "approve" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let evs = events(&body);
    let kinds: Vec<&str> = evs.iter().map(|(e, _)| e.as_str()).collect();
    assert!(kinds.contains(&"tool_result"), "{kinds:?}");
    let done = done_of(&evs);
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("Your confirmation number is LIS-0701-2"),
        "{done}"
    );
    assert_eq!(done["data"]["booking_id"], "LIS-0701-2");
    assert_eq!(done["awaiting_approval"], json!([]));

    // Decided: a second decision is refused and changes nothing.
    let (status, body) = call(
        "POST",
        "/api/sessions/a1/approvals/call_book".into(),
        Some(json!({ "decision": "deny", "reason": "too late" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 409, "{body}");
    let (_, body) = call("GET", "/api/sessions/a1".into(), None).await.unwrap();
    let session: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(session["awaiting_approval"], json!([]));
    assert_eq!(session["data"]["booking_id"], "LIS-0701-2");

    // Denied: nothing is booked, and the reply says so with the reason.
    for text in [
        "A room in Porto on August 3rd for 3 guests",
        "Yes, book it please",
    ] {
        let (status, body) = call(
            "POST",
            "/api/sessions/a2/messages".into(),
            Some(json!({ "text": text })),
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{body}");
    }
    let (status, body) = call(
        "POST",
        "/api/sessions/a2/approvals/call_book".into(),
        Some(json!({ "decision": "deny", "reason": "the hotel is full" })),
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let evs = events(&body);
    let done = done_of(&evs);
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("the room was not booked: the booking was declined (the hotel is full)"),
        "{done}"
    );
    assert_eq!(done["data"]["booking_id"], Value::Null);
    assert_eq!(done["awaiting_approval"], json!([]));
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_approvals_the_booking_runs_at_once() {
    use server::Approvals;
    assert_eq!(Approvals::from_env(None), Ok(Approvals::Bookings));
    assert_eq!(Approvals::from_env(Some("1")), Ok(Approvals::Bookings));
    assert_eq!(Approvals::from_env(Some(" off ")), Ok(Approvals::Off));
    assert_eq!(Approvals::from_env(Some("0")), Ok(Approvals::Off));
    assert!(Approvals::from_env(Some("sometimes")).is_err());

    let agent = Arc::new(server::booking_agent(Arc::new(server::scripted_model())).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = server::app(agent, &tokens()).unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, app).await });
    let mut last = Vec::new();
    for text in [
        "A room in Lisbon on July 1st for 2 guests",
        "Yes, book it please",
    ] {
        let (status, body) = tokio::task::spawn_blocking(move || {
            http(
                port,
                "POST",
                "/api/sessions/d1/messages",
                Some(json!({ "text": text })),
            )
        })
        .await
        .unwrap();
        assert_eq!(status, 200, "{body}");
        last = events(&body);
    }
    serving.abort();
    assert!(!last.iter().any(|(e, _)| e == "approval"), "{last:?}");
    let done = done_of(&last);
    assert_eq!(done["data"]["booking_id"], "LIS-0701-2", "{done}");
    assert_eq!(done["awaiting_approval"], json!([]));
    assert!(
        done["message"]
            .as_str()
            .unwrap()
            .contains("Your confirmation number is LIS-0701-2")
    );
}
