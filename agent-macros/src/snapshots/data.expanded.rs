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
/// What the concierge collects.
#[derive(PartialEq)]
pub struct Booking {
    /// City the guest wants to stay in
    pub city: ::core::option::Option<String>,
    /// Number of guests
    pub guests: ::core::option::Option<u8>,
    pub notes: ::core::option::Option<String>,
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataPatch for BookingPatch {
    type Data = Booking;
}
///The fields of the data type [`Booking`].
#[allow(non_camel_case_types, dead_code)]
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::marker::Copy,
    ::core::cmp::PartialEq,
    ::core::cmp::Eq,
    ::core::hash::Hash
)]
pub enum BookingField {
    ///City the guest wants to stay in
    city,
    ///Number of guests
    guests,
    ///The `notes` field.
    notes,
}
#[allow(dead_code)]
impl BookingField {
    /// Every field, in declaration order.
    pub const ALL: [Self; 3usize] = [Self::city, Self::guests, Self::notes];
    /// The field's name (its JSON key).
    pub const fn name(self) -> &'static str {
        match self {
            Self::city => "city",
            Self::guests => "guests",
            Self::notes => "notes",
        }
    }
}
///A typed write to [`Booking`]: every field optional, set with the fluent methods.
#[derive(
    ::core::fmt::Debug,
    ::core::clone::Clone,
    ::core::default::Default,
    ::core::cmp::PartialEq
)]
#[must_use]
#[allow(dead_code)]
pub struct BookingPatch {
    map: ::agent_core::__private::Patch,
}
#[allow(dead_code)]
impl BookingPatch {
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
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    /// The JSON object.
    pub fn into_patch(self) -> ::agent_core::__private::Patch {
        self.map
    }
}
impl ::core::convert::From<BookingPatch> for ::agent_core::__private::Patch {
    fn from(p: BookingPatch) -> Self {
        p.map
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::IntoDataPatch for BookingPatch {
    fn into_data_patch(self) -> ::agent_core::__private::Patch {
        self.map
    }
}
#[allow(dead_code)]
impl Booking {
    /// Start a typed write.
    pub fn patch() -> BookingPatch {
        BookingPatch::default()
    }
    /// Field names in declaration order.
    pub const FIELDS: &'static [&'static str] = &["city", "guests", "notes"];
    /// The JSON schema of the data (field doc comments are the descriptions).
    pub fn json_schema() -> ::agent_core::__private::serde_json::Value {
        ::agent_core::__private::schemars::schema_for!(Booking).to_value()
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::DataType for Booking {
    type Field = BookingField;
    type Patch = BookingPatch;
    const FIELDS: &'static [&'static str] = &["city", "guests", "notes"];
    fn json_name(field: &str) -> ::core::option::Option<&'static str> {
        match field {
            "city" => ::core::option::Option::Some("city"),
            "guests" => ::core::option::Option::Some("guests"),
            "notes" => ::core::option::Option::Some("notes"),
            _ => ::core::option::Option::None,
        }
    }
}
#[diagnostic::do_not_recommend]
impl ::agent_core::__private::FlowData for Booking {
    type Checked = Self;
}
#[doc(hidden)]
#[allow(non_camel_case_types, non_snake_case, dead_code, missing_docs)]
pub mod __agent_fields_Booking {
    pub enum city {}
    pub enum guests {}
    pub enum notes {}
}
///What hooks and predicates of a step see of [`Booking`]: the fields the step `requires` are plain values, the others [`Unrequired`](::agent_core::typed::Unrequired) (read as an `Option<&T>`: `.get()`). Derefs to the turn's `Cx` (`context()`, `message()`, ...). Flows name each step's view `flow::step::View<'_>`.
#[allow(dead_code)]
pub struct BookingView<
    'a,
    C,
    M0: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M1: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
    M2: ::agent_core::__private::Mode = ::agent_core::__private::Opt,
> {
    ///City the guest wants to stay in (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub city: <M0 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Booking::city,
    >,
    ///Number of guests (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub guests: <M1 as ::agent_core::__private::Mode>::Of<
        'a,
        u8,
        __agent_fields_Booking::guests,
    >,
    /// (a plain value when the step `requires` it, else an [`Unrequired`](::agent_core::typed::Unrequired))
    pub notes: <M2 as ::agent_core::__private::Mode>::Of<
        'a,
        String,
        __agent_fields_Booking::notes,
    >,
    __cx: &'a ::agent_core::__private::Cx<'a, Booking, C>,
}
#[allow(dead_code)]
impl<
    'a,
    C,
    M0: ::agent_core::__private::Mode,
    M1: ::agent_core::__private::Mode,
    M2: ::agent_core::__private::Mode,
> BookingView<'a, C, M0, M1, M2> {
    /// The view of the turn, or `None` when a field the step requires is missing.
    #[doc(hidden)]
    pub fn __new(
        cx: &'a ::agent_core::__private::Cx<'a, Booking, C>,
    ) -> ::core::option::Option<Self> {
        let data = cx.data();
        ::core::option::Option::Some(Self {
            city: <M0 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Booking::city,
            >(&data.city)?,
            guests: <M1 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Booking::guests,
            >(&data.guests)?,
            notes: <M2 as ::agent_core::__private::Mode>::get::<
                _,
                __agent_fields_Booking::notes,
            >(&data.notes)?,
            __cx: cx,
        })
    }
    /// The turn's view (data, context, message, history, dispatch).
    pub fn cx(&self) -> &'a ::agent_core::__private::Cx<'a, Booking, C> {
        self.__cx
    }
}
impl<
    'a,
    C,
    M0: ::agent_core::__private::Mode,
    M1: ::agent_core::__private::Mode,
    M2: ::agent_core::__private::Mode,
> ::core::ops::Deref for BookingView<'a, C, M0, M1, M2> {
    type Target = ::agent_core::__private::Cx<'a, Booking, C>;
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
> ::agent_core::__private::ViewOf<'a, C, (M0, M1, M2)> for Booking {
    type View = BookingView<'a, C, M0, M1, M2>;
}
#[doc(hidden)]
#[allow(unused_macros)]
#[macro_export]
macro_rules! __agent_data_Booking_0000000000000000 {
    ($($t:tt)*) => {
        ::agent_core::__private::data_callback! { [city guests notes] [] $($t)* }
    };
}
#[doc(hidden)]
#[allow(unused_imports)]
pub use __agent_data_Booking_0000000000000000 as Booking;
