//! Numbers as the summary, the notes and the tables write them.

/// `1234567` -> `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with thousands separators and one decimal: `121,933.6`.
pub fn rate(per_s: f64) -> String {
    let tenths = (per_s * 10.0).round() as u64;
    format!("{}.{}", thousands(tenths / 10), tenths % 10)
}

/// A share as a whole per cent: `0.973` -> `97%`.
pub fn share(s: f64) -> String {
    format!("{:.0}%", s * 100.0)
}

/// Microseconds as `87us`, `1.24ms`, `2.50s`.
pub fn latency(us: f64) -> String {
    if us < 1_000.0 {
        format!("{us:.0}us")
    } else if us < 1_000_000.0 {
        format!("{:.2}ms", us / 1_000.0)
    } else {
        format!("{:.2}s", us / 1_000_000.0)
    }
}

/// Bytes as `512 B`, `1.50 KiB`, `3.20 MiB`, `1.10 GiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[0])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}
