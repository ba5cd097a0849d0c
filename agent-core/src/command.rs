//! Commands: what the model read in the user's message, as typed items that code
//! applies in one place.
//!
//! The turn's one structured call (the respond call) answers with a reply and with
//! what it understood. That understanding is a list of [`Command`]s: set a value
//! with the user's words it came from, correct a stored value, start another flow,
//! cancel the active one, agree or decline to the question just asked, ask for a
//! person, hear the last message again, or ask which of two flows the user means. The model never moves the
//! conversation itself: each command has one handler in the engine, which checks it
//! (a value against the user's words and the field's constraints, a flow against the
//! flows the agent lets it start) and turns what it accepts into a directive with the
//! source [`DirectiveSource::Command`](crate::directive::DirectiveSource::Command),
//! merged and applied like every other directive and listed in
//! [`AgentResponse::directive_chain`](crate::response::AgentResponse::directive_chain).
//! The commands a turn handled are in
//! [`AgentResponse::commands`](crate::response::AgentResponse::commands).
//!
//! # Values the user confirms
//!
//! A value is stored without asking when the user's words show it: they contain it
//! (case, accents and spacing aside), or a field's resolver reads them as it (a date
//! named in any of the usual ways against the agent's clock, a number in digits or
//! words, an enum value or a declared synonym). A value the words do not show, read
//! where the user answered (the question just asked was for its field: "me and my
//! husband" to "how many guests?"; or a word of the value is a word of the message:
//! "Naples, Italy" for "make it Naples"), is *tentative*: not stored, not dropped,
//! but shown back to the user by a reply the code writes ("Just to check: guests 2.
//! Is that right?") and kept in the session
//! ([`AgentResponse::tentative`](crate::response::AgentResponse::tentative)). The
//! user's next message settles it before it is read for anything else: a yes stores
//! it through the same write as any value (the flow's `on_data_update` hook runs
//! then, not before; the response lists [`Command::Agree`] and the value's
//! command); anything else leaves it unstored and reported in
//! [`AgentResponse::ungrounded`](crate::response::AgentResponse::ungrounded), and a
//! value the message gives for the field is read as usual. A plain yes is read by
//! code; any other answer is judged by a short model call that sees only the
//! question and the answer, so a phrasing no list knows still gets an answer. The
//! stored value written again is never asked about, and a value the field's
//! constraints refuse is refused with the reason rather than asked about. A value
//! nothing ties to the message (small models fill fields nobody mentioned: "I need
//! a hotel in Rome" read with 2 guests and tomorrow's date) is not stored and is
//! reported in `ungrounded`; the reply asks for the field when it is needed. So is a
//! value the words do not show that was read from a message asking for something
//! else (to hear the last message again, for a person, to stop): that message
//! answered no question, and its reply is the pattern's.
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Booking { guests: Option<u8>, nights: Option<u8> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let agent: Agent<Booking, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking")
//!         .step(Step::model("ask_guests").prompt("Ask how many guests.").collect(["guests"]))
//!         .step(Step::model("ask_nights").prompt("Ask how many nights.").collect(["nights"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! provider.respond(Answer::message("How many guests?"));
//! agent.respond("s1", "I'd like to book").await.unwrap();
//! // "me and my husband" answers the question but does not contain 2: asked about,
//! // not stored.
//! provider.respond(Answer::message("How many nights?").with_data(json!({"guests": 2})));
//! let r = agent.respond("s1", "me and my husband").await.unwrap();
//! assert_eq!(r.data.guests, None);
//! assert_eq!(r.tentative[0].field, "guests");
//! assert_eq!(r.message, "Just to check: guests 2. Is that right?");
//! // A yes stores it, and the flow goes on.
//! provider.respond(Answer::message("How many nights?"));
//! let r = agent.respond("s1", "yes").await.unwrap();
//! assert_eq!(r.data.guests, Some(2));
//! assert_eq!(r.commands, vec![Command::agree(), Command::set_value("guests", json!(2))]);
//! assert_eq!(r.step.as_deref(), Some("ask_nights"));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # Cancelling a flow
//!
//! In a flow, the answer says whether the user asks to stop it (`cancel`). A message made only of stop words ("cancel", "stop",
//! "never mind", "forget it"), filler and the flow's own name ("cancel the booking" in
//! a flow titled "Hotel booking"), with nothing else the answer reads, stops the flow at once,
//! whether or not the model read it so (code recognises these); any other phrasing the model read as a cancel is asked about first
//! ("Do you want to stop hotel booking?"), and the user's next message settles it (a
//! yes stops the flow; anything else is read as usual and the flow goes on). A stopped
//! flow is left without completing
//! ([`StoppedReason::FlowCancelled`](crate::response::StoppedReason::FlowCancelled)):
//! the values only it collected are cleared (not those a flow waiting on the dialogue
//! stack or a completed flow collected), its tentative values, pending directive and
//! pending approval go with it, and it can be started again. A tool that already ran
//! is not undone. When the answer also judges one of the step's own `when`
//! conditions true, the agent's branch decides and the built-in cancel does not run.
//! A cancel the model read in the very message that started the flow is not followed
//! unless that message speaks of stopping ("I need a hotel in Lisbon" right after a
//! cancelled booking starts a new one; "a hotel in Lisbon... no, forget it" is asked
//! about), and neither is one read in a message that gave the flow a value (stored,
//! shown back for a yes, or refused by the field's constraints: "0 guests", "last
//! Friday") unless it speaks of stopping too.
//!
//! A code flow waiting for the answer to its `ask` stops the same way on a message
//! made only of stop words, with no model call: its journal goes, the values it wrote
//! stay, and it can be started again. Other phrasings go to its question's extraction
//! as usual (an answer that is not one asks the question again).
//!
//! # The dialogue stack
//!
//! A flow the model starts while another is under way interrupts it: the active flow
//! and its step wait on the stack ([`Session::stack`](crate::session::Session::stack)).
//! When the interrupting flow completes (with no `on_complete` of its own that moves
//! the conversation) or is cancelled, the waiting flow resumes at its step in the same
//! turn and asks its question again. A `start_flow` back to a waiting flow resumes it
//! where it was. Past [`AgentConfig::max_interruptions`](crate::AgentConfig::max_interruptions)
//! waiting flows (3 by default), a new flow is not started and the reply says to
//! finish the current one first.
//!
//! On a model profiled as small ([`ModelProfile::checks_digressions`](crate::policy::ModelProfile::checks_digressions)),
//! an answer to a flow's question is first sorted in a short call of its own (a
//! [`CallKind::Route`](crate::provider::CallKind::Route) call: what the step asks
//! for, and the `when` of each flow the active one hands over to). When it names
//! another flow, that flow starts as above and reads the message; otherwise the
//! active flow reads it as usual. A plain yes and a message that speaks of stopping
//! are read without it, and a step whose branches judge conditions (or whose
//! `prepare` hook may route in code) decides for itself. With the scripted provider, queue that call's answer with
//! `provider.route(Answer::route("feedback"))` for a digression, and
//! `provider.route(Answer::raw(r#"{"about": "answer"}"#))` for an answer.
//!
//! With no flow under way, an agent whose reply names the task to start
//! ([`Router::SchemaIntent`](crate::codeflow::Router::SchemaIntent)) sorts the message
//! the same way on a small model: among the flows that may start and "something
//! else" (`other`). A flow picked starts at once; otherwise the reply is written
//! without tasks to start, so it starts none. A plain yes, which answers the last
//! reply, is not sorted.
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Desk { city: Option<String>, date: Option<String>, note: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let agent: Agent<Desk, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking").title("Hotel booking")
//!         .when("the user wants to book a room")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .step(Step::model("ask_date").prompt("Ask for the date.").collect(["date"]))
//!         .build().unwrap())
//!     .flow(Flow::builder("feedback").title("Feedback")
//!         .when("the user wants to leave feedback")
//!         .step(Step::model("ask_note").prompt("Ask for the feedback.").collect(["note"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! agent.dispatch("s1", Directive::go_to("booking")).await.unwrap();
//! provider.respond(Answer::message("When?").with_data(json!({"city": "Rome"})).claiming("ask_date"));
//! agent.respond("s1", "A room in Rome").await.unwrap();
//! // Feedback interrupts the booking, which waits at `ask_date`.
//! provider.respond(Answer::message("Sure.").switching_to("feedback"));
//! provider.respond(Answer::message("What would you like to tell us?"));
//! let r = agent.respond("s1", "first, some feedback").await.unwrap();
//! assert_eq!(r.flow.as_deref(), Some("feedback"));
//! // "never mind" stops feedback; the booking resumes and asks its question again.
//! provider.respond(Answer::message("Okay.").command(Command::cancel_flow()));
//! provider.respond(Answer::message("When would you like to arrive?"));
//! let r = agent.respond("s1", "never mind").await.unwrap();
//! assert_eq!(r.message, "Okay, I've stopped feedback.\n\nWhen would you like to arrive?");
//! assert_eq!((r.flow.as_deref(), r.step.as_deref()), (Some("booking"), Some("ask_date")));
//! assert_eq!(r.data.city.as_deref(), Some("Rome"));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # Clarification
//!
//! An answer that starts two or more flows the active one hands over to (several
//! judged true, or written out as `start_flow` commands) starts none: it reads as
//! [`Command::Clarify`], and the reply, written by code from the flows' titles, asks
//! which one the user means. The flow asking stays at its step, with any value the
//! message gave; the user's next message starts the flow they name. When the
//! active step's own condition holds in the same answer, the agent's branch decides.
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Desk { city: Option<String>, note: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let note = |id: &str, title: &str, when: &str| {
//!     Flow::builder(id).title(title).when(when)
//!         .step(Step::model("ask_note").prompt("Ask for the details.").collect(["note"]))
//!         .build().unwrap()
//! };
//! let agent: Agent<Desk, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking").title("Hotel booking")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .build().unwrap())
//!     .flow(note("feedback", "Feedback", "the user wants to leave feedback"))
//!     .flow(note("complaint", "Complaint", "the user wants to complain"))
//!     .build().unwrap();
//! agent.dispatch("s1", Directive::go_to("booking")).await.unwrap();
//! provider.respond(Answer::message("Which city?"));
//! agent.respond("s1", "hi").await.unwrap();
//! // The model reads both flows into the message: code asks which one.
//! provider.respond(Answer::message("Sure.").switching_to("feedback")
//!     .command(Command::start_flow("complaint")));
//! let r = agent.respond("s1", "about my last stay...").await.unwrap();
//! assert_eq!(r.message, "Do you mean feedback or complaint?");
//! assert_eq!(r.step.as_deref(), Some("ask_city"));
//! assert!(r.commands.contains(&Command::clarify(["feedback", "complaint"])));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # What an interruption and a cancel do to a flow
//!
//! A flow declares both, and the macros check them at compile time (the builder's
//! `build()` makes the same checks):
//!
//! - **Interruption** ([`Interruption`](crate::flow::Interruption), `interrupted = ..`
//!   in `#[flow]`): `resume` (the default: it waits and resumes at its step), `restart`
//!   (it waits, and when it resumes the values it owns are cleared and its first step
//!   asks again) or `end` (it is left, its values kept, as a front desk whose only task
//!   is to send the user on). A model step may say otherwise for an interruption while
//!   the flow waits there (`#[step(interrupted = ..)]`, [`Step::interrupted`](crate::step::Step::interrupted));
//!   an `auto` or `reply` step never waits for the user, so saying it there is an error.
//! - **Cancel**: the flow's own fields are cleared, plus those it names in
//!   `cancel_clears(..)` ([`FlowBuilder::cancel_clears`](crate::flow::FlowBuilder::cancel_clears)), for
//!   instance a reference a tool wrote. A cancel does not undo a tool's effect, so a
//!   flow whose steps offer a once-tool ([`Effect::Once`](crate::tool::Effect::Once))
//!   must say what a cancel says once it ran, with `cancel_after_tool = ".."`
//!   ([`FlowBuilder::cancel_after_tool`](crate::flow::FlowBuilder::cancel_after_tool)):
//!   "Okay, I've stopped it" would be false. `#[flow]` rejects a flow naming a
//!   `#[tool(effect = once)]` in its `tools(..)` without it; `build()` rejects any
//!   flow with a once-tool without it.
//!
//! ```
//! use agent_core::flow::Interruption;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Desk { city: Option<String>, date: Option<String>, note: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let agent: Agent<Desk, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     // A quote starts over after an interruption: its answers may be stale.
//!     .flow(Flow::builder("quote").title("Quote")
//!         .interrupted(Interruption::Restart)
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .step(Step::model("ask_date").prompt("Ask for the date.").collect(["date"]))
//!         .build().unwrap())
//!     .flow(Flow::builder("feedback").title("Feedback")
//!         .when("the user wants to leave feedback")
//!         .step(Step::model("ask_note").prompt("Ask for the feedback.").collect(["note"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! agent.dispatch("s1", Directive::go_to("quote")).await.unwrap();
//! provider.respond(Answer::message("When?").with_data(json!({"city": "Rome"})).claiming("ask_date"));
//! agent.respond("s1", "Rome").await.unwrap();
//! provider.respond(Answer::message("Sure.").switching_to("feedback"));
//! provider.respond(Answer::message("What would you like to tell us?"));
//! let r = agent.respond("s1", "first, some feedback").await.unwrap();
//! assert_eq!(r.flow.as_deref(), Some("feedback"));
//! // Feedback completes; the quote starts over at its first step.
//! provider.respond(Answer::message("Thanks!").with_data(json!({"note": "great"})));
//! provider.respond(Answer::message("Which city?"));
//! let r = agent.respond("s1", "It was great").await.unwrap();
//! assert_eq!((r.flow.as_deref(), r.step.as_deref()), (Some("quote"), Some("ask_city")));
//! assert_eq!(r.data.city, None);
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # Handing over to a person
//!
//! In a flow, the answer says when the user asks for a person
//! (`is_asking_for: "a_person"`); in any turn, code also recognises the common plain
//! phrasings ("can I talk to a human?", "connect me with someone from your staff",
//! "representative please"). What happens is the agent's
//! [`HumanHandoff`](crate::agent::HumanHandoff), set with
//! [`AgentBuilder::human_handoff`](crate::agent::AgentBuilder::human_handoff). By
//! default the session is handed over: a plain request hands over at once; a request
//! the model read in other words is asked about first ("Do you want me to pass you to
//! a person from our team?"). On a model profiled as small ([`crate::policy`]), the
//! model's reading counts only in a message that names a person; in one that names
//! none it is read as usual (small models read requests for a person into ordinary
//! messages). The turn that hands over ends with
//! [`StoppedReason::HumanHandoff`](crate::response::StoppedReason::HumanHandoff); the
//! session is marked ([`Session::handed_off`](crate::session::Session::handed_off)),
//! and every later message is kept in the history and answered with the waiting
//! reply, with no model call, until the host calls
//! [`Agent::end_human_handoff`](crate::Agent::end_human_handoff). The conversation
//! then goes on at the step it was handed over from. An agent with nobody to hand
//! over to says so instead ([`HumanHandoff::unavailable`](crate::agent::HumanHandoff::unavailable)),
//! or starts a flow of its own ([`HumanHandoff::flow`](crate::agent::HumanHandoff::flow)).
//! Served over AG-UI, a handed-over run sends a `CUSTOM` event named `human_handoff`.
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Desk { city: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let agent: Agent<Desk, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! provider.respond(Answer::message("Which city?"));
//! agent.respond("s1", "I need a room").await.unwrap();
//! provider.respond(Answer::message("Sure.").command(Command::ask_for_human()));
//! let r = agent.respond("s1", "I'd rather talk to a person").await.unwrap();
//! assert_eq!(r.stopped, StoppedReason::HumanHandoff);
//! // A person has the conversation: no model call until the host ends the handoff.
//! let r = agent.respond("s1", "hello?").await.unwrap();
//! assert_eq!((r.stopped, r.model_calls), (StoppedReason::HumanHandoff, 0));
//! assert!(agent.end_human_handoff("s1").await.unwrap());
//! // The agent goes on at the step it handed over from.
//! provider.respond(Answer::message("Rome, noted.").with_data(json!({"city": "Rome"})));
//! let r = agent.respond("s1", "Rome").await.unwrap();
//! assert_eq!(r.data.city.as_deref(), Some("Rome"));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # Repeat
//!
//! When the user asks to hear the last message again ("sorry, what was the
//! question?", `is_asking_for: "your_last_message_again"`) and the answer reads nothing new in the message
//! (no value the data does not hold, no flow to start), the reply is the agent's last
//! message, written by code.
//!
//! # Skipping a question
//!
//! When the user does not want to answer the question just asked ("skip that", "I'd
//! rather not say", `is_asking_for: "to_skip_this_question"`), and every field the
//! step asks for is one the flow can do without (not in its `required`, and no
//! step `requires` it), the step is passed without a value and the flow goes on to
//! its next step in the same turn ([`Command::SkipQuestion`]). The skipped fields
//! are kept in [`Session::skipped`](crate::session::Session::skipped) until the flow
//! completes or is cancelled, so the question is not asked again in this run of the
//! flow. A field the flow needs is not skipped: its question stands. The answer key
//! is offered only in flows with such a step.
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Table { guests: Option<u8>, wishes: Option<String>, day: Option<String> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! let agent: Agent<Table, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("table").title("Table booking")
//!         .required(["guests", "day"])
//!         .step(Step::model("ask_guests").prompt("Ask how many guests.").collect(["guests"]))
//!         .step(Step::model("ask_wishes").prompt("Ask for special wishes.").collect(["wishes"]))
//!         .step(Step::model("ask_day").prompt("Ask for the day.").collect(["day"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! provider.respond(Answer::message("Any special wishes?").with_data(json!({"guests": 2})));
//! agent.respond("s1", "A table for two").await.unwrap();
//! // "No idea, skip that": the wishes are optional, so the booking goes on.
//! provider.respond(Answer::message("Okay.").command(Command::skip_question()));
//! provider.respond(Answer::message("Which day would you like to come?"));
//! let r = agent.respond("s1", "No idea, skip that").await.unwrap();
//! assert_eq!(r.step.as_deref(), Some("ask_day"));
//! assert_eq!(r.message, "Which day would you like to come?");
//! assert!(r.commands.contains(&Command::SkipQuestion));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! ```
//!
//! # The answer's shape, and the scripted provider
//!
//! A model answers in the shape its request's JSON schema asks for. That shape is
//! tuned to what small models write reliably (one key per decision, in an order
//! llama.cpp's grammar follows), and the engine reads it into commands with one
//! documented conversion:
//!
//! | answer key | commands |
//! |---|---|
//! | `data` | one [`Command::SetValue`] per non-null field (`{"quote", "value"}` gives `words`), or [`Command::CorrectValue`] when that field already holds another value |
//! | `handoff` (one yes/no per flow), `switch_flow`, `intent` | [`Command::StartFlow`] for the first flow judged yes |
//! | `action` with `"answer": "yes"` or `"agreed": true` | [`Command::Agree`] (and the tool call it names) |
//! | `action` with another answer, or `"agreed": false` | [`Command::Decline`] |
//! | `cancel: true` (in a flow) | [`Command::CancelFlow`] |
//! | `is_asking_for: "a_person"` | [`Command::AskForHuman`] |
//! | `is_asking_for: "your_last_message_again"` | [`Command::Repeat`] |
//! | `is_asking_for: "to_skip_this_question"` (flows with a step that may be skipped) | [`Command::SkipQuestion`] |
//! | `commands` | the listed commands, as written |
//!
//! So answers scripted for the [`ScriptedProvider`](crate::testing::ScriptedProvider)
//! in the older shape keep working, and a scripted answer may list commands directly:
//!
//! ```
//! use agent_core::command::Command;
//! use agent_core::prelude::*;
//! use agent_core::testing::{Answer, ScriptedProvider};
//! use serde_json::json;
//!
//! #[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
//! struct Booking { city: Option<String>, guests: Option<u8> }
//!
//! # tokio_test_block(async {
//! let provider = ScriptedProvider::new();
//! provider.respond(
//!     Answer::message("How many guests?")
//!         .command(Command::set_value("city", json!("Porto")).citing("Porto")),
//! );
//! let agent: Agent<Booking, ()> = Agent::builder()
//!     .provider(provider.clone())
//!     .flow(Flow::builder("booking")
//!         .step(Step::model("ask_city").prompt("Ask for the city.").collect(["city"]))
//!         .step(Step::model("ask_guests").prompt("Ask how many guests.").collect(["guests"]))
//!         .build().unwrap())
//!     .build().unwrap();
//! let r = agent.respond("s1", "A room in Porto, please").await.unwrap();
//! assert_eq!(r.data.city.as_deref(), Some("Porto"));
//! assert_eq!(r.step.as_deref(), Some("ask_guests"));
//! // What the model read, as handled, and the directive it became.
//! assert_eq!(r.commands, vec![Command::set_value("city", json!("Porto")).citing("Porto")]);
//! assert!(r.directive_chain.iter().any(|e| e.source == DirectiveSource::Command("set_value city".into())));
//! # });
//! # fn tokio_test_block(f: impl std::future::Future<Output = ()>) {
//! #     tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(f)
//! # }
//! # use agent_core::directive::DirectiveSource;
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One thing the model read in the user's message. Code applies it; see the
/// [module documentation](self) for how an answer becomes commands.
///
/// New kinds of commands are added as the conversation model grows, so matches need a
/// wildcard arm; build commands with the constructors ([`Command::set_value`], ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Command {
    /// The user gave a value for a field: stored when the field's flow collects it,
    /// the user's words show it, and the field's constraints accept it; shown back
    /// for a yes when the words do not show it ([`AgentResponse::tentative`](crate::response::AgentResponse::tentative),
    /// see [Values the user confirms](self#values-the-user-confirms)); otherwise not
    /// stored and reported ([`AgentResponse::rejected_data`](crate::response::AgentResponse::rejected_data),
    /// [`AgentResponse::dropped_fields`](crate::response::AgentResponse::dropped_fields)).
    #[non_exhaustive]
    SetValue {
        /// The field (its name in the data type's JSON).
        field: String,
        /// The value as the model read it.
        value: Value,
        /// The user's own words it came from, when the answer cites them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        words: Option<String>,
    },
    /// The user replaced a value stored earlier ("actually, Naples"): checked like
    /// [`Command::SetValue`]; a step whose answer it changes is asked again.
    #[non_exhaustive]
    CorrectValue {
        /// The field (its name in the data type's JSON).
        field: String,
        /// The new value as the model read it.
        value: Value,
        /// The user's own words it came from, when the answer cites them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        words: Option<String>,
    },
    /// The user wants what another flow does: the conversation moves there (when the
    /// agent lets the active flow hand over to it, and not back to a flow left this
    /// turn), and that flow reads the same message.
    #[non_exhaustive]
    StartFlow {
        /// The flow's id.
        flow: String,
    },
    /// The user agreed to the question just asked (a confirmation): the action the
    /// answer names may run.
    Agree,
    /// The user did not agree to the question just asked (a no, new details, or
    /// something else): no action runs on this answer, and a confirmation step stays
    /// where it is.
    Decline,
    /// The user wants to stop what the active flow does ("forget it, I don't need a
    /// room"): the flow is left without completing, the values only it collected are
    /// cleared, and a flow it interrupted resumes; it can be started again. See
    /// [Cancelling a flow](self#cancelling-a-flow).
    CancelFlow,
    /// The user asks for a person ("can I talk to someone?"): the human handoff
    /// pattern ([`crate::agent::HumanHandoff`]). See
    /// [Handing over to a person](self#handing-over-to-a-person).
    AskForHuman,
    /// The user asks to hear the last message again ("sorry, what was the
    /// question?"): the reply is the agent's last message, written by code.
    Repeat,
    /// The user does not want to answer the question just asked ("skip that", "I'd
    /// rather not say"): when every field the step asks for is optional (no rule of
    /// the flow needs it), the step is passed without a value and the flow goes on;
    /// otherwise the question stands. See [Skipping a question](self#skipping-a-question).
    SkipQuestion,
    /// More than one flow fits the message (the answer started two): none is started,
    /// and the reply, written by code, asks which one the user means ("Do you want
    /// appointment booking or prescription renewal?"). The flow asking stays where it
    /// is; the user's next message starts the one they name. See
    /// [Clarification](self#clarification).
    #[non_exhaustive]
    Clarify {
        /// The flows that fit, in the order the answer named them.
        flows: Vec<String>,
    },
}

impl Command {
    /// Set `field` to `value`.
    pub fn set_value(field: impl Into<String>, value: Value) -> Self {
        Self::SetValue {
            field: field.into(),
            value,
            words: None,
        }
    }

    /// Replace the stored value of `field` with `value`.
    pub fn correct_value(field: impl Into<String>, value: Value) -> Self {
        Self::CorrectValue {
            field: field.into(),
            value,
            words: None,
        }
    }

    /// Start the flow with id `flow`.
    pub fn start_flow(flow: impl Into<String>) -> Self {
        Self::StartFlow { flow: flow.into() }
    }

    /// Agree to the question just asked.
    pub fn agree() -> Self {
        Self::Agree
    }

    /// Decline the question just asked.
    pub fn decline() -> Self {
        Self::Decline
    }

    /// Stop the active flow.
    pub fn cancel_flow() -> Self {
        Self::CancelFlow
    }

    /// Ask which of `flows` the user means.
    pub fn clarify<I, S>(flows: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Clarify {
            flows: flows.into_iter().map(Into::into).collect(),
        }
    }

    /// Ask for a person.
    pub fn ask_for_human() -> Self {
        Self::AskForHuman
    }

    /// Ask for the last message again.
    pub fn repeat() -> Self {
        Self::Repeat
    }

    /// Skip the question just asked.
    pub fn skip_question() -> Self {
        Self::SkipQuestion
    }

    /// The same value command, citing the user's `words` (no effect on other kinds).
    #[must_use]
    pub fn citing(mut self, said: impl Into<String>) -> Self {
        if let Self::SetValue { words, .. } | Self::CorrectValue { words, .. } = &mut self {
            *words = Some(said.into());
        }
        self
    }

    /// The field a value command writes.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::SetValue { field, .. } | Self::CorrectValue { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The command's name as the answer writes it (`set_value`, `start_flow`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Self::SetValue { .. } => "set_value",
            Self::CorrectValue { .. } => "correct_value",
            Self::StartFlow { .. } => "start_flow",
            Self::Agree => "agree",
            Self::Decline => "decline",
            Self::CancelFlow => "cancel_flow",
            Self::AskForHuman => "ask_for_human",
            Self::Repeat => "repeat",
            Self::SkipQuestion => "skip_question",
            Self::Clarify { .. } => "clarify",
        }
    }
}

/// The name and what it is about: `set_value city`, `start_flow billing`, `agree`
/// (the id of its [`DirectiveSource::Command`](crate::directive::DirectiveSource::Command)).
impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SetValue { field, .. } | Self::CorrectValue { field, .. } => {
                write!(f, "{} {field}", self.name())
            }
            Self::StartFlow { flow } => write!(f, "{} {flow}", self.name()),
            Self::Clarify { flows } => write!(f, "{} {}", self.name(), flows.join("|")),
            _ => f.write_str(self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn commands_are_written_with_their_name_as_a_tag() {
        let c = Command::set_value("guests", json!(3)).citing("me, my wife and our kid");
        let v = serde_json::to_value(&c).unwrap();
        assert_eq!(
            v,
            json!({"command": "set_value", "field": "guests", "value": 3, "words": "me, my wife and our kid"})
        );
        assert_eq!(serde_json::from_value::<Command>(v).unwrap(), c);
        let read: Vec<Command> = serde_json::from_value(json!([
            {"command": "start_flow", "flow": "billing"},
            {"command": "decline"},
            {"command": "correct_value", "field": "city", "value": "Naples"}
        ]))
        .unwrap();
        assert_eq!(
            read,
            vec![
                Command::start_flow("billing"),
                Command::decline(),
                Command::correct_value("city", json!("Naples"))
            ]
        );
        assert_eq!(read[0].to_string(), "start_flow billing");
        assert_eq!(read[2].to_string(), "correct_value city");
        assert_eq!(read[1].to_string(), "decline");
    }

    #[test]
    fn an_unknown_command_is_an_error_not_a_silent_nothing() {
        let e = serde_json::from_value::<Command>(json!({"command": "book_everything"}));
        assert!(e.is_err());
        let e = serde_json::from_value::<Command>(json!({"command": "set_value", "value": 1}));
        assert!(e.unwrap_err().to_string().contains("field"));
    }
}
