//! Scenario files, good and bad: every bad file gives one line naming the file, the line and
//! the key (`chat.toml:12: users.arrive: ...`), in TOML and in YAML alike.

use barrage_scenario::{load, load_str, Checked, Format, Shape};
use std::path::Path;
use std::time::Duration;

const HEAD: &str = "target = \"tcp://127.0.0.1:7000\"\n[users]\ncount = 10\narrive = \"5/s\"\n";
const HTTP: &str = "target = \"http://127.0.0.1:8080\"\n[users]\ncount = 10\narrive = \"5/s\"\n";

fn toml_in(dir: &Path, text: &str) -> Result<Checked, String> {
    load_str("t.toml", text, Format::Toml, dir).map_err(|e| e.to_string())
}

fn toml(text: &str) -> Result<Checked, String> {
    toml_in(Path::new("."), text)
}

fn yaml(text: &str) -> Result<Checked, String> {
    load_str("t.yaml", text, Format::Yaml, Path::new(".")).map_err(|e| e.to_string())
}

/// Asserts that the file is refused with one line starting `prefix`.
#[track_caller]
fn refused(r: Result<Checked, String>, prefix: &str) {
    let e = r.map(|c| c.summary()).expect_err("a bad file");
    assert!(!e.contains('\n'), "one line: {e}");
    assert!(e.starts_with(prefix), "\n  got: {e}\n want: {prefix}...");
}

#[test]
fn a_minimal_file_in_toml_and_yaml_is_the_same_scenario() {
    let t = toml(&format!("{HEAD}[[steps]]\nsend = \"hello {{conn}}\\n\"\n")).unwrap();
    let y = yaml("target: tcp://127.0.0.1:7000\nusers:\n  count: 10\n  arrive: 5/s\nsteps:\n  - send: \"hello {conn}\\n\"\n").unwrap();
    assert_eq!(t.summary(), y.summary());
    assert_eq!(t.summary(), "10 users (arrive 5/s, last at 1.8s, depart at end), 1 step that sends, 0 pauses, 0 on rules, 0 captures");
    assert_eq!(t.shape.arrival(9), Some(Duration::from_millis(1800)));
}

#[test]
fn stages_capture_and_reuse_and_data_columns_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("u.csv"), "name,pw\na,1\nb,2\nc,3\n").unwrap();
    let c = toml_in(
        dir.path(),
        "target = \"ws://127.0.0.1:9000/\"\n[users]\ncount = 3\narrive = [{rate = \"1/s\", for = \"2s\"}, {rate = \"2/s\", for = \"1s\"}]\n\
         data = \"u.csv\"\ndepart = \"2/s\"\n[[steps]]\nname = \"login\"\nsend = '{\"u\":\"{row.name}\",\"p\":\"{row.pw}\"}'\n\
         capture.tok = { regex = 'tok=(\\w+)' }\n[[steps]]\nrepeat = 2\nsteps = [{ send = \"t {tok}\" }, { pause = \"1s\" }]\n\
         [[on]]\nmatch = { prefix = \"2\" }\nreply = \"3\"\ncapture.last = { bytes = \"1..\" }\n[[leave]]\nsend = \"bye {tok} {last}\"\n",
    )
    .unwrap();
    assert_eq!(
        c.shape,
        Shape::Stages(vec![
            (1.0, Duration::from_secs(2)),
            (2.0, Duration::from_secs(1))
        ])
    );
    assert_eq!(c.captures, ["tok", "last"]);
    assert_eq!((c.count.steps, c.count.on, c.count.leave), (4, 1, 1));
    assert_eq!(c.data.as_ref().unwrap().rows, 3);
}

