use super::*;

fn load(text: &str) -> Result<Script, String> {
    Script::load("t.lua", text, 100_000)
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
    let e = Script::load("t.lua", "function request() return 'x' end", 0).unwrap_err();
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
        u64::MAX / 2,
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
