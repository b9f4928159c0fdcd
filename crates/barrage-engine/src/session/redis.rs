//! Redis: the `--command` mix RESP-encoded ([`crate::redis::Commands`]), replies decoded by
//! [`crate::redis::RespDecoder`]. Redis answers in order, so a reply completes the oldest
//! request; an error reply (`-ERR ...`) fails it as `reply_error`; RESP3 pushes complete
//! nothing. With `--resp3` every connection opens with `HELLO 3` (the script's opening).

use super::{Close, Msg, OkRun, Out, ProtoError, Rendered, Replies, Session};
use crate::exchange::OPENING;
use crate::message::Fill;
use crate::plan::{Plan, Protocol};
use crate::redis::{Commands, Last, RespDecoder, RespReply, RespSink};
use barrage_metrics::ErrorClass;

pub struct Cfg {
    commands: Commands,
    hello: Box<[u8]>,
}

pub struct Redis {
    dec: RespDecoder,
    /// The last request, for the next one ([`Commands::render_next`]).
    last: Last,
}

impl Session for Redis {
    type Cfg = Cfg;
    const COMMANDS: bool = true;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Redis(r) => Cfg {
                commands: r.commands.clone(),
                hello: (*b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n").into(),
            },
            other => unreachable!("redis session for a {} plan", other.name()),
        }
    }

    fn new(_cfg: &Cfg) -> Self {
        Self {
            dec: RespDecoder::default(),
            last: Last::default(),
        }
    }

    fn reset(&mut self, _cfg: &Cfg) {
        self.dec.reset();
        self.last.clear();
    }

    #[inline]
    fn render(&mut self, cfg: &Cfg, msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        match msg {
            Msg::Opening(_) => {
                out.buf.extend_from_slice(&cfg.hello);
                Rendered {
                    len: cfg.hello.len() as u32,
                    step: OPENING,
                }
            }
            Msg::Load => {
                let (len, i) = cfg.commands.render_next(fill, out.buf, &mut self.last);
                Rendered::command(len, i)
            }
        }
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

impl RespSink for Sink<'_, '_> {
    #[inline]
    fn push(&mut self) {
        self.ok.flush(self.r);
        self.r.push();
    }

    #[inline]
    fn reply(&mut self, reply: RespReply) {
        let error = reply == RespReply::Error;
        if !error {
            self.ok.add(self.r, reply == RespReply::Null);
            return;
        }
        self.ok.flush(self.r);
        if error && self.r.ex.front().is_some_and(|e| e.step == OPENING) {
            // The server does not speak RESP3 (redis before 6): nothing else can work.
            self.r.close = Some(Close::Fail(
                ErrorClass::Protocol,
                "the server refused HELLO 3: --resp3 needs redis 6 or later".into(),
            ));
            return;
        }
        let bad = error.then_some(ErrorClass::ReplyError);
        if let Some(step) = self.r.complete(bad) {
            self.r.count_command(step, reply == RespReply::Null, error);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::tests::{at_every_split, SplitCounts};

    /// Successful replies gathered for one count are counted in their place: an error
    /// reply, a push and the end of the input come after the ones before them, so every
    /// reply completes its own request, whatever the input's split.
    #[test]
    fn gathered_replies_complete_their_own_requests() {
        let input: &[u8] =
            b"+OK\r\n+OK\r\n$-1\r\n-ERR no\r\n$1\r\nx\r\n>2\r\n$7\r\nmessage\r\n$1\r\nx\r\n$-1\r\n+OK\r\n";
        // In flight: SET SET GET SET GET GET SET (steps 0 0 1 0 1 1 0).
        let batches = [
            (1_000, 2, 0),
            (1_000, 1, 1),
            (1_000, 1, 0),
            (1_000, 2, 1),
            (1_000, 1, 0),
        ];
        let cfg = Cfg {
            commands: Commands::redis(&["SET a 1".into(), "GET a".into()]).unwrap(),
            hello: Box::default(),
        };
        let want = SplitCounts {
            per_command: vec![(3, 1, 0), (3, 0, 2)],
            totals: (6, 2, 1),
            left: (0, 0),
        };
        for (split, got) in at_every_split::<Redis>(&cfg, input, &batches, 2)
            .into_iter()
            .enumerate()
        {
            assert_eq!(got, want, "split at {split}");
        }
    }
}
