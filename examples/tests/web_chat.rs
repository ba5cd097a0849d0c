//! The web chat page in headless Chromium: a full hotel booking typed into the page,
//! checking after each turn that the reply streamed in, and that the step, the
//! collected data and the highlighted graph node follow the conversation.
//!
//! Needs Debian's `chromium` and `chromium-driver` (`scripts/browser.sh` installs them;
//! `CHROMIUM` and `CHROMEDRIVER` override the paths). Without them the test is skipped,
//! except under `CI=true`, where it fails. `WEB_CHAT_SCREENSHOT=FILE.png` saves the page
//! as it looks at the end.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[allow(dead_code)]
#[path = "../examples/server.rs"]
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
}

async fn converse(c: &Client, base: &str) -> Result<(), String> {
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
        },
        Turn {
            say: "Lisbon, please",
            step: "ask_date",
            flow: "booking",
            reply_has: "check in",
            data: json!({ "city": "Lisbon", "check_in": null, "guests": null, "booking_id": null }),
        },
        Turn {
            say: "July 1st",
            step: "ask_guests",
            flow: "booking",
            reply_has: "How many guests",
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": null, "booking_id": null }),
        },
        Turn {
            say: "We are 2 guests",
            step: "confirm",
            flow: "booking",
            reply_has: "a room in Lisbon from 2026-07-01 for 2 guest(s). Shall I book it?",
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": null }),
        },
        Turn {
            say: "Yes, book it please",
            step: "–",
            flow: "–",
            reply_has: "Your confirmation number is LIS-0701-2",
            data: json!({ "city": "Lisbon", "check_in": "2026-07-01", "guests": 2, "booking_id": "LIS-0701-2" }),
        },
    ];

    for (n, t) in turns.iter().enumerate() {
        let n = n + 1;
        let ctx = |e: String| format!("turn {n} ({:?}): {e}", t.say);
        let input = c
            .find(Locator::Css("#input"))
            .await
            .map_err(|e| ctx(format!("no #input: {e}")))?;
        input
            .send_keys(t.say)
            .await
            .map_err(|e| ctx(format!("typing: {e}")))?;
        c.find(Locator::Css("#send"))
            .await
            .map_err(|e| ctx(format!("no #send: {e}")))?
            .click()
            .await
            .map_err(|e| ctx(format!("clicking #send: {e}")))?;
        wait_for(
            c,
            &format!("turn {n} to finish"),
            &format!("document.body.dataset.turns === '{n}'"),
        )
        .await
        .map_err(ctx)?;

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
        if reply["deltas"].as_u64().unwrap_or(0) < 2 {
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
        let data_text = text_of(c, "data").await.map_err(ctx)?;
        let data: Value = serde_json::from_str(&data_text)
            .map_err(|e| ctx(format!("#data is not JSON ({e}): {data_text}")))?;
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
    }
    let stopped = text_of(c, "stopped").await?;
    if stopped != "flow_completed" {
        return Err(format!(
            "after the booking the panel shows stopped {stopped:?}"
        ));
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
    let started = Instant::now();

    let model = server::Typewriter::new(server::scripted_model(), 4, Duration::from_millis(5));
    let agent = Arc::new(server::booking_agent(Arc::new(model)).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let server = tokio::spawn(async move { axum::serve(listener, server::app(agent)).await });

    let (driver, port) = start_driver(&chromedriver).await;
    let client = match connect(port, &chromium, &driver.profile).await {
        Ok(c) => c,
        Err(e) => panic!("{e}; chromedriver's log:\n{}", driver.log_tail()),
    };
    let outcome = tokio::time::timeout(Duration::from_secs(180), converse(&client, &base)).await;
    if let Some(path) = std::env::var_os("WEB_CHAT_SCREENSHOT") {
        match client.screenshot().await {
            Ok(png) => std::fs::write(&path, png).unwrap(),
            Err(e) => println!("no screenshot: {e}"),
        }
    }
    let _ = client.close().await;
    server.abort();
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => panic!("the conversation did not finish within 180 s"),
    }
    drop(driver);
    println!("browser conversation: {:?}", started.elapsed());
}
