//! A request file read as the run goes (a big `--targets` file, replayed or not): bounded
//! memory whatever its length.
//!
//! One reader thread takes the entries from a [`Source`] (pelt-load parses the file line by
//! line; a recording in time order) and puts them, encoded, in blocks of [`BLOCK`] consecutive
//! entries. At most [`BLOCKS`] blocks exist: the reader reuses a block once every worker has
//! dropped it, and waits for one otherwise. That is the look-ahead, and the memory: about
//! `BLOCKS * BLOCK` encoded requests. The blocks reach the workers of this process over
//! bounded channels, one way or the other ([`Share`]):
//!
//! - **Every block to every worker** (a replay): worker `w` of `W` sends the entries
//!   `w, w + W, ...` of each, at their recorded times (the split of [`crate::Replay`] and the
//!   open loop, so a fleet splits a streamed recording exactly as a read one). The workers go
//!   at the recording's pace together, so none runs far ahead of another.
//! - **Each block to one worker** (plain targets): the next block goes to the next worker with
//!   room in its channel, and the worker sends its entries in order. A closed loop's workers go
//!   at their own speeds: a fast worker takes more blocks, and never waits for a slow one (a
//!   shared look-ahead would hold it back once they drift `BLOCKS * BLOCK` requests apart). The
//!   source ends the stream after the run's request count (`-n`), so the count is exact and its
//!   requests are the file's first ones, in order over laps.
//!
//! A worker takes a block from its channel once per [`BLOCK`] entries it passes: no lock,
//! allocation or channel per request. A request's bytes are copied to its connection when it
//! is taken (see `Conn::fed`), so a block is dropped as soon as the worker has passed it,
//! however long its requests stay in flight.

use crate::replay::Replay;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Entries in a block.
pub const BLOCK: usize = 4096;
/// Blocks alive at once (the look-ahead is `BLOCKS * BLOCK` entries).
pub const BLOCKS: usize = 64;

/// Consecutive entries of a recording, encoded.
#[derive(Debug, Default)]
pub struct Block {
    /// The index in the recording (counted over laps) of its first entry.
    first: u64,
    bytes: Vec<u8>,
    /// Where entry `k` ends in `bytes` (it starts where `k - 1` ends).
    ends: Vec<usize>,
    head: Vec<bool>,
    /// Each entry's per-target name number.
    name: Vec<u32>,
    /// Each entry's recorded time, ns from the recording's first entry (within its lap).
    recorded_ns: Vec<u64>,
}

impl Block {
    /// Adds an entry: its encoded request, whether it is a HEAD request, its name number and
    /// its recorded time (ns from the recording's first entry).
    pub fn push(&mut self, request: &[u8], head: bool, name: u32, recorded_ns: u64) {
        self.bytes.extend_from_slice(request);
        self.ends.push(self.bytes.len());
        self.head.push(head);
        self.name.push(name);
        self.recorded_ns.push(recorded_ns);
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Holds [`BLOCK`] entries.
    pub fn is_full(&self) -> bool {
        self.len() >= BLOCK
    }

    /// The index in the recording (over laps) of the next entry pushed.
    pub fn next_index(&self) -> u64 {
        self.first + self.len() as u64
    }

    fn reset(&mut self, first: u64) {
        self.first = first;
        self.bytes.clear();
        self.ends.clear();
        self.head.clear();
        self.name.clear();
        self.recorded_ns.clear();
    }

    /// Entry `k`'s bytes.
    fn bytes(&self, k: usize) -> &[u8] {
        let start = if k == 0 { 0 } else { self.ends[k - 1] };
        &self.bytes[start..self.ends[k]]
    }
}

/// Where a streamed recording's entries come from, in time order: each lap of it in turn
/// (with `--replay-loop`), until [`Source::fill`] adds none.
pub trait Source: Send {
    /// Adds the next entries to `block`, until it [is full](Block::is_full) or the recording
    /// ends (then it adds fewer, or none). An error ends the stream.
    fn fill(&mut self, block: &mut Block) -> Result<(), String>;
}

/// Opens a [`Source`] for one run.
pub type OpenSource = dyn Fn() -> Result<Box<dyn Source>, String> + Send + Sync;

/// A recording read as the run goes: how to open it (each run opens its own), and what went
/// wrong reading it, if anything did (the stream ended there).
pub struct Feed {
    open: Box<OpenSource>,
    error: Mutex<Option<String>>,
}

impl std::fmt::Debug for Feed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Feed")
    }
}

