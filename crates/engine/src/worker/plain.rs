//! Plain TCP: the protocol's bytes go straight to the socket, and a read's bytes straight to
//! the protocol. No per-connection state.

use super::*;

pub(super) struct Plain;

impl Transport for Plain {
    #[inline]
    fn add(&mut self, _now: Instant) {}

    #[inline]
    fn reset(&mut self, _i: usize) {}

    #[inline]
    fn writing(&self, _i: usize) -> bool {
        false
    }

    #[inline]
    fn clean_close(&self, _i: usize) -> bool {
        true
    }

    #[inline]
    fn connected(&mut self, _i: usize, _now: Instant) -> Result<bool, String> {
        Ok(false)
    }

    #[inline]
    fn handshaking(&self, _i: usize) -> bool {
        false
    }

    #[inline]
    fn receive<P: Protocol>(
        &mut self,
        _i: usize,
        conn: &mut Conn<P>,
        ledger: &mut Ledger,
        config: &Config,
        data: &[u8],
        arrived: Option<Instant>,
        now: Instant,
    ) -> AfterRead {
        P::receive(conn, ledger, config, data, arrived, now, false)
    }

    #[inline]
    fn flush<I: Io, P: Protocol, S: Source>(
        _w: &mut Worker<'_, I, P, Self, S>,
        _i: usize,
        _now: Instant,
    ) {
    }

    #[inline]
    fn send<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        bytes: &[u8],
    ) -> Result<usize, Errno> {
        if bytes.is_empty() {
            return Ok(0);
        }
        let n = io.send(i, bytes)?;
        ledger.current().bytes_sent += n as u64;
        Ok(n)
    }

    fn send_buf<I: Io>(
        &mut self,
        io: &mut I,
        ledger: &mut Ledger,
        i: usize,
        buf: &mut Vec<u8>,
    ) -> Result<(), Errno> {
        send_copy(io, ledger, i, buf)
    }
}

/// Hands the bytes waiting in `buf` (TLS ciphertext, HTTP/2 frames) to connection `i`'s socket
/// through `send_copy`; what it takes is counted and drained, the rest waits for the next try.
pub(super) fn send_copy<I: Io>(
    io: &mut I,
    ledger: &mut Ledger,
    i: usize,
    buf: &mut Vec<u8>,
) -> Result<(), Errno> {
    if buf.is_empty() {
        return Ok(());
    }
    let n = io.send_copy(i, buf)?;
    ledger.current().bytes_sent += n as u64;
    buf.drain(..n);
    Ok(())
}
