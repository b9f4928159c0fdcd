//! `At<T>`: a value with the line it was written on, so a check made after parsing can still
//! say `chat.toml:12: users.arrive: ...`.
//!
//! Key design decision: one model for both formats. TOML and YAML each carry spans through
//! serde with their own private wrapper (`toml::Spanned`, `serde_saphyr::Spanned`), so `At<T>`
//! asks the loader, through a thread-local set for the duration of one parse ([`Source`]),
//! which of the two to delegate to. Outside a parse (a model built in code) it has line 0.
//! `At` must not sit inside `#[serde(untagged)]` or `flatten`: serde buffers those, and the
//! spans (and, for TOML, the value) would be lost; the model avoids both.

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;
use std::cell::RefCell;

/// A value and its 1-based line in the scenario file (0: not from a file).
#[derive(Debug, Clone, PartialEq)]
pub struct At<T> {
    pub value: T,
    pub line: u32,
}

impl<T> At<T> {
    pub fn new(value: T, line: u32) -> At<T> {
        At { value, line }
    }
}

impl<T> std::ops::Deref for At<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// Which parser runs on this thread, and the byte offsets where the file's lines start (TOML
/// spans are byte ranges).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Syntax {
    Toml,
    Yaml,
}

struct Current {
    syntax: Syntax,
    line_starts: Vec<usize>,
}

thread_local! {
    static CURRENT: RefCell<Option<Current>> = const { RefCell::new(None) };
}

/// Set while one file is parsed; restores "no file" when dropped (also on a panic).
pub(crate) struct Source;

impl Source {
    pub(crate) fn enter(syntax: Syntax, text: &str) -> Source {
        let line_starts = line_starts(text);
        CURRENT.with(|c| {
            *c.borrow_mut() = Some(Current {
                syntax,
                line_starts,
            })
        });
        Source
    }
}

impl Drop for Source {
    fn drop(&mut self) {
        CURRENT.with(|c| *c.borrow_mut() = None);
    }
}

/// Byte offsets of the start of each line.
pub(crate) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

/// The 1-based line holding byte `offset`.
pub(crate) fn line_of(starts: &[usize], offset: usize) -> u32 {
    starts.partition_point(|&s| s <= offset).max(1) as u32
}

fn syntax() -> Option<Syntax> {
    CURRENT.with(|c| c.borrow().as_ref().map(|c| c.syntax))
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for At<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match syntax() {
            Some(Syntax::Toml) => {
                let s = toml::Spanned::<T>::deserialize(d)?;
                let start = s.span().start;
                let line = CURRENT.with(|c| {
                    c.borrow()
                        .as_ref()
                        .map_or(0, |c| line_of(&c.line_starts, start))
                });
                Ok(At::new(s.into_inner(), line))
            }
            Some(Syntax::Yaml) => {
                let s = serde_saphyr::Spanned::<T>::deserialize(d)?;
                let line = u32::try_from(s.referenced.line()).unwrap_or(u32::MAX);
                Ok(At::new(s.value, line))
            }
            None => T::deserialize(d).map(|v| At::new(v, 0)),
        }
    }
}

/// In the schema, `At<T>` is just `T`: the line is not something the user writes.
impl<T: JsonSchema> JsonSchema for At<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_from_offsets() {
        let s = line_starts("a\nbb\n\nc");
        assert_eq!(s, vec![0, 2, 5, 6]);
        assert_eq!(line_of(&s, 0), 1);
        assert_eq!(line_of(&s, 1), 1);
        assert_eq!(line_of(&s, 2), 2);
        assert_eq!(line_of(&s, 5), 3);
        assert_eq!(line_of(&s, 6), 4);
        assert_eq!(line_of(&s, 99), 4);
    }
}
