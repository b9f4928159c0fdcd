//! MQTT 3.1.1 and 5.0: the handshake is CONNECT (and SUBSCRIBE, written with it when the run
//! subscribes), done when CONNACK (and SUBACK) came; each load request is a PUBLISH to the
//! topic template. QoS 0 completes when written; QoS 1 on its PUBACK, QoS 2 on its PUBCOMP
//! (PUBREL answers the PUBREC), matched by packet id. What the broker delivers is counted (and
//! acknowledged at QoS 1 and 2), never a reply; a scenario user scans it for stamps. The
//! keep-alive is a tick every half keep-alive: a PINGREQ when the connection sent nothing
//! since the last tick, and a connection whose PINGRESP has not come a keep-alive later fails
//! as `timeout`.

use super::{Close, KeepAlive, Msg, Out, Owed, ProtoError, Rendered, Replies, Session, Streams};
use crate::message::{Fill, Template};
use crate::mqtt::{self, ConnectSpec, Decoder, PublishHead};
use crate::plan::{MqttPlan, Plan, Protocol};
use barrage_metrics::{ErrorClass, Recorder};

pub struct Cfg {
    p: MqttPlan,
    payload: Template,
    /// The load's exchanges end when written: QoS 0, or nothing published (not for scenario
    /// users, whose steps say what they await).
    on_write: bool,
}

pub struct Mqtt {
    dec: Decoder,
    st: State,
}

/// A connection's state besides its decoder (which the decoder's sink borrows).
struct State {
    /// Acknowledgements owed to the broker that the socket had no room for, in order.
    owed: Vec<u8>,
    /// PUBLISHes at QoS 1 and 2 awaiting their acknowledgement, and how many the broker
    /// takes at once (5.0's Receive Maximum; 65,535 when it says nothing).
    inflight: u16,
    receive_max: u16,
    /// The handshake's replies still awaited: CONNACK, SUBACK.
    awaiting: u8,
    /// Sent something since the last keep-alive tick.
    active: bool,
    /// Ticks since a PINGREQ went unanswered (0: none is).
    ping_ticks: u8,
    /// Of the PUBLISH being received: a scenario user's copy is collected.
    delivering: bool,
    /// The pending keep-alive tick (`KeepAlive::at`), and the keep-alive in force: the
    /// client's, or the broker's Server Keep Alive (5.0), which the client must use.
    tick_at: u64,
    keepalive_s: u16,
    /// A DISCONNECT was written, to count (`Session::counts`).
    bye: bool,
}

const CONNACK: u8 = 1;
const SUBACK: u8 = 2;
/// The packet id of the run's one subscription (the load's ids are the exchanges').
const SUB_PID: u16 = 1;

fn fill0(conn: u64) -> Fill {
    Fill {
        conn,
        seq: 0,
        ts_us: 0,
    }
}

impl Session for Mqtt {
    type Cfg = Cfg;

    fn config(plan: &Plan) -> Cfg {
        match &plan.protocol {
            Protocol::Mqtt(m) => Cfg {
                p: (**m).clone(),
                payload: plan.message.clone(),
                on_write: plan.users.is_none() && (m.publish.is_none() || m.qos == 0),
            },
            other => unreachable!("MQTT session for a {} plan", other.name()),
        }
    }

    fn new(cfg: &Cfg) -> Self {
        Self {
            dec: Decoder::new(cfg.p.version, cfg.p.max_packet),
            st: State {
                owed: Vec::new(),
                inflight: 0,
                receive_max: u16::MAX,
                awaiting: 0,
                active: false,
                ping_ticks: 0,
                delivering: false,
                tick_at: u64::MAX,
                keepalive_s: cfg.p.keepalive_s,
                bye: false,
            },
        }
    }

    fn reset(&mut self, cfg: &Cfg) {
        let mut owed = std::mem::take(&mut self.st.owed);
        owed.clear();
        *self = Self::new(cfg);
        self.st.owed = owed;
    }