#[test]
fn unknown_key_names_its_line_and_table() {
    refused(
        toml(&format!("{HEAD}hols = \"1s\"\n[[steps]]\nsend = \"x\"\n")),
        "t.toml:5: users.hols: unknown field `hols`",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\n[[steps]]\nsned = \"y\"\n"
        )),
        "t.toml:8: steps[1].sned: unknown field `sned`",
    );
    refused(
        yaml("target: tcp://a:1\nusers:\n  count: 10\n  arrive: 5/s\n  hols: 1s\nsteps:\n  - send: x\n"),
        "t.yaml:5: users.hols: unknown field `hols`",
    );
    refused(
        toml("target = \"tcp://a:1\"\n[users]\ncount = 10\narrive = [{rate = \"1/s\", fro = \"1s\"}]\n[[steps]]\nsend = \"x\"\n"),
        "t.toml:4: users.arrive: unknown field `fro`",
    );
}

#[test]
fn wrong_type_and_missing_key() {
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = 3\n")),
        "t.toml:6: steps[0].send: invalid type: integer `3`, expected a string",
    );
    refused(
        yaml("target: tcp://a:1\nusers:\n  count: ten\n  arrive: 5/s\nsteps:\n  - send: x\n"),
        "t.yaml:3: users.count: expected a whole number",
    );
    refused(
        toml("target = \"tcp://a:1\"\n[[steps]]\nsend = \"x\"\n"),
        "t.toml: users: missing",
    );
    refused(
        toml("target = \"tcp://a:1\"\n[users]\ncount = 1\n[[steps]]\nsend = \"x\"\n"),
        "t.toml:2: users.arrive: missing",
    );
}

#[test]
fn bad_values_use_the_cli_grammar() {
    let users = |extra: &str| {
        format!("target = \"tcp://a:1\"\n[users]\ncount = 10\narrive = \"5/s\"\n{extra}\n[[steps]]\nsend = \"x\"\n")
    };
    refused(
        toml(&users("hold = \"soon\"")),
        "t.toml:5: users.hold: 'soon' is not a duration",
    );
    refused(toml(&users("depart = \"slowly\"")), "t.toml:5: users.depart: 'slowly' is not a rate; write e.g. 1000 or 2.5k (per second); or write \"at_end\"");
    refused(
        toml(&users("").replace("\"5/s\"", "\"fast\"")),
        "t.toml:4: users.arrive: 'fast' is not a rate",
    );
    refused(
        toml(&users("").replace("\"5/s\"", "\"1e9/s\"")),
        "t.toml:4: users.arrive: '1e9/s' is more than the 100M per second",
    );
    refused(
        toml(&users("").replace("count = 10", "count = 0")),
        "t.toml:3: users.count: 0 users; give 1 to 10000000",
    );
    refused(
        toml(&users("").replace("tcp://a:1", "gopher://a:1")),
        "t.toml:1: target: 'gopher://a:1': write a URL with one of tcp://",
    );
    refused(
        toml(&users("[protocol]\nframing = \"lines\"")),
        "t.toml:6: protocol.framing: 'lines' is not a framing",
    );
}

#[test]
fn preflight_of_limits() {
    let stages = "target = \"tcp://a:1\"\n[users]\ncount = 100\narrive = [{rate = \"10/s\", for = \"5s\"}]\n[[steps]]\nsend = \"x\"\n";
    refused(
        toml(stages),
        "t.toml:4: users.arrive: the stages bring 50 users, fewer than users.count = 100",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\n[run]\nduration = \"1s\"\n"
        )),
        "t.toml:8: run.duration: 1s ends before the last of 10 users arrives (at 1.8s)",
    );
    let many = format!("{HEAD}[[steps]]\nevery = \"1ns\"\nsend = \"x\"\n")
        .replace("count = 10", "count = 1000");
    refused(
        toml(&many),
        "t.toml:6: steps[0].every: every 1ns for 1000 users is",
    );
    let slow = format!("{HEAD}[[steps]]\nsend = \"x\"\n").replace("\"5/s\"", "\"1e-300/s\"");
    refused(
        toml(&slow),
        "t.toml:4: users.arrive: the last of 10 users would arrive after more than 30 days",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nrepeat = 0\nsend = \"x\"\n")),
        "t.toml:6: steps[0].repeat: 0; give 1 to 1000000000",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\n[run]\nthreads = 0\n"
        )),
        "t.toml:8: run.threads: 0 threads",
    );
}

