//! A view's field the step does not `requires` is an `Unrequired<'_, T, _>`, read as the
//! `Option<&T>` it holds: these forms compile.
use agent_core::typed::prelude::*;

/// What the agent collects.
#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
}

fn shout(city: Option<&String>) -> String {
    city.map(|c| c.to_uppercase()).unwrap_or_default()
}

#[flow(data = Booking)]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(auto, branches(
        if |b| b.guests.is_some_and(|g| *g > 8) => confirm,
        if |b| b.guests == Some(&2) => confirm,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.", requires(city))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        let guests = v.guests; // `Copy`
        let a: Option<&u8> = v.guests.get();
        let b: Option<&u8> = v.guests.into();
        let c = v.guests.map(|g| g + 1).unwrap_or(1);
        let d = v.guests.copied().unwrap_or_default();
        let e = v.guests.is_some() || v.guests.is_none();
        let f = if let Some(g) = *v.guests { *g } else { 0 };
        let g = match v.guests.get() {
            Some(g) => *g,
            None => 0,
        };
        let h = matches!(*v.guests, Some(2));
        let i = v.guests.unwrap_or(&0);
        let j = guests.as_deref().copied();
        let k = v.guests.iter().count();
        let l = v.guests.map_or(0, |g| *g);
        PreDirective::new().append_prompt(format!(
            "{} {a:?} {b:?} {c} {d} {e} {f} {g} {h} {i} {j:?} {k} {l} {}",
            v.city,
            super::shout(Some(&v.city)),
        ))
    }
}

fn main() {
    assert!(booking::flow().is_ok());
}