    fn open(&mut self, cfg: &Cfg, out: &mut Out) -> Result<bool, ProtoError> {
        let p = &cfg.p;
        let f = fill0(out.conn);
        // Rendered once per connection: the client id, user name and password.
        let render = |t: &Template| {
            let mut v = Vec::new();
            t.render_into(f, &mut v);
            v
        };
        let id = render(&p.client_id);
        let user = p.username.as_ref().map(render);
        let pass = p.password.as_ref().map(render);
        if id.len() > 65_535 || user.as_ref().is_some_and(|u| u.len() > 65_535) {
            return Err(ProtoError::new(
                "MQTT: a client id or user name over 65,535 bytes",
            ));
        }
        mqtt::connect(
            out.buf,
            &ConnectSpec {
                version: p.version,
                client_id: &id,
                username: user.as_deref(),
                password: pass.as_deref(),
                keepalive_s: p.keepalive_s,
                clean: p.clean,
            },
        );
        self.st.awaiting = CONNACK;
        if let Some(t) = &p.subscribe {
            mqtt::subscribe(out.buf, p.version, SUB_PID, p.sub_qos, |o| {
                t.render_into(f, o);
            });
            self.st.awaiting |= SUBACK;
        }
        self.dec.pause = true;
        self.st.active = true;
        Ok(true)
    }

    const KEY_RING: u64 = 65_535;

    #[inline]
    fn render(&mut self, cfg: &Cfg, _msg: Msg, fill: Fill, out: &mut Out) -> Rendered {
        let p = &cfg.p;
        let h = PublishHead {
            version: p.version,
            qos: p.qos,
            retain: p.retain,
            pid: mqtt::pid_of_key(out.key),
        };
        let topic = p.publish.as_ref();
        let len = mqtt::publish(
            out.buf,
            h,
            |o| {
                if let Some(t) = topic {
                    t.render_into(fill, o);
                }
            },
            |o| {
                cfg.payload.render_into(fill, o);
            },
        );
        if p.qos > 0 {
            self.st.inflight += 1;
        }
        self.st.active = true;
        Rendered {
            len: len as u32,
            step: 0,
        }
    }

    /// A scenario user's step: its packet is rendered whole (`users::MqttStep`); it is
    /// sending, as far as the keep-alive goes.
    fn frame_step(&mut self, _cfg: &Cfg, out: &mut Out, start: usize) -> u32 {
        self.st.active = true;
        (out.buf.len() - start) as u32
    }

    fn input(&mut self, _cfg: &Cfg, data: &[u8], r: &mut Replies) -> Result<(), ProtoError> {
        let mut at = 0;
        loop {
            let mut sink = Sink {
                cfg: _cfg,
                s: &mut self.st,
                r,
            };
            at += self
                .dec
                .feed(&data[at..], &mut sink)
                .map_err(ProtoError::new)?;
            if r.close.is_some() || !self.dec.pause {
                return Ok(());
            }
            if self.st.awaiting == 0 {
                // The handshake's last reply: what follows is the load's.
                self.dec.pause = false;
                r.handshake_done(at);
                return Ok(());
            }
            if at == data.len() {
                return Ok(());
            }
        }
    }

    fn goodbye(&mut self, _cfg: &Cfg, out: &mut Out) {
        if self.st.awaiting == 0 {
            out.buf.extend_from_slice(&mqtt::DISCONNECT);
            self.st.bye = true;
        }
    }

    fn counts(&mut self, rec: &mut Recorder) {
        if std::mem::take(&mut self.st.bye) {
            rec.counters.mqtt.disconnects_sent += 1;
        }
    }

    fn completes_on_write(cfg: &Cfg) -> bool {
        cfg.on_write
    }

    fn streams(&mut self) -> Option<&mut impl Streams> {
        Some(self)
    }

    fn owed(&mut self) -> Option<&mut impl Owed> {
        Some(self)
    }

    fn keepalive(&mut self) -> Option<&mut impl KeepAlive> {
        Some(self)
    }
}

/// MQTT's packets in flight, under the broker's receive maximum.
impl Streams for Mqtt {
    fn room(&self) -> u64 {
        u64::from(self.st.receive_max.saturating_sub(self.st.inflight))
    }

    fn waited(&self, rec: &mut Recorder, n: u64) {
        rec.counters.mqtt.receive_max_waits += n;
    }
}

/// MQTT's acknowledgements to the broker's publishes, every one kept, in order.
impl Owed for Mqtt {
    fn in_order(&self) -> bool {
        true
    }

    fn owe(&mut self, ctl: &[u8]) {
        self.st.owed.extend_from_slice(ctl);
    }

    fn take(&mut self) -> Option<Box<[u8]>> {
        let o = &mut self.st.owed;
        (!o.is_empty()).then(|| std::mem::take(o).into_boxed_slice())
    }

    fn drain(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.st.owed);
        self.st.owed.clear();
    }
}