#[test]
fn every_var_must_resolve() {
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = \"hi {{tok}}\"\n")),
        "t.toml:6: steps[0].send: {tok} is not defined here (captures so far: none;",
    );
    refused(
        yaml("target: tcp://a:1\nusers:\n  count: 10\n  arrive: 5/s\nsteps:\n  - send: x\n  - send: \"{tok}\"\n"),
        "t.yaml:7: steps[1].send: {tok} is not defined here",
    );
    // A capture is usable after its step, not in the step's own message.
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"{{tok}}\"\ncapture.tok = {{ json = \"/t\" }}\n"
        )),
        "t.toml:6: steps[0].send: {tok} is not defined here",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = \"{{row.name}}\"\n")),
        "t.toml:6: steps[0].send: {row.name} needs users.data",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = \"{{seq%0}}\"\n")),
        "t.toml:6: steps[0].send: {seq%0}: write {seq%N}",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("u.csv"), "name\na\nb\n").unwrap();
    let data = |count: u32, send: &str| {
        format!("target = \"tcp://a:1\"\n[users]\ncount = {count}\narrive = \"5/s\"\ndata = \"u.csv\"\n[[steps]]\nsend = \"{send}\"\n")
    };
    refused(
        toml_in(dir.path(), &data(2, "{row.nmae}")),
        "t.toml:7: steps[0].send: {row.nmae}: users.data has no column nmae (columns: name)",
    );
    refused(
        toml_in(dir.path(), &data(3, "{row.name}")),
        "t.toml:5: users.data: u.csv has 2 rows for 3 users",
    );
    refused(
        toml_in(dir.path(), &data(2, "x").replace("u.csv", "missing.csv")),
        "t.toml:5: users.data: cannot read",
    );
}

#[test]
fn every_capture_must_be_used_once_defined() {
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\ncapture.tok = {{ json = \"/t\" }}\n"
        )),
        "t.toml:7: steps[0].capture.tok: captured but never used",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = \"x\"\ncapture.tok = {{ json = \"/t\" }}\n[[steps]]\nsend = \"{{tok}}\"\ncapture.tok = {{ json = \"/u\" }}\n")),
        "t.toml:10: steps[1].capture.tok: tok is already captured by steps[0].capture.tok (line 7)",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\ncapture.seq = {{ json = \"/t\" }}\n"
        )),
        "t.toml:7: steps[0].capture.seq: a capture name",
    );
    // An on rule may fire at any time: its capture is for its reply and the leave steps.
    refused(
        toml(&format!("{HEAD}[[on]]\nmatch = {{ prefix = \"!\" }}\ncapture.id = {{ bytes = \"1..\" }}\n[[steps]]\nsend = \"{{id}}\"\n")),
        "t.toml:9: steps[0].send: {id} is captured by on[0].capture.id, which may not have run yet here",
    );
}

