//! What the model extracted, value by value: kept only for a field the active flow
//! collects and admitted by the field's constraints; stored (with corrections of
//! earlier values) when what the user said shows it; tentative (shown back for a yes,
//! `tentative.rs`) when it does not but the model read it where the user answered;
//! dropped and noted when nothing ties it to the message; refused with the reason
//! when the constraints do not admit it. Shared by the speculative call, live
//! streaming and corrections.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Turn, guard};
use crate::data::ground::{Evidence, Grounding, normalize, resolve_date};
use crate::data::{AgentContext, AgentData, Extracted, read_extraction};
use crate::error::AgentError;
use crate::flow::Flow;
use crate::provider::Role;
use crate::response::{DroppedValue, Event};

/// What becomes of one value the model extracted.
pub(crate) enum Verdict {
    Keep {
        inferred: bool,
    },
    NotCollected,
    /// Admitted, but nothing the user said shows it (why), while the model read it
    /// where the user answered: the question just asked was for this field, or the
    /// value shares a word with the message. The user is asked.
    Tentative(String),
    /// Nothing the user said shows it, and nothing ties it to the message: the model
    /// made it up ("I need a hotel in Rome" read as 2 guests). Dropped and noted.
    Unsaid(String),
    Refused(String),
}

/// A day more than this many days ahead, said without its year, is shown back before
/// it is stored (see `Turn::year_unsaid`): this year's day passed less than three
/// months ago, so the user may have meant it ("June 1st" said on June 15), while
/// "July 1st" said in November is next year's without a doubt.
const FAR_DAYS: i64 = 275;

/// The user's messages normalised for grounding ([`normalize`]), kept for the turn:
/// the value checks of a turn (extraction, the live-streaming decision, corrections)
/// read the same messages, and normalising them is most of what grounding costs.
#[derive(Default)]
pub(crate) struct SaidMemo {
    /// The texts the memo was made from (the user's messages, then this turn's).
    texts: Vec<String>,
    /// Their normalised forms, consecutive repeats removed.
    said: Option<Arc<[String]>>,
}

impl SaidMemo {
    /// The normalised forms of `texts`, made again only when the texts differ from
    /// the last ones (the history changed: a summary replaced its beginning).
    fn said<'t>(&mut self, texts: impl Iterator<Item = &'t str> + Clone) -> Arc<[String]> {
        if let Some(said) = &self.said
            && texts.clone().eq(self.texts.iter().map(String::as_str))
        {
            return said.clone();
        }
        let texts: Vec<String> = texts.map(str::to_owned).collect();
        let mut said: Vec<String> = texts.iter().map(|t| normalize(t)).collect();
        said.dedup();
        let said: Arc<[String]> = said.into();
        self.texts = texts;
        self.said = Some(said.clone());
        said
    }
}

