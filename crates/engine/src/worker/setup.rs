//! A worker's start and end: the choices made once per run — the protocol, the transport and
//! the request source, the worker's type parameters — the load model and the picker, the
//! connections opened before the run's time starts, and the figures handed back at its end.

use super::*;

/// HTTP/2, closed loop: ended streams restart in groups of `--streams` / this (at least 1).
/// Restarting each as it ends made a write, a TLS record and a TCP segment per request or
/// two, as fast as responses came; in groups a write carries several HEADERS frames, as
/// h2load's do (against nginx, 4 x 100 streams: 1.9 segments per request, both ways,
/// became 1.4, and pelt's CPU per request fell by a third) while 90 % or more of the
/// streams stay busy.
const STREAM_GROUPS: usize = 10;

/// See `Worker::horizon`.
fn horizon(config: &Config) -> Duration {
    let streams = &config.streams;
    if streams.max_events.is_some() || streams.end_marker.is_some() {
        // A stream's event limit or marker, read at any time, ends it at the next scan.
        return DEADLINE_SCAN;
    }
    let ping = config.websocket().and_then(|ws| ws.ping);
    [config.timeout, config.connect_timeout, SCAN_AT_MOST]
        .into_iter()
        .chain(ping)
        .chain(streams.max_time)
        .min()
        .unwrap_or(SCAN_AT_MOST)
        .max(DEADLINE_SCAN)
}

/// Requests one connection may carry at once: `--streams` over HTTP/2 and HTTP/3, else
/// `--pipeline`.
fn depth(config: &Config) -> usize {
    match (config.http2(), config.http3()) {
        (Some(h2), _) => h2.streams.max(1),
        (_, Some(h3)) => h3.streams.max(1),
        _ => config.pipeline(),
    }
}

/// Runs one worker on the I/O backend `io` until its plan or `stop` ends it.
pub(crate) fn run<I: Io>(
    config: &Config,
    batch: &[u8],
    plan: WorkerPlan,
    stop: &AtomicBool,
    io: Result<I, Errno>,
) -> WorkerOutcome {
    let open = config.load.is_open();
    let mut ledger = Ledger::new(
        plan.worker,
        open,
        plan.start,
        config.warmup,
        plan.tx.clone(),
        config.targets(),
    );
    ledger.sample_every(config.sample_every.unwrap_or(0));
    if config.feed().is_some() {
        ledger.by_name(config.names().len());
    }
    if config.script().is_some() {
        ledger.by_step();
    }
    let io = match io {
        Ok(io) => io,
        Err(e) => return unset(config, plan, ledger, e),
    };
    let setup = Setup {
        config,
        batch,
        plan,
        stop,
        io,
        ledger,
    };
    let worker = setup.plan.worker;
    match (&config.wire, &config.tls) {
        (Wire::Http1 { .. }, None) => setup.drive(Http1::new(), Plain),
        (Wire::Http1 { .. }, Some(tls)) => setup.drive(Http1::new(), Tls::new(tls)),
        (Wire::Http2(h2), None) => setup.drive(Http2::new(h2), Plain),
        (Wire::Http2(h2), Some(tls)) => setup.drive(Http2::new(h2), Tls::new(tls)),
        (Wire::WebSocket(ws), None) => setup.drive(Ws::new(ws, worker), Plain),
        (Wire::WebSocket(ws), Some(tls)) => setup.drive(Ws::new(ws, worker), Tls::new(tls)),
        // QUIC carries its own TLS (`Http3::tls`).
        (Wire::Http3(h3), _) => setup.drive(Http3::new(h3), Plain),
    }
}

/// Without its I/O set up nothing can be sent: every request of the budget (or none, for a
/// duration run) is an error of `e`'s kind, so the accounting holds.
fn unset(config: &Config, mut plan: WorkerPlan, mut ledger: Ledger, e: Errno) -> WorkerOutcome {
    let start = plan.begin(Instant::now);
    ledger.restart(start);
    let n = plan.budget.unwrap_or(0);
    let entries = config.targets().map_or(1, |s| s.len());
    let order = config.targets().map_or(Default::default(), |s| s.order);
    let mut picker = Picker::new(entries, order, plan.worker, plan.workers);
    let now = Instant::now();
    for _ in 0..n {
        let (target, seq) = picker.pick(false);
        ledger.started(false, target, now, now);
        ledger.error(false, target, seq, errno_kind(e, false), || {
            format!("setting up {}: {e}", config.io.name())
        });
    }
    ledger.finish();
    WorkerOutcome {
        main: ledger.main,
        warm: ledger.warm,
        reason: StopReason::Requests,
        backlog: 0,
        scenario: None,
    }
}

/// What a worker has before its protocol, transport and request source are chosen.
struct Setup<'a, I: Io> {
    config: &'a Config,
    batch: &'a [u8],
    plan: WorkerPlan,
    stop: &'a AtomicBool,
    io: I,
    ledger: Ledger,
}