#[test]
fn bad_captures_and_matches() {
    let cap = |c: &str| {
        format!("{HEAD}[[steps]]\nsend = \"x\"\ncapture.v = {c}\n[[steps]]\nsend = \"{{v}}\"\n")
    };
    refused(
        toml(&cap("{ json = \"/a\", regex = \"(x)\" }")),
        "t.toml:7: steps[0].capture.v: give one source, not json and regex",
    );
    refused(
        toml(&cap("{ regex = \"x\" }")),
        "t.toml:7: steps[0].capture.v: 'x' has 0 groups, so group 1 does not exist",
    );
    refused(
        toml(&cap("{ regex = \"(\" }")),
        "t.toml:7: steps[0].capture.v: '(' is not a regular expression",
    );
    refused(
        toml(&cap("{ split = \",\" }")),
        "t.toml:7: steps[0].capture.v: split needs field = N",
    );
    refused(
        toml(&cap("{ bytes = \"5..2\" }")),
        "t.toml:7: steps[0].capture.v: '5..2' is empty",
    );
    refused(
        toml(&cap("{ header = \"X-Id\" }")),
        "t.toml:7: steps[0].capture.v: header captures are for http:// targets",
    );
    refused(
        toml(&cap("{ json = \"token\" }")),
        "t.toml:7: steps[0].capture.v: 'token' is not a JSON pointer",
    );
    refused(
        toml(&cap("{}")),
        "t.toml:7: steps[0].capture.v: give where the value comes from",
    );
    let exp = |e: &str| format!("{HEAD}[[steps]]\nsend = \"x\"\nexpect = {e}\n");
    refused(
        toml(&exp("{ prefix = \"a\", regex = \"b\" }")),
        "t.toml:7: steps[0].expect: give one of json, regex, prefix or at (with type), not regex and prefix",
    );
    refused(
        toml(&exp("{ equals = 3 }")),
        "t.toml:7: steps[0].expect.equals: equals compares the value at a JSON pointer",
    );
    refused(
        toml(&exp("{ regex = \"[\" }")),
        "t.toml:7: steps[0].expect.regex: '[' is not a regular expression",
    );
    refused(
        toml(&exp("{ timeout = \"0s\" }")),
        "t.toml:7: steps[0].expect.timeout: must be greater than zero",
    );
    refused(
        toml(&exp("{ prefix = \"a\", framing = \"none\" }")),
        "t.toml:7: steps[0].expect: replies are framed 'none'",
    );
    refused(
        toml(&format!("{HEAD}[protocol]\nframing = \"none\"\n[[steps]]\nsend = \"x\"\ncapture.v = {{ bytes = \"0..2\" }}\n[[steps]]\nsend = \"{{v}}\"\n")),
        "t.toml:9: steps[0].capture: replies are framed 'none'",
    );
}

#[test]
fn a_step_does_one_thing_that_fits_the_target() {
    refused(
        toml(&format!("{HEAD}[[steps]]\nsend = \"x\"\npause = \"1s\"\n")),
        "t.toml:5: steps[0]: a step does one thing: found send and pause",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nname = \"x\"\n")),
        "t.toml:5: steps[0]: a step needs one of send, fields, path (HTTP), rpc (gRPC), subscribe (MQTT), pause, think",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\npause = \"1s\"\ncapture.v = {{ json = \"/a\" }}\n"
        )),
        "t.toml:7: steps[0].capture: a pause step has no reply",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nthink = \"3s..1s\"\n")),
        "t.toml:6: steps[0].think: '3s..1s': the range runs from the shorter",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\npath = \"/\"\n")),
        "t.toml:6: steps[0].path: path is for http:// and https:// targets",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\nmethod = \"POST\"\n"
        )),
        "t.toml:7: steps[0].method: HTTP request keys go with path",
    );
    refused(
        toml(&format!("{HTTP}[[steps]]\nsend = \"x\"\n")),
        "t.toml:6: steps[0].send: the target is http://",
    );
    refused(
        toml(&format!("{HTTP}[[steps]]\npath = \"api\"\n")),
        "t.toml:6: steps[0].path: 'api': a path starts with /",
    );
    refused(
        toml(&format!(
            "{HTTP}[[steps]]\npath = \"/\"\nstatus = \"2xxx\"\n"
        )),
        "t.toml:7: steps[0].status: '2xxx' is not a status list",
    );
    refused(
        toml(&format!(
            "{HTTP}[[steps]]\npath = \"/\"\nmethod = \"post\"\n"
        )),
        "t.toml:7: steps[0].method: 'post': a method is upper case",
    );
    refused(
        toml(&format!(
            "{HTTP}[[steps]]\npath = \"/\"\nheaders = [\"NoColon\"]\n"
        )),
        "t.toml:7: steps[0].headers[0]: 'NoColon' is not a header",
    );
    refused(
        toml(&format!("{HEAD}[[steps]]\nsteps = [{{ send = \"x\" }}]\n")),
        "t.toml:5: steps[0].steps: a block runs under repeat = N or every",
    );
}

#[test]
fn steps_after_an_endless_every_never_run() {
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nevery = \"1s\"\nsend = \"x\"\n[[steps]]\nsend = \"y\"\n"
        )),
        "t.toml:6: steps[0].every: repeats until the user departs, so steps[1] never runs",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\n[[leave]]\nevery = \"1s\"\nsend = \"y\"\n"
        )),
        "t.toml:8: leave[0].every: would never end here",
    );
    assert!(toml(&format!(
        "{HEAD}[[steps]]\nevery = \"1s\"\nrepeat = 3\nsend = \"x\"\n[[steps]]\nsend = \"y\"\n"
    ))
    .is_ok());
}

