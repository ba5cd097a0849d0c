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
pub struct Stay {
    /// Number of guests
    #[schemars(range(min = 1i64, max = 12i64))]
    #[schemars(extend("x-synonyms" = {"1":["just me", "alone"], "2":["my wife and I"]}))]
    pub guests: ::core::option::Option<u8>,
    #[schemars(range(min = -10.5f64))]
    pub min_temp: ::core::option::Option<f64>,
    #[schemars(range(max = 5000i64))]
    pub budget: ::core::option::Option<i64>,
    /// Check-in date (ISO 8601)
    #[schemars(length(min = 10i64, max = 10i64))]
    #[schemars(regex(pattern = "^\\d{4}-\\d{2}-\\d{2}$"))]
    pub check_in: ::core::option::Option<String>,
    #[serde(default)]
    #[schemars(extend("enum" = ["standard", "suite", null]))]
    #[schemars(extend("x-inferred" = true))]
    #[schemars(extend("x-synonyms" = {"suite":["the big one"]}))]
    pub room: ::core::option::Option<String>,
    #[schemars(length(max = 3i64))]
    pub tags: ::core::option::Option<Vec<String>>,
    #[schemars(length(min = 1i64, max = 80i64))]
    pub city: ::core::option::Option<String>,
    #[schemars(extend("x-not-past" = true))]
    pub arrival: ::core::option::Option<Date>,
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataPatch for StayPatch {
    type Data = Stay;
}
const _: fn() = || {
    let () = <Date as ::agent_core::__private::CalendarValue>::CALENDAR;
};
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
    ///Number of guests
    guests,
    ///The `min_temp` field.
    min_temp,
    ///The `budget` field.
    budget,
    ///Check-in date (ISO 8601)
    check_in,
    ///The `room` field.
    room,
    ///The `tags` field.
    tags,
    ///The `city` field.
    city,
    ///The `arrival` field.
    arrival,
}
#[allow(dead_code)]
impl StayField {
    /// Every field, in declaration order.
    pub const ALL: [Self; 8usize] = [
        Self::guests,
        Self::min_temp,
        Self::budget,
        Self::check_in,
        Self::room,
        Self::tags,
        Self::city,
        Self::arrival,
    ];
    /// The field's name (its JSON key).
    pub const fn name(self) -> &'static str {
        match self {
            Self::guests => "guests",
            Self::min_temp => "min_temp",
            Self::budget => "budget",
            Self::check_in => "check_in",
            Self::room => "room",
            Self::tags => "tags",
            Self::city => "city",
            Self::arrival => "arrival",
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
    ///Set `guests`.
    pub fn guests(mut self, value: u8) -> Self {
        self.map.insert("guests".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `guests` (write `null`).
    pub fn clear_guests(mut self) -> Self {
        self.map
            .insert("guests".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `min_temp`.
    pub fn min_temp(mut self, value: f64) -> Self {
        self.map.insert("min_temp".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `min_temp` (write `null`).
    pub fn clear_min_temp(mut self) -> Self {
        self.map
            .insert("min_temp".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `budget`.
    pub fn budget(mut self, value: i64) -> Self {
        self.map.insert("budget".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `budget` (write `null`).
    pub fn clear_budget(mut self) -> Self {
        self.map
            .insert("budget".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `check_in`.
    pub fn check_in(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("check_in".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `check_in` (write `null`).
    pub fn clear_check_in(mut self) -> Self {
        self.map
            .insert("check_in".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `room`.
    pub fn room(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("room".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `room` (write `null`).
    pub fn clear_room(mut self) -> Self {
        self.map.insert("room".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `tags`.
    pub fn tags(mut self, value: Vec<String>) -> Self {
        self.map.insert("tags".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `tags` (write `null`).
    pub fn clear_tags(mut self) -> Self {
        self.map.insert("tags".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `city`.
    pub fn city(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("city".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `city` (write `null`).
    pub fn clear_city(mut self) -> Self {
        self.map.insert("city".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `arrival`.
    pub fn arrival(mut self, value: Date) -> Self {
        self.map.insert("arrival".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `arrival` (write `null`).
    pub fn clear_arrival(mut self) -> Self {
        self.map
            .insert("arrival".into(), ::agent_core::__private::serde_json::Value::Null);
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
    pub const FIELDS: &'static [&'static str] = &[
        "guests",
        "min_temp",
        "budget",
        "check_in",
        "room",
        "tags",
        "city",
        "arrival",
    ];
    /// The JSON schema of the data (field doc comments are the descriptions).
    pub fn json_schema() -> ::agent_core::__private::serde_json::Value {
        ::agent_core::__private::schemars::schema_for!(Stay).to_value()
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataType for Stay {
    type Field = StayField;
    type Patch = StayPatch;
    const FIELDS: &'static [&'static str] = &[
        "guests",
        "min_temp",
        "budget",
        "check_in",
        "room",
        "tags",
        "city",
        "arrival",
    ];
    fn field_checks() -> ::std::vec::Vec<::agent_core::__private::FieldCheck> {
        ::std::vec![
            ::agent_core::__private::FieldCheck::typed:: < String, _ > ("city", { let
            __check : fn (String) -> ::core::result::Result < String,
            ::std::string::String > = crate ::checks::served_city; __check })
        ]
    }
    fn json_name(field: &str) -> ::core::option::Option<&'static str> {
        match field {
            "guests" => ::core::option::Option::Some("guests"),
            "min_temp" => ::core::option::Option::Some("min_temp"),
            "budget" => ::core::option::Option::Some("budget"),
            "check_in" => ::core::option::Option::Some("check_in"),
            "room" => ::core::option::Option::Some("room"),
            "tags" => ::core::option::Option::Some("tags"),
            "city" => ::core::option::Option::Some("city"),
            "arrival" => ::core::option::Option::Some("arrival"),
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
    pub enum guests {}
    pub enum min_temp {}
    pub enum budget {}
    pub enum check_in {}
    pub enum room {}
    pub enum tags {}
    pub enum city {}
    pub enum arrival {}
}
///What hooks and predicates of a step see of [`Stay`]: the fields the step `requires` are plain values, the others [`Unrequired`](::agent_core::typed::Unrequired) (read as an `Option<&T>`: `.get()`). Derefs to the turn's `Cx` (`context()`, `message()`, ...). Flows name each step's view `flow::step::View<'_>`.
#[allow(dead_code)]
pub struct StayView<
    'a,
    C,
    M0: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M1: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M2: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M3: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M4: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M5: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M6: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M7: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
> {
    ///Number of guests (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub guests: <M0 as ::agent_core::__private::Mode>::Of<
        'a,
        u8,
        __agent_fields_Stay::guests,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub min_temp: <M1 as ::agent_core::__private::Mode>::Of<
        'a,
        f64,
        __agent_fields_Stay::min_temp,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub budget: <M2 as ::agent_core::__private::Mode>::Of<
        'a,
        i64,
        __agent_fields_Stay::budget,
    >,
    ///Check-in date (ISO 8601) (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub check_in: <M3 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::check_in,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub room: <M4 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::room,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub tags: <M5 as ::agent_core::__private::Mode>::Of<
        'a,
        Vec<String>,
        __agent_fields_Stay::tags,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub city: <M6 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::city,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub arrival: <M7 as ::agent_core::__private::Mode>::Of<
        'a,
        Date,
        __agent_fields_Stay::arrival,
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
    M3: ::agent_core::__private::Mode,
    M4: ::agent_core::__private::Mode,
    M5: ::agent_core::__private::Mode,
    M6: ::agent_core::__private::Mode,
    M7: ::agent_core::__private::Mode,
> StayView<'a, C, M0, M1, M2, M3, M4, M5, M6, M7> {
    /// The view of the turn, or `None` when a field the step requires is missing.
    #[doc(hidden)]
    pub fn __new(
        cx: &'a ::agent_core::__private::Cx<'a, Stay, C>,
    ) -> ::core::option::Option<Self> {
        let data = cx.data();
        ::core::option::Option::Some(Self {
            guests: <M0 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::guests,
            >(&data.guests)?,
            min_temp: <M1 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::min_temp,
            >(&data.min_temp)?,
            budget: <M2 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::budget,
            >(&data.budget)?,
            check_in: <M3 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::check_in,
            >(&data.check_in)?,
            room: <M4 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::room,
            >(&data.room)?,
            tags: <M5 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::tags,
            >(&data.tags)?,
            city: <M6 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::city,
            >(&data.city)?,
            arrival: <M7 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::arrival,
            >(&data.arrival)?,
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
    M3: ::agent_core::__private::Mode,
    M4: ::agent_core::__private::Mode,
    M5: ::agent_core::__private::Mode,
    M6: ::agent_core::__private::Mode,
    M7: ::agent_core::__private::Mode,
> ::core::ops::Deref for StayView<'a, C, M0, M1, M2, M3, M4, M5, M6, M7> {
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
    M3: ::agent_core::__private::Mode,
    M4: ::agent_core::__private::Mode,
    M5: ::agent_core::__private::Mode,
    M6: ::agent_core::__private::Mode,
    M7: ::agent_core::__private::Mode,
> ::agent_core::__private::ViewOf<'a, C, (M0, M1, M2, M3, M4, M5, M6, M7)> for Stay {
    type View = StayView<'a, C, M0, M1, M2, M3, M4, M5, M6, M7>;
}
#[doc(hidden)]
#[allow(unused_macros)]
#[macro_export]
macro_rules! __agent_data_Stay_0000000000000000 {
    ($($t:tt)*) => {
        ::agent_core::__private::data_callback! { [guests min_temp budget check_in room
        tags city arrival] [] $($t)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub use __agent_data_Stay_0000000000000000 as Stay;