impl<I: Io> Setup<'_, I> {
    /// Chooses the request source (see `source.rs`) and runs the worker with it.
    fn drive<P: Protocol, T: Transport>(self, proto: P, transport: T) -> WorkerOutcome {
        let config = self.config;
        if let Some(run) = config.scenario() {
            // Over HTTP/2 each stream of a connection is a user's.
            let lanes = if P::MULTIPLEXED { depth(config) } else { 1 };
            let (worker, workers) = (self.plan.worker, self.plan.workers);
            let open = config.load.is_open();
            let mut users = Users::new(run.clone(), worker, workers, open, lanes);
            if let Some(g) = config.http2().and_then(|h| h.grpc.as_ref()) {
                users.read_calls(&g.steps);
            }
            return self.drive_with(proto, transport, users);
        }
        if let Some(maker) = config.script() {
            // Made here, on the worker's thread, before the run's time starts; numbered
            // within this process (a fleet's agent has its own threads).
            let first = config.slice.map_or(0, |s| s.first);
            let source = Scripted::new(maker.clone(), config, self.plan.worker, first);
            return self.drive_with(proto, transport, source);
        }
        if self.plan.feed.is_some() {
            return self.drive_with(proto, transport, Fed);
        }
        self.drive_with(proto, transport, Paced)
    }

    /// The load model: when requests may start.
    fn model(&mut self) -> Model {
        let config = self.config;
        let plan = &mut self.plan;
        let Some(open) = config.load.open_loop() else {
            return Model::closed(plan.budget);
        };
        let pace = match (config.load.replay(), plan.feed.take()) {
            // A replay's schedule reads its times from the recording read as the run goes.
            (Some(replay), Some(blocks)) => {
                Pace::Fed(Box::new(Cursor::new(replay.clone(), blocks)))
            }
            (_, feed) => {
                plan.feed = feed;
                open.pace.schedule()
            }
        };
        let schedule = Schedule::new(pace, open.arrival, plan.worker, plan.workers);
        Model::open(schedule, plan.budget)
    }

    /// The picker: which entry each request sends (a targets file read as the run goes: its
    /// blocks, dealt among the workers in closed loop, every one to each in open loop, where
    /// the schedule shares them out).
    fn picker(&mut self) -> Picker {
        let (config, plan) = (self.config, &mut self.plan);
        let (worker, workers) = (plan.worker, plan.workers);
        match (config.targets().or(config.offered()), plan.feed.take()) {
            (_, Some(blocks)) if config.load.is_open() => {
                Picker::fed(Cursor::every(blocks), worker, workers)
            }
            (_, Some(blocks)) => Picker::fed(Cursor::dealt(blocks), worker, workers),
            (Some(set), None) => Picker::new(set.len(), set.order, worker, workers),
            (None, None) => Picker::new(1, Default::default(), worker, workers),
        }
    }

    /// Runs the worker with this protocol, transport and request source.
    fn drive_with<P: Protocol, T: Transport, S: Source>(
        mut self,
        proto: P,
        transport: T,
        source: S,
    ) -> WorkerOutcome {
        let model = self.model();
        let picker = self.picker();
        let Setup {
            config,
            batch,
            mut plan,
            stop,
            io,
            ledger,
        } = self;
        let open = config.load.is_open();
        let ramp = (config.load.staged(Ramped::Connections).cloned())
            .map(|s| (s, plan.worker, plan.workers));
        let max_conns = if open {
            plan.max_connections.max(plan.connections)
        } else {
            plan.connections
        };
        let depth = source.depth().unwrap_or_else(|| depth(config));
        let mut w = Worker {
            config,
            io,
            batch,
            depth,
            // A source that answers: each user's next step goes as soon as it is ready.
            refill_at: if P::MULTIPLEXED && !S::ANSWERS {
                (depth / STREAM_GROUPS).max(1)
            } else {
                depth
            },
            conns: Vec::with_capacity(max_conns),
            free: VecDeque::with_capacity(max_conns),
            max_conns,
            ramp,
            active: usize::MAX,
            control_seen: 0,
            model,
            endpoint: Endpoint::of(config, plan.worker),
            picker,
            values: fastrand::Rng::with_seed(
                config.targets().map_or(0, |s| s.seed)
                    ^ (plan.worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            ledger,
            source,
            window_ns: config.load.batch_window().as_nanos() as u64,
            stamps: StampClock::new(),
            unstamped: false,
            events: Vec::with_capacity(1024),
            scan_at: plan.start,
            horizon: horizon(config),
            proto,
            transport,
        };
        w.begin(&mut plan);
        let reason = w.run(&plan, stop);
        w.end(reason)
    }
}

impl<I: Io, P: Protocol, T: Transport, S: Source> Worker<'_, I, P, T, S> {
    /// Makes the plan's connections; the run's time starts when every worker has.
    fn begin(&mut self, plan: &mut WorkerPlan) {
        let now = self.io.now();
        for _ in 0..plan.connections {
            self.add_conn(now);
        }
        let start = plan.begin(|| self.io.now());
        self.ledger.restart(start);
        self.scan_at = start;
        if let Some(end) = plan.end {
            let end_ns = self.ledger.elapsed_ns(end);
            self.model.end_at(end_ns);
        }
        let now = self.io.now();
        if let Some(active) = self.ramp_target(now) {
            self.active = active.min(self.conns.len());
        }
    }

    /// The run is over: the requests still in flight and the backlog are counted, and the
    /// figures handed back.
    fn end(mut self, reason: StopReason) -> WorkerOutcome {
        let end = self.io.now();
        P::at_end(&mut self, end);
        // Requests due in the last moments before the stop are not a backlog: count those due
        // more than the late threshold before it, which waited for a busy connection.
        let late_ns = pelt_stats::LATE_THRESHOLD_US * 1000;
        let backlog = self.model.backlog(
            self.ledger
                .elapsed_ns(self.io.now())
                .saturating_sub(late_ns),
        );
        self.ledger.connections = self.open_connections();
        for c in &self.conns {
            for k in 0..c.slots.len {
                let slot = &c.slots.ring[(c.slots.head + k) % c.slots.ring.len()];
                self.ledger.in_flight(slot.warm, slot.target);
            }
        }
        self.ledger.finish();
        WorkerOutcome {
            main: self.ledger.main,
            warm: self.ledger.warm,
            reason,
            backlog,
            scenario: self.source.counts(),
        }
    }
}
