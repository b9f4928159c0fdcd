//! `barrage run FILE.toml`: a scenario file's run, with the command line's flags over the
//! file's settings (`barrage run chat.toml --users 3000 --hold 60s` is the CI-sized run of
//! the same file).
//!
//! The file is loaded and checked here (one line naming file, line and key on a mistake),
//! its settings become the run's flags where the command line gave none, and the file itself
//! travels in the spec ([`ScenarioSpec`]): the engine compiles it into users when it builds
//! the plan, so a spec run elsewhere runs the same users.

use crate::resolve::cli::RunArgs;
use crate::resolve::Resolved;
use crate::usage::Usage;
use barrage_engine::ScenarioSpec;
use barrage_scenario::Checked;
use std::path::Path;

/// Whether the target names a scenario file rather than a URL.
pub fn is_file(target: &str) -> bool {
    !target.contains("://") && barrage_scenario::Format::of(Path::new(target)).is_some()
}

/// A scenario file named as the run's target, read, parsed and checked once, with the
/// command line's overrides (`--users`, `--hold`, `--arrive`) applied.
pub struct File {
    /// As named on the command line.
    pub name: String,
    pub text: String,
    pub checked: std::sync::Arc<Checked>,
}

impl File {
    /// The file's `run.processes`, if it has one.
    pub fn processes(&self) -> Option<barrage_scenario::model::Processes> {
        let run = self.checked.file.run.as_ref().map(|r| &r.value);
        run.and_then(|r| r.processes.as_ref()).map(|p| p.value)
    }

    /// How many users the run has.
    pub fn users(&self) -> u64 {
        self.checked.users
    }
}

/// The run's scenario file, if its target names one.
pub fn load(a: &RunArgs) -> Result<Option<File>, Usage> {
    if !is_file(&a.target) {
        return Ok(None);
    }
    let name = a.target.clone();
    let path = Path::new(&name);
    let (text, format) = barrage_scenario::read(path).map_err(|e| Usage::file(&name, e))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut checked = barrage_scenario::load_str(&name, &text, format, &dir)
        .map_err(|e| Usage::file(&name, e))?;
    checked
        .override_users(a.file.users, a.file.hold, a.file.arrive)
        .map_err(|e| Usage::file(&name, e))?;
    Ok(Some(File {
        name,
        text,
        checked: std::sync::Arc::new(checked),
    }))
}

/// A run of the scenario `loaded` (the run's target), under the command line's flags.
pub fn resolve(a: &RunArgs, argv: Vec<String>, loaded: File) -> Result<Resolved, Usage> {
    let args = run_args(a, loaded)?;
    crate::resolve::resolve(&args, argv)
}

