//! A `finalize` hook (post-LLM) returning a `PreDirective`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

#[flow(data = Booking)]
mod booking {
    #[step(end, prompt = "Confirm.", finalize = after)]
    fn confirm() {}

    fn after(_v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().inject_tool_arc(todo_tool())
    }

    fn todo_tool() -> std::sync::Arc<dyn Tool<Booking, ()>> {
        unimplemented!()
    }
}

fn main() {}
