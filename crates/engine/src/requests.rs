//! Many requests in one run (`--targets`, `--bodies`): every request encoded once, back to
//! back in one buffer, and which one each request of the run sends.
//!
//! Memory is the encoded bytes plus one offset and one flag per request. Picking is a counter
//! (or a seeded generator) per worker: no lock, no allocation, no channel.

use crate::feed::Cursor;
use crate::template::{Lines, Template};
use std::ops::Range;

/// The order in which a run's requests go through the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    /// Request `i` of the run (counted over all workers and connections) sends entry
    /// `i mod N`, so `-n k*N` sends every entry exactly `k` times.
    #[default]
    Sequential,
    /// Each request sends an entry drawn uniformly, from a generator seeded with `seed`
    /// and the worker's index (the same seed and thread count give the same sequence).
    Random { seed: u64 },
}

/// The HTTP/1.1 requests a run sends, each encoded once, back to back.
#[derive(Debug, Clone, Default)]
pub struct RequestSet {
    bytes: Vec<u8>,
    /// Where entry `t` ends in `bytes` (it starts where `t - 1` ends).
    ends: Vec<usize>,
    /// Entry `t` is a HEAD request (its response has no body).
    head: Vec<bool>,
    any_head: bool,
    pub order: Order,
    /// Entry `t`'s template when its bytes change per request (empty: no entry has one).
    templates: Vec<Option<Template>>,
    /// The files of `{{line:FILE}}`.
    lines: Vec<Lines>,
    /// Seed of the values templates draw (`{{rand}}`, `{{uuid}}`), with the worker's index.
    pub seed: u64,
    /// Per-target figures: the names, and each entry's name (empty: none kept).
    names: Vec<String>,
    name_of: Vec<u32>,
}

impl RequestSet {
    pub fn new(order: Order) -> RequestSet {
        RequestSet {
            order,
            ..RequestSet::default()
        }
    }

    /// Adds one encoded request; `head`: it is a HEAD request.
    pub fn push(&mut self, request: &[u8], head: bool) {
        self.bytes.extend_from_slice(request);
        self.ends.push(self.bytes.len());
        self.head.push(head);
        self.any_head |= head;
    }

    /// Adds an entry whose bytes change per request: `template` renders it; `example` (one
    /// rendering, or the text with its markers) only sizes buffers.
    pub fn push_template(&mut self, example: &[u8], head: bool, template: Template) {
        let t = self.len();
        self.push(example, head);
        self.templates.resize(t, None);
        self.templates.push(Some(template));
    }

    /// Empties it, keeping its buffers (an encoder that hands each entry on reuses it).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
        self.head.clear();
        self.any_head = false;
        self.templates.clear();
        self.name_of.clear();
    }

    /// Whether entry `t` is a HEAD request.
    pub fn is_head(&self, t: usize) -> bool {
        self.head[t]
    }

    /// Adds the lines of a `{{line:FILE}}` file; returns its number for `Value::Line`.
    pub fn set_lines(&mut self, lines: Vec<Lines>) {
        self.lines = lines;
    }

    /// Keeps per-target figures: `names` (at most [`pelt_stats::MAX_TARGET_NAMES`] and one
    /// for the rest), and entry `t`'s name `names[name_of[t]]`.
    pub fn set_names(&mut self, names: Vec<String>, name_of: Vec<u32>) {
        assert_eq!(name_of.len(), self.len(), "a name for every entry");
        assert!(name_of.iter().all(|&n| (n as usize) < names.len()));
        self.names = names;
        self.name_of = name_of;
    }

    /// The names per-target figures are kept under (empty: none).
    pub fn names(&self) -> &[String] {
        &self.names
    }

    pub(crate) fn name_of(&self) -> &[u32] {
        &self.name_of
    }

    /// Whether some entry is a template.
    #[inline]
    pub fn has_templates(&self) -> bool {
        !self.templates.is_empty()
    }

    #[inline]
    pub(crate) fn template(&self, t: usize) -> Option<&Template> {
        self.templates.get(t).and_then(Option::as_ref)
    }

    pub(crate) fn lines(&self) -> &[Lines] {
        &self.lines
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Every entry's bytes, back to back (what the run keeps in memory).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Where entry `t` is in [`RequestSet::bytes`].
    #[inline]
    pub fn range(&self, t: usize) -> Range<usize> {
        let start = if t == 0 { 0 } else { self.ends[t - 1] };
        start..self.ends[t]
    }

    /// The longest entry, in bytes.
    pub fn max_len(&self) -> usize {
        (0..self.len())
            .map(|t| self.range(t).len())
            .max()
            .unwrap_or(0)
    }

    /// Whether entry `t` is a HEAD request; `None` when no entry is (nothing to tell the
    /// parser).
    #[inline]
    pub(crate) fn head(&self, t: usize) -> Option<bool> {
        self.any_head.then(|| self.head[t])
    }
}