/// MQTT's keep-alive: a PINGREQ when the connection was idle for half the keep-alive.
impl KeepAlive for Mqtt {
    fn every_ns(&self) -> Option<u64> {
        let k = self.st.keepalive_s;
        (k > 0).then(|| u64::from(k) * 500_000_000)
    }

    fn awaits_answer(&self) -> bool {
        self.st.ping_ticks > 0
    }

    fn at(&self) -> u64 {
        self.st.tick_at
    }

    fn set_at(&mut self, at: u64) {
        self.st.tick_at = at;
    }

    fn tick(&mut self, out: &mut Vec<u8>, rec: &mut Recorder) -> Result<(), String> {
        // Ticks come every half keep-alive. A PINGREQ counts as sending: an idle connection
        // pings once per keep-alive, and fails when a whole keep-alive passed without its
        // PINGRESP.
        let st = &mut self.st;
        if st.ping_ticks > 0 {
            st.ping_ticks += 1;
            if st.ping_ticks > 2 {
                return Err("MQTT: no PINGRESP within a keep-alive of the PINGREQ".into());
            }
            st.active = false;
        } else if st.active {
            st.active = false;
        } else {
            out.extend_from_slice(&mqtt::PINGREQ);
            rec.counters.mqtt.pings += 1;
            st.ping_ticks = 1;
            st.active = true;
        }
        Ok(())
    }
}

struct Sink<'s, 'r, 'a> {
    cfg: &'s Cfg,
    s: &'s mut State,
    r: &'r mut Replies<'a>,
}

impl Sink<'_, '_, '_> {
    /// The exchange with this packet id (a PUBLISH, or a user's SUBSCRIBE or UNSUBSCRIBE) got
    /// its last acknowledgement. A scenario user's goes through the front-of-queue path that
    /// counts it against its step.
    fn acked(&mut self, pid: u16, bad: Option<ErrorClass>) {
        let Some(oldest) = self.r.ex.front().map(|e| e.key) else {
            self.r.rec.counters.replies += 1;
            self.r.rec.counters.unexpected += 1;
            return;
        };
        let key = mqtt::key_of_pid(pid, oldest);
        let done = if self.r.is_user() && key == oldest {
            self.r.complete_ack(bad).is_some()
        } else {
            self.r.complete_key(key, bad).is_some()
        };
        if done {
            self.s.inflight = self.s.inflight.saturating_sub(1);
        }
    }
}