#[test]
fn names_are_unique_and_thresholds_name_real_steps() {
    let named = format!("{HEAD}[[steps]]\nname = \"join\"\nsend = \"x\"\n");
    refused(
        toml(&format!(
            "{named}[[steps]]\nname = \"join\"\nsend = \"y\"\n"
        )),
        "t.toml:9: steps[1].name: 'join' already names steps[0]",
    );
    refused(
        toml(&format!(
            "{named}[run]\nthresholds = [\"steps.jion.p99 < 1s\"]\n"
        )),
        "t.toml:9: run.thresholds[0]: 'jion' is not a named step (named steps: join)",
    );
    assert!(toml(&format!(
        "{named}[run]\nthresholds = [\"steps.join.p99 < 1s\", \"p99 < 2s\"]\n"
    ))
    .is_ok());
    refused(
        toml(&format!("{HEAD}[[steps]]\nname = \"a b\"\nsend = \"x\"\n")),
        "t.toml:6: steps[0].name: 'a b': a name holds",
    );
}

#[test]
fn on_rules_need_a_match_and_an_action() {
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"x\"\n[[on]]\nmatch = {{}}\nreply = \"3\"\n"
        )),
        "t.toml:8: on[0].match: give one of json, regex, prefix or at",
    );
    refused(
        toml(&format!(
            "{HTTP}[[steps]]\npath = \"/\"\n[[on]]\nmatch = {{ prefix = \"2\" }}\nreply = \"3\"\n"
        )),
        "t.toml:7: on[0]: on rules are for pushed messages",
    );
}

#[test]
fn files_themselves() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.json");
    std::fs::write(&p, "{}").unwrap();
    assert!(load(&p)
        .unwrap_err()
        .to_string()
        .ends_with("s.json: a scenario file ends in .toml, .yaml or .yml"));
    let missing = dir.path().join("nope.toml");
    assert!(load(&missing)
        .unwrap_err()
        .to_string()
        .contains("nope.toml: cannot read it:"));
    let p = dir.path().join("s.toml");
    std::fs::write(&p, "target = [\n").unwrap();
    let e = load(&p).unwrap_err().to_string();
    assert!(e.contains("s.toml:") && !e.contains('\n'), "{e}");
}

#[test]
fn yaml_errors_in_nested_values_name_their_line() {
    let y = "target: tcp://a:1\nusers:\n  count: 10\n  arrive:\n    - rate: 5/s\n      for: 1s\n    - rate: 5/s\n      for: soon\nsteps:\n  - send: x\n";
    refused(
        yaml(y),
        "t.yaml:8: users.arrive[1].for: 'soon' is not a duration",
    );
    let y = "target: tcp://a:1\nusers:\n  count: 10\n  arrive: 5/s\nsteps:\n  - send: x\n    capture:\n      sid:\n        regex: 'no group'\n  - send: \"{sid}\"\n";
    refused(
        yaml(y),
        "t.yaml:9: steps[0].capture.sid: 'no group' has 0 groups",
    );
    let y = "target: tcp://a:1\nusers:\n  count: 10\n  arrive: 5/s\nsteps:\n  - send: x\n    expect:\n      json: /a\n      eqals: 1\n";
    refused(
        yaml(y),
        "t.yaml:9: steps[0].expect.eqals: unknown field `eqals`",
    );
}

/// Whatever is cut off a good file, loading it answers (Ok or one error line), never panics.
#[test]
fn truncated_files_never_panic() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for name in ["chat.toml", "engineio.yaml", "http-flow.toml"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let format = Format::of(Path::new(name)).unwrap();
        for end in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
            if let Err(e) = load_str(name, &text[..end], format, &dir) {
                let line = e.to_string();
                assert!(
                    !line.contains('\n') && line.starts_with(name),
                    "{name}[..{end}]: {line}"
                );
            }
        }
    }
}

