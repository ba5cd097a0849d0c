//! [`Unrequired`]: a field of a step's view that the step does not `requires`.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;

/// A field of a step's view that the step does not `requires(..)`: it may hold no value
/// yet. Read it as the `Option<&T>` it is: `.get()`, or through `Deref` (`v.city.map(..)`,
/// `v.city.is_some()`, `v.city.unwrap_or(&default)`, `if let Some(c) = *v.city`), and
/// compare it with an `Option<&T>` (`v.city == Some(&x)`).
///
/// It does not implement `Display` or `Debug`, nor compare with a value (`v.guests > 8`):
/// `format!("{}", v.city)` would put an empty string or `None` into a prompt, so these
/// fail to compile with a message naming the field and the fix (add the field to the
/// step's `requires(..)`, or read it with `.get()`).
///
/// `F` is a marker type `#[data]` generates for the field, so that message can name it.
pub struct Unrequired<'a, T, F = ()> {
    value: Option<&'a T>,
    field: PhantomData<fn() -> F>,
}

impl<'a, T, F> Unrequired<'a, T, F> {
    /// The field's value in the view (`None` while the field holds no value).
    #[doc(hidden)]
    pub fn new(value: Option<&'a T>) -> Self {
        Self {
            value,
            field: PhantomData,
        }
    }

    /// The field's value, `None` while it holds none.
    pub fn get(self) -> Option<&'a T> {
        self.value
    }
}

impl<T, F> Clone for Unrequired<'_, T, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, F> Copy for Unrequired<'_, T, F> {}

impl<'a, T, F> Deref for Unrequired<'a, T, F> {
    type Target = Option<&'a T>;
    fn deref(&self) -> &Option<&'a T> {
        &self.value
    }
}

impl<'a, T, F> From<Unrequired<'a, T, F>> for Option<&'a T> {
    fn from(field: Unrequired<'a, T, F>) -> Self {
        field.value
    }
}

impl<T: PartialEq, F> PartialEq<Option<&T>> for Unrequired<'_, T, F> {
    fn eq(&self, other: &Option<&T>) -> bool {
        self.value == *other
    }
}

/// Never implemented: the bound under which [`Unrequired`] would be `Display` or `Debug`,
/// so that formatting a field the step does not require fails with this message.
#[diagnostic::on_unimplemented(
    message = "`{F}` is not in this step's `requires`, so it may hold no value: add the field to the step's `requires(..)`, or read it with `.get()`",
    label = "may hold no value here"
)]
pub trait StepRequires<F> {}

// One line each: rustc shows this header under the error.
#[rustfmt::skip]
impl<T, F> fmt::Display for Unrequired<'_, T, F> where (): StepRequires<F> {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

#[rustfmt::skip]
impl<T, F> fmt::Debug for Unrequired<'_, T, F> where (): StepRequires<F> {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        Ok(())
    }
}

// Comparing the field with a value (`if |b| b.guests > 8`) is an error of the same kind.
#[rustfmt::skip]
impl<T: PartialEq, F> PartialEq<T> for Unrequired<'_, T, F> where (): StepRequires<F> {
    fn eq(&self, other: &T) -> bool {
        self.value == Some(other)
    }
}

#[rustfmt::skip]
impl<T: PartialOrd, F> PartialOrd<T> for Unrequired<'_, T, F> where (): StepRequires<F> {
    fn partial_cmp(&self, other: &T) -> Option<std::cmp::Ordering> {
        self.value.and_then(|v| v.partial_cmp(other))
    }
}
