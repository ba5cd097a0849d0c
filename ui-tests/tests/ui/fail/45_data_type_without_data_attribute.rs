//! `data =` naming a type that is not a `#[data]` struct.
use agent_core::typed::prelude::*;

#[derive(Debug, Clone, Default)]
pub struct Plain {
    pub city: Option<String>,
}

#[flow(data = Plain)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}
}

fn main() {}
