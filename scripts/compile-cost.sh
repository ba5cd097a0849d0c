#!/usr/bin/env bash
# The compile cost of the macros: CPU seconds (user + sys) of `cargo check -j1` on a
# generated crate with N `#[flow]`s of 8 steps each, for every N given (default 1 10 50).
# Dependencies are checked once first; each measured run re-checks only the generated
# crate (its source is touched), so the numbers are the macros' expansion plus rustc's
# check of what they emit (the median of $REPEAT runs, default 5).
#
#   bash scripts/compile-cost.sh            # 1, 10 and 50 flows
#   bash scripts/compile-cost.sh 1 10 50 100
#   AGENT_CORE=/path/to/agent-core bash scripts/compile-cost.sh   # another checkout
#
# Work files go to $COMPILE_COST_DIR (default: target/compile-cost of this checkout).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
core="${AGENT_CORE:-$root/agent-core}"
work="${COMPILE_COST_DIR:-$root/target/compile-cost}"
counts=("$@")
[ ${#counts[@]} -eq 0 ] && counts=(1 10 50)

flow() {
    local i="$1"
    cat <<EOF
#[flow(title = "Flow $i", when = "the user wants flow $i", data = Booking, required(city, guests))]
pub mod flow_$i {
    #[step(prompt = "Ask the city.", collect(city))]
    fn ask_city() {}

    #[step(prompt = "Ask the date.", collect(check_in), requires(city))]
    fn ask_date() {}

    #[step(prompt = "Ask how many guests.", collect(guests))]
    fn ask_guests() {}

    #[step(auto, requires(city, guests), branches(
        if |b| b.guests > 8 => large_group,
        else => confirm,
    ))]
    fn route() {}

    #[step(prompt = "Confirm.", requires(city), branches(
        when "the user wants another date" => ask_date,
        when "the user gives up" => Directive::abort("gave up"),
    ))]
    fn confirm(v: confirm::View<'_>) -> PreDirective<Booking, ()> {
        PreDirective::new().append_prompt(format!("City: {}", v.city))
    }

    #[step(prompt = "Ask for notes.", collect(notes))]
    fn notes() {}

    #[step(end, reply = "Booked in {city} for {guests}.", requires(city, guests))]
    fn done() {}

    #[step(end, reply = "A specialist will call you about groups.")]
    fn large_group() {}
}

EOF
}

mkdir -p "$work"
for n in "${counts[@]}"; do
    dir="$work/flows_$n"
    mkdir -p "$dir/src"
    cat >"$dir/Cargo.toml" <<EOF
[package]
name = "compile-cost-$n"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
agent-core = { path = "$core" }

[workspace]
EOF
    cp "$root/Cargo.lock" "$dir/Cargo.lock"
    {
        echo "#![allow(dead_code)]"
        echo "use agent_core::typed::prelude::*;"
        echo
        echo "/// What the flows collect."
        echo "#[data]"
        echo "pub struct Booking {"
        echo "    /// City"
        echo "    pub city: String,"
        echo "    /// Check-in date"
        echo "    pub check_in: String,"
        echo "    /// Guests"
        echo "    pub guests: u8,"
        echo "    /// Notes"
        echo "    pub notes: String,"
        echo "}"
        echo
        for i in $(seq 1 "$n"); do flow "$i"; done
    } >"$dir/src/lib.rs"
    export CARGO_TARGET_DIR="$work/target"
    # Dependencies once (not measured).
    cargo check -q -j1 --manifest-path "$dir/Cargo.toml" >/dev/null 2>&1 || {
        cargo check -j1 --manifest-path "$dir/Cargo.toml"
        exit 1
    }
    # The median of $REPEAT runs (default 5).
    runs=()
    for _ in $(seq 1 "${REPEAT:-5}"); do
        touch "$dir/src/lib.rs"
        /usr/bin/time -o "$work/time_$n" -f "%U %S" \
            cargo check -q -j1 --manifest-path "$dir/Cargo.toml" >/dev/null 2>&1
        runs+=("$(tail -1 "$work/time_$n" | awk '{printf "%.2f", $1 + $2}')")
    done
    cpu=$(printf '%s\n' "${runs[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
    echo "flows=$n cpu_s=$cpu per_flow_s=$(echo "$cpu $n" | awk '{printf "%.3f", $1 / $2}')"
done
