use super::*;
use std::sync::atomic::AtomicBool;

fn load(text: &str) -> Result<Script, String> {
    Script::load("t.lua", text, 100_000, Libs::Safe)
}

#[test]
fn a_mistake_in_the_file_is_one_line_naming_the_file_and_line() {
    let e = load("function request(conn)\n  return 'x'\nend end\n").unwrap_err();
    assert!(e.starts_with("t.lua:3: the file's top level: "), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let e = load("x = nil + 1\nfunction request() return 'x' end\n").unwrap_err();
    assert!(
        e.starts_with("t.lua:1: the file's top level: attempt to perform arithmetic"),
        "{e}"
    );
    let e = load("request = 5\n").unwrap_err();
    assert_eq!(
        e,
        "t.lua: the file's top level: request is an integer, not a function"
    );
    // A script of helpers only (a scenario's steps call them) loads.
    assert_eq!(
        load("function helper() end\n").unwrap().fns(),
        HookFns::default()
    );
    let e = load("while true do end\n").unwrap_err();
    assert!(
        e.starts_with("t.lua:1: the file's top level: ran out of its instruction budget"),
        "{e}"
    );
    let e = Script::load("t.lua", "function request() return 'x' end", 0, Libs::Safe).unwrap_err();
    assert!(e.starts_with("--script-budget"), "{e}");
}

#[test]
fn the_functions_a_script_defines_are_known_at_load() {
    let s =
        load("function request(c, seq) return 'x' end\nfunction frame(b) return nil end").unwrap();
    assert_eq!(
        s.fns(),
        HookFns {
            init: false,
            request: true,
            frame: true,
            response: false
        }
    );
}

#[test]
fn requests_see_their_connection_state_and_sequence() {
    let s = load(
        "function init(conn) conn.n = 100 end\n\
         function request(conn, seq) conn.n = conn.n + 1\n\
           return string.pack('>I4I4', conn.n, seq) end",
    )
    .unwrap();
    let mut out = Vec::new();
    assert_eq!(s.init(7, &mut out), Ok(false));
    assert!(out.is_empty());
    s.request(7, 3, &mut out).unwrap();
    s.request(7, 4, &mut out).unwrap();
    assert_eq!(out, [0, 0, 0, 101, 0, 0, 0, 3, 0, 0, 0, 102, 0, 0, 0, 4]);
    // A connection that opens again starts empty; another one has its own state.
    s.close(7);
    assert_eq!(s.init(7, &mut out), Ok(false));
    out.clear();
    s.request(7, 0, &mut out).unwrap();
    assert_eq!(&out[..4], [0, 0, 0, 101]);
    let e = s.request(8, 0, &mut out).unwrap_err();
    assert!(
        e.0.starts_with("t.lua:2: request(): attempt to perform arithmetic"),
        "{e}"
    );
}

#[test]
fn init_may_send_a_login() {
    let s = load("function init(conn) return 'LOGIN ' .. conn.id end").unwrap();
    let mut out = Vec::new();
    assert_eq!(s.init(42, &mut out), Ok(true));
    assert_eq!(out, b"LOGIN 42");
    let s = load("function init(conn) return 5 end").unwrap();
    let e = s.init(1, &mut out).unwrap_err();
    assert!(
        e.0.contains("init(): returned an integer: init returns"),
        "{e}"
    );
}

#[test]
fn frame_says_how_long_the_next_reply_is() {
    let s = load(
        "function frame(buf)\n\
           if #buf < 2 then return nil end\n\
           return 2 + string.unpack('>I2', buf) end",
    )
    .unwrap();
    assert_eq!(s.frame(1, b"\x00"), Ok(Frame::More));
    assert_eq!(s.frame(1, b"\x00\x03ab"), Ok(Frame::Len(5)));
    let s = load("function frame(buf) return -1 end").unwrap();
    assert!(s.frame(1, b"x").is_err());
    let s = load("function frame(buf) return 2.5 end").unwrap();
    assert!(s.frame(1, b"x").is_err());
}

#[test]
fn response_names_an_error_class_or_none() {
    let s = load(
        "function response(conn, reply)\n\
           if reply == 'ok' then return true end\n\
           if reply == 'nil' then return end\n\
           if reply == 'no' then return false end\n\
           return reply end",
    )
    .unwrap();
    assert_eq!(s.response(1, b"ok"), Ok(None));
    assert_eq!(s.response(1, b"nil"), Ok(None));
    assert_eq!(s.response(1, b"no"), Ok(Some(ErrorClass::Mismatch)));
    assert_eq!(
        s.response(1, b"reply_error"),
        Ok(Some(ErrorClass::ReplyError))
    );
    assert_eq!(
        s.response(1, b"grpc.unavailable"),
        Ok(Some(ErrorClass::GrpcUnavailable))
    );
    let e = s.response(1, b"bogus").unwrap_err();
    assert!(
        e.0.contains("\"bogus\", which is not an error class"),
        "{e}"
    );
    assert!(s.response(1, b"not_sent").is_err());
}

#[test]
fn a_call_that_loops_forever_is_stopped_by_its_budget_and_the_next_call_runs() {
    let s = load(
        "function request(conn, seq)\n\
           if seq == 1 then\n\
             while true do end\n\
           end\n\
           local x = 0\n\
           for i = 1, 1000 do x = x + i end\n\
           return tostring(x) end",
    )
    .unwrap();
    let mut out = Vec::new();
    s.request(1, 0, &mut out).unwrap();
    let e = s.request(1, 1, &mut out).unwrap_err();
    assert!(
        e.0.starts_with(
            "t.lua:3: request(): ran out of its instruction budget (100000 instructions"
        ),
        "{e}"
    );
    // The budget is per call: the loops of many calls add up to more than it.
    for seq in 2..50 {
        s.request(1, seq, &mut out).unwrap();
    }
}

#[test]
fn a_script_that_allocates_without_end_fails_the_call() {
    let mut s = Script::load(
        "t.lua",
        "function request(conn, seq)\n\
           local t = {}\n\
           while true do t[#t + 1] = string.rep('x', 1 << 20) .. #t end\n\
         end",
        MAX_BUDGET,
        Libs::Safe,
    )
    .unwrap();
    // The interpreter is made on a thread's first call: with a smaller limit, for the test.
    s.memory = 16 << 20;
    let e = s.request(1, 0, &mut Vec::new()).unwrap_err();
    assert!(e.0.contains("request(): "), "{e}");
    assert!(e.0.contains("memory"), "{e}");
}

#[test]
fn each_thread_has_its_own_interpreter() {
    let s = Arc::new(
        load(
            "count = 0\n\
             function request(conn, seq) count = count + 1; return tostring(count) end",
        )
        .unwrap(),
    );
    let mut out = Vec::new();
    s.request(1, 0, &mut out).unwrap();
    s.request(1, 1, &mut out).unwrap();
    let t = Arc::clone(&s);
    let other = std::thread::spawn(move || {
        let mut out = Vec::new();
        t.request(1, 0, &mut out).unwrap();
        out
    })
    .join()
    .unwrap();
    assert_eq!(out, b"12");
    assert_eq!(other, b"1");
}

/// Neither a coroutine nor `pcall` gets a call past its budget: a loop inside either, or a
/// loop around a `pcall` that catches the budget's error, still ends the call.
#[test]
fn the_budget_cannot_be_escaped_by_coroutines_or_pcall() {
    for body in [
        "coroutine.wrap(function() while true do end end)()",
        "local co = coroutine.create(function() while true do end end)\n  coroutine.resume(co)",
        "while true do pcall(function() while true do end end) end",
        "while true do xpcall(function() while true do end end, function(e) return e end) end",
        "while true do pcall(pcall, function() while true do end end) end",
    ] {
        let s = load(&format!(
            "function request(conn, seq)\n  {body}\n  return 'x'\nend"
        ))
        .unwrap();
        let e = s.request(1, 0, &mut Vec::new()).unwrap_err();
        assert!(
            e.0.contains("ran out of its instruction budget"),
            "{body}: {e}"
        );
        // The next call has its whole budget again.
        let ok = load("function request(conn, seq) pcall(error, 'x') return 'y' end").unwrap();
        assert!(ok.request(1, 0, &mut Vec::new()).is_ok());
    }
}

/// Issue 42, item 4: with the default libraries a script reaches nothing outside the run, and
/// with any it cannot end barrage: what it may not use raises an error naming itself, at the
/// script's line (a `script.error` in a function; at the top level the file is refused).
#[test]
fn a_script_cannot_end_or_escape_the_run() {
    for (call, what) in [
        (
            "os.exit(0)",
            "os.exit would end barrage without its results",
        ),
        ("os.exit(true, true)", "os.exit would end barrage"),
        (
            "os.execute('true')",
            "os.execute is not available to scripts",
        ),
        ("os.remove('/tmp/x')", "os.remove is not available"),
        (
            "os.rename('/tmp/x', '/tmp/y')",
            "os.rename is not available",
        ),
        ("os.tmpname()", "os.tmpname is not available"),
        ("io.open('/etc/passwd')", "io.open is not available"),
        ("io.write('x')", "io.write is not available"),
        ("require('os')", "require is not available"),
        ("dofile('/dev/null')", "dofile is not available"),
        ("loadfile('/dev/null')", "loadfile is not available"),
        (
            "load(string.dump(function() end), 'x', 'b')",
            "load: binary chunks are not available",
        ),
    ] {
        let s = load(&format!(
            "function request(conn, seq)\n  {call}\n  return 'x'\nend"
        ))
        .unwrap();
        let e = s.request(1, 0, &mut Vec::new()).unwrap_err();
        assert!(
            e.0.starts_with(&format!("t.lua:2: request(): {what}")),
            "{call}: {e}"
        );
        // At the top level: the file is refused before any load, in one line.
        let e = load(&format!(
            "local x = 1\n{call}\nfunction request() return 'x' end"
        ))
        .unwrap_err();
        assert!(
            e.starts_with(&format!("t.lua:2: the file's top level: {what}")),
            "{call}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // Caught, the refusal is an error like another: the script goes on, barrage with it.
    let s = load(
        "function request(conn, seq)\n  local ok, e = pcall(os.exit, 0)\n  return tostring(ok)\nend",
    )
    .unwrap();
    let mut out = Vec::new();
    s.request(1, 0, &mut out).unwrap();
    assert_eq!(out, b"false");
    // What stays: the safe parts of os, string, table, math, utf8, coroutine, load of text.
    let s = load(
        "function request(conn, seq)\n\
           assert(type(os.time()) == 'number' and type(os.clock()) == 'number')\n\
           assert(type(os.date('%Y')) == 'string' and os.difftime(2, 1) == 1)\n\
           assert(utf8.char(72) == 'H' and math.max(1, 2) == 2 and table.concat({'a'}) == 'a')\n\
           assert(coroutine.wrap(function() return 1 end)() == 1)\n\
           assert(load('return 1 + 1')() == 2 and debug == nil and package == nil)\n\
           return string.pack('>I2', 7)\n\
         end",
    )
    .unwrap();
    out.clear();
    s.request(1, 0, &mut out).unwrap();
    assert_eq!(out, [0, 7]);
    // The full set (--script-unsafe): io and os are there, os.exit still is not.
    let all = |text: &str| Script::load("t.lua", text, 100_000, Libs::All);
    let s = all(
        "function request(conn, seq)\n  return io.type(io.stdout) .. type(os.execute) .. type(require)\nend",
    )
    .unwrap();
    out.clear();
    s.request(1, 0, &mut out).unwrap();
    assert_eq!(out, b"filefunctionfunction");
    let e = all("os.exit(0)\n").unwrap_err();
    assert!(
        e.starts_with("t.lua:1: the file's top level: os.exit would end barrage"),
        "{e}"
    );
}

#[test]
fn the_budget_is_capped() {
    let f = "function request() return 'x' end";
    assert!(Script::load("t.lua", f, MAX_BUDGET, Libs::Safe).is_ok());
    let e = Script::load("t.lua", f, MAX_BUDGET + 1, Libs::Safe).unwrap_err();
    assert_eq!(
        e,
        "--script-budget: 100000001 is over the cap of 100000000 instructions per call"
    );
}

/// This thread watched as a worker's: `stop` the run's flag, `until` the end of its part.
fn watch(stop: bool, until: u64, load: bool) {
    use barrage_engine::clock::{mono_ns, TimeSource};
    barrage_engine::hook::watch(Some(barrage_engine::hook::Watch {
        stop: Arc::new(AtomicBool::new(stop)),
        time: TimeSource::Real { base_ns: mono_ns() },
        until,
        load,
    }));
}

/// A call still running when the run ends (its stop flag, `-d`, the drain's end) is stopped
/// once it ran its grace, however large its budget, and `pcall` cannot catch that; a call that
/// ends within its grace is not an error. Deterministic: the run has ended before the call.
#[test]
fn a_call_running_when_the_run_ends_is_stopped_whatever_its_budget() {
    let text = "function request(conn, seq)\n\
                  if seq == 0 then while true do pcall(function() while true do end end) end end\n\
                  local x = 0\n\
                  for i = 1, 100000 do x = x + i end\n\
                  return tostring(x)\n\
                end";
    for (stop, until, load, why) in [
        (true, u64::MAX, true, "the run is stopping"),
        (false, 0, true, "the run's duration (-d) is over"),
        (true, 0, false, "the drain's time is over"),
    ] {
        let s = Script::load("t.lua", text, MAX_BUDGET, Libs::Safe).unwrap();
        watch(stop, until, load);
        let mut out = Vec::new();
        // Within its grace (some 400,000 instructions): it returns.
        s.request(1, 1, &mut out).unwrap();
        assert_eq!(out, b"5000050000");
        let e = s.request(1, 0, &mut out).unwrap_err();
        assert!(
            e.0.starts_with(&format!(
                "t.lua:2: request(): stopped: {why} and this call was still running"
            )),
            "{e}"
        );
        // Once a call was stopped, the next ones have no grace: a worker that calls many
        // before it sees the end is not held for a grace each time.
        let e = s.request(1, 1, &mut out).unwrap_err();
        assert!(e.0.contains("stopped: "), "{e}");
        barrage_engine::hook::watch(None);
    }
    // A drain (the stop flag is not its end) and no time set: the call runs to its budget.
    let s = Script::load("t.lua", text, 2_000_000, Libs::Safe).unwrap();
    watch(true, u64::MAX, false);
    let e = s.request(1, 0, &mut Vec::new()).unwrap_err();
    assert!(e.0.contains("ran out of its instruction budget"), "{e}");
    barrage_engine::hook::watch(None);
}

/// What crosses the boundary back to barrage may be any Lua value: each is taken or refused
/// as one line naming the file, never a panic (the fuzz target `script_boundary` feeds
/// arbitrary bytes through the same functions).
#[test]
fn any_value_a_script_returns_is_taken_or_refused_in_one_line() {
    let s = load(
        "local co = coroutine.create(function() end)\n\
         local values = { function() return 0/0 end, function() return 1/0 end,\n\
           function() return -0.0 end, function() return math.mininteger end,\n\
           function() return math.maxinteger end, function() return 2^63 end,\n\
           function() return {} end, function() return print end,\n\
           function() return co end, function() error({}) end,\n\
           function() error('two\\nlines') end, function() error(nil) end,\n\
           function() error('@7: made up', 0) end, function() return '\\255\\0' end,\n\
           function() return 1, 2 end }\n\
         local function pick(b) return values[(b:byte(1) or 1) % #values + 1]() end\n\
         function request(conn, seq) return pick(string.char(seq)) end\n\
         function frame(buf) return pick(buf) end\n\
         function response(conn, reply) return pick(reply) end\n\
         function init(conn) return pick(string.char(conn.id)) end",
    )
    .unwrap();
    for k in 0..15u8 {
        let mut out = Vec::new();
        let results = [
            s.request(1, u64::from(k), &mut out).err(),
            s.frame(1, &[k]).err(),
            s.response(1, &[k]).err(),
            s.init(u64::from(k), &mut out).err(),
        ];
        for e in results.into_iter().flatten() {
            assert!(e.0.starts_with("t.lua"), "{k}: {e}");
            assert!(!e.0.contains('\n'), "{k}: {e}");
        }
    }
    // A float that is a whole length is one; NaN, infinities and -1 are not.
    assert_eq!(s.frame(1, &[2]), Ok(Frame::Len(0)));
    assert!(s.frame(1, &[0]).is_err() && s.frame(1, &[1]).is_err());
    assert!(s.frame(1, &[3]).is_err(), "math.mininteger");
    assert!(
        s.frame(1, &[5]).is_err(),
        "2^63 is past what a length may be"
    );
}
