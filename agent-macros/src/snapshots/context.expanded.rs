#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::default::Default,
    ::agent_core::__private::serde::Serialize,
    ::agent_core::__private::serde::Deserialize
)]
#[serde(crate = "::agent_core::__private::serde")]
pub struct Concierge {
    /// Loyalty tier
    pub tier: String,
}
///The fields of the context type [`Concierge`].
#[allow(non_camel_case_types, dead_code)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::cmp::PartialEq,
    ::core::cmp::Eq,
    ::core::hash::Hash
)]
pub enum ConciergeField {
    ///Loyalty tier
    tier,
}
#[allow(dead_code)]
impl ConciergeField {
    /// Every field, in declaration order.
    pub const ALL: [Self; 1usize] = [Self::tier];
    /// The field's name (its JSON key).
    pub const fn name(self) -> &'static str {
        match self {
            Self::tier => "tier",
        }
    }
}
///A typed write to [`Concierge`]: every field optional, set with the fluent methods.
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::default::Default,
    ::core::cmp::PartialEq
)]
#[must_use]
#[allow(dead_code)]
pub struct ConciergePatch {
    map: ::agent_core::__private::Patch,
}
#[allow(dead_code)]
impl ConciergePatch {
    ///Set `tier`.
    pub fn tier(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("tier".into(), ::agent_core::__private::to_json(&value));
        self
    }
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The JSON object.
    pub fn into_patch(self) -> ::agent_core::__private::Patch {
        self.map
    }
}
impl ::core::convert::From<ConciergePatch> for ::agent_core::__private::Patch {
    fn from(p: ConciergePatch) -> Self {
        p.map
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::IntoContextPatch for ConciergePatch {
    fn into_context_patch(self) -> ::agent_core::__private::Patch {
        self.map
    }
}
#[allow(dead_code)]
impl Concierge {
    /// Start a typed write.
    pub fn patch() -> ConciergePatch {
        ConciergePatch::default()
    }
    /// Field names in declaration order.
    pub const FIELDS: &'static [&'static str] = &["tier"];
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::ContextType for Concierge {
    type Field = ConciergeField;
    type Patch = ConciergePatch;
    const FIELDS: &'static [&'static str] = &["tier"];
}
