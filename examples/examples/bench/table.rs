//! The report as the Markdown table of the README (the machine line, the rows and
//! their footnotes) and as JSON.

use std::fmt::Write as _;

use super::processes::{HOT_TURNS_PER_SESSION, PROCESSES};
use super::report::Report;
use super::stores::STORE_WORKERS;
use super::targets::{
    BUDGET_FIRST_DELTA_US, BUDGET_IDLE_BYTES, BUDGET_TURN_US, BUDGET_TURNS_PER_S_PER_CORE,
};

/// Labels of the table's rows, in order (the store rows carry the store's name).
pub const ROW_LABELS: [&str; 12] = [
    "framework time per turn, 1 flow",
    "framework time per turn, 2 flows",
    "framework time per turn, 2 flows + 1 signal",
    "model calls per turn, booking, one field per turn",
    "model calls, booking, all data in one message",
    "turns/s on independent sessions",
    "bytes per idle session",
    "store throughput, memory",
    "store throughput, SQLite",
    "store throughput, PostgreSQL",
    "store throughput, Redis",
    "streaming first-delta latency",
];

fn status(met: bool) -> &'static str {
    if met { "met" } else { "**not met**" }
}

/// `1234567` → `1,234,567`.
fn thousands(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// `TS ÷ ours` as "N× faster" (or "N× slower" below 1).
fn speedup(ratio: f64) -> String {
    if !ratio.is_finite() {
        "n/a".into()
    } else if ratio >= 1.0 {
        format!("{ratio:.1}× faster")
    } else {
        format!("{:.1}× slower", 1.0 / ratio)
    }
}

fn us(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2} µs")
    } else {
        format!("{v:.1} µs")
    }
}