/// The run's flags for scenario `loaded`: the command line's over the file's settings, the
/// file in the spec (`barrage validate` resolves its plan from these too).
pub(crate) fn run_args(a: &RunArgs, loaded: File) -> Result<RunArgs, Usage> {
    let File {
        name: file,
        text,
        checked,
    } = loaded;
    let path = Path::new(&file);
    if let Some(t) = &a.file.target_url {
        // The same protocol, with or without TLS, under any of its schemes.
        let protocol = |u: &str| barrage_scenario::protocol::of_url(u).map(|(p, _)| p.name);
        if protocol(t) != protocol(&checked.file.target.value) {
            return Err(Usage::value(
                "--target",
                t,
                format!(
                    "{file}'s steps are written for {}; give a URL of that protocol",
                    checked.file.target.value
                ),
            ));
        }
    }
    binary_checks(&file, &checked)?;
    refuse_load_flags(a)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let f = &checked.file;
    let run = f.run.as_ref().map(|r| &r.value);
    let file_duration = match run.and_then(|r| r.duration.as_ref()) {
        Some(d) => Some(
            barrage_scenario::units::positive_duration(&d.value)
                .map_err(|e| Usage::file(&file, format!("{file}:{}: run.duration: {e}", d.line)))?,
        ),
        None => None,
    };
    let mut args = a.clone();
    args.target = a
        .file
        .target_url
        .clone()
        .unwrap_or_else(|| f.target.value.clone());
    args.file.target_url = None;
    args.load.connections = checked.users;
    args.load.duration = None;
    args.scenario = Some(ScenarioSpec {
        file: file.clone(),
        text,
        yaml: barrage_scenario::Format::of(path) == Some(barrage_scenario::Format::Yaml),
        dir: dir.clone(),
        users: a.file.users,
        hold_ns: a.file.hold.map(barrage_engine::spec::ns),
        arrive: a.file.arrive,
        max_duration_ns: a
            .load
            .duration
            .or(file_duration)
            .map(barrage_engine::spec::ns),
        checked: Some(barrage_engine::spec::Checked(checked.clone())),
        rpc: Vec::new(),
        replies: None,
    });
    if args.load.more_urls.is_empty() {
        args.load.more_urls = f.urls.iter().map(|u| u.value.clone()).collect();
    }
    if let (None, Some(sc)) = (&args.msg.script, &f.script) {
        // The file's script, as `--script` (which overrides it) would give it.
        args.msg.script = Some(dir.join(&sc.value));
    }
    if let Some(p) = &f.protocol {
        if args.msg.expect.is_none() {
            args.msg.expect = p.framing.as_ref().map(|v| v.value.clone());
        }
        let mut headers: Vec<String> = p.headers.iter().map(|h| h.value.clone()).collect();
        headers.append(&mut args.http.headers);
        args.http.headers = headers;
        if args.ws.subprotocol.is_none() {
            args.ws.subprotocol = p.subprotocol.as_ref().map(|v| v.value.clone());
        }
        args.ws.binary |= p.binary.unwrap_or(false);
        args.kv.resp3 |= p.resp3.unwrap_or(false);
        args.tls.insecure |= p.insecure.unwrap_or(false);
        if args.tls.cacert.is_none() {
            args.tls.cacert = p.cacert.as_ref().map(|c| dir.join(&c.value));
        }
        if args.tls.cert.is_none() {
            args.tls.cert = p.cert.as_ref().map(|c| dir.join(&c.value));
            args.tls.key = p.key.as_ref().map(|c| dir.join(&c.value));
        }
        if args.tls.servername.is_none() {
            args.tls.servername = p.servername.as_ref().map(|n| n.value.clone());
        }
        // gRPC: where the steps' methods are described (the command line's, if it gave one).
        if args.grpc.proto.is_none() && !args.grpc.reflect {
            args.grpc.proto = p.proto.as_ref().map(|f| dir.join(&f.value));
            args.grpc.reflect = p.reflect.as_ref().is_some_and(|r| r.value);
        }
        let mut import: Vec<_> = p.import_path.iter().map(|d| dir.join(&d.value)).collect();
        import.append(&mut args.grpc.import_path);
        args.grpc.import_path = import;
    }
    if let Some(r) = run {
        let dur = |v: &Option<barrage_scenario::At<String>>, key: &str, positive: bool| {
            v.as_ref()
                .map(|d| {
                    let parsed = if positive {
                        barrage_scenario::units::positive_duration(&d.value)
                    } else {
                        barrage_scenario::units::duration(&d.value)
                    };
                    parsed.map_err(|e| {
                        Usage::file(&file, format!("{file}:{}: run.{key}: {e}", d.line))
                    })
                })
                .transpose()
        };
        if args.load.warmup.is_none() {
            args.load.warmup = dur(&r.warmup, "warmup", false)?;
        }
        if args.limits.timeout.is_none() {
            args.limits.timeout = dur(&r.timeout, "timeout", true)?;
        }
        if args.limits.connect_timeout.is_none() {
            args.limits.connect_timeout = dur(&r.connect_timeout, "connect_timeout", true)?;
        }
        // A child of --processes (told to skip thresholds) leaves the run's outputs and its
        // watch of the server (the monitor, the spawn, the recovery window after the load) to
        // the parent: N children must not each write the file's `json`, or each spawn its
        // server, or wait out a recovery window with no monitor to watch it.
        let parent_does_it = args.output.skip_thresholds;
        let recovery = dur(&r.recovery, "recovery", false)?;
        if args.watch.recovery.is_none() && !parent_does_it {
            args.watch.recovery = recovery;
        }
        if args.load.threads.is_none() {
            args.load.threads = r.threads.as_ref().map(|t| t.value);
        }
        let mut thresholds: Vec<String> = r.thresholds.iter().map(|t| t.value.clone()).collect();
        thresholds.append(&mut args.watch.threshold);
        args.watch.threshold = thresholds;
        if args.output.json.is_none() && !parent_does_it {
            args.output.json = r.json.as_ref().map(|v| v.value.clone());
        }
        if args.output.report.is_none() && !parent_does_it {
            args.output.report = r.report.as_ref().map(|v| v.value.clone());
        }
        if args.watch.monitor.is_empty() && !parent_does_it {
            args.watch.monitor = r.monitor.iter().map(|m| m.value.clone()).collect();
        }
        if args.watch.spawn.is_none() && !parent_does_it {
            args.watch.spawn = r.spawn.as_ref().map(|v| v.value.clone());
        }
        args.output
            .redact
            .extend(r.redact.iter().map(|v| v.value.clone()));
        if args.load.source_ip.is_none() {
            args.load.source_ip = r.source_ip.as_ref().map(|v| v.value.clone());
        }
    }
    for t in &args.watch.threshold {
        if let Some((name, _)) =
            barrage_metrics::thresholds::step_metric(t.split_whitespace().next().unwrap_or(""))
        {
            if !checked.named.iter().any(|n| n == name) {
                let names = if checked.named.is_empty() {
                    "none (give steps a name = \"...\")".to_string()
                } else {
                    checked.named.join(", ")
                };
                return Err(Usage::value(
                    "--threshold",
                    format!("'{t}'"),
                    format!("{file} has no step named '{name}'; its named steps: {names}"),
                ));
            }
        }
    }
    Ok(args)
}