/// Lines dropped or doubled and characters replaced by syntax characters, in every example:
/// loading answers Ok or one error line naming the file, never a panic (deterministic).
#[test]
fn mutated_files_never_panic() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let check = |name: &str, text: &str| {
        let format = Format::of(Path::new(name)).unwrap();
        if let Err(e) = load_str(name, text, format, &dir) {
            let line = e.to_string();
            assert!(
                !line.contains('\n') && line.starts_with(name),
                "{line}\n--- from:\n{text}"
            );
        }
    };
    for name in [
        "chat.toml",
        "engineio.yaml",
        "http-flow.toml",
        "routes.toml",
    ] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for i in 0..lines.len() {
            let mut v = lines.clone();
            v.remove(i);
            check(name, &v.join("\n"));
            let mut v = lines.clone();
            v.insert(i, lines[i]);
            check(name, &v.join("\n"));
        }
        let chars: Vec<char> = text.chars().collect();
        for (k, i) in (0..chars.len()).step_by(5).enumerate() {
            let mut v = chars.clone();
            v[i] = ['[', '"', '=', ':', '-', '{', '\n', '0', '&', '*', ' '][k % 11];
            check(name, &v.iter().collect::<String>());
        }
    }
}

#[test]
fn broadcast_steps_carry_a_stamp_of_one_form() {
    let step = |name: &str, stamp: &str| {
        format!("[[steps]]\nname = \"{name}\"\nsend = \"{{stamp}}\"\nexpect = {{ framing = \"none\" }}\nbroadcast = {{ expect = \"3\"{stamp} }}\n")
    };
    let ok = toml(&format!(
        "{HEAD}{}{}",
        step("a", ", stamp = \"binary\""),
        step("b", ", stamp = \"binary\"")
    ));
    assert!(ok.is_ok(), "{:?}", ok.err());
    refused(
        toml(&format!("{HEAD}{}", step("a", ", stamp = \"hex\""))),
        "t.toml:9: steps[0].broadcast.stamp: \"hex\": give \"text\"",
    );
    refused(
        toml(&format!(
            "{HEAD}{}{}",
            step("a", ""),
            step("b", ", stamp = \"binary\"")
        )),
        "t.toml:14: steps[1].broadcast.stamp: \"binary\", but steps[0].broadcast uses \"text\"",
    );
    refused(
        toml(&format!(
            "{HEAD}[[steps]]\nsend = \"hi\"\nbroadcast = {{ expect = \"3\" }}\n"
        )),
        "t.toml:6: steps[0].send: a broadcast step's message carries {stamp}",
    );
}

const MQTT: &str = "target = \"mqtt://127.0.0.1:1883\"\n[users]\ncount = 10\narrive = \"5/s\"\n";