impl mqtt::Sink for Sink<'_, '_, '_> {
    fn connack(&mut self, _sp: bool, code: u8, props: mqtt::decode::ConnackProps) {
        self.r.rec.counters.mqtt.connack.add(u16::from(code), 1);
        if code != 0 {
            let why = connack_reason(code);
            self.r.close = Some(Close::Fail(
                ErrorClass::MqttRefused,
                format!("the broker refused CONNECT: {why} (0x{code:02x})"),
            ));
            return;
        }
        if props.receive_max > 0 {
            self.s.receive_max = props.receive_max;
        }
        if let Some(k) = props.server_keepalive {
            self.s.keepalive_s = k;
        }
        if let Some(why) = beyond_the_brokers_limits(self.cfg, &props) {
            self.r.close = Some(Close::Fail(ErrorClass::MqttRefused, why));
            return;
        }
        self.s.awaiting &= !CONNACK;
    }

    fn publish(&mut self, qos: u8, _pid: u16, len: u32) {
        let m = &mut self.r.rec.counters.mqtt;
        m.received[usize::from(qos.min(2))] += 1;
        m.received_bytes += u64::from(len);
        self.s.delivering = self.r.is_user();
    }

    fn payload(&mut self, bytes: &[u8]) {
        if self.s.delivering {
            self.r.body(bytes);
        }
    }

    fn publish_end(&mut self, qos: u8, pid: u16) {
        if self.s.delivering {
            self.s.delivering = false;
            self.r.push();
        }
        match qos {
            1 => mqtt::ack(self.r.ctl, mqtt::PUBACK, pid),
            2 => mqtt::ack(self.r.ctl, mqtt::PUBREC, pid),
            _ => {}
        }
    }

    fn ack(&mut self, kind: u8, pid: u16, reason: u8) {
        let bad = (reason >= 0x80).then(|| {
            self.r.rec.counters.mqtt.refused.add(u16::from(reason), 1);
            ErrorClass::ReplyError
        });
        match kind {
            mqtt::PUBACK => {
                self.r.rec.counters.mqtt.puback += 1;
                self.acked(pid, bad);
            }
            mqtt::PUBREC => {
                self.r.rec.counters.mqtt.pubrec += 1;
                if bad.is_some() {
                    self.acked(pid, bad); // refused: the flow ends here
                } else {
                    mqtt::ack(self.r.ctl, mqtt::PUBREL, pid);
                }
            }
            mqtt::PUBCOMP => {
                self.r.rec.counters.mqtt.pubcomp += 1;
                self.acked(pid, bad);
            }
            // The broker's PUBREL of a QoS 2 delivery: the flow ends with PUBCOMP.
            mqtt::PUBREL => mqtt::ack(self.r.ctl, mqtt::PUBCOMP, pid),
            // UNSUBACK (3.1.1): a user's UNSUBSCRIBE step.
            _ => self.acked(pid, bad),
        }
    }

    fn suback(&mut self, kind: u8, pid: u16, granted: u32, failed: u32, first_bad: u8) {
        if kind == mqtt::SUBACK {
            let m = &mut self.r.rec.counters.mqtt;
            m.subscribed += u64::from(granted);
            m.sub_refused += u64::from(failed);
        }
        if kind != mqtt::SUBACK || self.s.awaiting & SUBACK == 0 {
            // A user's SUBSCRIBE or (5.0) UNSUBSCRIBE step.
            let bad = (failed > 0).then_some(ErrorClass::MqttRefused);
            return self.acked(pid, bad);
        }
        if failed > 0 {
            self.r.close = Some(Close::Fail(
                ErrorClass::MqttRefused,
                format!("the broker refused the subscription (SUBACK 0x{first_bad:02x})"),
            ));
            return;
        }
        self.s.awaiting &= !SUBACK;
    }

    fn pingresp(&mut self) {
        self.r.rec.counters.mqtt.pongs += 1;
        self.s.ping_ticks = 0;
        self.r.useful = true;
    }

    fn disconnect(&mut self, reason: u8) {
        self.r
            .rec
            .counters
            .mqtt
            .disconnects
            .add(u16::from(reason), 1);
        if self.r.close.is_none() {
            self.r.close = Some(Close::Fail(
                ErrorClass::ClosedByPeer,
                format!("the broker sent DISCONNECT (reason 0x{reason:02x})"),
            ));
        }
    }
}

/// What the run publishes that a 5.0 broker's CONNACK said it does not take: a QoS above
/// its Maximum QoS, retained messages it does not keep, packets over its Maximum Packet Size
/// (when the load's longest packet is known). A broker disconnects a client that sends them,
/// so the connection fails at once, saying which.
fn beyond_the_brokers_limits(cfg: &Cfg, props: &mqtt::decode::ConnackProps) -> Option<String> {
    let p = &cfg.p;
    let publish = p.publish.as_ref()?;
    if let Some(q) = props.max_qos.filter(|&q| p.qos > q) {
        return Some(format!(
            "the broker's Maximum QoS is {q}: publish at --qos {q} or lower"
        ));
    }
    if p.retain && props.retain_available == Some(false) {
        return Some("the broker keeps no retained messages: drop --retain".into());
    }
    let longest = publish
        .bound()
        .zip(cfg.payload.bound())
        .map(|(t, m)| 1 + 4 + 2 + t + 2 + 4 + m);
    match (longest, props.max_packet) {
        (Some(n), max) if max > 0 && n > max as usize => Some(format!(
            "the broker's Maximum Packet Size is {max} bytes; a PUBLISH of this run takes up \
             to {n}"
        )),
        _ => None,
    }
}

/// What a CONNACK code means (3.1.1 return codes 1-5, 5.0 reason codes).
pub fn connack_reason(code: u8) -> &'static str {
    match code {
        1 => "unacceptable protocol version",
        2 | 0x85 => "client identifier not valid",
        3 | 0x88 => "server unavailable",
        4 | 0x86 => "bad user name or password",
        5 | 0x87 => "not authorized",
        0x80 => "unspecified error",
        0x81 => "malformed packet",
        0x82 => "protocol error",
        0x83 => "implementation specific error",
        0x84 => "unsupported protocol version",
        0x89 => "server busy",
        0x8A => "banned",
        0x8C => "bad authentication method",
        0x95 => "packet too large",
        0x97 => "quota exceeded",
        0x9F => "connection rate exceeded",
        _ => "refused",
    }
}
