//! The live full-screen dashboard: header, throughput, latency, connections, errors, rolling
//! charts and a generator-saturation warning, drawn on its own thread.
//!
//! Key decision: the engine never waits for the screen. The tick callback copies the tick and a
//! few running figures into a bounded channel with `try_send` (a full channel drops the snapshot;
//! at one tick per second it never fills), and the UI thread draws at most four frames a second.
//! `q`, Esc and Ctrl-C (which raw mode turns into a key) set the run's stop flag, the same one
//! SIGINT sets, so the run ends the usual way and its summary and files are still written.
//! `q`/Esc is a *user stop* (a normal end: exit code 0 or 3, the recovery window still runs and
//! a second `q` skips it); Ctrl-C is an interruption, like SIGINT ([`Keys`]). The terminal is
//! restored by a guard on every path out: `finish`, drop, an I/O error or a panic.
//!
//! The dashboard is only for a process in the terminal's foreground process group (`timeout N
//! barrage ...` runs barrage in a group of its own): from any other group, raw mode would stop
//! the whole process with SIGTTOU, so such a run shows the status line instead. Every call
//! that touches the terminal runs with SIGTTOU and SIGTTIN blocked in its thread, so a run
//! moved to the background while the dashboard is up never stops on the terminal either: its
//! writes go through and a read fails (which ends the display, never the run).

use barrage_metrics::{Aggregator, Tick};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;
use std::io::{IsTerminal, Stdout};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod model;
mod view;
pub use model::{DashInfo, ServerSample, Snapshot};
use view::View;

/// Shortest time between two frames.
const FRAME: Duration = Duration::from_millis(250);

/// Whether the dashboard replaces the status line: stdin and stdout are terminals, this
/// process is in their foreground process group, and nothing asked for plain output.
pub fn wanted(no_tui: bool, quiet: bool, json_to_stdout: bool) -> bool {
    !no_tui
        && !quiet
        && !json_to_stdout
        && std::io::stdout().is_terminal()
        && std::io::stdin().is_terminal()
        && crate::sys::owns_terminal()
}

/// The stop keys pressed so far; shared by the UI thread (writer) and the run (reader).
#[derive(Debug, Default)]
pub struct Keys {
    /// `q` or Esc presses: the first stops the load, the second skips the recovery window.
    quits: AtomicU32,
    /// Ctrl-C: an interruption, like SIGINT.
    interrupted: AtomicBool,
}

impl Keys {
    /// The user stopped the run with `q` (and did not interrupt it with Ctrl-C).
    pub fn user_stopped(&self) -> bool {
        self.quits.load(Ordering::Relaxed) > 0 && !self.interrupted()
    }

    pub fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }

    /// Whether the recovery window is to be cut short: by Ctrl-C, or by a `q` beyond the one
    /// that stopped the load (`quits_before`: presses when the window began).
    pub fn skip_recovery(&self, quits_before: u32) -> bool {
        self.quits.load(Ordering::Relaxed) > quits_before.min(1) || self.interrupted()
    }

    pub fn quits(&self) -> u32 {
        self.quits.load(Ordering::Relaxed)
    }
}

