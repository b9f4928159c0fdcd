//! Arbitrary bytes across the script hook's boundary (`barrage_script::Script` behind
//! `barrage_engine::hook::Hook`): as the replies `frame`, `response` and a scenario's `check`
//! are shown, as the text a `call` is given, and, through one script that turns its input
//! into any Lua value (nil, booleans, any integer or float, strings, tables, functions,
//! coroutines, errors of any value, a loop, what the safe libraries refuse: `io`, `os.exit`,
//! `require`, binary `load`), as what every function returns to barrage. Never a panic;
//! every error one line naming the file; nothing written to the output on an error; a
//! length `frame` gives is one the script could have meant (a non-negative integer); the
//! process never ends (a script's `os.exit` is an error, not an exit).
#![no_main]

use barrage_engine::hook::{Check, Frame, Hook};
use barrage_script::{Libs, Script};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// `pick(b)`: the first byte of `b` picks what is made of the rest.
const SCRIPT: &str = r#"
local function pick(b)
  local k, rest = (b:byte(1) or 0) % 20, b:sub(2)
  local pad = rest .. string.rep("\0", 8)
  if k == 0 then return nil
  elseif k == 1 then return false
  elseif k == 2 then return true
  elseif k == 3 then return rest
  elseif k == 4 then return (string.unpack("<i8", pad))
  elseif k == 5 then return (string.unpack("<d", pad))
  elseif k == 6 then return {rest}
  elseif k == 7 then return pick
  elseif k == 8 then error(rest)
  elseif k == 9 then error({rest})
  elseif k == 10 then error(rest, 0)
  elseif k == 11 then return coroutine.create(pick)
  elseif k == 12 then return #rest
  elseif k == 13 then while true do end
  elseif k == 14 then return io.open(rest)
  elseif k == 15 then return os.exit(0)
  elseif k == 16 then return require(rest)
  elseif k == 17 then return load(string.dump(pick), "x", "b")
  elseif k == 18 then return (load(rest) or pick)()
  else return string.rep(rest, 64) end
end
NEXT = ""
function set(conn, text) NEXT = text; return "" end
function make(conn, text) return pick(text) end
function init(conn) return pick(NEXT) end
function request(conn, seq) return pick(NEXT) end
function frame(buf, conn) return pick(buf) end
function response(conn, reply) return pick(reply) end
function check(conn, reply) return pick(reply) end
"#;

/// One script for every input: its interpreter (one per thread) is made once.
fn script() -> &'static Script {
    static S: OnceLock<Script> = OnceLock::new();
    S.get_or_init(|| {
        Script::load("fuzz.lua", SCRIPT, 200_000, Libs::Safe).expect("the fuzz script loads")
    })
}

fn named(e: &barrage_engine::hook::HookError) {
    assert!(e.0.starts_with("fuzz.lua"), "{e}");
    assert!(!e.0.contains('\n'), "{e}");
}

fuzz_target!(|data: &[u8]| {
    let [op, conn, rest @ ..] = data else {
        return;
    };
    let s = script();
    let conn = u64::from(*conn % 4);
    let mut out = b"kept".to_vec();
    let unchanged = |out: &Vec<u8>| assert_eq!(&out[..4], b"kept");
    match op % 7 {
        0 => {
            let _ = s.call("set", conn, rest, &mut out);
            out.truncate(4);
            match s.init(conn, &mut out) {
                Ok(wrote) => assert_eq!(wrote, out.len() > 4),
                Err(e) => {
                    named(&e);
                    unchanged(&out);
                    assert_eq!(out.len(), 4);
                }
            }
        }
        1 => {
            let _ = s.call("set", conn, rest, &mut out);
            out.truncate(4);
            if let Err(e) = s.request(conn, u64::from(*op), &mut out) {
                named(&e);
                assert_eq!(out, b"kept");
            }
        }
        2 => match s.frame(conn, rest) {
            Ok(Frame::Len(n)) => assert!(n as u64 <= u64::MAX / 2),
            Ok(Frame::More) => {}
            Err(e) => named(&e),
        },
        3 => match s.response(conn, rest) {
            Ok(Some(c)) => assert_ne!(c, barrage_metrics::ErrorClass::NotSent),
            Ok(None) => {}
            Err(e) => named(&e),
        },
        4 => match s.check("check", conn, rest) {
            Ok(Check::Fail(c)) => assert_ne!(c, barrage_metrics::ErrorClass::NotSent),
            Ok(_) => {}
            Err(e) => named(&e),
        },
        5 => {
            if let Err(e) = s.call("make", conn, rest, &mut out) {
                named(&e);
                assert_eq!(out, b"kept");
            }
        }
        _ => s.close(conn),
    }
});
