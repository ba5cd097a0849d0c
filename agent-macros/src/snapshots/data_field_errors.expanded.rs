::core::compile_error! {
    "unknown `#[field]` key `rnage`; did you mean `range`? known keys: `range`, `len`, `pattern`, `one_of`, `inferred`, `not_past`, `validate`, `synonyms`"
}
::core::compile_error! {
    "`range` bounds are inclusive: write `1..=12` (an exclusive end, `1..12`, is not supported)"
}
::core::compile_error! {
    "`one_of` takes the allowed values as string literals: `one_of(\"standard\", \"suite\")`"
}
::core::compile_error! {
    "`inferred` is a flag and takes no value: write `inferred`"
}
::core::compile_error! {
    "write the constraints in parentheses, like `#[field(range = 1..=12)]`; known keys: `range`, `len`, `pattern`, `one_of`, `inferred`, `not_past`, `validate`, `synonyms`"
}
::core::compile_error! {
    "`inferred` is given twice for this field"
}
::core::compile_error! {
    "`validate` takes the path of a `fn(T) -> Result<T, String>`: `validate = crate::check_city`"
}
::core::compile_error! {
    "`validate` takes the path of a `fn(T) -> Result<T, String>`: `validate = crate::check_city`"
}
::core::compile_error! {
    "empty `range`: the minimum `12` is greater than the maximum `1`"
}
::core::compile_error! {
    "`range` applies to numeric fields (integers, `f32`, `f64`); `city` is a `String`"
}
::core::compile_error! {
    "invalid `pattern`: unclosed group"
}
::core::compile_error! {
    "`1.5` is not a length: `len` bounds are integers from 0"
}
::core::compile_error! {
    "`-1` is out of range for `nights: u8` (0..=255)"
}
::core::compile_error! {
    "`300` is out of range for `nights: u8` (0..=255)"
}
::core::compile_error! {
    "`pattern` applies to `String` fields; `nights` is a `u8`"
}
::core::compile_error! {
    "`one_of` applies to `String` fields; `nights` is a `u8`"
}
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
    #[schemars(range(min = 12i64, max = 1i64))]
    pub guests: ::core::option::Option<u8>,
    #[schemars(range(min = 1i64, max = 12i64))]
    #[schemars(regex(pattern = "("))]
    pub city: ::core::option::Option<String>,
    #[schemars(length(min = 1.5f64))]
    pub notes: ::core::option::Option<String>,
    #[schemars(range(min = -1i64, max = 300i64))]
    #[schemars(regex(pattern = "x"))]
    #[schemars(extend("enum" = ["a", null]))]
    pub nights: ::core::option::Option<u8>,
    pub pets: ::core::option::Option<bool>,
    #[schemars(extend("x-inferred" = true))]
    pub source: ::core::option::Option<String>,
    pub hotel: ::core::option::Option<String>,
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
    ///The `guests` field.
    guests,
    ///The `city` field.
    city,
    ///The `notes` field.
    notes,
    ///The `nights` field.
    nights,
    ///The `pets` field.
    pets,
    ///The `source` field.
    source,
    ///The `hotel` field.
    hotel,
}
#[allow(dead_code)]
impl StayField {
    /// Every field, in declaration order.
    pub const ALL: [Self; 7usize] = [
        Self::guests,
        Self::city,
        Self::notes,
        Self::nights,
        Self::pets,
        Self::source,
        Self::hotel,
    ];
    /// The field's name (its JSON key).
    pub const fn name(self) -> &'static str {
        match self {
            Self::guests => "guests",
            Self::city => "city",
            Self::notes => "notes",
            Self::nights => "nights",
            Self::pets => "pets",
            Self::source => "source",
            Self::hotel => "hotel",
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
    ///Set `notes`.
    pub fn notes(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("notes".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `notes` (write `null`).
    pub fn clear_notes(mut self) -> Self {
        self.map
            .insert("notes".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `nights`.
    pub fn nights(mut self, value: u8) -> Self {
        self.map.insert("nights".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `nights` (write `null`).
    pub fn clear_nights(mut self) -> Self {
        self.map
            .insert("nights".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `pets`.
    pub fn pets(mut self, value: bool) -> Self {
        self.map.insert("pets".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `pets` (write `null`).
    pub fn clear_pets(mut self) -> Self {
        self.map.insert("pets".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `source`.
    pub fn source(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("source".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `source` (write `null`).
    pub fn clear_source(mut self) -> Self {
        self.map
            .insert("source".into(), ::agent_core::__private::serde_json::Value::Null);
        self
    }
    ///Set `hotel`.
    pub fn hotel(
        mut self,
        value: impl ::core::convert::Into<::std::string::String>,
    ) -> Self {
        let value: ::std::string::String = value.into();
        self.map.insert("hotel".into(), ::agent_core::__private::to_json(&value));
        self
    }
    ///Clear `hotel` (write `null`).
    pub fn clear_hotel(mut self) -> Self {
        self.map
            .insert("hotel".into(), ::agent_core::__private::serde_json::Value::Null);
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
        "city",
        "notes",
        "nights",
        "pets",
        "source",
        "hotel",
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
        "city",
        "notes",
        "nights",
        "pets",
        "source",
        "hotel",
    ];
    fn json_name(field: &str) -> ::core::option::Option<&'static str> {
        match field {
            "guests" => ::core::option::Option::Some("guests"),
            "city" => ::core::option::Option::Some("city"),
            "notes" => ::core::option::Option::Some("notes"),
            "nights" => ::core::option::Option::Some("nights"),
            "pets" => ::core::option::Option::Some("pets"),
            "source" => ::core::option::Option::Some("source"),
            "hotel" => ::core::option::Option::Some("hotel"),
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
    pub enum city {}
    pub enum notes {}
    pub enum nights {}
    pub enum pets {}
    pub enum source {}
    pub enum hotel {}
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
> {
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub guests: <M0 as ::agent_core::__private::Mode>::Of<
        'a,
        u8,
        __agent_fields_Stay::guests,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub city: <M1 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::city,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub notes: <M2 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::notes,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub nights: <M3 as ::agent_core::__private::Mode>::Of<
        'a,
        u8,
        __agent_fields_Stay::nights,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub pets: <M4 as ::agent_core::__private::Mode>::Of<
        'a,
        bool,
        __agent_fields_Stay::pets,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub source: <M5 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::source,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub hotel: <M6 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Stay::hotel,
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
> StayView<'a, C, M0, M1, M2, M3, M4, M5, M6> {
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
            city: <M1 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::city,
            >(&data.city)?,
            notes: <M2 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::notes,
            >(&data.notes)?,
            nights: <M3 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::nights,
            >(&data.nights)?,
            pets: <M4 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::pets,
            >(&data.pets)?,
            source: <M5 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::source,
            >(&data.source)?,
            hotel: <M6 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Stay::hotel,
            >(&data.hotel)?,
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
> ::core::ops::Deref for StayView<'a, C, M0, M1, M2, M3, M4, M5, M6> {
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
> ::agent_core::__private::ViewOf<'a, C, (M0, M1, M2, M3, M4, M5, M6)> for Stay {
    type View = StayView<'a, C, M0, M1, M2, M3, M4, M5, M6>;
}
#[doc(hidden)]
#[allow(unused_macros)]
#[macro_export]
macro_rules! __agent_data_Stay_0000000000000000 {
    ($($t:tt)*) => {
        ::agent_core::__private::data_callback! { [guests city notes nights pets source
        hotel] [] $($t)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub use __agent_data_Stay_0000000000000000 as Stay;
