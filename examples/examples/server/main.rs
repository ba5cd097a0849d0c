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
//! Routes:
//! - `GET /`: the chat page (`GET /app.js`, `GET /style.css`: its script and style).
//! - `POST /api/sessions/{id}/messages` with `{"text": "..."}`: the turn as a stream of
//!   server-sent events: `step`, `transition`, `tool_call`, `tool_result`, `approval`
//!   (`{"id", "tool", "arguments"}`: a call that waits for a person's decision),
//!   `delta` (`{"text"}`), then exactly one `done` (the flow, step, data, stopped
//!   reason and `awaiting_approval` calls after the turn) or `error` (`{"message"}`;
//!   the session is unchanged).
//! - `POST /api/sessions/{id}/approvals/{call_id}` with `{"decision": "approve"}`,
//!   `{"decision": "deny", "reason": "..."}` or `{"decision": "edit", "arguments":
//!   {...}}`: decides a waiting call and answers with the resumed turn, as the same
//!   stream of events. A call that does not wait (unknown, or already decided) is a
//!   `409` with `{"error", "waiting"}` (the ids that do wait); a body that is not a
//!   decision, or a denial without a reason, is a `400` with `{"error"}`.
//! - `GET /api/sessions/{id}`: the session's flow, step, data, transcript and the
//!   calls awaiting approval (`awaiting_approval`).
//! - `GET /api/graph?session={id}`: every flow as Mermaid text, with the session's
//!   current step in the `current` class (`&format=mermaid`: the text alone).
//! - `POST /v1/chat/completions`, `GET /v1/models`: an OpenAI-compatible endpoint
//!   (`openai.rs`); `POST /agui`: AG-UI events (`agui.rs`);
//!   `GET /vendor/mermaid.min.js`: Mermaid from `AGENT_MERMAID_JS` (`vendor.rs`).
//!
//! The modules: `booking` (the agent and its flow), `scripted` (the offline model),
//! `model` (which model is served), `routes` (the HTTP API), `events` (a turn as
//! server-sent events), `page` (the chat page's files), `approvals`, `openai`, `agui`
//! and `vendor` (their routes).

use std::sync::Arc;

mod agui;
mod approvals;
mod booking;
mod events;
mod model;
mod openai;
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
    routes::{GraphQuery, Log, MessageIn, app, app_with_log},
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
    println!("web chat on http://{}/", listener.local_addr()?);
    axum::serve(listener, app(agent)).await?;
    Ok(())
}
