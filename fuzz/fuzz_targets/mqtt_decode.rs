//! Arbitrary bytes into the MQTT decoder (the first byte picks 3.1.1 or 5.0 and a tight packet
//! limit), whole and cut at a point the next two bytes choose: never a panic, and the same
//! events either way when the input decodes.
#![no_main]

use barrage_engine::mqtt::decode::ConnackProps;
use barrage_engine::mqtt::{Decoder, Sink};
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Log(Vec<String>);

impl Sink for Log {
    fn connack(&mut self, sp: bool, code: u8, p: ConnackProps) {
        self.0.push(format!("connack {sp} {code} {p:?}"));
    }
    fn publish(&mut self, qos: u8, pid: u16, len: u32) {
        assert!(qos <= 2 && (qos == 0) == (pid == 0));
        self.0.push(format!("publish {qos} {pid} {len}"));
    }
    fn payload(&mut self, b: &[u8]) {
        // Payload chunks follow the cuts: compare their bytes, not their number.
        match self.0.last_mut() {
            Some(l) if l.starts_with("data ") => l.push_str(&format!("{b:?}")),
            _ => self.0.push(format!("data {b:?}")),
        }
    }
    fn publish_end(&mut self, qos: u8, pid: u16) {
        self.0.push(format!("end {qos} {pid}"));
    }
    fn ack(&mut self, kind: u8, pid: u16, reason: u8) {
        self.0.push(format!("ack {kind} {pid} {reason}"));
    }
    fn suback(&mut self, kind: u8, pid: u16, granted: u32, failed: u32, bad: u8) {
        assert!(granted + failed > 0);
        self.0.push(format!("suback {kind} {pid} {granted} {failed} {bad}"));
    }
    fn pingresp(&mut self) {
        self.0.push("pingresp".into());
    }
    fn disconnect(&mut self, reason: u8) {
        self.0.push(format!("disconnect {reason}"));
    }
}

fuzz_target!(|data: &[u8]| {
    let [a, b, c, rest @ ..] = data else { return };
    let version = if a & 1 != 0 { 5 } else { 4 };
    let max = if a & 2 != 0 { 64 } else { 1 << 20 };
    let mut whole = Log::default();
    let ok = Decoder::new(version, max).feed(rest, &mut whole).is_ok();
    let cut = u16::from_le_bytes([*b, *c]) as usize % (rest.len() + 1);
    let (x, y) = rest.split_at(cut);
    let mut d = Decoder::new(version, max);
    let mut split = Log::default();
    let ok2 = d.feed(x, &mut split).is_ok() && d.feed(y, &mut split).is_ok();
    assert_eq!(ok, ok2);
    if ok {
        // A payload cut in two is two chunks: join what the logs say of it.
        let norm = |l: Vec<String>| l.join("|").replace("]data [", ", ").replace("][", ", ");
        assert_eq!(norm(whole.0), norm(split.0));
    }
});
