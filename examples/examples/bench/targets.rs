//! What the table compares the measurements with: the budgets of the project design
//! and the TypeScript figures it quotes (a quoted reference, not measured here).

/// The TypeScript column: µs of framework time per turn of the public TypeScript
/// implementation with an instant scripted provider, for the scripts 1 flow, 2 flows and
/// 2 flows + 1 signal. Quoted from the project design (DESIGN.md §10), not measured by
/// this benchmark; the table labels the column and its footnote says so.
pub(crate) const TS_REFERENCE_US: [f64; 3] = [47.0, 65.0, 80.0];

/// Budget: framework time per turn in memory.
pub(crate) const BUDGET_TURN_US: f64 = 5.0;
/// Budget: turns per second across independent sessions, per core (200k on 2 cores).
pub(crate) const BUDGET_TURNS_PER_S_PER_CORE: f64 = 100_000.0;
/// Budget: bytes per idle session, history text excluded.
pub(crate) const BUDGET_IDLE_BYTES: usize = 2048;
/// Budget: µs added between the provider's first chunk and the consumer's first delta.
pub(crate) const BUDGET_FIRST_DELTA_US: f64 = 50.0;
