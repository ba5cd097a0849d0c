//! `#[field(validate = path)]` names a `fn(T) -> Result<T, String>` with `T` the
//! field's value type: a check of another shape is a type error on the path.
use agent_core::typed::prelude::*;

fn takes_a_number(n: u8) -> Result<u8, String> {
    Ok(n)
}

fn returns_a_bool(city: String) -> bool {
    !city.is_empty()
}

#[data]
pub struct Stay {
    /// City
    #[field(validate = takes_a_number)]
    pub city: String,
    /// Hotel
    #[field(validate = returns_a_bool)]
    pub hotel: String,
    /// Guests
    #[field(validate = no_such_check)]
    pub guests: u8,
}

fn main() {}
