#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::default::Default,
    ::agent_core::__private::serde::Serialize,
    ::agent_core::__private::serde::Deserialize,
    ::agent_core::__private::schemars::JsonSchema
)]
#[serde(crate = "::agent_core::__private::serde")]
#[schemars(crate = "::agent_core::__private::schemars")]
#[serde(rename_all = "camelCase")]
pub struct Stay {
    /// Check-in date
    pub check_in: ::core::option::Option<String>,
    #[serde(rename = "n_guests", alias = "guestCount")]
    pub guests: ::core::option::Option<u8>,
    pub r#type: ::core::option::Option<String>,
    #[serde(skip)]
    pub cache: ::core::option::Option<String>,
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataPatch for StayPatch {
    type Data = Stay;
}
///The fields of the data type [`Stay`].
#[allow(non_camel_case_types, dead_code)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::cmp::PartialEq,
    ::core::cmp::Eq,
    ::core::hash::Hash
)]
pub enum StayField {
    ///Check-in date
    check_in,
    ///The `guests` field.
    guests,
    ///The `type` field.
    r#type,
}
#[allow(dead_code)]
impl StayField {
    /// Every field, in declaration order.
    pub const ALL: [Self; 3usize] = [Self::check_in, Self::guests, Self::r#type];
    /// The field's name (its JSON key).
    pub const fn name(self) -> &'static str {
        match self {
            Self::check_in => "checkIn",
            Self::guests => "n_guests",
            Self::r#type => "type",
        }
    }
}
///A typed write to [`Stay`]: every field optional, set with the fluent methods.
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::default::Default,
    ::core::cmp::PartialEq
)]
#[must_use]
#[allow(dead_code)]
pub struct StayPatch {
    map: ::agent_core::__private::Patch,
}
#[allow(dead_code)]
impl StayPatch {
    ///Set `checkIn`.
    pub fn check_in(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("checkIn".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `checkIn` (write `null`).
    pub fn clear_check_in(mut self) -> Self {
        self.map
            .insert("checkIn".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `n_guests`.
    pub fn guests(mut self, value: u8) -> Self {
        self.map.insert("n_guests".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `n_guests` (write `null`).
    pub fn clear_guests(mut self) -> Self {
        self.map
            .insert("n_guests".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `type`.
    pub fn r#type(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("type".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `type` (write `null`).
    pub fn clear_type(mut self) -> Self {
        self.map.insert("type".into(), ::agent_core::__private::serde_json::Value::Null);
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
impl ::core::convert::From<StayPatch> for ::agent_core::__private::Patch {
    fn from(p: StayPatch) -> Self {
        p.map
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::IntoDataPatch for StayPatch {
    fn into_data_patch(self) -> ::agent_core::__private::Patch {
        self.map
    }
}
#[allow(dead_code)]
impl Stay {
    /// Start a typed write.
    pub fn patch() -> StayPatch {
        StayPatch::default()
    }
    /// Field names in declaration order.
    pub const FIELDS: &'static [&'static str] = &["checkIn", "n_guests", "type"];
    /// The JSON schema of the data (field doc comments are the descriptions).
    pub fn json_schema() -> ::agent_core::__private::serde_json::Value {
        ::agent_core::__private::schemars::schema_for!(Stay).to_value()
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataType for Stay {
    type Field = StayField;
    type Patch = StayPatch;
    const FIELDS: &'static [&'static str] = &["checkIn", "n_guests", "type"];
    fn json_name(field: &str) -> ::core::option::Option<&'static str> {
        match field {
            "check_in" => ::core::option::Option::Some("checkIn"),
            "guests" => ::core::option::Option::Some("n_guests"),
            "type" => ::core::option::Option::Some("type"),
            _ => ::core::option::Option::None,
        }
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::FlowData for Stay {
    type Checked = Self;
}
#[doc(hidden)]
#[allow(non_camel_case_types, non_snake_case, dead_code, missing_docs)]
pub mod __agent_fields_Stay {
    pub enum check_in {}
    pub enum guests {}
    pub enum r#type {}
}
///What hooks and predicates of a step see of [`Stay`]: the fields the step `requires` are plain values, the others [`Unrequired`](::agent_core::typed::Unrequired) (read as an `Option<&T>`: `.get()`). Derefs to the turn's `Cx` (`context()`, `message()`, ...). Flows name each step's view `flow::step::View<'_>`.
#[allow(dead_code)]
pub struct StayView<
    'a,
    C,
    M0: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M1: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M2: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
> {
    ///Check-in date (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub check_in: <M0 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::check_in,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub guests: <M1 as ::agent_core::__private::Mode>::Of<
        'a,
        u8,
        __agent_fields_Stay::guests,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub r#type: <M2 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::r#type,
    >,
    __cx: &'a ::agent_core::__private::Cx<'a, Stay, C>,
}
#[allow(dead_code)]
impl<
    'a,
    C,
    M0: ::agent_core::__private::Mode,
    M1: ::agent_core::__private::Mode,
    M2: ::agent_core::__private::Mode,
> StayView<'a, C, M0, M1, M2> {
    /// The view of the turn, or `None` when a field the step requires is missing.
    #[doc(hidden)]
    pub fn __new(
        cx: &'a ::agent_core::__private::Cx<'a, Stay, C>,
    ) -> ::core::option::Option<Self> {
        let data = cx.data();
        ::core::option::Option::Some(Self {
            check_in: <M0 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::check_in,
            >(&data.check_in)?,
            guests: <M1 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::guests,
            >(&data.guests)?,
            r#type: <M2 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::r#type,
            >(&data.r#type)?,
            __cx: cx,
        })
    }
    /// The turn's view (data, context, message, history, dispatch).
    pub fn cx(&self) -> &'a ::agent_core::__private::Cx<'a, Stay, C> {
        self.__cx
    }
}
impl<
    'a,
    C,
    M0: ::agent_core::__private::Mode,
    M1: ::agent_core::__private::Mode,
    M2: ::agent_core::__private::Mode,
> ::core::ops::Deref for StayView<'a, C, M0, M1, M2> {
    type Target = ::agent_core::__private::Cx<'a, Stay, C>;
    fn deref(&self) -> &Self::Target {
        self.__cx
    }
}
#[doc(hidden)]
impl<
    'a,
    C: 'a,
    M0: ::agent_core::__private::Mode,
    M1: ::agent_core::__private::Mode,
    M2: ::agent_core::__private::Mode,
> ::agent_core::__private::ViewOf<'a, C, (M0, M1, M2)> for Stay {
    type View = StayView<'a, C, M0, M1, M2>;
}
#[doc(hidden)]
#[allow(unused_macros)]
#[macro_export]
macro_rules! __agent_data_Stay_0000000000000000 {
    ($($t:tt)*) => {
        ::agent_core::__private::data_callback! { [check_in guests r#type] [cache] $($t)*
        }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub use __agent_data_Stay_0000000000000000 as Stay;