impl Feed {
    pub fn new(open: Box<OpenSource>) -> Feed {
        Feed {
            open,
            error: Mutex::new(None),
        }
    }

    /// The error that ended the last run's stream early (`None`: it read to its end).
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }

    fn failed(&self, message: String) {
        if let Ok(mut e) = self.error.lock() {
            e.get_or_insert(message);
        }
    }
}

/// How the reader's blocks reach the workers (see the module's text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Share {
    /// Every block to every worker, each sending its entries `w, w + W, ...` (a replay).
    Every,
    /// Each block to one worker: the next with room (plain targets).
    Dealt,
}

/// Channels to `workers` workers, and the reader that feeds them until the source ends, every
/// worker has dropped its channel, or `quit`. `paced`: the workers send at a schedule's times
/// (the reader then yields the CPU to them; see [`Reader::run`]).
/// `primed` ends (its sender dropped) once the look-ahead is full or the recording read: the
/// run starts then, so that the reader's first fill does not share a CPU with requests due.
pub(crate) fn start(
    feed: &Feed,
    workers: usize,
    share: Share,
    paced: bool,
) -> (Reader, Vec<Receiver<Arc<Block>>>, Receiver<()>) {
    // Dealt, a worker holds at most its part of the look-ahead, so the others always find
    // blocks to take.
    let depth = match share {
        Share::Every => BLOCKS,
        Share::Dealt => (BLOCKS / workers.max(1)).max(2),
    };
    let (senders, receivers) = (0..workers)
        .map(|_| std::sync::mpsc::sync_channel(depth))
        .unzip();
    let (primed, primed_rx) = std::sync::mpsc::channel();
    let source = (feed.open)();
    let reader = Reader {
        source,
        senders,
        share,
        paced,
        primed: Some(primed),
    };
    (reader, receivers, primed_rx)
}

/// The reader thread's work (see [`start`]).
pub(crate) struct Reader {
    source: Result<Box<dyn Source>, String>,
    senders: Vec<SyncSender<Arc<Block>>>,
    share: Share,
    paced: bool,
    primed: Option<std::sync::mpsc::Sender<()>>,
}

impl Reader {
    pub fn run(mut self, feed: &Feed, quit: &AtomicBool) {
        // Paced, the lowest priority (nice 19, this thread only): where the reader shares a
        // CPU with a worker, the worker's wake-ups go first and the reader parses in what is
        // left (it is a look-ahead of 262,144 requests ahead). Without it, a block's parse
        // (about 10 ms) delayed the requests due meanwhile: lag p99 1.6 ms against 0.5 ms at
        // 20,000/s on one CPU (bench/replay.py). Best effort: a refusal leaves it as it was.
        // A closed loop's workers take every cycle they get, so there the reader keeps its
        // share: at nice 19 it would starve until a worker waited for it.
        if self.paced {
            let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
        }
        let source = std::mem::replace(&mut self.source, Err(String::new()));
        let mut source = match source {
            Ok(s) => s,
            Err(e) => return feed.failed(e),
        };
        let mut pool: Vec<Arc<Block>> = Vec::with_capacity(BLOCKS);
        let mut next = 0u64;
        loop {
            let mut block = loop {
                // A block every worker has dropped (only the pool holds it).
                if let Some(k) = pool.iter_mut().position(|b| Arc::get_mut(b).is_some()) {
                    break pool.swap_remove(k);
                }
                if pool.len() < BLOCKS {
                    break Arc::new(Block::default());
                }
                if quit.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(Duration::from_micros(200));
            };
            let b = Arc::get_mut(&mut block).expect("a block only the reader holds");
            b.reset(next);
            if let Err(e) = source.fill(b) {
                return feed.failed(e);
            }
            if b.is_empty() {
                // The end: the workers' channels close when the senders drop.
                return;
            }
            next = b.next_index();
            let delivered = match self.share {
                Share::Every => self.send_every(&block),
                Share::Dealt => self.deal(&block, quit),
            };
            if !delivered {
                return;
            }
            pool.push(block);
            if pool.len() == BLOCKS {
                self.primed = None;
            }
        }
    }

