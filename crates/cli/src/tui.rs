//! `--tui`: the run in a full-screen terminal view (ratatui on crossterm): requests/s and
//! latency (p50, p90, p99, max) per second as charts, the progress, the figures of the last second and of the run
//! so far, status codes, error kinds and each target's row; `q` (or Ctrl-C) stops the run and
//! keeps its results, `v` (or Tab) switches between the charts and the tables.
//!
//! Opt-in, not the default on a terminal as oha makes it: the live line keeps the terminal's
//! scrollback and reads the same in a CI log, and a full-screen view is what oha's users find
//! changes their results (oha#834). Here it cannot: the view runs on its own thread, fed the
//! per-second points the run already makes (one message a second, never per request), and
//! draws only when a second comes, a key is pressed or the terminal is resized.

use crate::args::ViewArgs;
use crate::output::{latency, rate, thousands};
use pelt_stats::{TimelinePoint, LIVE_WINDOW};
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Cell, Chart, Dataset, Gauge, Paragraph, Row, Table};
use ratatui::{Frame, Terminal};
use std::collections::{BTreeMap, VecDeque};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

/// Seconds the charts show.
const WINDOW_S: f64 = 120.0;
/// Seconds kept (the charts' window and more; bounded however long the run).
const KEPT: usize = 600;
/// Below this the charts do not fit: the reduced view.
const MIN_WIDTH: u16 = 60;
const MIN_HEIGHT: u16 = 16;

/// A running terminal view.
pub struct Tui {
    tx: mpsc::Sender<Msg>,
    thread: Option<std::thread::JoinHandle<()>>,
}

enum Msg {
    /// A second, and who was the bottleneck over the last seconds (`--monitor`).
    Point(Box<TimelinePoint>, Option<String>),
    End,
}

/// Starts the view when asked for and stdout and stderr are terminals (`-q` never shows it).
pub fn start(
    v: &ViewArgs,
    run: &pelt_load::Prepared,
    quiet: bool,
    stop: Arc<AtomicBool>,
) -> Option<Tui> {
    if !v.tui || quiet || !(std::io::stdout().is_terminal() && std::io::stderr().is_terminal()) {
        return None;
    }
    let state = State::new(run);
    let (tx, rx) = mpsc::channel();
    let screen = Screen::enter().ok()?;
    let thread = std::thread::Builder::new()
        .name("pelt-tui".into())
        .spawn(move || drive(screen, state, &rx, &stop))
        .ok()?;
    Some(Tui {
        tx,
        thread: Some(thread),
    })
}

impl Tui {
    /// A second of the run.
    pub fn add(&self, p: &TimelinePoint, verdict: Option<String>) {
        let mut p = p.clone();
        p.samples = Vec::new();
        let _ = self.tx.send(Msg::Point(Box::new(p), verdict));
    }

    /// The run is over: the terminal is given back (the summary follows).
    pub fn finish(mut self) {
        self.end();
    }

    fn end(&mut self) {
        let _ = self.tx.send(Msg::End);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.end();
    }
}

/// The terminal in raw mode on the alternate screen, given back when dropped (a panic too).
struct Screen {
    terminal: Terminal<CrosstermBackend<std::io::Stdout>>,
}

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        enable_raw_mode()?;
        if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen) {
            let _ = disable_raw_mode();
            return Err(e);
        }
        let terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(Screen { terminal })
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(std::io::stdout(), LeaveAlternateScreen);
        let _ = disable_raw_mode();
        let _ = self.terminal.show_cursor();
    }
}

/// The view's loop: a second, a key or a resize redraws; `q` stops the run.
fn drive(mut screen: Screen, mut state: State, rx: &mpsc::Receiver<Msg>, stop: &AtomicBool) {
    let mut dirty = true;
    loop {
        if dirty {
            let _ = screen.terminal.draw(|f| state.draw(f));
            dirty = false;
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Point(p, verdict)) => {
                state.add(&p);
                state.verdict = verdict;
                dirty = true;
            }
            Ok(Msg::End) | Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        while event::poll(Duration::ZERO).unwrap_or(false) {
            match event::read() {
                Ok(Event::Key(k)) if k.kind != KeyEventKind::Release => {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    match k.code {
                        KeyCode::Char('q') | KeyCode::Esc => state.stopping = true,
                        _ if ctrl_c => state.stopping = true,
                        KeyCode::Char('v') | KeyCode::Tab => state.page = (state.page + 1) % 2,
                        _ => {}
                    }
                    if state.stopping {
                        // As Ctrl-C does without the view: stop, drain, report, exit 130.
                        stop.store(true, Ordering::Relaxed);
                    }
                    dirty = true;
                }
                Ok(Event::Resize(..)) => dirty = true,
                _ => {}
            }
        }
    }
}

