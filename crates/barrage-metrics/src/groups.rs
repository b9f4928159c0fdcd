//! The groups (rooms) a broadcast run saw: users joined by the deliveries between them.
//!
//! A receiver that hears a sender's stamp is in the sender's group (its own stamp puts a user
//! in a group of its own until it hears another), so the groups are the connected components
//! of "heard from": a room of a chat server, whatever the server calls it and without a room
//! id in its messages. Sizes are members, not messages.
//!
//! Key decision: a union-find per worker ([`Groups`]) keeps only the links that told it
//! something (a user not seen before, or two groups joined), at most one per user, and those
//! travel with the worker's deltas; the aggregator joins them into the run's groups. So a
//! second of the stream carries only new membership, a replayed or merged stream rebuilds the
//! same groups, and a user costs a link once, not once per message.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// Users (their numbers) in groups: a union-find by size.
#[derive(Clone, Debug, Default)]
pub struct Groups {
    /// user -> (parent, size when it is a root).
    nodes: HashMap<u32, (u32, u32)>,
}

impl Groups {
    fn root(&mut self, mut u: u32) -> u32 {
        // Path halving: every other node on the way points to its grandparent.
        loop {
            let p = self.nodes[&u].0;
            if p == u {
                return u;
            }
            let gp = self.nodes[&p].0;
            self.nodes.get_mut(&u).expect("a node").0 = gp;
            u = gp;
        }
    }

    /// `receiver` heard `sender` (the same user: its own copy). Returns whether that said
    /// something new: a user not seen before, or two groups now one.
    pub fn link(&mut self, sender: u32, receiver: u32) -> bool {
        let mut new = false;
        for u in [sender, receiver] {
            if let std::collections::hash_map::Entry::Vacant(e) = self.nodes.entry(u) {
                e.insert((u, 1));
                new = true;
            }
        }
        let (a, b) = (self.root(sender), self.root(receiver));
        if a == b {
            return new;
        }
        let (sa, sb) = (self.nodes[&a].1, self.nodes[&b].1);
        let (big, small) = if sa >= sb { (a, b) } else { (b, a) };
        self.nodes.get_mut(&small).expect("a root").0 = big;
        self.nodes.get_mut(&big).expect("a root").1 = sa + sb;
        true
    }

    /// The groups: how many, of how many users, and how many of each size.
    pub fn rooms(&self) -> Option<Rooms> {
        if self.nodes.is_empty() {
            return None;
        }
        let mut by_size = std::collections::BTreeMap::<u64, u64>::new();
        for (&u, &(p, size)) in &self.nodes {
            if p == u {
                *by_size.entry(u64::from(size)).or_default() += 1;
            }
        }
        Some(Rooms {
            count: by_size.values().sum(),
            users: self.nodes.len() as u64,
            sizes: by_size
                .into_iter()
                .map(|(size, rooms)| RoomSize { size, rooms })
                .collect(),
        })
    }
}

/// The rooms a broadcast run saw (`summary.broadcast.rooms`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rooms {
    /// Distinct groups.
    pub count: u64,
    /// Users in them.
    pub users: u64,
    /// How many groups had each number of members, by size.
    pub sizes: Vec<RoomSize>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSize {
    pub size: u64,
    pub rooms: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_users_that_heard_each_other() {
        let mut g = Groups::default();
        assert_eq!(g.rooms(), None);
        // Room {1, 2, 3}, room {4, 5}, user 6 alone with its own copies.
        assert!(g.link(1, 2));
        assert!(g.link(2, 3));
        assert!(!g.link(3, 1), "nothing new");
        assert!(g.link(5, 4));
        assert!(!g.link(4, 5));
        assert!(g.link(6, 6));
        assert!(!g.link(6, 6));
        assert!(!g.link(1, 1));
        let r = g.rooms().unwrap();
        assert_eq!((r.count, r.users), (3, 6));
        assert_eq!(
            r.sizes,
            [
                RoomSize { size: 1, rooms: 1 },
                RoomSize { size: 2, rooms: 1 },
                RoomSize { size: 3, rooms: 1 }
            ]
        );
    }

    #[test]
    fn the_new_links_of_several_workers_rebuild_the_same_groups() {
        // Two workers each see part of one room of 4 (users 0-3) and all of a room of 2.
        let (mut w1, mut w2, mut all) = (Groups::default(), Groups::default(), Groups::default());
        let mut kept = Vec::new();
        for (s, r) in [(0, 1), (1, 0), (7, 8), (8, 7)] {
            if w1.link(s, r) {
                kept.push((s, r));
            }
        }
        for (s, r) in [(2, 3), (0, 3), (3, 2), (1, 2)] {
            if w2.link(s, r) {
                kept.push((s, r));
            }
        }
        assert!(kept.len() <= 6, "at most one link per user: {kept:?}");
        for (s, r) in kept {
            all.link(s, r);
        }
        let r = all.rooms().unwrap();
        assert_eq!((r.count, r.users), (2, 6));
        assert_eq!(
            r.sizes,
            [
                RoomSize { size: 2, rooms: 1 },
                RoomSize { size: 4, rooms: 1 }
            ]
        );
    }
}
