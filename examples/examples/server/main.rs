//! A hotel-booking agent behind an HTTP server, with a web chat page that shows the
//! reply as it streams, the current flow and step, the collected data and the flow's
//! graph.
//!
//! `cargo run -p examples --example server`, then open <http://127.0.0.1:3000>
//! (`PORT` changes the port).
//!
//! The model is scripted by default: it reads the user's message with simple rules
//! (a city, a date, a number of guests, a yes) and answers like a concierge would, so
//! the server works offline and gives the same conversation every time. The model is
//! chosen as in every example (`examples::model`): `OPENAI_API_KEY`,
//! `ANTHROPIC_API_KEY`, `GEMINI_API_KEY`, `AGENT_BASE_URL` (with `AGENT_MODEL`), or the
//! local model (`AGENT_LOCAL=1`, `LOCAL_MODEL`), with retries for the hosted ones.
//!
//! Booking the room needs a person's approval: when the guest confirms, the model's
//! `book_room` call does not run; the turn ends with the call waiting, and the page
//! shows it with Approve and Deny buttons. The decision resumes the turn: the room is
//! booked (or not) and the reply says so. `APPROVE_BOOKINGS=0` books without asking.
//!
//! A failed turn is logged on stderr (`[server] session ID: turn failed: ...`) and sent
//! to the page as an `error` event; the session is unchanged.
//!
//! Serving is the library's (`agent_core::serve`, feature `serve`): this file only
//! builds the agent, picks the tokens and adds the page. Every route needs a bearer
//! token: the chat user's (`AGENT_TOKEN`) or the operator's (`AGENT_OPERATOR_TOKEN`),
//! who alone decides a booking that waits for approval. Unset, each is generated and
//! printed at start, with the page's address (`/#token=...`: the page sends the token it
//! was opened with; open it with the operator's token to use the Approve and Deny
//! buttons). `AGENT_ALLOWED_ORIGINS` (comma-separated) lets browser frontends on other
//! origins call the server (CORS).
//!
//! Routes (their contract: the `agent_core::serve` docs):
//! - `GET /`: the chat page (`GET /app.js`, `GET /style.css`: its script and style);
//! - `GET /api/sessions`, `GET /api/sessions/{id}`, `POST /api/sessions/{id}/messages`,
//!   `POST /api/sessions/{id}/approvals/{call_id}`, `GET /api/graph?session={id}`: the
//!   web chat's API;
//! - `POST /v1/chat/completions`, `GET /v1/models`: the OpenAI-compatible endpoint
//!   (model `concierge`);
//! - `POST /v1/responses`: the OpenAI Responses API (the OpenAI Agents SDK's default);
//! - `POST /agui`: AG-UI events;
//! - `POST /mcp` (and `GET`, `DELETE`): the agent as an MCP server over streamable
//!   HTTP (its `message` tool; `decide` for the operator);
//! - `GET /.well-known/agent-card.json`, `POST /a2a`: the agent over A2A;
//! - `GET /vendor/mermaid.min.js`: Mermaid from `AGENT_MERMAID_JS` (`vendor.rs`).
//!
//! The modules: `booking` (the agent and its flow), `scripted` (the offline model),
//! `model` (which model is served), `routes` (the library's routers, the tokens and the
//! page), `page` (the chat page's files) and `vendor` (Mermaid).

use std::sync::Arc;

mod booking;
mod model;
mod page;
mod routes;
mod scripted;
mod vendor;

// The API of the server: the tests include this file as a module (`#[path]`), and each
// uses a part of it.
#[allow(unused_imports)]
pub use self::{
    booking::{
        APPROVAL_REPLY, Approvals, Booking, BookingAgent, booking_agent, booking_agent_approving,
        booking_agent_with, booking_flow, booking_flow_with,
    },
    model::{Typewriter, model_from, served},
    routes::{Log, MODEL_ID, Tokens, app, app_with},
    scripted::scripted_model,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match std::env::var("PORT") {
        Ok(p) => p
            .parse()
            .map_err(|e| format!("PORT must be a port number, got {p:?}: {e}"))?,
        Err(_) => 3000,
    };
    let model = model_from(
        &examples::model::process_env,
        examples::model::start_local_server,
    )?;
    let approvals = Approvals::from_env(std::env::var("APPROVE_BOOKINGS").ok().as_deref())?;
    let agent = Arc::new(booking_agent_approving(
        served(&model),
        model.config(),
        approvals,
    )?);
    let (tokens, generated) = Tokens::from_env(|k| std::env::var(k).ok());
    let origins: Vec<String> = std::env::var("AGENT_ALLOWED_ORIGINS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    let app = app_with(
        agent,
        tokens.auth(),
        &origins,
        Arc::new(|line: &str| eprintln!("{line}")),
    )?;
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("{}", model.description());
    println!(
        "{}",
        match approvals {
            Approvals::Bookings =>
                "booking a room waits for a person's approval (APPROVE_BOOKINGS=0: it does not)",
            Approvals::Off => "rooms are booked without approval (APPROVE_BOOKINGS=0)",
        }
    );
    let addr = listener.local_addr()?;
    for (name, var, token, generated) in [
        ("chat user", "AGENT_TOKEN", &tokens.user, generated[0]),
        (
            "operator",
            "AGENT_OPERATOR_TOKEN",
            &tokens.operator,
            generated[1],
        ),
    ] {
        let from = if generated { "generated; set" } else { "from" };
        println!("{name} token ({from} {var}): {token}");
    }
    if !origins.is_empty() {
        println!("browser pages allowed from {}", origins.join(", "));
    }
    if !vendor::mermaid_from_env().is_some_and(|p| p.is_file()) {
        eprintln!(
            "the flow graph will not be drawn (shown as text): {} does not name mermaid.min.js; `eval \"$(bash scripts/protocols.sh)\"` installs Mermaid and exports it",
            vendor::MERMAID_ENV
        );
    }
    println!("web chat on http://{addr}/#token={}", tokens.user);
    println!(
        "as the operator (Approve / Deny): http://{addr}/#token={}",
        tokens.operator
    );
    println!("OpenAI-compatible endpoint: http://{addr}/v1 (API key: a token; model {MODEL_ID})");
    println!("MCP server (streamable HTTP): http://{addr}/mcp (bearer token: a token)");
    println!(
        "A2A agent card: http://{addr}/.well-known/agent-card.json (endpoint /a2a, bearer token: a token)"
    );
    axum::serve(listener, app).await?;
    Ok(())
}