impl Report {
    /// The report as JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// The Markdown table, with the machine line above and the footnotes below.
    pub fn to_markdown(&self) -> String {
        let mut rows: Vec<[String; 6]> = Vec::new();
        let dash = || "—".to_owned();

        for (t, label) in self.turn_time.iter().zip(&ROW_LABELS[..3]) {
            let s = t.us_per_turn;
            rows.push([
                format!("{label} ¹"),
                format!("{} (p90 {})", us(s.median), us(s.p90)),
                format!("{:.0} µs", t.ts_reference_us),
                speedup(t.ts_reference_us / s.median),
                format!("< {BUDGET_TURN_US:.0} µs"),
                status(s.median < BUDGET_TURN_US).into(),
            ]);
        }

        let mc = &self.model_calls;
        let mean = mc.one_field_mean();
        let total: u32 = mc.one_field_per_turn.iter().sum();
        rows.push([
            format!("{} ²", ROW_LABELS[3]),
            format!(
                "{mean:.1} ({total} calls in {} turns)",
                mc.one_field_per_turn.len()
            ),
            "2–5".into(),
            format!("{:.0}–{:.0}× fewer", 2.0 / mean, 5.0 / mean),
            "1".into(),
            status(mc.one_field_per_turn.iter().all(|&c| c == 1)).into(),
        ]);
        let landed = mc.all_in_one_step.as_deref() == Some("confirm");
        rows.push([
            format!("{} ²", ROW_LABELS[4]),
            if landed {
                format!(
                    "{} calls in {} turn",
                    mc.all_in_one_calls, mc.all_in_one_turns
                )
            } else {
                format!(
                    "{} calls, stopped at {:?} instead of confirm",
                    mc.all_in_one_calls, mc.all_in_one_step
                )
            },
            "4 turns, 2–5 calls each".into(),
            "4× fewer turns".into(),
            "≤ 2 calls, 1 turn".into(),
            status(landed && mc.all_in_one_calls <= 2).into(),
        ]);

        let tp = &self.throughput;
        let budget = BUDGET_TURNS_PER_S_PER_CORE * tp.workers as f64;
        rows.push([
            format!(
                "{}, {} cores, {} sessions in flight ³",
                ROW_LABELS[5], tp.workers, tp.sessions
            ),
            format!(
                "{} (p90 {})",
                thousands(tp.rate.median_turns_per_s),
                thousands(tp.rate.p90_turns_per_s)
            ),
            dash(),
            dash(),
            if tp.workers == 2 {
                "≥ 200,000 on 2 cores".to_owned()
            } else {
                format!("≥ {} (200,000 on 2 cores)", thousands(budget))
            },
            status(tp.rate.median_turns_per_s >= budget).into(),
        ]);

        let idle = &self.idle_session;
        rows.push([
            format!("{} ⁴", ROW_LABELS[6]),
            format!(
                "{} B + {} B history text ({} B stored)",
                thousands(idle.without_history_bytes as f64),
                thousands(idle.history_text_bytes as f64),
                thousands(idle.stored_bytes as f64)
            ),
            dash(),
            dash(),
            format!("< {} B + history", thousands(BUDGET_IDLE_BYTES as f64)),
            status(idle.without_history_bytes < BUDGET_IDLE_BYTES).into(),
        ]);

        for s in &self.stores {
            rows.push([
                format!("store throughput, {} ⁵", s.store),
                match (&s.rate, &s.note) {
                    (Some(r), _) => format!(
                        "{} turns/s (p90 {})",
                        thousands(r.median_turns_per_s),
                        thousands(r.p90_turns_per_s)
                    ),
                    (None, Some(note)) => note.clone(),
                    (None, None) => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        for l in &self.lease {
            rows.push([
                format!("session lease per turn, {} ⁷", l.store),
                match (
                    l.overhead_us(),
                    l.with_lease_us,
                    l.without_lease_us,
                    &l.note,
                ) {
                    (Some(o), Some(w), Some(wo), _) => format!(
                        "{}{} ({} with, {} without; acquire + release alone {})",
                        if o >= 0.0 { "+" } else { "" },
                        us(o),
                        us(w.median),
                        us(wo.median),
                        l.acquire_release_us
                            .map_or_else(|| "n/a".into(), |p| us(p.median)),
                    ),
                    (_, _, _, Some(note)) => note.clone(),
                    _ => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        for p in &self.processes {
            rows.push([
                format!(
                    "turns/s, {} processes sharing {}, {} ⁸",
                    p.processes,
                    p.store,
                    p.sessions.label()
                ),
                match (&p.rate, &p.turn_us, &p.note) {
                    (Some(r), Some(t), _) => {
                        let mut cell = format!(
                            "{} (p90 {}); per turn {} (p90 {}, slowest {})",
                            thousands(r.median_turns_per_s),
                            thousands(r.p90_turns_per_s),
                            us(t.median),
                            us(t.p90),
                            p.slowest_turn_us.map_or_else(|| "n/a".into(), us),
                        );
                        if let Some(share) = p.first_done_share {
                            let _ = write!(cell, "; first process done at {:.0} %", share * 100.0);
                        }
                        cell
                    }
                    (_, _, Some(note)) => note.clone(),
                    _ => "not measured".into(),
                },
                dash(),
                dash(),
                dash(),
                dash(),
            ]);
        }

        let st = &self.streaming;
        let live = st.live_turns == st.turns && st.turns > 0;
        rows.push([
            format!("{} ⁶", ROW_LABELS[11]),
            if st.live_turns == 0 {
                "no delta arrived before the model finished".into()
            } else {
                let mut r = format!(
                    "{} (p90 {})",
                    us(st.first_delta_us.median),
                    us(st.first_delta_us.p90)
                );
                if !live {
                    let _ = write!(r, ", live in {} of {} turns", st.live_turns, st.turns);
                }
                r
            },
            dash(),
            dash(),
            format!("< {BUDGET_FIRST_DELTA_US:.0} µs added"),
            status(live && st.first_delta_us.median < BUDGET_FIRST_DELTA_US).into(),
        ]);

        let m = &self.machine;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Machine: {} cores{}; build: {}; mode: {} ({} measured batches per timing after {} warm-up).\n",
            m.cores,
            m.cpu
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default(),
            m.profile,
            m.mode,
            self.sizes.batches,
            self.sizes.warmup,
        );
        let header = [
            "measurement",
            "result (median)",
            "TypeScript (quoted, DESIGN.md §10)",
            "ratio",
            "budget",
            "status",
        ];
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
        for r in &rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        let sz = &self.sizes;
        let _ = write!(
            out,
            "\n¹ Median (and 90th percentile) over {batches} batches of {turns} turns on a current-thread runtime, memory store, \
the scripts of `agent-core/benches/turn.rs`: the user keeps not answering and the model re-asks, a new session every 4 turns. \
The provider answers every call from a constant string, so what is timed is the engine (routing, walk, prompt assembly, \
parsing, merging, saving); its own cost, timed alone, is {provider:.0} ns per call and is not subtracted. \
The turns of a batch run inside one `block_on` (the harness is not timed); the store is emptied between batches, untimed. \
The TypeScript column is quoted from DESIGN.md §10 (the public TypeScript implementation with an instant scripted provider), not measured here.\n\
² Counted from `AgentResponse::model_calls` with the scripted provider on the booking flow of `agent-core/tests/booking.rs` \
(one field per turn: greeting, city, date, guests; per turn: {per_turn:?}).\n\
³ {sessions} sessions of 4 turns in flight at once on a multi-thread runtime with one worker per core, memory store, \
the 1-flow script; median of {batches} samples of {per_sample} such batch(es); budget 100,000 turns/s per core.\n\
⁴ The encoded session in the store after the {idle_turns}-turn booking conversation of ², idle on the confirm step; \
history text is the message text it keeps (the budget excludes it).\n\
⁵ As `agent-core/benches/stores.rs`: the scripted provider, the 1-flow script, {sessions} independent sessions \
of 4 turns at a time on {store_workers} runtime workers; median of {store_samples} samples of {store_per_sample} batch(es); SQLite on a temp file.\n\
⁶ From the provider's stream yielding its first chunk (ending inside the reply's text) to the consumer of `respond_stream` \
receiving the first text delta, timestamps taken in the provider's stream and at the consumer; median of {stream_samples} turns \
of the 1-flow script on one thread.\n\
⁷ What the session lease (take, renew timer, fenced save, release) adds to a turn: median µs per turn of {lease_turns} sequential \
turns on one thread (the scripted provider, the 1-flow script, a new session every 4 turns) with the lease minus the same \
without it (a store handle without lease support), batches alternating, {store_samples} samples; and one acquire + release \
pair on the store alone.\n\
⁸ {processes} OS processes (copies of this executable), each with its own agent, one thread and its own connections to one \
PostgreSQL table, the scripted provider and the 1-flow script; each takes {process_turns} sequential turns after {process_warmup} \
warm-up turns and a start signal. Distinct sessions: each process on its own (a new one every 4 turns). One hot session: all \
on the same session, whose lease lets one turn run at a time (a waiting turn polls, 2 ms doubling to 100 ms); they move together \
to a new one every {hot} turns, keeping its history short. Turns/s: all turns over the wall time from the first turn's start to \
the last one's end, median (and slow p90) of {process_samples} run(s); per turn: each turn's time as its process saw it, \
waiting for the lease included; first process done: when the first process had finished, as a share of that wall time.\n",
            batches = sz.batches,
            turns = sz.turns_per_batch,
            provider = self.provider_ns_per_call,
            per_turn = mc.one_field_per_turn,
            sessions = sz.sessions,
            per_sample = sz.batches_per_sample,
            idle_turns = idle.turns,
            store_workers = STORE_WORKERS,
            store_samples = sz.store_samples,
            store_per_sample = sz.store_batches_per_sample,
            stream_samples = st.first_delta_us.samples,
            lease_turns = sz.lease_turns_per_batch,
            processes = PROCESSES,
            process_turns = sz.process_turns,
            process_warmup = sz.process_warmup_turns,
            hot = HOT_TURNS_PER_SESSION,
            process_samples = sz.process_samples,
        );
        out
    }
}