/// Flags that say what each connection sends: in a scenario the steps say it.
fn refuse_load_flags(a: &RunArgs) -> Result<(), Usage> {
    let given = [
        ("-m/--message", a.msg.message.is_some()),
        ("--message-file", a.msg.message_file.is_some()),
        ("--first-message", a.msg.first_message.is_some()),
        ("--command", !a.kv.command.is_empty()),
        ("-X/--method", a.http.method.is_some()),
        ("--body", a.http.body.is_some()),
        ("--data", a.grpc.data.is_some()),
        ("--data-bin", a.grpc.data_bin.is_some()),
        ("--expect-status", a.http.expect_status.is_some()),
        ("--verify", a.msg.verify),
        ("--rate", a.modes.rate.is_some()),
        ("--interval", a.modes.interval.is_some()),
        ("--think", a.modes.think.is_some()),
        ("-n/--requests", a.load.requests.is_some()),
        ("--pipeline", a.modes.pipeline != 1),
        ("--connect-rate", a.load.connect_rate.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, on)| *on) {
        return Err(Usage::says(
            *flag,
            format!(
                "does not apply to a scenario file ({}): its steps say what users send and \
                 when; change the file, or use --users, --arrive, --hold, -d",
                a.target
            ),
        ));
    }
    Ok(())
}