/// A running dashboard. Dropping it (or `finish`) stops the UI thread and restores the terminal.
pub struct Dashboard {
    /// Written by the UI thread, read by the run.
    keys: Arc<Keys>,
    /// Set by `recovering`; the UI thread shows that the recovery window runs.
    recovering: Arc<AtomicBool>,
    /// Owned by the engine's callback side; the UI thread holds the receiver.
    tx: SyncSender<Snapshot>,
    /// Set by `finish`/drop; the UI thread checks it between frames.
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Dashboard {
    /// Enter the alternate screen and raw mode, and start drawing.
    pub fn start(info: DashInfo, stop: Arc<AtomicBool>) -> std::io::Result<Dashboard> {
        install_panic_hook();
        let guard = TermGuard::enter()?;
        let term = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        let (tx, rx) = sync_channel(64);
        let done = Arc::new(AtomicBool::new(false));
        let d = Arc::clone(&done);
        let keys = Arc::new(Keys::default());
        let recovering = Arc::new(AtomicBool::new(false));
        let flags = UiFlags {
            stop,
            done: d,
            keys: Arc::clone(&keys),
            recovering: Arc::clone(&recovering),
        };
        let thread = std::thread::Builder::new()
            .name("barrage-tui".into())
            .spawn(move || {
                // This thread draws and reads keys: never stopped by the terminal.
                let _no_stop = crate::sys::NoTtyStop::new();
                let _guard = guard;
                // An I/O error ends the display, never the run.
                let _ = ui_loop(term, View::new(info), rx, &flags);
            })?;
        Ok(Dashboard {
            keys,
            recovering,
            tx,
            done,
            thread: Some(thread),
        })
    }

    /// Hand over a tick, with the monitor's latest server figures when monitoring; never
    /// blocks.
    pub fn update_with(&self, tick: &Tick, agg: &Aggregator, server: Option<ServerSample>) {
        let r = agg.running();
        let p99_overall = (!r.latency.is_empty()).then(|| r.latency.quantile(0.99));
        let _ = self.tx.try_send(Snapshot {
            tick: tick.clone(),
            avg_rps: r.avg_rps,
            completed: r.completed,
            errors: r.errors,
            p99_overall,
            server,
        });
    }

    /// The stop keys pressed so far.
    pub fn keys(&self) -> Arc<Keys> {
        Arc::clone(&self.keys)
    }

    /// The load is over and the recovery window runs: say so (and that `q` skips it).
    pub fn recovering(&self) {
        self.recovering.store(true, Ordering::Relaxed);
    }

    /// Stop drawing and give the terminal back (before the summary is printed).
    pub fn finish(self) {}
}

impl Drop for Dashboard {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the UI thread shares with the run.
struct UiFlags {
    /// The run's stop flag (SIGINT's too).
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
    keys: Arc<Keys>,
    recovering: Arc<AtomicBool>,
}

fn ui_loop(
    mut term: Terminal<CrosstermBackend<Stdout>>,
    mut view: View,
    rx: Receiver<Snapshot>,
    f: &UiFlags,
) -> std::io::Result<()> {
    let mut next_draw = Instant::now();
    while !f.done.load(Ordering::Relaxed) {
        let wait = next_draw.saturating_duration_since(Instant::now());
        if event::poll(wait.min(FRAME))? {
            if let Event::Key(k) = event::read()? {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                let quit = matches!(k.code, KeyCode::Char('q') | KeyCode::Esc);
                if k.kind == KeyEventKind::Press && (quit || ctrl_c) {
                    if ctrl_c {
                        f.keys.interrupted.store(true, Ordering::Relaxed);
                    } else {
                        f.keys.quits.fetch_add(1, Ordering::Relaxed);
                    }
                    f.stop.store(true, Ordering::Relaxed);
                    view.stopping = true;
                }
            }
        }
        view.recovering = f.recovering.load(Ordering::Relaxed);
        loop {
            match rx.try_recv() {
                Ok(s) => view.push(s),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => return Ok(()),
            }
        }
        if Instant::now() >= next_draw {
            term.draw(|f| view.render(f))?;
            next_draw = Instant::now() + FRAME;
        }
    }
    Ok(())
}

/// Raw mode and the alternate screen for as long as it lives.
struct TermGuard;

/// Whether the terminal is in dashboard mode (read by the panic hook).
static ACTIVE: AtomicBool = AtomicBool::new(false);

impl TermGuard {
    fn enter() -> std::io::Result<TermGuard> {
        let _no_stop = crate::sys::NoTtyStop::new();
        terminal::enable_raw_mode()?;
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = TermGuard;
        execute!(
            std::io::stdout(),
            terminal::EnterAlternateScreen,
            cursor::Hide
        )?;
        Ok(guard)
    }
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        restore();
    }
}

fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _no_stop = crate::sys::NoTtyStop::new();
        let _ = execute!(
            std::io::stdout(),
            terminal::LeaveAlternateScreen,
            cursor::Show
        );
        let _ = terminal::disable_raw_mode();
    }
}

/// A panic anywhere restores the terminal first, so its message is readable.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |p| {
            restore();
            previous(p);
        }));
    });
}
