//! Parsers for the values users type: durations, counts, rates, sizes, headers.
//!
//! Each returns a message that names what was expected; the caller adds the flag and the
//! offending value. All reject zero where zero makes no sense, and never panic.

use std::time::Duration;

/// `500ms`, `10s`, `2m`, `1h`, `1.5s`; a bare number is seconds. Must be positive.
pub fn duration(s: &str) -> Result<Duration, String> {
    let d = duration_or_zero(s)?;
    if d.is_zero() {
        return Err("must be greater than zero".into());
    }
    Ok(d)
}

/// Like [`duration`] but allows zero (`--delay 0`).
pub fn duration_or_zero(s: &str) -> Result<Duration, String> {
    const HELP: &str = "expected a duration like 500ms, 10s, 2m or 1h";
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') {
        return Err(HELP.into());
    }
    let value: f64 = num.parse().map_err(|_| HELP.to_string())?;
    let secs_per_unit = match unit {
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(HELP.into()),
    };
    let secs = value * secs_per_unit;
    if !secs.is_finite() || secs > 365.0 * 24.0 * 3600.0 {
        return Err("is too long (at most a year)".into());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// The open loop's batch window: a duration from 0 (none) to 10ms.
pub fn batch_window(s: &str) -> Result<Duration, String> {
    let d = duration_or_zero(s)?;
    if d > Duration::from_millis(10) {
        return Err("is too long (at most 10ms; 0 turns batching off)".into());
    }
    Ok(d)
}

/// `--stream-limit`: an event count (`100`, `1k`), a time with its unit (`30s`, `2m`: `m` is
/// minutes here), or both (`100,30s`).
pub fn stream_limit(s: &str) -> Result<(Option<u64>, Option<Duration>), String> {
    const HELP: &str = "expected events (100), a time (30s) or both (100,30s)";
    let (mut events, mut time) = (None, None);
    for part in s.split(',').map(str::trim) {
        if part.ends_with(|c: char| c.is_ascii_alphabetic() && c != 'k' && c != 'K') {
            if time.replace(duration(part)?).is_some() {
                return Err(HELP.into());
            }
        } else if events.replace(count(part).map_err(|_| HELP)?).is_some() {
            return Err(HELP.into());
        }
    }
    Ok((events, time))
}

/// `100`, `10k`, `1m` (also `1M`, `2g`, `1_000`). Must be positive.
pub fn count(s: &str) -> Result<u64, String> {
    const HELP: &str = "expected a positive whole number like 100, 10k or 1m";
    let t: String = s.trim().chars().filter(|&c| c != '_').collect();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1_000u64),
        Some((i, 'm' | 'M')) => (&t[..i], 1_000_000),
        Some((i, 'g' | 'G')) => (&t[..i], 1_000_000_000),
        _ => (&t[..], 1),
    };
    if num.is_empty() || !num.chars().all(|c| c.is_ascii_digit()) {
        return Err(HELP.into());
    }
    let n: u64 = num.parse().map_err(|_| "is too large".to_string())?;
    let n = n
        .checked_mul(mult)
        .ok_or_else(|| "is too large".to_string())?;
    if n == 0 {
        return Err("must be greater than zero".into());
    }
    Ok(n)
}

/// A plain decimal number with an optional `k`/`m`/`g` multiplier: `0.5`, `20k`, `1.5k`.
/// Never negative, never NaN or infinite; `None` for anything else.
pub fn decimal(s: &str) -> Option<f64> {
    let t: String = s.trim().chars().filter(|&c| c != '_').collect();
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        Some((i, 'g' | 'G')) => (&t[..i], 1e9),
        _ => (&t[..], 1.0),
    };
    let digits_ok = num.chars().all(|c| c.is_ascii_digit() || c == '.')
        && num.chars().filter(|&c| c == '.').count() <= 1
        && num.chars().any(|c| c.is_ascii_digit());
    if !digits_ok {
        return None;
    }
    let v = num.parse::<f64>().ok()? * mult;
    v.is_finite().then_some(v)
}