    /// Sends `block` to every worker; `false` when none is left. Never blocks: a channel holds
    /// at most the [`BLOCKS`] blocks that exist.
    fn send_every(&self, block: &Arc<Block>) -> bool {
        let sent = self
            .senders
            .iter()
            .filter(|s| s.send(block.clone()).is_ok())
            .count();
        sent > 0
    }

    /// Sends `block` to the next worker with room, waiting while none has; `false` when no
    /// worker is left, or on `quit`.
    fn deal(&mut self, block: &Arc<Block>, quit: &AtomicBool) -> bool {
        let n = self.senders.len();
        loop {
            let mut left = 0;
            for k in 0..n {
                let w = (block.first as usize / BLOCK + k) % n;
                match self.senders[w].try_send(block.clone()) {
                    Ok(()) => return true,
                    Err(TrySendError::Full(_)) => left += 1,
                    Err(TrySendError::Disconnected(_)) => {}
                }
            }
            // Every worker holds its part of the look-ahead: the run may start.
            self.primed = None;
            if left == 0 || quit.load(Ordering::Relaxed) {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// One worker's view of a file read as the run goes: a replay's next due times, and the entry
/// it took last, copied out of its block.
#[derive(Debug)]
pub(crate) struct Cursor {
    /// A replay's times (blocks to every worker); `None`: plain targets (blocks dealt).
    replay: Option<Arc<Replay>>,
    blocks: Option<Receiver<Arc<Block>>>,
    block: Option<Arc<Block>>,
    /// Its blocks come dealt (else every block comes to every worker).
    dealt: bool,
    /// Dealt: the next entry's place in `block`.
    next: usize,
    /// The entry taken last: its bytes, HEAD flag and name number.
    pub taken: Vec<u8>,
    pub taken_head: bool,
    pub taken_name: u32,
}

impl Cursor {
    /// A replay's: every block comes to every worker, and this one takes its entries.
    pub fn new(replay: Arc<Replay>, blocks: Receiver<Arc<Block>>) -> Cursor {
        Cursor {
            replay: Some(replay),
            ..Cursor::every(blocks)
        }
    }

    /// Plain targets' in an open loop: every block comes to every worker, and this one takes
    /// its entries (by index, as the schedule's due times go).
    pub fn every(blocks: Receiver<Arc<Block>>) -> Cursor {
        Cursor {
            dealt: false,
            ..Cursor::dealt(blocks)
        }
    }

    /// Plain targets': the blocks come dealt, and this worker sends each of their entries.
    pub fn dealt(blocks: Receiver<Arc<Block>>) -> Cursor {
        Cursor {
            replay: None,
            blocks: Some(blocks),
            block: None,
            dealt: true,
            next: 0,
            taken: Vec::new(),
            taken_head: false,
            taken_name: 0,
        }
    }

    /// The block that holds entry `index` (which is never below an index asked before) and
    /// its place there; `None`: the recording ends before it. Waits for the reader when it is
    /// behind (its wait shows as lag).
    fn seek(&mut self, index: u64) -> Option<(&Block, usize)> {
        loop {
            if let Some(b) = &self.block {
                if index < b.next_index() {
                    break;
                }
            }
            // Dropped before the wait, so the reader can reuse it.
            self.block = None;
            match self.blocks.as_ref()?.recv() {
                Ok(b) => self.block = Some(b),
                Err(_) => {
                    self.blocks = None;
                    return None;
                }
            }
        }
        let b = self.block.as_deref()?;
        Some((b, (index - b.first) as usize))
    }

    /// When entry `index` is due, ns after the start (`u64::MAX`: never).
    pub fn due_ns(&mut self, index: u64) -> u64 {
        let Some(replay) = self.replay.clone() else {
            return u64::MAX;
        };
        match self.seek(index) {
            Some((b, k)) => replay.due_of(index, b.recorded_ns[k]),
            None => u64::MAX,
        }
    }

    /// Dealt: takes the next entry of this worker's blocks (see [`Cursor::take`]), and gives
    /// its index in the run; `None` when the stream has ended. Waits for the reader when it is
    /// behind.
    pub fn take_next(&mut self) -> Option<u64> {
        loop {
            if let Some(b) = &self.block {
                if self.next < b.len() {
                    break;
                }
            }
            self.block = None;
            self.next = 0;
            match self.blocks.as_ref()?.recv() {
                Ok(b) => self.block = Some(b),
                Err(_) => {
                    self.blocks = None;
                    return None;
                }
            }
        }
        let index = self.block.as_ref()?.first + self.next as u64;
        self.next += 1;
        self.take(index);
        Some(index)
    }

    /// Its blocks come dealt ([`Cursor::take_next`]), else [`Cursor::take_at`].
    pub fn is_dealt(&self) -> bool {
        self.dealt
    }

    /// Takes entry `index` (see [`Cursor::take`]); `false` when the stream ends before it.
    pub fn take_at(&mut self, index: u64) -> bool {
        self.seek(index).is_some() && {
            self.take(index);
            true
        }
    }

    /// Takes entry `index` (already sought by [`Cursor::due_ns`]): copies what its request
    /// needs once its block is gone.
    pub fn take(&mut self, index: u64) {
        let mut taken = std::mem::take(&mut self.taken);
        taken.clear();
        if let Some((b, k)) = self.seek(index) {
            taken.extend_from_slice(b.bytes(k));
            let (head, name) = (b.head[k], b.name[k]);
            self.taken_head = head;
            self.taken_name = name;
        }
        self.taken = taken;
    }

    /// Wants no more entries: its blocks go back to the reader.
    pub fn close(&mut self) {
        self.block = None;
        self.blocks = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording of `n` entries, one a millisecond, `GET /k`, played `laps` times.
    struct Counting {
        n: u64,
        laps: u64,
        at: u64,
    }

    impl Source for Counting {
        fn fill(&mut self, block: &mut Block) -> Result<(), String> {
            while !block.is_full() && self.at < self.n * self.laps {
                let k = self.at % self.n;
                let request = format!("GET /{k} HTTP/1.1\r\n\r\n");
                block.push(
                    request.as_bytes(),
                    k.is_multiple_of(7),
                    (k % 3) as u32,
                    k * 1_000_000,
                );
                self.at += 1;
            }
            Ok(())
        }
    }

    /// Every worker sees its share of every block, in order, with the due times the whole
    /// recording's `Replay` gives; the reader ends with the recording, and reuses its blocks
    /// (three times as many entries as the look-ahead holds go through).
    #[test]
    fn workers_take_their_share_in_order_with_the_recordings_times() {
        let n = (BLOCK * BLOCKS) as u64 + 1234;
        for laps in [false, true] {
            let laps_n = if laps { 3 } else { 1 };
            let feed = Feed::new(Box::new(move || {
                Ok(Box::new(Counting {
                    n,
                    laps: laps_n,
                    at: 0,
                }) as Box<dyn Source>)
            }));
            let times: Vec<u64> = (0..n).map(|k| k * 1_000_000).collect();
            let whole = Arc::new(Replay::new(times, 2.0, laps).unwrap());
            let streamed = Arc::new(Replay::streamed(n, (n - 1) * 1_000_000, 2.0, laps).unwrap());
            let workers = 3;
            let (reader, receivers, _primed) = start(&feed, workers, Share::Every, true);
            let quit = AtomicBool::new(false);
            std::thread::scope(|s| {
                s.spawn(|| reader.run(&feed, &quit));
                let handles: Vec<_> = receivers
                    .into_iter()
                    .enumerate()
                    .map(|(w, rx)| {
                        let (whole, streamed) = (whole.clone(), streamed.clone());
                        s.spawn(move || {
                            let mut c = Cursor::new(streamed, rx);
                            let mut index = w as u64;
                            let mut taken = 0u64;
                            loop {
                                let due = c.due_ns(index);
                                // The source ends after its laps.
                                let want = match index < n * laps_n {
                                    true => whole.due_ns(index),
                                    false => u64::MAX,
                                };
                                assert_eq!(due, want, "worker {w} entry {index}");
                                if due == u64::MAX {
                                    break;
                                }
                                c.take(index);
                                let k = index % n;
                                assert_eq!(
                                    c.taken,
                                    format!("GET /{k} HTTP/1.1\r\n\r\n").as_bytes()
                                );
                                assert_eq!(
                                    (c.taken_head, c.taken_name),
                                    (k.is_multiple_of(7), (k % 3) as u32)
                                );
                                taken += 1;
                                index += workers as u64;
                            }
                            taken
                        })
                    })
                    .collect();
                let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
                assert_eq!(total, n * laps_n);
            });
            assert_eq!(feed.error(), None);
        }
    }

    /// Dealt (plain targets): every entry goes to exactly one worker, in order within each; a
    /// slow worker does not hold back a fast one, which takes more blocks (a shared look-ahead
    /// would tie them together once the fast one is `BLOCKS` blocks ahead).
    #[test]
    fn dealt_blocks_go_to_one_worker_each_and_a_slow_one_holds_nobody_back() {
        let n = (BLOCK * BLOCKS * 4) as u64;
        let feed = Feed::new(Box::new(move || {
            Ok(Box::new(Counting { n, laps: 1, at: 0 }) as Box<dyn Source>)
        }));
        let (reader, receivers, primed) = start(&feed, 2, Share::Dealt, false);
        let quit = AtomicBool::new(false);
        let (seen, slow_took) = std::thread::scope(|s| {
            s.spawn(|| reader.run(&feed, &quit));
            assert!(
                primed.recv().is_err(),
                "primed once every worker holds its part"
            );
            let mut rx = receivers.into_iter();
            let (fast_rx, slow_rx) = (rx.next().unwrap(), rx.next().unwrap());
            // The slow worker takes one entry, then waits until the fast one has ended.
            let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
            let slow = s.spawn(move || {
                let mut c = Cursor::dealt(slow_rx);
                let mut seen = vec![c.take_next().unwrap()];
                let _ = done_rx.recv();
                while let Some(index) = c.take_next() {
                    seen.push(index);
                }
                seen
            });
            let mut c = Cursor::dealt(fast_rx);
            let mut seen = Vec::new();
            while let Some(index) = c.take_next() {
                let k = index % n;
                assert_eq!(c.taken, format!("GET /{k} HTTP/1.1\r\n\r\n").as_bytes());
                assert_eq!(
                    (c.taken_head, c.taken_name),
                    (k.is_multiple_of(7), (k % 3) as u32)
                );
                if let Some(&last) = seen.last() {
                    assert!(index > last, "in order within a worker");
                }
                seen.push(index);
                // Once most of the file has gone through, the slow one may go on.
                if seen.len() as u64 == n - (BLOCK * BLOCKS) as u64 {
                    let _ = done_tx.send(());
                }
            }
            drop(done_tx);
            let slow_seen = slow.join().unwrap();
            let slow_took = slow_seen.len();
            seen.extend(slow_seen);
            (seen, slow_took)
        });
        assert!(
            slow_took < (n / 2) as usize,
            "the fast worker took more: {slow_took}"
        );
        let mut seen = seen;
        seen.sort_unstable();
        assert_eq!(seen, (0..n).collect::<Vec<_>>(), "every entry exactly once");
        assert_eq!(feed.error(), None);
    }

    /// A worker that stops early (its budget spent) closes its cursor, and the others still
    /// get every block; an error from the source ends the stream and is kept.
    #[test]
    fn a_closed_cursor_frees_its_blocks_and_an_error_ends_the_stream() {
        struct Failing(u64);
        impl Source for Failing {
            fn fill(&mut self, block: &mut Block) -> Result<(), String> {
                if self.0 == 0 {
                    return Err("line 9: gone".into());
                }
                self.0 -= 1;
                while !block.is_full() {
                    block.push(b"GET / HTTP/1.1\r\n\r\n", false, 0, 0);
                }
                Ok(())
            }
        }
        let blocks = (BLOCKS * 2) as u64;
        let feed = Feed::new(Box::new(move || {
            Ok(Box::new(Failing(blocks)) as Box<dyn Source>)
        }));
        let replay = Arc::new(Replay::streamed(1 << 40, 1, 1.0, false).unwrap());
        let (reader, mut receivers, primed) = start(&feed, 2, Share::Every, true);
        let quit = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| reader.run(&feed, &quit));
            // Primed: the look-ahead is full (the source has twice as many blocks).
            assert!(primed.recv().is_err());
            let mut early = Cursor::new(replay.clone(), receivers.pop().unwrap());
            assert_eq!(early.due_ns(1), 0);
            early.close();
            let mut c = Cursor::new(replay, receivers.pop().unwrap());
            let mut index = 0;
            while c.due_ns(index) != u64::MAX {
                index += 2;
            }
            assert_eq!(index, blocks * BLOCK as u64);
        });
        assert_eq!(feed.error().as_deref(), Some("line 9: gone"));
    }
}