/// Checks made with the binary's parsers and this process's environment: the target URL,
/// the thresholds' grammar, and every `{secret:NAME}` the run would fill.
pub(crate) fn binary_checks(file: &str, c: &Checked) -> Result<(), Usage> {
    let at = |line: u32, key: &str, why: String| {
        Usage::file(file, format!("{file}:{line}: {key}: {why}"))
    };
    if let Some(s) = c
        .secrets
        .iter()
        .find(|s| std::env::var_os(&s.name).is_none())
    {
        let why = barrage_engine::message::SecretError::Missing(s.name.clone());
        return Err(at(s.line, &s.key, why.to_string()));
    }
    let t = &c.file.target;
    if let Err(e) = crate::resolve::url::parse(t) {
        return Err(at(t.line, "target", strip_flag(&e.to_string(), "target")));
    }
    for (i, u) in c.file.urls.iter().enumerate() {
        if let Err(e) = crate::resolve::url::parse(u) {
            return Err(at(
                u.line,
                &format!("urls[{i}]"),
                strip_flag(&e.to_string(), "target"),
            ));
        }
    }
    if let Some(s) = c.file.run.as_ref().and_then(|r| r.source_ip.as_ref()) {
        if s.trim() != "auto" {
            if let Err(e) = crate::resolve::sources::parse(s) {
                return Err(at(s.line, "run.source_ip", e));
            }
        }
    }
    // The engine's own grammars: a length-field framing's parts, each binary message.
    if let Some(f) = c.file.protocol.as_ref().and_then(|p| p.framing.as_ref()) {
        if let Err(e) = barrage_engine::spec::parse_expect(f.trim()) {
            return Err(at(f.line, "protocol.framing", e));
        }
    }
    let mut steps = Vec::new();
    all_steps(&c.file.steps, "steps", &mut steps);
    all_steps(&c.file.leave, "leave", &mut steps);
    // Any `{name}` is taken here (the scenario's checker resolves them).
    let any = |_: &str| Some(0);
    let none = |_: &str| Some(Vec::new());
    for (key, s) in &steps {
        if let Some(f) = &s.fields {
            if let Err(e) = barrage_engine::message::binary::compile(f, Some(&any), Some(&none)) {
                return Err(at(f.line, &format!("{key}.fields"), e.to_string()));
            }
        }
    }
    // MQTT topics as the engine will find them (the environment's secrets filled in): here,
    // so that `validate` refuses what `run` refuses, with the same line.
    let env = |name: &str| std::env::var_os(name).map(|v| v.into_encoded_bytes());
    let mqtt =
        barrage_scenario::protocol::of_url(&c.file.target).is_some_and(|(p, _)| p.name == "mqtt");
    for (key, s) in steps.iter().filter(|_| mqtt) {
        for (t, k, what) in [
            (&s.mqtt.topic, "topic", "the topic"),
            (&s.mqtt.subscribe, "subscribe", "the topic filter"),
            (&s.mqtt.unsubscribe, "unsubscribe", "the topic filter"),
        ] {
            let Some(t) = t else { continue };
            // A bad escape or placeholder is the engine's to name.
            let Ok(raw) = barrage_engine::message::unescape(t) else {
                continue;
            };
            let Ok(tpl) = barrage_engine::Template::with_vars_and_secrets(raw, any, &env) else {
                continue;
            };
            let fault = barrage_engine::mqtt::too_long(&tpl, what).or_else(|| {
                (k == "topic")
                    .then(|| barrage_engine::mqtt::secret_topic_fault(&tpl, "subscribe"))
                    .flatten()
            });
            if let Some(why) = fault {
                return Err(at(t.line, &format!("{key}.{k}"), why));
            }
        }
    }
    if let Some(run) = &c.file.run {
        for (i, th) in run.thresholds.iter().enumerate() {
            // `steps.NAME.METRIC`: the step's name is checked by the scenario, its metric (one
            // of the step metrics: `sent` and `capture_misses` are not run metrics) here.
            if let Err(e) = barrage_metrics::thresholds::parse(th.trim()) {
                return Err(at(th.line, &format!("run.thresholds[{i}]"), e.to_string()));
            }
        }
    }
    Ok(())
}

/// Every step of `steps` (and of their blocks), with its key (`steps[2]`, `steps[3].steps[0]`).
fn all_steps<'a>(
    steps: &'a [barrage_scenario::At<barrage_scenario::model::Step>],
    key: &str,
    out: &mut Vec<(String, &'a barrage_scenario::model::Step)>,
) {
    for (i, s) in steps.iter().enumerate() {
        let k = format!("{key}[{i}]");
        out.push((k.clone(), &s.value));
        all_steps(&s.steps, &format!("{k}.steps"), out);
    }
}

/// `target 'x' has no scheme` -> `'x' has no scheme` (the key is already on the line).
fn strip_flag(line: &str, flag: &str) -> String {
    line.strip_prefix(flag)
        .map(|r| r.trim_start_matches(':').trim_start().to_string())
        .unwrap_or_else(|| line.to_string())
}

#[cfg(test)]
mod tests {
    use crate::resolve::cli::{Cli, Command};
    use clap::Parser as _;

    /// `barrage run FILE`, resolved as `barrage run` resolves it: the file is parsed once,
    /// with `--processes auto` too (it reads the file's users).
    #[test]
    fn a_run_parses_its_scenario_file_once() {
        let file = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/chat.toml");
        for extra in [&[][..], &["--processes", "auto"][..]] {
            let mut argv = vec!["barrage", "run", file, "--target", "tcp://127.0.0.1:7100"];
            argv.extend_from_slice(extra);
            let Command::Run(a) = Cli::try_parse_from(&argv).unwrap().command else {
                unreachable!()
            };
            let before = barrage_scenario::parsed_on_this_thread();
            let loaded = super::load(&a).unwrap();
            let _ = crate::resolve::processes(&a, loaded.as_ref()).unwrap();
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            let r = crate::resolve::run(&a, argv, loaded).unwrap();
            assert!(r.spec.scenario.is_some());
            assert_eq!(
                barrage_scenario::parsed_on_this_thread() - before,
                1,
                "{extra:?}"
            );
        }
    }
}
