//! `#[data]` on a tuple struct.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking(String, u8);

fn main() {}
