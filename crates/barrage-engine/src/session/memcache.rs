//! memcached text protocol: the `--command` mix ([`crate::command::Commands::memcache`] frames
//! storage commands with their byte count), replies decoded by [`crate::memcache::McDecoder`].
//! memcached answers in order: a reply completes the oldest request. A miss (`END` alone,
//! `NOT_FOUND`) is a completed request counted in `misses`; `ERROR`, `CLIENT_ERROR` and
//! `SERVER_ERROR` fail it as `reply_error`.

use super::{Msg, OkRun, Out, ProtoError, Rendered, Replies, Session};
use crate::command::{Commands, Last};
use crate::memcache::{McDecoder, McReply, McSink};
use crate::message::Fill;
use crate::plan::{Plan, Protocol};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    commands: Commands,
}

pub struct Memcache {
    dec: McDecoder,
    /// The last request, for the next one ([`Commands::render_next`]).
    last: Last,
}

impl Session for Memcache {
    type Cfg = Cfg;
    const COMMANDS: bool = true;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Memcache(m) => Cfg {
                commands: m.commands.clone(),
            },
            other => unreachable!("memcached session for a {} plan", other.name()),
        }
    }

    fn new(_cfg: &Cfg) -> Self {
        Self {
            dec: McDecoder::default(),
            last: Last::default(),
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.dec.reset();
        self.last.clear();
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let (len, i) = cfg.commands.render_next(fill, out.buf, &mut self.last);
        Rendered::command(len, i)
    }

    #[inline]
    fn static_request(cfg: &Cfg, msg: Msg, seq: u64) -> Option<(&[u8], Rendered)> {
        super::mix_request(&cfg.commands, msg, seq)
    }

    #[inline]
    fn input(&mut self, _cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        let dec = &mut self.dec;
        super::feed_collecting(data, r, |d, r| {
            let mut sink = Sink {
                r,
                ok: OkRun::default(),
            };
            let fed = dec.feed(d, &mut sink).map_err(ProtoError::new);
            sink.ok.flush(sink.r);
            fed
        })
    }
}

struct Sink<'r, 'a> {
    r: &'r mut Replies<'a>,
    /// Successful replies not yet counted (counted in order before anything else).
    ok: OkRun,
}

impl McSink for Sink<'_, '_> {
    #[inline]
    fn reply(&mut self, reply: McReply) {
        let error = reply == McReply::Error;
        if !error {
            self.ok.add(self.r, reply.is_miss());
            return;
        }
        self.ok.flush(self.r);
        let bad = error.then_some(ErrorClass::ReplyError);
        if let Some(step) = self.r.complete(bad) {
            self.r.count_command(step, reply.is_miss(), error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tests::{at_every_split, SplitCounts};

    /// Successful replies gathered for one count are counted in their place: an error
    /// reply and the end of the input come after the ones before them, so every reply
    /// completes its own request, whatever the input's split.
    #[test]
    fn gathered_replies_complete_their_own_requests() {
        let input: &[u8] = b"STORED\r\nEND\r\nSERVER_ERROR out of memory\r\nVALUE k 0 1\r\nx\r\nEND\r\nEND\r\nSTORED\r\n";
        // In flight: set get set get get set (steps 0 1 0 1 1 0).
        let batches = [
            (1_000, 1, 0),
            (1_000, 1, 1),
            (1_000, 1, 0),
            (1_000, 2, 1),
            (1_000, 1, 0),
        ];
        let cfg = Cfg {
            commands: Commands::memcache(&["set k 1".into(), "get k".into()]).unwrap(),
        };
        let want = SplitCounts {
            per_command: vec![(2, 1, 0), (3, 0, 2)],
            totals: (5, 2, 1),
            left: (0, 0),
        };
        for (split, got) in at_every_split::<Memcache>(&cfg, input, &batches, 2)
            .into_iter()
            .enumerate()
        {
            assert_eq!(got, want, "split at {split}");
        }
    }
}
