//! Forms an outside audit found wrongly rejected: a typed step of this flow without
//! `self::` (`=> Step::confirm`), a capitalised step fn named as a branch target (a
//! step, not a flow type), and a tool documented with `#[doc = concat!(..)]`.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city), branches(
        when "the user is sure" => Step::confirm,
        when "the user hesitates" => self::Step::Recheck,
        else => Recheck,
    ))]
    fn ask_city() {}

    #[allow(non_snake_case)]
    #[step(prompt = "Check the city again.", jump_target)]
    fn Recheck() {}

    #[step(end, prompt = "Confirm.", tools(lookup))]
    fn confirm() {}
}

#[doc = concat!("Look up a ", "city.")]
#[tool]
async fn lookup(
    #[doc = concat!("The city ", "name")] city: String,
) -> Result<ToolOutput, ToolError> {
    Ok(ToolOutput::text(city))
}

fn main() {
    let f = booking::flow().expect("valid");
    assert_eq!(f.step("ask_city").expect("step").branch_table().len(), 3);
    assert_eq!(Tool::<Booking, ()>::description(&lookup), "Look up a city.");
    let p = Tool::<Booking, ()>::parameters(&lookup);
    assert_eq!(
        p["properties"]["city"]["description"], "The city name",
        "{p}"
    );
}
