//! The monitoring part of the text summary: the server processes, the machine, barrage itself
//! and a spawned server's exit. Sections for data that was not collected are left out.

use crate::fmt::{byte_rate, bytes, thousands};
use barrage_metrics::figures::{
    shown_network, Machine, Memory, NetworkUse, ProcessFigures, RunFigures, Spread,
};
use barrage_metrics::RunResult;

fn pct(x: f64) -> String {
    format!("{x:.1} %")
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or("-".into(), |b| bytes(b as f64))
}

/// Lines for one process (server or generator): its figures under load, memory in the three
/// windows ([`barrage_metrics::figures`], the same numbers as the thresholds and readiness).
fn process_lines(f: Option<&ProcessFigures>, m: &Memory, cores: usize) -> Vec<String> {
    let mut out = Vec::new();
    let Some(f) = f else {
        if m.idle_bytes.is_some() || m.after_bytes.is_some() {
            out.push("  no sample under load".into());
        }
        return out;
    };
    out.push(format!(
        "  CPU         under load avg {}, max {} of one core ({} of the machine on average)",
        pct(f.cpu_avg_pct),
        pct(f.cpu_max_pct),
        pct(f.cpu_avg_pct / cores.max(1) as f64)
    ));
    out.push(format!(
        "  memory      idle {}, peak under load {}, after recovery {}",
        opt_bytes(m.idle_bytes),
        opt_bytes(m.load_peak_bytes),
        opt_bytes(m.after_bytes)
    ));
    let mut line = format!(
        "  under load  at most {} threads, {} open files, {} TCP established",
        thousands(f.threads_max),
        thousands(f.fds_max),
        thousands(f.tcp_established_max)
    );
    if f.tcp_close_wait_max > 0 {
        line += &format!(", {} CLOSE_WAIT", thousands(f.tcp_close_wait_max));
    }
    out.push(line);
    out
}

pub fn monitoring(r: &RunResult) -> Vec<String> {
    if r.monitor.as_ref().is_some_and(|m| m.unasked) {
        return busy_machine(r).into_iter().collect();
    }
    let (Some(m), Some(fig)) = (&r.monitor, RunFigures::of(r)) else {
        return Vec::new();
    };
    let cores = r.environment.cores;
    let mut lines = Vec::new();
    for (p, (pf, pm)) in m.processes.iter().zip(&fig.processes) {
        let mut cmd = p.command.clone();
        if cmd.len() > 60 {
            cmd.truncate(57);
            cmd += "...";
        }
        lines.push(format!("Server        {} `{cmd}`", p.who()));
        if p.samples.is_empty() {
            lines.push("  no samples (the process was gone)".into());
        }
        lines.extend(process_lines(pf.as_ref(), pm, cores));
    }
    if let Some(s) = &r.spawn {
        let how = s.ending();
        lines.push(format!(
            "  spawned     ready after {:.0} ms; {how}",
            s.ready_after_ms
        ));
    }
    lines.extend(fig.machine.as_ref().map(machine));
    lines.extend(network(&fig.network, &r.config.target));
    if let Some(c) = r.analysis.as_ref().and_then(|a| a.contention.as_ref()) {
        lines.push(format!(
            "Others        CPU under load avg {}, max {} of one core (machine - server - barrage){}",
            pct(c.other_avg_pct),
            pct(c.other_max_pct),
            if c.material { ": material" } else { "" }
        ));
    }
    if !m.generator.is_empty() {
        lines.push("Generator     barrage itself".into());
        lines.extend(process_lines(
            fig.generator.as_ref(),
            &fig.generator_memory,
            cores,
        ));
    }
    lines
}

/// What a run that asked for no monitoring shows of the samples every run takes: one line,
/// only when other processes took a material share of the CPU while the load ran (the rule
/// of the Others section, `analysis::contention`).
pub(crate) fn busy_machine(r: &RunResult) -> Option<String> {
    let c = r.analysis.as_ref()?.contention.as_ref()?;
    if !c.material {
        return None;
    }
    let cores = r.environment.cores;
    let used = if cores > 0 {
        format!(
            "{:.1} of {cores} cores on average under load (at most {:.1})",
            c.other_avg_pct / 100.0,
            c.other_max_pct / 100.0
        )
    } else {
        format!(
            "{} of one core on average under load (at most {})",
            pct(c.other_avg_pct),
            pct(c.other_max_pct)
        )
    };
    Some(format!(
        "Machine       busy: other processes used {used}; the figures may be the machine's as \
         much as the server's"
    ))
}

/// The machine's interfaces under load, two lines each: what it received and what it sent;
/// only those that carried traffic (and the loopback when the target is on it), with how many
/// idle ones were left out ([`shown_network`]).
fn network(all: &[NetworkUse], target: &str) -> Vec<String> {
    if all.is_empty() {
        return Vec::new();
    }
    let (n, idle) = shown_network(all, target);
    let idle_note = match idle {
        0 => String::new(),
        1 => "; 1 idle interface left out".into(),
        k => format!("; {k} idle interfaces left out"),
    };
    if n.is_empty() {
        return vec![format!(
            "Network       no interface carried traffic under load ({} left out)",
            all.len()
        )];
    }
    let width = n.iter().map(|i| i.interface.len()).max().unwrap_or(0);
    let spread = |s: &Spread| {
        format!(
            "min {}/s, mean {}, max {}/s",
            bytes(s.min),
            byte_rate(s.mean),
            bytes(s.max)
        )
    };
    let mut lines = vec![format!(
        "Network       under load, per interface (all of the machine's traffic){idle_note}"
    )];
    for i in n {
        let name = &i.interface;
        lines.push(format!(
            "  {name:<width$}  in  {}",
            spread(&i.rx_bytes_per_s)
        ));
        lines.push(format!(
            "  {:<width$}  out {}",
            "",
            spread(&i.tx_bytes_per_s)
        ));
    }
    lines
}

fn machine(m: &Machine) -> String {
    format!(
        "Machine       CPU {}; memory used at most {} of {}",
        machine_cpu(m),
        bytes(m.mem_used_max_bytes as f64),
        bytes(m.mem_total_bytes as f64)
    )
}

/// The machine's CPU under load, or why it is not measured: a reading below what the server
/// and barrage used by themselves (/proc/stat undercounting on some VMs) measured nothing.
pub(crate) fn machine_cpu(m: &Machine) -> String {
    if m.cpu_measured() {
        format!(
            "under load avg {}, max {}",
            pct(m.cpu_avg_pct),
            pct(m.cpu_max_pct)
        )
    } else {
        format!(
            "not measured: it read below the server's and barrage's own CPU in {} of {} \
             samples (avg {} as read; /proc/stat undercounts on some VMs)",
            m.below_parts,
            m.samples,
            pct(m.cpu_avg_pct)
        )
    }
}
