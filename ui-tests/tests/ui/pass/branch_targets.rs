//! Every kind of branch target: a step of this flow, another flow (by type), a typed
//! step of another flow, and directives; labels; `if`, `when`, both, `else`.
use agent_core::typed::prelude::*;

#[data]
pub struct Booking {
    /// City
    pub city: String,
    /// Guests
    pub guests: u8,
    /// Pets
    pub pets: bool,
}

#[flow(data = Booking, required(city, guests))]
mod booking {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    #[step(auto, requires(city, guests), branches(
        if |b| b.guests > 8 => large_group as "large group",
        if |b| b.city == "Atlantis" => Directive::abort("no such city"),
        if |b| b.pets.is_some_and(|p| *p) => pets::Step::ask_pet,
        else => confirm,
    ))]
    fn route() {}

    #[step(end, prompt = "Confirm.", branches(
        when "the user asks about pets" => PetsFlow,
        when "the user wants another date" => ask_guests,
        if |v| v.guests.is_some_and(|g| *g < 2) when "the user travels alone" => Directive::reply("Solo trip!").data(Booking::patch().guests(1)),
        when "the user is done" => Directive::complete_then(Directive::go_to::<PetsFlow>()),
        when "the user wants to start over" => Directive::reset(),
    ))]
    fn confirm() {}

    #[step(end, reply = "A specialist will call you.")]
    fn large_group() {}
}

#[flow(data = Booking, on_complete = BookingFlow)]
mod pets {
    #[step(prompt = "Ask about the pet.", collect(pets), jump_target)]
    fn ask_pet() {}
}

fn main() {
    let f = booking::flow().expect("valid");
    assert_eq!(f.id(), "booking");
    assert_eq!(f.steps().len(), 5);
    let route = f.step("route").expect("route");
    assert_eq!(route.branch_table().len(), 4);
    assert_eq!(route.branch_table()[0].label_text(), Some("large group"));
    let p = pets::flow().expect("valid");
    assert_eq!(p.id(), "pets");
    assert_eq!(<PetsFlow as FlowDef>::ID, "pets");
    assert_eq!(booking::Step::confirm.id(), "confirm");
    assert_eq!(booking::Step::ALL.len(), 5);
    let d = booking::diagram();
    assert!(d.contains("s_route -->|\"large group\"| s_large_group"), "{d}");
    assert!(d.contains("f_PetsFlow[[\"PetsFlow\"]]"), "{d}");
    assert!(d.contains("c_pets_Step_ask_pet"), "{d}");
}