#[test]
fn mqtt_steps_fit_the_target_and_each_other() {
    let ok = toml(&format!(
        "{MQTT}[[steps]]\nsubscribe = \"r/{{user}}\"\nqos = 1\n[[steps]]\ntopic = \"r/1\"\nsend = \"{{stamp}}\"\nqos = 2\nretain = true\nevery = \"1s\"\nbroadcast = {{ expect = \"3\" }}\n[[leave]]\nunsubscribe = \"r/#\"\n"
    ))
    .expect("a good MQTT file");
    assert_eq!(ok.count.sends, 3);
    let cases: &[(String, &str)] = &[
        (
            format!("{HEAD}[[steps]]\nsend = \"x\"\ntopic = \"t\"\n"),
            "t.toml:7: steps[0].topic: is MQTT's: it goes in a file whose target is mqtt://",
        ),
        (
            format!("{HEAD}[[steps]]\nsubscribe = \"t\"\n"),
            "t.toml:6: steps[0].subscribe: is MQTT's",
        ),
        (
            format!("{MQTT}[[steps]]\nsend = \"x\"\n"),
            "t.toml:5: steps[0]: the target is mqtt://: a send step publishes to a topic",
        ),
        (
            format!("{MQTT}[[steps]]\nsend = \"x\"\ntopic = \"a/+\"\n"),
            "t.toml:7: steps[0].topic: '+' is a wildcard",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\nqos = 3\n"),
            "t.toml:7: steps[0].qos: 3; MQTT's QoS is 0, 1 or 2",
        ),
        (
            format!("{MQTT}[[steps]]\nunsubscribe = \"a\"\nqos = 1\n"),
            "t.toml:7: steps[0].qos: goes with a publish",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\ntopic = \"b\"\n"),
            "t.toml:7: steps[0].topic: goes with a send",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\nretain = true\n"),
            "t.toml:7: steps[0].retain: goes with a publish",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\nexpect = {{ prefix = \"x\" }}\n"),
            "t.toml:7: steps[0].expect: an MQTT acknowledgement carries nothing",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\nsend = \"x\"\n"),
            "t.toml:5: steps[0]: a step does one thing",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a\"\n[[on]]\nmatch = {{ prefix = \"x\" }}\nreply = \"y\"\n"),
            "t.toml:9: on[0].reply: an on rule cannot reply on mqtt://",
        ),
        (
            format!("{MQTT}[protocol]\nframing = \"line\"\n[[steps]]\nsubscribe = \"a\"\n"),
            "t.toml:6: protocol.framing: framing applies to tcp://",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"a/#/b\"\n"),
            "t.toml:6: steps[0].subscribe: '#' is a whole level and the last",
        ),
        (
            format!("{MQTT}[[steps]]\nsubscribe = \"r/{{nope}}\"\n"),
            "t.toml:6: steps[0].subscribe: {nope} is not defined",
        ),
    ];
    for (text, want) in cases {
        refused(toml(text), want);
    }
}

#[test]
fn a_reply_layout_names_fields_for_expect_match_and_captures() {
    let ok = toml(&format!(
        "{HEAD}[protocol]\nlayout = \"kind:u8, bytes:2, room:u32be\"\n[[steps]]\nsend = \"x\"\nexpect = {{ layout = \"kind\", equals = 2 }}\ncapture.room = {{ layout = \"room\" }}\n[[steps]]\nsend = \"{{room}}\"\n[[on]]\nmatch = {{ layout = \"kind\", equals = 9 }}\n"
    ))
    .expect("a good layout");
    let s = &ok.file.steps[0].value;
    let e = &s.expect.as_ref().unwrap().value;
    assert_eq!(
        (
            e.at.as_ref().map(|a| a.value),
            e.type_.as_deref().map(String::as_str)
        ),
        (Some(0), Some("u8"))
    );
    let c = &s.capture["room"].value;
    assert_eq!((c.at, c.type_.as_deref()), (Some(3), Some("u32be")));
    let cases: &[(String, &str)] = &[
        (
            format!("{HEAD}[[steps]]\nsend = \"x\"\nexpect = {{ layout = \"kind\" }}\n"),
            "t.toml:7: steps[0].expect: layout = \"kind\" names a field of protocol.layout",
        ),
        (
            format!("{HEAD}[protocol]\nlayout = \"kind:u8\"\n[[steps]]\nsend = \"x\"\nexpect = {{ layout = \"room\" }}\n"),
            "t.toml:9: steps[0].expect: protocol.layout has no field room (it has kind)",
        ),
        (
            format!("{HEAD}[protocol]\nlayout = \"kind:u8\"\n[[steps]]\nsend = \"x\"\nexpect = {{ layout = \"kind\", at = 0, type = \"u8\" }}\n"),
            "t.toml:9: steps[0].expect: give layout = \"NAME\" or at and type, not both",
        ),
        (
            format!("{HEAD}[protocol]\nlayout = \"kind:varint\"\n[[steps]]\nsend = \"x\"\n"),
            "t.toml:6: protocol.layout: 'kind:varint': a layout's fields are fixed-width integers",
        ),
        (
            format!("{HTTP}[protocol]\nlayout = \"kind:u8\"\n[[steps]]\npath = \"/\"\n"),
            "t.toml:6: protocol.layout: a binary reply's layout, for tcp://",
        ),
    ];
    for (text, want) in cases {
        refused(toml(text), want);
    }
}