/// One second as the charts draw it.
struct Second {
    x: f64,
    rps: f64,
    target: Option<f64>,
    /// Latency, milliseconds.
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

/// What the view shows.
struct State {
    title: String,
    total_s: Option<f64>,
    requests: Option<u64>,
    steers_rate: bool,
    names: Vec<String>,
    seconds: VecDeque<Second>,
    last: Option<TimelinePoint>,
    /// Who was the bottleneck over the last seconds (`--monitor`).
    verdict: Option<String>,
    completed: u64,
    errors: u64,
    /// Measured requests ended (for `-n`'s progress).
    ended: u64,
    codes: BTreeMap<u16, u64>,
    kinds: BTreeMap<String, u64>,
    targets: Vec<[u64; 3]>,
    page: usize,
    stopping: bool,
}

impl State {
    fn new(run: &pelt_load::Prepared) -> State {
        let config = &run.config;
        State {
            title: crate::output::start_line(&run.info, config),
            total_s: config.duration.map(|d| (config.warmup + d).as_secs_f64()),
            requests: config.requests,
            steers_rate: config.load.is_open(),
            names: config.targets().map_or(Vec::new(), |t| t.names().to_vec()),
            seconds: VecDeque::new(),
            last: None,
            verdict: None,
            completed: 0,
            errors: 0,
            ended: 0,
            codes: BTreeMap::new(),
            kinds: BTreeMap::new(),
            targets: Vec::new(),
            page: 0,
            stopping: false,
        }
    }

    fn add(&mut self, p: &TimelinePoint) {
        let ms = |us: u64| us as f64 / 1000.0;
        self.seconds.push_back(Second {
            x: p.second as f64 + p.length_s,
            rps: p.rps,
            target: p.target,
            p50: ms(p.latency_us.p50),
            p90: ms(p.latency_us.p90),
            p99: ms(p.latency_us.p99),
            max: ms(p.latency_us.max),
        });
        if self.seconds.len() > KEPT {
            self.seconds.pop_front();
        }
        self.completed += p.completed;
        self.errors += p.errors;
        if !p.warmup {
            self.ended += p.completed + p.errors;
        }
        for (code, n) in &p.detail.codes {
            *self.codes.entry(*code).or_insert(0) += n;
        }
        for (kind, n) in &p.detail.errors {
            *self.kinds.entry(kind.clone()).or_insert(0) += n;
        }
        if self.targets.len() < p.detail.targets.len() {
            self.targets.resize(p.detail.targets.len(), [0; 3]);
        }
        for (t, c) in self.targets.iter_mut().zip(&p.detail.targets) {
            t[0] += c.sent;
            t[1] += c.completed;
            t[2] += c.errors;
        }
        self.last = Some(p.clone());
    }

    fn elapsed(&self) -> f64 {
        self.seconds.back().map_or(0.0, |s| s.x)
    }

    fn draw(&self, f: &mut Frame) {
        let area = f.area();
        if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
            return self.reduced(f, area);
        }
        let rows = Layout::default()
            .direction(Direction::Vertical)
            .constraints([
                Constraint::Length(4),
                Constraint::Length(1),
                Constraint::Min(8),
            ])
            .split(area);
        f.render_widget(Paragraph::new(self.header()), rows[0]);
        f.render_widget(self.progress(), rows[1]);
        match self.page {
            0 => self.charts(f, rows[2]),
            _ => self.tables(f, rows[2]),
        }
    }

