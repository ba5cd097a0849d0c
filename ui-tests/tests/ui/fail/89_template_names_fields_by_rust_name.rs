//! A template names a field as Rust code does, even when serde renames it
//! (`#[serde(rename_all = "kebab-case")]`): `{start_city}` renders the `start-city` value,
//! and `{start-city}` is a compile error naming the Rust name. A placeholder that is no
//! field gets the data type's list.
use agent_core::typed::prelude::*;

#[data]
#[serde(rename_all = "kebab-case")]
pub struct Trip {
    /// Where the trip starts
    pub start_city: String,
}

#[flow(data = Trip)]
mod trip {
    #[step(prompt = "Ask where the trip starts.", collect(start_city))]
    fn ask_start() {}

    #[step(end, reply = "Leaving from {start-city}.")]
    fn done() {}

    #[step(end, reply = "Leaving from {start_cty}.", requires(start_city), jump_target)]
    fn typo() {}
}

fn main() {}
