//! A week-long run's timeline, simulated: 604,800 seconds of points (each with its histogram and
//! its resources, as `--monitor` attaches them) go through the timeline the engine keeps,
//! without running load. Its memory stays flat and every figure stays exact.
//!
//! Alone in its test binary, so the process's resident memory is this test's.

use pelt_stats::{
    HostSample, Interval, LatencyHistogram, ProcessSample, ResourceSample, Timeline, COARSE_MAX,
    FINE_S,
};

const WEEK_S: u64 = 7 * 24 * 3600;
const DAY_S: u64 = 24 * 3600;
const WARMUP_S: u64 = 30;

/// Resident memory of this process, bytes.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096
}

/// Second `k`'s interval: one of a few shapes (busy, quiet, a slow tail), so the histograms
/// differ from second to second.
fn interval(k: u64, shapes: &[Vec<u64>]) -> Interval {
    let mut iv = Interval::new(k);
    let shape = &shapes[(k % shapes.len() as u64) as usize];
    for &l in shape {
        iv.record_response(if l > 40_000 { 503 } else { 200 }, l, l / 2);
    }
    iv.sent = shape.len() as u64 + 1;
    iv.errors = 1;
    iv.connections = 1000;
    iv
}

fn resources(k: u64) -> ResourceSample {
    let cpu = 0.5 + (k % 7) as f64 / 10.0;
    ResourceSample {
        server: Some(ProcessSample {
            processes: 2,
            cpu_user: cpu / 2.0,
            cpu_system: cpu / 2.0,
            cpu_capacity: 2.0,
            rss_bytes: (100 + k % 50) << 20,
            threads: 4,
            ctx_switches: 10,
            ..ProcessSample::default()
        }),
        host: HostSample {
            cores: 2,
            cpu_user: cpu,
            net_rx_bytes: 1_000,
            listen_overflows: u64::from(k.is_multiple_of(1000)),
            ..HostSample::default()
        },
        server_host: None,
        pelt: ProcessSample {
            cpu_user: 0.3,
            workers: vec![0.3, 0.2],
            ..ProcessSample::default()
        },
    }
}

#[test]
fn a_week_of_seconds_keeps_flat_memory_and_exact_figures() {
    let shapes: Vec<Vec<u64>> = (0..7u64)
        .map(|s| {
            (0..40u64)
                .map(|i| 50 + (i * i * 37 + s * 1_001) % 60_000)
                .collect()
        })
        .collect();
    // What the whole week adds up to, kept apart.
    let mut expected = LatencyHistogram::new();
    let (mut sent, mut completed, mut overflows) = (0u64, 0u64, 0u64);
    // Each shape's point, encoded once: the simulation clones them (the engine encodes each
    // second's histogram as it comes).
    let points: Vec<_> = (0..shapes.len() as u64)
        .map(|k| interval(k, &shapes).point(1.0, false))
        .collect();
    let mut timeline = Timeline::new();
    let mut rss_day_one = 0;
    let mut most_points = 0;
    for k in 0..WEEK_S {
        let shape = (k % shapes.len() as u64) as usize;
        let mut p = points[shape].clone();
        p.second = k;
        p.warmup = k < WARMUP_S;
        p.resources = Some(resources(k));
        if !p.warmup {
            for &l in &shapes[shape] {
                expected.record(l);
            }
            sent += p.sent;
            completed += p.completed;
            overflows += u64::from(k.is_multiple_of(1000));
        }
        timeline.push(p);
        most_points = most_points.max(timeline.len());
        if k == DAY_S {
            rss_day_one = rss();
        }
    }
    let rss_week = rss();
    let grain = timeline.grain();
    let points = timeline.into_points();

    // Bounded: the fine horizon, the coarse points, and the warm-up's own point.
    assert!(
        most_points <= FINE_S as usize + COARSE_MAX + 2,
        "{most_points} points at most"
    );
    // Contiguous, in order, whole from 0 to the end of the week.
    assert_eq!(points[0].second, 0);
    for w in points.windows(2) {
        assert_eq!(
            w[0].second as f64 + w[0].length_s,
            w[1].second as f64,
            "{w:?}"
        );
    }
    let last = points.last().unwrap();
    assert_eq!(last.second as f64 + last.length_s, WEEK_S as f64);
    // The last quarter hour is one point a second; older points are coarse, aligned on their
    // length; the warm-up never merges with measured seconds.
    let fine = &points[points.len() - FINE_S as usize..];
    assert!(fine.iter().all(|p| p.length_s == 1.0));
    assert!(grain >= 600, "a week coarsens to minutes or more: {grain}");
    assert!(points
        .iter()
        .filter(|p| p.warmup)
        .all(|p| p.second < WARMUP_S));
    let measured: Vec<_> = points.iter().filter(|p| !p.warmup).collect();

    // Exact: counts add up, and the histograms merged are the week's.
    assert_eq!(measured.iter().map(|p| p.sent).sum::<u64>(), sent);
    assert_eq!(measured.iter().map(|p| p.completed).sum::<u64>(), completed);
    let mut merged = LatencyHistogram::new();
    for p in &measured {
        merged.merge(&LatencyHistogram::decode(p.histogram.as_deref().unwrap()).unwrap());
    }
    assert_eq!(merged.summary(), expected.summary());
    for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
        assert_eq!(merged.quantile_us(q), expected.quantile_us(q), "q {q}");
    }
    // Each point's rate is its completions over its length.
    for p in &measured {
        assert!(
            (p.rps - p.completed as f64 / p.length_s).abs() < 1e-6,
            "{p:?}"
        );
    }
    // Resources: counts add up, memory keeps its peak, CPU its mean.
    let res: Vec<_> = measured
        .iter()
        .map(|p| p.resources.as_ref().unwrap())
        .collect();
    assert_eq!(
        res.iter().map(|r| r.host.listen_overflows).sum::<u64>(),
        overflows
    );
    assert_eq!(
        res.iter().map(|r| r.host.net_rx_bytes).sum::<u64>(),
        1_000 * (WEEK_S - WARMUP_S)
    );
    let server = |r: &&ResourceSample| r.server.clone().unwrap();
    assert_eq!(
        res.iter().map(|r| server(r).rss_bytes).max(),
        Some(149 << 20)
    );
    let cpu_seconds: f64 = measured
        .iter()
        .map(|p| p.resources.as_ref().unwrap().server.as_ref().unwrap().cpu() * p.length_s)
        .sum();
    let expected_cpu: f64 = (WARMUP_S..WEEK_S)
        .map(|k| 0.5 + (k % 7) as f64 / 10.0)
        .sum();
    assert!(
        (cpu_seconds - expected_cpu).abs() < 1e-6 * expected_cpu,
        "{cpu_seconds} {expected_cpu}"
    );
    assert_eq!(res[0].pelt.workers.len(), 2);

    // Flat: the six days after the first add (next to) nothing; a timeline that kept every
    // second would hold about a gigabyte more by now.
    let grown = rss_week.saturating_sub(rss_day_one);
    eprintln!(
        "{} points, grain {grain} s, RSS day 1 {} KB, day 7 {} KB",
        points.len(),
        rss_day_one >> 10,
        rss_week >> 10
    );
    assert!(
        grown < 16 << 20,
        "grew {} KB from day 1 to day 7",
        grown >> 10
    );
}