    /// The first lines: what runs, the last second, the run so far, the keys.
    fn header(&self) -> Vec<Line<'static>> {
        let bold = Style::default().add_modifier(Modifier::BOLD);
        let mut lines = vec![Line::from(Span::styled(
            format!("pelt  {}", self.title),
            bold,
        ))];
        let Some(p) = &self.last else {
            lines.push(Line::from("waiting for the first second..."));
            return lines;
        };
        let mut now = format!(
            "last second: {} req/s  p50 {}  p99 {}  max {}  {} connections",
            rate(p.rps),
            latency(p.latency_us.p50 as f64),
            latency(p.latency_us.p99 as f64),
            latency(p.latency_us.max as f64),
            thousands(p.connections)
        );
        // The open loop's lag: how late requests started (pelt's own delay, or a wait for
        // a free connection).
        if let Some(lag) = p.detail.lag.as_ref().filter(|l| l.count() > 0) {
            now.push_str(&format!(
                "  lag p99 {}",
                latency(lag.summary().p99_us as f64)
            ));
        }
        if p.late > 0 {
            now.push_str(&format!("  {} started late", thousands(p.late)));
        }
        if let Some(s) = &p.event_streams {
            now.push_str(&format!(
                "  {} events  TTFT p50 {} p99 {}  gap p99 {}",
                thousands(s.events),
                latency(s.ttft_us.p50 as f64),
                latency(s.ttft_us.p99 as f64),
                latency(s.gap_us.p99 as f64)
            ));
        }
        if let Some(r) = &p.resources {
            if let Some(server) = &r.server {
                now.push_str(&format!(
                    "  server {:.2} of {} cores",
                    server.cpu(),
                    server.cpu_capacity
                ));
            }
            now.push_str(&format!("  pelt {:.2} cores", r.pelt.cpu()));
        }
        lines.push(Line::from(now));
        let mut so_far = format!(
            "at {:.0}s: {} completed  {} errors{}",
            self.elapsed(),
            thousands(self.completed),
            thousands(self.errors),
            if p.warmup { "  (warm-up)" } else { "" }
        );
        if let Some(v) = &self.verdict {
            so_far.push_str(&format!("  bottleneck (last {LIVE_WINDOW} s): {v}"));
        }
        lines.push(Line::from(so_far));
        let keys = if self.stopping {
            "stopping: the requests in flight finish, then the results".to_string()
        } else {
            "q stop (the results are kept)   v charts / tables".to_string()
        };
        lines.push(Line::from(Span::styled(
            keys,
            Style::default().fg(Color::DarkGray),
        )));
        lines
    }

    /// The progress against `-d` or `-n`.
    fn progress(&self) -> Gauge<'static> {
        let (ratio, label) = match (self.requests, self.total_s) {
            (Some(n), _) => (
                self.ended as f64 / n.max(1) as f64,
                format!("{} / {} requests", thousands(self.ended), thousands(n)),
            ),
            (None, Some(t)) => (
                self.elapsed() / t.max(1e-9),
                format!("{:.0}s / {t:.0}s", self.elapsed()),
            ),
            (None, None) => (0.0, format!("{:.0}s", self.elapsed())),
        };
        Gauge::default()
            .gauge_style(Style::default().fg(Color::Blue))
            .ratio(ratio.clamp(0.0, 1.0))
            .label(label)
    }

    fn charts(&self, f: &mut Frame, area: Rect) {
        let halves = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
            .split(area);
        let to = self.elapsed().max(1.0);
        let from = (to - WINDOW_S).max(0.0);
        let shown = || self.seconds.iter().filter(|s| s.x >= from);
        let series = |f: fn(&Second) -> Option<f64>| -> Vec<(f64, f64)> {
            shown().filter_map(|s| f(s).map(|y| (s.x, y))).collect()
        };
        let rps = series(|s| Some(s.rps));
        let target = series(|s| s.target);
        let mut sets = vec![Dataset::default()
            .name("completed/s")
            .marker(Marker::Braille)
            .graph_type(ratatui::widgets::GraphType::Line)
            .style(Style::default().fg(Color::Cyan))
            .data(&rps)];
        if self.steers_rate && !target.is_empty() {
            sets.push(
                Dataset::default()
                    .name("asked for")
                    .marker(Marker::Dot)
                    .style(Style::default().fg(Color::DarkGray))
                    .data(&target),
            );
        }
        let top = rps.iter().chain(&target).map(|p| p.1).fold(1.0, f64::max) * 1.1;
        f.render_widget(
            line_chart(sets, "requests/s", [from, to], top, rate),
            halves[0],
        );
        let p50 = series(|s| Some(s.p50));
        let p90 = series(|s| Some(s.p90));
        let p99 = series(|s| Some(s.p99));
        let max = series(|s| Some(s.max));
        let top = p99.iter().map(|p| p.1).fold(0.001, f64::max) * 1.2;
        let sets = vec![
            dataset("p50", Color::Green, &p50),
            dataset("p90", Color::Blue, &p90),
            dataset("p99", Color::Yellow, &p99),
            dataset("max", Color::Red, &max),
        ];
        f.render_widget(
            line_chart(sets, "latency", [from, to], top, |ms| latency(ms * 1000.0)),
            halves[1],
        );
    }

    fn tables(&self, f: &mut Frame, area: Rect) {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([
                Constraint::Percentage(25),
                Constraint::Percentage(30),
                Constraint::Percentage(45),
            ])
            .split(area);
        let codes: Vec<Row> = self
            .codes
            .iter()
            .map(|(c, n)| Row::new([c.to_string(), thousands(*n)]))
            .collect();
        f.render_widget(
            table(codes, ["status", "responses"], "Status codes"),
            cols[0],
        );
        let kinds: Vec<Row> = self
            .kinds
            .iter()
            .map(|(k, n)| Row::new([k.clone(), thousands(*n)]))
            .collect();
        f.render_widget(table(kinds, ["error", "count"], "Errors"), cols[1]);
        let targets: Vec<Row> = self
            .targets
            .iter()
            .enumerate()
            .map(|(i, [sent, done, errors])| {
                let name = self
                    .names
                    .get(i)
                    .cloned()
                    .unwrap_or_else(|| format!("#{i}"));
                Row::new([name, thousands(*sent), thousands(*done), thousands(*errors)])
            })
            .collect();
        let widths = [
            Constraint::Percentage(40),
            Constraint::Percentage(20),
            Constraint::Percentage(20),
            Constraint::Percentage(20),
        ];
        let header = Row::new(["target", "sent", "completed", "errors"].map(Cell::from))
            .style(Style::default().add_modifier(Modifier::BOLD));
        f.render_widget(
            Table::new(targets, widths).header(header).block(
                Block::default()
                    .borders(Borders::ALL)
                    .title("Targets and steps"),
            ),
            cols[2],
        );
    }

    /// A terminal too small for the charts: the figures, one per line.
    fn reduced(&self, f: &mut Frame, area: Rect) {
        let mut lines = vec![Line::from("pelt (enlarge for charts)")];
        if let Some(p) = &self.last {
            lines.push(Line::from(format!("at {:.0}s", self.elapsed())));
            lines.push(Line::from(format!("{} req/s", rate(p.rps))));
            lines.push(Line::from(format!(
                "p50 {} p99 {}",
                latency(p.latency_us.p50 as f64),
                latency(p.latency_us.p99 as f64)
            )));
            lines.push(Line::from(format!(
                "{} completed",
                thousands(self.completed)
            )));
            lines.push(Line::from(format!("{} errors", thousands(self.errors))));
        }
        lines.push(Line::from("q: stop"));
        f.render_widget(Paragraph::new(lines), area);
    }
}