/// Which entry each request of one worker sends. Worker `w` of `W` owns the run's request
/// indices `w, w + W, w + 2W, ...` (the budgets are split so that `-n` covers `0..n`
/// exactly); the warm-up has its own sequence, so the measured requests' shares stay exact.
///
/// A targets file read as the run goes has no entry numbers: the bytes come from its blocks
/// (`fed`). In an open loop every block comes to every worker, which takes its indices from
/// them; in a closed loop the blocks come dealt, and the worker sends their entries in order.
#[derive(Debug)]
pub(crate) struct Picker {
    n: u64,
    step: u64,
    /// The next index, measured and warm-up.
    next: [u64; 2],
    rng: Option<fastrand::Rng>,
    fed: Option<Box<Cursor>>,
}

impl Picker {
    /// `n`: entries (1: a single request, always entry 0).
    pub fn new(n: usize, order: Order, worker: usize, workers: usize) -> Picker {
        Picker {
            n: n.max(1) as u64,
            step: workers.max(1) as u64,
            next: [worker as u64; 2],
            rng: match order {
                Order::Random { seed } if n > 1 => Some(fastrand::Rng::with_seed(
                    seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                )),
                _ => None,
            },
            fed: None,
        }
    }

    /// Plain targets read as the run goes: this worker's blocks of them.
    pub fn fed(blocks: Cursor, worker: usize, workers: usize) -> Picker {
        Picker {
            fed: Some(Box::new(blocks)),
            ..Picker::new(1, Order::Sequential, worker, workers)
        }
    }

    /// Read as the run goes: the next entry, taken (its bytes in the cursor), with its name
    /// number and index in the run; `None` when the file (or `-n`) has ended. Else `None`.
    #[inline]
    pub fn take_fed(&mut self, warm: bool) -> Option<Option<(u32, u64)>> {
        let c = self.fed.as_mut()?;
        let index = match c.is_dealt() {
            true => c.take_next(),
            false => {
                let index = Picker::next_index(&mut self.next, self.step, warm);
                c.take_at(index).then_some(index)
            }
        };
        Some(index.map(|index| (c.taken_name, index)))
    }

    /// The entry [`Picker::take_fed`] took last.
    #[inline]
    pub fn taken(&self) -> Option<&Cursor> {
        self.fed.as_deref()
    }

    /// Takes nothing more: its blocks go back to the reader.
    pub fn close(&mut self) {
        if let Some(c) = &mut self.fed {
            c.close();
        }
    }

    /// The next index of the measured (or warm-up) sequence.
    #[inline]
    fn next_index(next: &mut [u64; 2], step: u64, warm: bool) -> u64 {
        let seq = &mut next[warm as usize];
        let index = *seq;
        *seq += step;
        index
    }

    /// The entry the next request sends, and its index in the run.
    #[inline]
    pub fn pick(&mut self, warm: bool) -> (u32, u64) {
        let index = Picker::next_index(&mut self.next, self.step, warm);
        let entry = match &mut self.rng {
            Some(rng) => rng.u64(..self.n),
            None if self.n == 1 => 0,
            None => index % self.n,
        };
        (entry as u32, index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_back_to_back() {
        let mut set = RequestSet::new(Order::Sequential);
        set.push(b"GET /a HTTP/1.1\r\n\r\n", false);
        set.push(b"HEAD /bb HTTP/1.1\r\n\r\n", true);
        assert_eq!(set.len(), 2);
        assert_eq!(&set.bytes()[set.range(1)], b"HEAD /bb HTTP/1.1\r\n\r\n");
        assert_eq!(set.max_len(), 21);
        assert_eq!((set.head(0), set.head(1)), (Some(false), Some(true)));
    }

    /// Sequential: over W workers with budgets split as the run splits them, `-n k*N` sends
    /// each entry exactly k times, and the indices cover 0..n once each.
    #[test]
    fn sequential_shares_are_exact_over_workers() {
        for (n_entries, workers, k) in [(7usize, 3usize, 5u64), (1, 2, 9), (10, 4, 3), (3, 1, 2)] {
            let total = k * n_entries as u64;
            let mut counts = vec![0u64; n_entries];
            let mut indices = vec![];
            for w in 0..workers {
                let budget = crate::share(total, workers, w);
                let mut p = Picker::new(n_entries, Order::Sequential, w, workers);
                let _ = p.pick(true); // a warm-up request does not shift the measured ones
                for _ in 0..budget {
                    let (entry, index) = p.pick(false);
                    counts[entry as usize] += 1;
                    indices.push(index);
                }
            }
            assert!(counts.iter().all(|&c| c == k), "{counts:?}");
            indices.sort_unstable();
            assert_eq!(indices, (0..total).collect::<Vec<_>>());
        }
    }

    #[test]
    fn random_order_is_reproducible_and_covers_every_entry() {
        let draw = |seed| {
            let mut p = Picker::new(5, Order::Random { seed }, 1, 2);
            (0..200).map(|_| p.pick(false).0).collect::<Vec<_>>()
        };
        assert_eq!(draw(42), draw(42));
        assert_ne!(draw(42), draw(43));
        let a = draw(42);
        assert!((0..5).all(|e| a.contains(&e)) && a.iter().all(|&e| e < 5));
    }
}
