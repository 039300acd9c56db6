//! Requests of their own for a multiplexed connection's streams (HTTP/2, HTTP/3): with
//! templates or a script's `request()`, each open stream has a lane, the request rendered for
//! it. Lanes are made when the connection starts, one per stream it may carry, and reused: no
//! allocation per request once they have grown. A request sent again on the same connection
//! (after an HTTP/2 GOAWAY, a refused 0-RTT) keeps its lane, so it is the same request.
//!
//! What a lane holds is the protocol's (HTTP/2's header block and body, HTTP/3's frames); the
//! rendering of a template as HTTP/1.1 text, which each protocol then encodes, is here.

use super::*;
use crate::template::Render;

/// A connection's lanes: all of them, and those not in use.
#[derive(Default)]
pub(super) struct Lanes<L> {
    pub(super) all: Vec<L>,
    pub(super) free: Vec<u32>,
}

impl<L: Default> Lanes<L> {
    pub(super) fn new(n: usize) -> Lanes<L> {
        Lanes {
            all: (0..n).map(|_| L::default()).collect(),
            free: (0..n as u32).rev().collect(),
        }
    }

    /// A lane for a stream, as its number plus one (a stream's 0 is none).
    #[inline]
    pub(super) fn take(&mut self) -> u32 {
        self.free.pop().expect("a lane for every slot") + 1
    }

    /// A stream with lane `lane` (plus one; 0: none) ended: its lane goes back.
    #[inline]
    pub(super) fn give_back(&mut self, lane: u32) {
        if let Some(l) = lane.checked_sub(1) {
            self.free.push(l);
        }
    }
}

/// How many lanes a connection with `slots` slots has: one a slot when its streams send
/// requests of their own (templates, a script's), else none.
pub(super) fn lanes_for(config: &Config, slots: usize) -> usize {
    let own = config.targets().is_some_and(|s| s.has_templates()) || config.script().is_some();
    if own {
        slots
    } else {
        0
    }
}

/// Renders entry `target`'s template as HTTP/1.1 text into `text` (cleared first); `false`
/// when the entry has no template (its own request goes).
pub(super) fn render_text<'c>(
    config: &'c Config,
    target: u32,
    text: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
    mut render: Render<'c>,
) -> bool {
    let Some(set) = config.targets() else {
        return false;
    };
    let Some(template) = set.template(target as usize) else {
        return false;
    };
    render.lines = set.lines();
    text.clear();
    template.render(text, scratch, &mut render);
    true
}

/// Takes from `fed` the first of the HTTP/1.1 requests a script's `request()` left there (the
/// requests the source took, in the order their streams open), as `encode` makes it into the
/// protocol's lane (returning its length in `fed`). `false`: the bytes are not a request; they
/// are dropped and the lane is left unrendered, so the run's own request goes.
pub(super) fn take_fed(
    fed: &mut Vec<u8>,
    encode: impl FnOnce(&[u8]) -> Result<usize, String>,
) -> bool {
    match encode(fed) {
        Ok(n) => {
            fed.drain(..n);
            true
        }
        Err(_) => {
            fed.clear();
            false
        }
    }
}
