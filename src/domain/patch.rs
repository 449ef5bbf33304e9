//! Partial updates: a field left out is kept, `null` clears it, a value replaces it.

use serde::{Deserialize, Deserializer};

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Patch<T> {
    #[default]
    Keep,
    Clear,
    Set(T),
}

impl<T> Patch<T> {
    /// The field's new value, given its current one.
    pub fn apply(self, current: Option<T>) -> Option<T> {
        match self {
            Patch::Keep => current,
            Patch::Clear => None,
            Patch::Set(value) => Some(value),
        }
    }

    pub fn as_set(&self) -> Option<&T> {
        match self {
            Patch::Set(value) => Some(value),
            _ => None,
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            None => Patch::Clear,
            Some(value) => Patch::Set(value),
        })
    }
}

/// For fields that may be left out of a patch but never set to `null`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// An item of a list with a length limit (a bot's owners, a profile's socials): the limit and
/// how the list is tidied live with the item, one deserialiser enforces them for every list.
pub trait ListItem: Sized {
    const MAX: usize;
    /// The list's name in the refusal, like `owners`.
    const PLURAL: &'static str;

    /// Tidies the list before its length is checked (owners drop repeats).
    fn tidy(_items: &mut Vec<Self>) {}
}

/// A list of at most `T::MAX` items.
pub fn at_most<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + ListItem,
{
    let mut items = Vec::<T>::deserialize(deserializer)?;
    T::tidy(&mut items);
    if items.len() > T::MAX {
        return Err(serde::de::Error::custom(format!(
            "at most {} {}, got {}",
            T::MAX,
            T::PLURAL,
            items.len()
        )));
    }
    Ok(items)
}

/// [`at_most`] for a patch's list: present, never `null`.
pub fn some_at_most<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + ListItem,
{
    at_most(deserializer).map(Some)
}
