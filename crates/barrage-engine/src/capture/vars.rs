//! A user's variables: captured values and data-file columns, by slot.
//!
//! Names never reach this type: a scenario's compiler numbers its variables (slot 0, 1, ...)
//! and resolves every `{name}` in its templates to a slot ([`crate::message::Template::
//! with_vars`]), so rendering is an index. One `Vec` per slot, cleared and refilled in
//! place, so a value captured again reuses its buffer (no allocation once it has grown).
//! An unset slot is distinct from an empty value.

use super::{Capture, Found};

/// Per-user values, one per slot; sized when the scenario is compiled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vars {
    /// (set, bytes) per slot.
    slots: Box<[(bool, Vec<u8>)]>,
}

impl Vars {
    /// `n` slots, all unset.
    pub fn new(n: usize) -> Self {
        Self {
            slots: (0..n).map(|_| (false, Vec::new())).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The value in `slot`, `None` when it was never set (or the slot does not exist).
    pub fn get(&self, slot: usize) -> Option<&[u8]> {
        self.slots
            .get(slot)
            .and_then(|(set, v)| set.then_some(&v[..]))
    }

    /// Sets `slot` (a data-file column, a value computed by the caller).
    pub fn set(&mut self, slot: usize, value: &[u8]) {
        self.put(slot, Found::Raw(value));
    }

    /// Captures into `slot` from `reply`; on a miss the slot keeps its previous value and
    /// `false` is returned (the caller counts the miss).
    pub fn capture(&mut self, slot: usize, capture: &Capture, reply: &[u8]) -> bool {
        match capture.find(reply) {
            Some(found) => {
                self.put(slot, found);
                true
            }
            None => false,
        }
    }

    fn put(&mut self, slot: usize, found: Found<'_>) {
        if let Some((set, v)) = self.slots.get_mut(slot) {
            v.clear();
            found.write_to(v);
            *set = true;
        }
    }

    /// Forgets every value, keeping the buffers (a user slot reused for the next user).
    pub fn clear(&mut self) {
        for (set, v) in self.slots.iter_mut() {
            *set = false;
            v.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_values_land_in_their_slot_and_a_miss_keeps_the_old_one() {
        let token = Capture::json("/token").unwrap();
        let room = Capture::split(b" ", 2, super::super::Anchor::Whole).unwrap();
        let mut vars = Vars::new(3);
        assert_eq!(vars.get(0), None);
        assert!(vars.capture(0, &token, br#"{"token":"t\u0031"}"#));
        assert!(vars.capture(1, &room, b"JOINED lobby\n"));
        assert_eq!(vars.get(0), Some(&b"t1"[..]));
        assert_eq!(vars.get(1), Some(&b"lobby"[..]));
        assert!(!vars.capture(0, &token, b"{}"));
        assert_eq!(vars.get(0), Some(&b"t1"[..]));
        vars.set(2, b"");
        assert_eq!(vars.get(2), Some(&b""[..]), "empty is set, not missing");
        assert_eq!(vars.get(3), None);
        vars.set(7, b"ignored");
        vars.clear();
        assert_eq!((vars.get(0), vars.len()), (None, 3));
    }

    #[test]
    fn recapturing_reuses_the_slot_buffer() {
        let c = Capture::bytes("0..8").unwrap();
        let mut vars = Vars::new(1);
        assert!(vars.capture(0, &c, b"abcdefgh-1"));
        let before = vars.slots[0].1.as_ptr();
        assert!(vars.capture(0, &c, b"ABCDEFGH-2"));
        assert_eq!(vars.slots[0].1.as_ptr(), before);
        assert_eq!(vars.get(0), Some(&b"ABCDEFGH"[..]));
    }
}