impl<D: AgentData, C: AgentContext> Turn<'_, D, C> {
    /// Write what the model extracted, field by field: only fields the active flow
    /// collects, only values that what the user said supports (grounding), only values
    /// their field's constraints accept. Everything else is not stored, reported, and
    /// noted for the reply, which asks again with the reason.
    pub(super) async fn absorb_model_data(
        &mut self,
        flow: &Flow<D, C>,
        data: Option<Map<String, Value>>,
    ) -> Result<(), AgentError> {
        self.absorb_answer(flow, data, None).await
    }

    /// [`Self::absorb_model_data`] for the values of an answer whose reply, it says,
    /// asks the question of step `asks` (its `reply_asks_for`).
    pub(super) async fn absorb_answer(
        &mut self,
        flow: &Flow<D, C>,
        data: Option<Map<String, Value>>,
        asks: Option<&str>,
    ) -> Result<(), AgentError> {
        let Some(data) = data else { return Ok(()) };
        let mut patch = Map::new();
        // The user's words each kept value came from, for the commands it records.
        let mut words: Vec<(String, Option<String>)> = Vec::new();
        for (x, verdict) in self.screen(flow, data, asks) {
            match verdict {
                Verdict::Keep { inferred } => {
                    // A value read again supersedes one waiting for a yes.
                    self.tentative.retain(|t| t.field != x.field);
                    if inferred {
                        self.inferred.push(x.field.clone());
                    }
                    words.push((x.field.clone(), x.quote));
                    patch.insert(x.field, x.value);
                }
                Verdict::NotCollected => {
                    tracing::warn!(field = %x.field, flow = %flow.id, "model wrote a field the flow does not collect; dropped");
                    self.dropped.push(x.field);
                }
                Verdict::Tentative(reason) => {
                    tracing::info!(field = %x.field, %reason, "model value not shown by what the user said; tentative");
                    self.hold_tentative(flow, x);
                }
                Verdict::Unsaid(reason) => {
                    tracing::info!(field = %x.field, %reason, "model value nobody said; dropped");
                    self.drop_value(x.field, x.value, reason, false);
                }
                Verdict::Refused(reason) => {
                    tracing::info!(field = %x.field, %reason, "model value refused by the field's constraints");
                    self.rejected.push(format!("{} {reason}", x.field));
                    self.drop_value(x.field, x.value, reason, true);
                }
            }
        }
        self.store_values(flow, patch, words).await
    }

    /// Store `patch` (values screened or confirmed, with the user's words each came
    /// from) in one write: corrections of stored values, the steps that depend on
    /// them reopened, each value recorded as a command, the flow's `on_data_update`
    /// hook run.
    pub(super) async fn store_values(
        &mut self,
        flow: &Flow<D, C>,
        mut patch: Map<String, Value>,
        words: Vec<(String, Option<String>)>,
    ) -> Result<(), AgentError> {
        if patch.is_empty() {
            return Ok(());
        }
        let (corrected, reopened) = self.corrections(flow, &mut patch);
        // A value written again as it was changes nothing: no command for it.
        let before = serde_json::to_value(&self.s.data).ok();
        match self.a.schema.apply(&self.s.data, &patch) {
            Ok(next) => {
                self.s.data = next;
                self.refresh_present();
                let stored = words
                    .into_iter()
                    .filter_map(|(f, w)| {
                        let v = patch.get(&f)?;
                        let same = before.as_ref().and_then(|b| b.get(&f)) == Some(v);
                        (!same).then(|| (f.clone(), v.clone(), w))
                    })
                    .collect();
                let fields: Vec<String> = corrected.iter().map(|(f, ..)| f.clone()).collect();
                self.record_values(stored, &fields);
                // The draft was written with the new value in view (same call), and
                // a re-render shows it in the collected data: no note needed.
                self.changed_now |= !corrected.is_empty();
                for (field, from, to) in corrected {
                    tracing::info!(%field, %from, %to, "the user corrected a stored value");
                    self.unheld.push((field, Value::String(from)));
                }
                // The first step whose answer was cleared asks again, if the flow had
                // moved past it.
                let here = self.s.step.as_deref().and_then(|s| flow.step_pos(s));
                if let (Some(back), Some(here)) = (reopened, here)
                    && back < here
                {
                    self.s.step = Some(flow.steps[back].id.to_string());
                    self.awaiting = false;
                    self.pos_gen += 1;
                }
                if let Some(h) = flow.hooks.on_data_update.clone() {
                    let cx = self.cx();
                    let what = || format!("on_data_update hook of flow `{}`", flow.id);
                    guard::hook(h.call(&cx), what).await?;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "model data rejected by the data type");
                self.rejected.push(e.to_string());
                self.notes
                    .push(format!("Not stored: {e}. Ask the user again for it."));
            }
        }
        Ok(())
    }

    /// The values in `patch` that replace a different stored value (the user corrected
    /// them), as (field, old, new); the fields of steps that `depends_on` a corrected
    /// field are cleared in the same patch, so those steps ask again (the first of them
    /// is returned too). A text written again in another case or spacing ("madrid" for
    /// "Madrid") is no correction and leaves the stored spelling: sampled at
    /// temperature 0.7, Qwen2.5 1.5B re-cased the city it copied while judging "Sounds
    /// good, go ahead", and the confirmation was held as if the details had changed.
    pub(crate) fn corrections(
        &self,
        flow: &Flow<D, C>,
        patch: &mut Map<String, Value>,
    ) -> (Vec<(String, String, String)>, Option<usize>) {
        let Ok(Value::Object(current)) = serde_json::to_value(&self.s.data) else {
            return (Vec::new(), None);
        };
        patch.retain(|k, new| match (current.get(k), &*new) {
            (Some(Value::String(old)), Value::String(n)) => {
                old == n || normalize(old) != normalize(n)
            }
            _ => true,
        });
        let shown = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let corrected: Vec<(String, String, String)> = patch
            .iter()
            .filter_map(|(k, new)| {
                let old = current.get(k).filter(|o| !o.is_null())?;
                (old != new).then(|| (k.clone(), shown(old), shown(new)))
            })
            .collect();
        let mut first = None;
        for (j, step) in flow.steps.iter().enumerate() {
            if !step
                .depends_on
                .iter()
                .any(|d| corrected.iter().any(|(f, ..)| f == d.as_ref()))
            {
                continue;
            }
            for f in &step.collect {
                let present = current.get(f.as_ref()).is_some_and(|v| !v.is_null());
                if present && !patch.contains_key(f.as_ref()) {
                    tracing::info!(field = %f, step = %step.id, "cleared: a field it depends on was corrected");
                    patch.insert(f.to_string(), Value::Null);
                    first = first.or(Some(j));
                }
            }
        }
        (corrected, first)
    }

    /// Judge each value the model extracted, without side effects (the live-streaming
    /// decision simulates the turn with it too). `asks`: the step the answer's reply
    /// asks the question of, when it says.
    pub(crate) fn screen(
        &self,
        flow: &Flow<D, C>,
        data: Map<String, Value>,
        asks: Option<&str>,
    ) -> Vec<(Extracted, Verdict)> {
        // Read when a value needs it: most turns extract nothing to ground.
        let mut evidence = None;
        // Values held for a yes only because the step asked for their field.
        let mut only_asked: Vec<String> = Vec::new();
        let mut out: Vec<(Extracted, Verdict)> = read_extraction(&self.a.schema, data)
            .into_iter()
            .map(|x| {
                if !flow.collectable.iter().any(|f| f.as_ref() == x.field) {
                    return (x, Verdict::NotCollected);
                }
                let mut x = x;
                let mut inferred = false;
                // Why the user's words do not show the value, if they do not.
                let mut unshown = None;
                if self.a.config.grounding
                    && let Some(prop) = self.a.schema.property(&x.field)
                {
                    let ev: &Evidence<'_> = evidence.get_or_insert_with(|| self.evidence());
                    match ev.check(prop, &x.value, x.quote.as_deref()) {
                        Grounding::Grounded => {
                            if let Some(day) = self.day_said_instead(flow, &x) {
                                tracing::info!(field = %x.field, model = %x.value, %day, "date corrected from the user's words");
                                x.value = Value::String(day);
                            }
                        }
                        Grounding::Inferred => inferred = true,
                        Grounding::Unsupported(r) => match self.date_from_message(&x.value) {
                            // A wrong date, while the message names one day: that day.
                            Some(day) => {
                                tracing::info!(field = %x.field, model = %x.value, %day, "date corrected from the user's words");
                                x.value = Value::String(day);
                            }
                            // The stored value written again changes nothing: it was
                            // said or confirmed when it was stored.
                            None if self.stored_already(&x) => {
                                return (x, Verdict::Keep { inferred: false });
                            }
                            None if self.shares_a_word(&x) => unshown = Some(r),
                            None if self.step_asked_for(flow, &x) => {
                                only_asked.push(x.field.clone());
                                unshown = Some(r);
                            }
                            None => return (x, Verdict::Unsaid(r)),
                        },
                    }
                }
                match self.a.schema.admit(&x.field, &x.value) {
                    Err(r) => match self.admissible_day_said(&x.field, &x.value) {
                        // "July 1st" written as this year's past day, for a field that
                        // refuses the past: the next July 1st is what the user meant.
                        Some((day, v)) => {
                            tracing::info!(field = %x.field, model = %x.value, %day, "refused date replaced by the day the user named");
                            x.value = v;
                            match self.year_unsaid(&x) {
                                Some(r) => (x, Verdict::Tentative(r)),
                                None => (x, Verdict::Keep { inferred }),
                            }
                        }
                        None => (x, Verdict::Refused(r)),
                    },
                    Ok(v) => {
                        x.value = v;
                        match unshown.or_else(|| self.year_unsaid(&x)) {
                            Some(r) => (x, Verdict::Tentative(r)),
                            None => (x, Verdict::Keep { inferred }),
                        }
                    }
                }
            })
            .collect();
        self.doubt_asked_only(flow, &mut out, &only_asked, asks);
        if let Some(x) = self.missed_day(flow, &out) {
            tracing::info!(field = %x.field, day = %x.value, "date the model left empty read from the user's words");
            out.push((x, Verdict::Keep { inferred: false }));
        }
        out
    }

    /// The day the latest message names, for the one date field of `flow` still
    /// missing that the model left empty, when the message was read for this flow:
    /// the model took other new values from it ("A hotel in Lisbon on 2026-07-01 for
    /// 2" gave the city and the guests, not the date: 1 in 3 sampled runs at
    /// temperature 0.7), or it answers the step asking for that field and is not a
    /// question ("Is the pool open on July 4th?" is not a check-in date). The day is
    /// the code's reading ([`resolve_date`]: one day named, against the clock), so it
    /// needs no grounding; the field's constraints still apply. Never a correction: a
    /// stored date is the model's to change. Off with grounding (the model's values
    /// as written).
    fn missed_day(&self, flow: &Flow<D, C>, read: &[(Extracted, Verdict)]) -> Option<Extracted> {
        if !self.a.config.grounding {
            return None;
        }
        let missing: Vec<&Arc<str>> = flow
            .collectable
            .iter()
            .filter(|f| {
                self.a.schema.property(f).is_some_and(|p| self.is_date(p))
                    && self
                        .a
                        .schema
                        .index_of(f)
                        .is_some_and(|i| !self.is_present(i))
                    && !read.iter().any(|(x, _)| x.field == f.as_ref())
            })
            .collect();
        let [field] = missing.as_slice() else {
            return None;
        };
        let current = serde_json::to_value(&self.s.data).ok();
        let new_value = read.iter().any(|(x, v)| {
            matches!(v, Verdict::Keep { .. })
                && current.as_ref().and_then(|c| c.get(&x.field)) != Some(&x.value)
        });
        let asked = self
            .awaiting_model_step(flow)
            .is_some_and(|j| flow.steps[j].collect.contains(*field))
            && !self.msg.contains(['?', '¿']);
        if !new_value && !asked {
            return None;
        }
        let day = crate::data::Date::from(self.named_day()?).to_string();
        let value = self.a.schema.admit(field, &Value::String(day)).ok()?;
        Some(Extracted {
            field: field.to_string(),
            value,
            quote: None,
        })
    }

    /// For a date more than [`FAR_DAYS`] days ahead whose year the latest message does
    /// not write out (nor "next year"): why it is shown back before it is stored.
    /// "June 1st" said on June 15 reads as next year's June 1st, which the user may
    /// mean, or may have said for the day just past; the user decides. `None` for
    /// other values, and for the value already stored (said or confirmed when it was
    /// stored).
    fn year_unsaid(&self, x: &Extracted) -> Option<String> {
        let day = x
            .value
            .as_str()
            .and_then(crate::data::validate::parse_date)?;
        let ahead = (day - self.today()).whole_days();
        if ahead <= FAR_DAYS || self.stored_already(x) {
            return None;
        }
        let year = day.year().to_string();
        let said = self.said();
        (!said.contains(&year) && !said.contains("next year")).then(|| {
            format!(
                "{day} is {} months away, and the message names no year",
                ahead / 30
            )
        })
    }

    /// The agent clock's local date: what a day named without a year is read against.
    pub(crate) fn today(&self) -> time::Date {
        self.a.config.time_zone.local(self.a.clock.now_ms()).date()
    }

    /// The one day the latest message names ([`resolve_date`]), read once per turn.
    pub(crate) fn named_day(&self) -> Option<time::Date> {
        *self
            .named_day
            .get_or_init(|| resolve_date(self.msg, self.today()))
    }

    /// A correction the model copied over: it wrote the flow's only date field with a
    /// day an earlier message gave (grounded there: the stored value, 1 of the 2
    /// concierge failures at temperature 0, "make that the 2nd of July" kept July 1st),
    /// while the latest message names one other day and is not a question ("is the
    /// pool open on July 4th?" changes nothing). With two date fields the day could
    /// be the other one's, so the model's reading stands.
    fn day_said_instead(&self, flow: &Flow<D, C>, x: &Extracted) -> Option<String> {
        let mut dates = flow
            .collectable
            .iter()
            .filter(|f| self.a.schema.property(f).is_some_and(|p| self.is_date(p)));
        let only = dates.next().filter(|_| dates.next().is_none())?;
        if only.as_ref() != x.field || self.msg.contains(['?', '¿']) {
            return None;
        }
        let day = self.date_from_message(&x.value)?;
        self.a
            .schema
            .admit(&x.field, &Value::String(day.clone()))
            .is_ok()
            .then_some(day)
    }

    /// The day the latest message names, as `YYYY-MM-DD`, when the model wrote a
    /// different date.
    fn date_from_message(&self, value: &Value) -> Option<String> {
        let written = value.as_str().and_then(crate::data::validate::parse_date)?;
        let day = self.named_day()?;
        (day != written).then(|| crate::data::Date::from(day).to_string())
    }

    /// For a date the field refused: the day the user's latest message naming a day
    /// means (read against the clock, so a day without a year is the next such day),
    /// when it differs from the model's and the field admits it.
    fn admissible_day_said(&self, field: &str, value: &Value) -> Option<(String, Value)> {
        let written = value.as_str().and_then(crate::data::validate::parse_date)?;
        let today = self.today();
        let mut history = self.s.history.iter().rev().filter(|m| m.role == Role::User);
        self.named_day()
            .or_else(|| history.find_map(|m| resolve_date(&m.content, today)))
            .filter(|day| *day != written)
            .and_then(|day| {
                let text = crate::data::Date::from(day).to_string();
                let v = self
                    .a
                    .schema
                    .admit(field, &Value::String(text.clone()))
                    .ok()?;
                Some((text, v))
            })
    }

    /// Whether the awaiting step asked for the field of `x`: the model may have read
    /// the answer in words no check knows ("me and my husband" to "how many
    /// guests?"), so a value its words do not show is held for the user's yes.
    fn step_asked_for(&self, flow: &Flow<D, C>, x: &Extracted) -> bool {
        self.awaiting_model_step(flow)
            .is_some_and(|j| flow.steps[j].collect.iter().any(|f| f.as_ref() == x.field))
    }

    /// Whether a word of the value is a word the user said ("Naples, Italy" for "make
    /// it Naples"): the model read it there, though the words do not show all of it.
    fn shares_a_word(&self, x: &Extracted) -> bool {
        x.value.as_str().is_some_and(|v| {
            let said = self.said();
            normalize(v)
                .split_whitespace()
                .filter(|w| w.chars().count() >= 3)
                .any(|w| said.split_whitespace().any(|s| s == w))
        })
    }

    /// A value held for a yes only because the step asked for its field is not held
    /// when the same answer shows it was not read from the message: the answer made
    /// up another value (one nothing ties to the message: "thanks" read as a city, a
    /// day and 2 guests), or its reply asks for that very field again (the step
    /// `asks` collects only that field: "What's the capital of Australia?" read as
    /// today's date while the reply asks for the date). It is dropped as unsaid, and
    /// the step's question stands.
    fn doubt_asked_only(
        &self,
        flow: &Flow<D, C>,
        out: &mut [(Extracted, Verdict)],
        only_asked: &[String],
        asks: Option<&str>,
    ) {
        if only_asked.is_empty() {
            return;
        }
        let made_up = out.iter().any(|(_, v)| matches!(v, Verdict::Unsaid(_)));
        let asked_again = asks
            .and_then(|id| flow.steps.iter().find(|s| s.id.as_ref() == id))
            .filter(|s| s.collect.len() == 1)
            .map(|s| s.collect[0].as_ref());
        for (x, v) in out.iter_mut() {
            let Verdict::Tentative(r) = v else { continue };
            if !only_asked.contains(&x.field) {
                continue;
            }
            let why = if made_up {
                "the same reading made up another value"
            } else if asked_again == Some(x.field.as_str()) {
                "the reply written with it asks for it again"
            } else {
                continue;
            };
            *v = Verdict::Unsaid(format!("{r}, and {why}"));
        }
    }

    /// Whether `prop` is a date field (`format: date`), also an optional one.
    pub(crate) fn is_date(&self, prop: &Value) -> bool {
        self.a
            .schema
            .shape(prop)
            .get("format")
            .and_then(Value::as_str)
            == Some("date")
    }

    /// Whether `x` is the value its field holds already.
    fn stored_already(&self, x: &Extracted) -> bool {
        serde_json::to_value(&self.s.data)
            .ok()
            .is_some_and(|d| d.get(&x.field) == Some(&x.value))
    }

    /// Record a value that was not stored; `refused` values broke a constraint (the
    /// user is told why), the others were never said (the user is simply asked).
    pub(super) fn drop_value(
        &mut self,
        field: String,
        value: Value,
        reason: String,
        refused: bool,
    ) {
        let shown = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // Small models repeat these lines to the user: they are written to be safe
        // to repeat.
        let note = if refused {
            format!("{field} {shown} is not possible: it {reason}. Ask for {field} again.")
        } else {
            format!("{field} is not known yet; ask for it when needed.")
        };
        // Read twice this turn (a hand-over's answer, then the flow handed to): said
        // and reported once.
        if self.notes.contains(&note) {
            return;
        }
        self.notes.push(note);
        if refused && self.a.provider.profile().composes_questions() {
            // Code says why, before the question it writes (`converse.rs`).
            let name = super::question::field_name(&self.a.schema, &field);
            self.told
                .push(format!("{shown} is not possible for {name}: it {reason}."));
        } else {
            self.to_tell |= refused;
        }
        let d = DroppedValue {
            field,
            value,
            reason,
        };
        self.emit(Event::DataDropped(d.clone()));
        if !refused {
            self.ungrounded.push(d);
        }
    }

    /// What the user said this session, for grounding.
    pub(crate) fn evidence(&self) -> Evidence<'_> {
        let texts = self
            .s
            .history
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .chain(std::iter::once(self.msg));
        let said = self
            .said_memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .said(texts);
        Evidence {
            said,
            today: self.today(),
            defs: self.a.schema.defs(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_memo_normalises_once_and_again_when_the_messages_change() {
        let mut memo = SaidMemo::default();
        let first = memo.said(["Lisbon, please", "Lisbon, please", "2 guests"].into_iter());
        assert_eq!(&*first, [" lisbon please ", " 2 guests "]);
        let again = memo.said(["Lisbon, please", "Lisbon, please", "2 guests"].into_iter());
        assert!(Arc::ptr_eq(&first, &again));
        let changed = memo.said(["Lisbon, please", "3 guests"].into_iter());
        assert_eq!(&*changed, [" lisbon please ", " 3 guests "]);
        let shorter = memo.said(["Lisbon, please"].into_iter());
        assert_eq!(&*shorter, [" lisbon please "]);
        assert!(memo.said(std::iter::empty()).is_empty());
    }
}
