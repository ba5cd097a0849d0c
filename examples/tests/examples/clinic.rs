//! `clinic` on its scripted model: the opening hours interrupt the booking, which asks
//! its question again in the same turn and then books on the patient's yes.

#[allow(dead_code)]
#[path = "../../examples/clinic.rs"]
mod clinic;

use agent_core::AgentConfig;
use agent_core::response::StoppedReason;

#[tokio::test]
async fn the_booking_resumes_after_the_hours_and_books_on_a_yes() {
    let (model, transcript, printed) = run_example!(clinic, AgentConfig::default());
    assert_eq!(transcript.failures(), 0, "{printed}");
    let rs: Vec<_> = (0..6).filter_map(|i| transcript.response(i)).collect();
    assert_eq!(rs.len(), 6, "{printed}");

    assert_eq!(rs[0].flow.as_deref(), Some("appointment"));
    assert_eq!(rs[1].step.as_deref(), Some("ask_reason"));
    assert_eq!(rs[1].data.patient.as_deref(), Some("Anna Berg"));

    // The hours are code's reply; the booking waited and asks its question again.
    assert!(
        rs[2].message.starts_with("We're open Monday to Friday"),
        "{}",
        rs[2].message
    );
    assert!(rs[2].message.ends_with("And what is the visit for?"));
    assert_eq!(
        (rs[2].flow.as_deref(), rs[2].step.as_deref()),
        (Some("appointment"), Some("ask_reason"))
    );
    assert_eq!(rs[2].data.patient.as_deref(), Some("Anna Berg"));

    // The summary is code's, from the state.
    let day = clinic::next_monday();
    assert_eq!(
        rs[4].message,
        format!("Here is your appointment: a check-up for Anna Berg on {day}. Shall I book it?")
    );
    // The yes books it; the reply is the tool's.
    assert_eq!(rs[5].stopped, StoppedReason::Reply);
    assert_eq!(rs[5].tool_calls[0].name, "book_appointment");
    let id = format!("APT-{}", day.to_string().replace('-', ""));
    assert_eq!(rs[5].data.appointment_id.as_deref(), Some(id.as_str()));
    assert!(rs[5].message.contains(&id), "{}", rs[5].message);
    assert_eq!(rs[5].flow, None);
    assert_eq!(model.unused(), 0, "{printed}");
}