/// A request rate: `20k`, `500`, `0.5`, `100/s`. Positive; never "unlimited".
/// `--connect-rate`: connections per second.
pub fn per_second(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    match decimal(t) {
        Some(v) if v > 0.0 && v <= 1e9 => Ok(v),
        Some(_) => Err("must be more than 0 and at most 1000000000 per second".into()),
        None => Err("expected connections per second like 1000 or 5k".into()),
    }
}

pub fn rate(s: &str) -> Result<pelt_engine::Rate, String> {
    const HELP: &str = "expected requests per second like 500, 20k or 0.5";
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let v = decimal(t).ok_or_else(|| HELP.to_string())?;
    if v == 0.0 {
        return Err("must be greater than zero (leave --rate out for a closed loop)".into());
    }
    pelt_engine::Rate::per_second(v).ok_or_else(|| {
        format!(
            "is out of range ({} to {} requests per second)",
            pelt_engine::Rate::MIN_PER_S,
            pelt_engine::Rate::MAX_PER_S
        )
    })
}

/// A rate like [`rate`] or `0` (which only starts `--stages`), as a number per second.
pub fn rate_or_zero(s: &str) -> Result<f64, String> {
    let t = s.trim();
    if decimal(t.strip_suffix("/s").unwrap_or(t)) == Some(0.0) {
        return Ok(0.0);
    }
    rate(s).map(|r| r.as_f64())
}

/// `--replay-speed`: how many times as fast as recorded (`2x`, `0.5x`, `2`).
pub fn speed(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let range = pelt_engine::REPLAY_SPEEDS;
    let number = t.strip_suffix(['x', 'X']).unwrap_or(t);
    match number.parse::<f64>() {
        Ok(v) if range.contains(&v) => Ok(v),
        _ => Err(format!(
            "expected a speed like 2x or 0.5x, from {}x to {}x",
            range.start(),
            range.end()
        )),
    }
}

/// `--stages`: `DURATION:TARGET` pairs separated by commas (`30s:1k,1m:10k,30s:0`); a
/// duration may be 0 (a jump). Targets are checked against what they move when the run is
/// prepared.
pub fn stages(s: &str) -> Result<Vec<pelt_engine::Stage>, String> {
    const HELP: &str = "expected DURATION:TARGET,... like 30s:1k,1m:10k,30s:0";
    if s.trim().is_empty() {
        return Err(HELP.into());
    }
    s.split(',')
        .enumerate()
        .map(|(k, part)| {
            let which = || format!("stage {} ({})", k + 1, quote(part.trim()));
            let (d, v) = part
                .split_once(':')
                .ok_or_else(|| format!("{}: {HELP}", which()))?;
            let duration = duration_or_zero(d).map_err(|e| format!("{}: duration {e}", which()))?;
            let v = v.trim();
            let target = decimal(v.strip_suffix("/s").unwrap_or(v))
                .ok_or_else(|| format!("{}: expected a target like 100, 20k or 0.5", which()))?;
            Ok(pelt_engine::Stage { duration, target })
        })
        .collect()
}

/// `-c`, `--max-connections`: at most 10 million.
pub fn connections(s: &str) -> Result<usize, String> {
    count_at_most(s, 10_000_000)
}

/// `-t`: at most 4096.
pub fn threads(s: &str) -> Result<usize, String> {
    count_at_most(s, 4096)
}

/// `--pipeline`: at most 1024.
pub fn pipeline(s: &str) -> Result<usize, String> {
    count_at_most(s, 1024)
}

/// `--streams`: at most 10,000.
pub fn streams(s: &str) -> Result<usize, String> {
    count_at_most(s, 10_000)
}

/// A count that fits in usize and is at most `max`.
pub fn count_at_most(s: &str, max: u64) -> Result<usize, String> {
    let n = count(s)?;
    if n > max {
        return Err(format!("is too large (at most {max})"));
    }
    Ok(n as usize)
}

