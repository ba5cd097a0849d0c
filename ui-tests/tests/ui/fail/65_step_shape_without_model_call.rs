//! `when` branches on a `reply` step and `finalize` on an `auto` step: both need a model
//! call the step does not make.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(auto, finalize = after)]
    fn route() {}

    #[step(end, reply = "Thanks!", branches(
        when "the user wants more" => route,
    ))]
    fn thanks() {}

    fn after(_v: route::View<'_>) -> impl IntoDirective<Booking> {
        Directive::complete()
    }
}

fn main() {}