fn dataset<'a>(name: &'static str, color: Color, data: &'a [(f64, f64)]) -> Dataset<'a> {
    Dataset::default()
        .name(name)
        .marker(Marker::Braille)
        .graph_type(ratatui::widgets::GraphType::Line)
        .style(Style::default().fg(color))
        .data(data)
}

/// A chart of seconds `x` against values up to `top`, its y labels made by `label`.
fn line_chart<'a>(
    sets: Vec<Dataset<'a>>,
    title: &'static str,
    x: [f64; 2],
    top: f64,
    label: impl Fn(f64) -> String,
) -> Chart<'a> {
    Chart::new(sets)
        .legend_position(Some(ratatui::widgets::LegendPosition::BottomRight))
        .block(Block::default().borders(Borders::ALL).title(title))
        .x_axis(
            Axis::default()
                .bounds(x)
                .labels([format!("{:.0}s", x[0]), format!("{:.0}s", x[1])]),
        )
        .y_axis(Axis::default().bounds([0.0, top]).labels([
            label(0.0),
            label(top / 2.0),
            label(top),
        ]))
}

fn table<'a>(rows: Vec<Row<'a>>, head: [&'static str; 2], title: &'static str) -> Table<'a> {
    let header =
        Row::new(head.map(Cell::from)).style(Style::default().add_modifier(Modifier::BOLD));
    Table::new(
        rows,
        [Constraint::Percentage(60), Constraint::Percentage(40)],
    )
    .header(header)
    .block(Block::default().borders(Borders::ALL).title(title))
}