/// A size in bytes that may be zero: `0`, `512`, `4k` (1000), `1KiB` is not accepted.
pub fn size(s: &str) -> Result<usize, String> {
    if s.trim() == "0" {
        return Ok(0);
    }
    count_at_most(s, 1 << 30).map_err(|e| e.replace("positive ", ""))
}

/// WebSocket subprotocols: `chat` or `v2.chat, v1.chat`: tokens, comma-separated (returned
/// as `a, b`).
pub fn ws_protocols(s: &str) -> Result<String, String> {
    let names: Vec<&str> = s.split(',').map(str::trim).collect();
    for n in &names {
        if n.is_empty() {
            return Err("expected subprotocol names like chat or v2.chat,v1.chat".into());
        }
        if let Some(c) = n
            .chars()
            .find(|&c| !c.is_ascii() || !pelt_codec::request::is_token_char(c as u8))
        {
            return Err(format!(
                "the subprotocol {n:?} holds {c:?}, which a name (an HTTP token) may not"
            ));
        }
    }
    Ok(names.join(", "))
}

/// A share: `1%`, `0.5%`, or `0.01`. Within 0..=1.
pub fn share(s: &str) -> Result<f64, String> {
    const HELP: &str = "expected a share like 1%, 0.5% or 0.01";
    let t = s.trim();
    let v = match t.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map_err(|_| HELP.to_string())? / 100.0,
        None => t.parse::<f64>().map_err(|_| HELP.to_string())?,
    };
    if !(0.0..=1.0).contains(&v) || !v.is_finite() {
        return Err("must be between 0% and 100%".into());
    }
    Ok(v)
}

/// A status code, 100..=999.
pub fn status(s: &str) -> Result<u16, String> {
    match s.trim().parse::<u16>() {
        Ok(n) if (100..=999).contains(&n) => Ok(n),
        _ => Err("expected a status code from 100 to 999".into()),
    }
}

/// A TCP port; 0 lets the OS pick one.
pub fn port(s: &str) -> Result<u16, String> {
    s.trim()
        .parse::<u16>()
        .map_err(|_| "expected a port number from 0 to 65535".into())
}

/// Quotes a user value for an error line: control characters escaped, so the line stays one,
/// and a long value cut to its first [`QUOTED_CHARS`] characters with its length said, so a
/// 50 MB mistake gives a short line.
pub fn quote(s: &str) -> String {
    let escape = |t: &str| {
        t.escape_debug()
            .to_string()
            .replace("\\'", "'")
            .replace("\\\"", "\"")
    };
    match s.char_indices().nth(QUOTED_CHARS) {
        None => format!("'{}'", escape(s)),
        Some((cut, _)) => format!("'{}...' ({} bytes)", escape(&s[..cut]), s.len()),
    }
}

/// The most characters of a value an error line quotes.
pub const QUOTED_CHARS: usize = 120;

