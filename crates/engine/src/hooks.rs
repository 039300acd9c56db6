//! A script's per-request hooks, as the engine sees them: wrk's `request()`, `response()` and
//! `delay()`, and `thread:stop()`. The engine knows no scripting language: the caller hands
//! it a [`HookMaker`] (`Requests::Scripted`), and each worker makes its own [`Hooks`] on its
//! own thread before the run's time starts (a Lua state is not `Send`, and one state per
//! thread is wrk's model), then calls them with no lock and no channel: the worker's request
//! source (`worker/scripted.rs`) asks `request` for each request's bytes and `delay` before
//! it, and its sink hands each response to `response`.
//!
//! A hook's error is a script error of the run (`ErrorKind::Script`, with its message),
//! never a reason to stop; a maker that fails on any worker makes every worker send nothing
//! (`HookMaker::failed`, asked once the run's clock has started), so a script whose `init`
//! fails stops before any traffic.

use std::time::Duration;

/// What the script defines, known before the run (from its setup state).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Uses {
    /// `response(status, headers, body)`: each response is read whole and handed over.
    pub response: bool,
    /// `delay()`: asked before each request; the request waits that long.
    pub delay: bool,
}

/// The request the run would send without the script, offered to `request()`: its HTTP/1.1
/// bytes (an entry of the targets, its template rendered) and its entry's name (empty: none).
#[derive(Debug, Clone, Copy)]
pub struct Offer<'a> {
    pub bytes: &'a [u8],
    pub name: &'a str,
}

/// The step of a request the script named none for: it has no per-step figures.
pub const UNNAMED: u32 = u32::MAX;

/// One worker's hooks, made on its thread and called only there.
pub trait Hooks {
    /// Appends what the script sends next to `out`: [`Made::batch`] requests (wrk's
    /// `pipeline.lua` sends three per call), and says which step they play: the index of its
    /// name in [`HookMaker::names`], or [`UNNAMED`]. An error is the request's, counted as a
    /// script error with its message. `offer`: the request the run would send in its place
    /// (`Requests::Scripted`'s), for the script to read if it will.
    fn request(&mut self, out: &mut Vec<u8>, offer: Offer<'_>) -> Result<u32, String>;
    /// A response: its status, its fields (names lower-cased) and its body (unframed, up to
    /// what a sampled response keeps).
    fn response(
        &mut self,
        status: u16,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Result<(), String>;
    /// How long the next request waits before it is sent.
    fn delay(&mut self) -> Result<Duration, String>;
    /// The script asked its thread to stop (`thread:stop()`): no request starts after it.
    fn stopped(&self) -> bool;
    /// The worker has ended: the hooks keep what the script's `done` may read of them.
    fn end(&mut self);
}

/// A worker's hooks, made.
pub struct Made {
    pub hooks: Box<dyn Hooks>,
    /// Requests each `request` call writes (at least 1).
    pub batch: usize,
}

/// Makes each worker's hooks.
pub trait HookMaker: Send + Sync + std::fmt::Debug {
    /// What the script defines.
    fn uses(&self) -> Uses;
    /// Worker `worker`'s hooks (numbered within this process: 0 up to its threads, also in a
    /// fleet's agent), made on its thread before the run's time starts; `offer` previews
    /// what its requests are offered (the first entry). An error means the run must send
    /// nothing: the maker keeps it, and [`HookMaker::failed`] says so.
    fn make(&self, worker: usize, offer: Offer<'_>) -> Result<Made, String>;
    /// Some worker's hooks could not be made (asked after every worker has tried).
    fn failed(&self) -> bool;
    /// The steps' names the requests were given, by step index (asked once the run has
    /// ended): the per-step figures' names.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
}
