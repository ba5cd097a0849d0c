//! A generic `#[data]` struct and one with a lifetime: one error each, no follow-ons.
use agent_core::typed::prelude::*;

#[data]
pub struct Gen<T> {
    /// Value
    pub value: T,
}

#[data]
pub struct Borrowed<'a> {
    /// City
    pub city: &'a str,
}

fn main() {}