/// Headers whose values are secrets: never echoed in any output.
const SECRET_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// A header line as pelt may show it: the value of a secret header masked as `***`.
pub fn masked_header(line: &str) -> String {
    match line.split_once(':') {
        Some((name, _)) if SECRET_HEADERS.contains(&name.trim().to_ascii_lowercase().as_str()) => {
            format!("{name}: ***")
        }
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds_read_with_or_without_their_x() {
        assert_eq!(speed("2x"), Ok(2.0));
        assert_eq!(speed(" 0.5X "), Ok(0.5));
        assert_eq!(speed("4"), Ok(4.0));
        for bad in ["", "x", "0x", "-1x", "fastx", "NaNx", "5000x"] {
            assert!(speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn secret_headers_are_masked() {
        assert_eq!(
            masked_header("Authorization: Bearer x\r"),
            "Authorization: ***"
        );
        assert_eq!(masked_header("cookie:a=b"), "cookie: ***");
        assert_eq!(masked_header("X-Trace: 1"), "X-Trace: 1");
        assert_eq!(masked_header("NoColon"), "NoColon");
    }

    #[test]
    fn durations() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        for bad in [
            "0",
            "0s",
            "10x",
            "",
            "s",
            "-1s",
            "1e3s",
            ".5s",
            "5.s",
            "1 s",
            "999999999h",
        ] {
            assert!(duration(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(duration_or_zero("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn counts() {
        assert_eq!(count("100"), Ok(100));
        assert_eq!(count("10k"), Ok(10_000));
        assert_eq!(count("1m"), Ok(1_000_000));
        assert_eq!(count("1_000"), Ok(1000));
        for bad in [
            "0",
            "-1",
            "abc",
            "",
            "k",
            "1.5k",
            "99999999999999999999",
            "20000000000g",
        ] {
            assert!(count(bad).is_err(), "{bad:?} accepted");
        }
        assert!(count_at_most("2000000", 1_000_000).is_err());
    }

    #[test]
    fn rates() {
        for (text, per_s) in [
            ("20k", 20_000.0),
            ("500", 500.0),
            ("0.5", 0.5),
            ("1.5k", 1500.0),
            ("100/s", 100.0),
            ("1m", 1e6),
        ] {
            assert_eq!(rate(text).map(|r| r.as_f64()), Ok(per_s), "{text}");
        }
        for bad in [
            "0", "0.0", "-5", "abc", "", "k", "1..5", "inf", "NaN", "1e3", "5g", "0.0001",
        ] {
            assert!(rate(bad).is_err(), "{bad:?} accepted");
        }
        assert!(rate("0").unwrap_err().contains("greater than zero"));
        assert_eq!(rate_or_zero("0"), Ok(0.0));
        assert_eq!(rate_or_zero("0/s"), Ok(0.0));
        assert_eq!(rate_or_zero("2k"), Ok(2000.0));
        assert!(rate_or_zero("-1").is_err() && rate_or_zero("0.0001").is_err());
    }

    #[test]
    fn stage_lists() {
        let d = Duration::from_secs;
        let got = stages("30s:1k, 1m:10k,0:5.5,30s:0/s").unwrap();
        let want = [(d(30), 1e3), (d(60), 1e4), (d(0), 5.5), (d(30), 0.0)];
        assert_eq!(got.len(), want.len());
        for (g, (duration, target)) in got.iter().zip(want) {
            assert_eq!((g.duration, g.target), (duration, target));
        }
        for (bad, says) in [
            ("", "expected DURATION:TARGET"),
            ("30s", "stage 1 ('30s'): expected DURATION:TARGET"),
            ("30s:1k,1m", "stage 2 ('1m')"),
            ("30x:1k", "stage 1 ('30x:1k'): duration expected a duration"),
            ("30s:-5", "expected a target"),
            ("30s:1k,,1m:2k", "stage 2 ('')"),
            ("30s:abc", "expected a target"),
        ] {
            let e = stages(bad).unwrap_err();
            assert!(e.contains(says), "{bad:?}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn sizes_shares_statuses_ports() {
        assert_eq!(size("0"), Ok(0));
        assert_eq!(size("4k"), Ok(4000));
        assert!(size("-3").is_err());
        assert_eq!(share("1%"), Ok(0.01));
        assert_eq!(share("0.25"), Ok(0.25));
        assert!(share("150%").is_err() && share("x").is_err() && share("NaN").is_err());
        assert_eq!(status("404"), Ok(404));
        assert!(status("42").is_err() && status("1000").is_err());
        assert_eq!(port("0"), Ok(0));
        assert!(port("65536").is_err());
    }

    #[test]
    fn quoting_keeps_one_line() {
        assert_eq!(quote("a\nb"), "'a\\nb'");
        assert_eq!(quote("x\0"), "'x\\0'");
        assert_eq!(quote("it's"), "'it's'");
    }
}
