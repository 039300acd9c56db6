//! An HPACK (RFC 7541) decoder for response header blocks, allocation-free once warm.
//!
//! Why by hand: the maintained HPACK crate, loona-hpack, builds a `HashMap` for every
//! Huffman-coded string and decodes it bit by bit. Against nginx (which Huffman-codes `date`,
//! `server` and `content-type` in every response) that was 70 % of pelt's CPU: 59 us per
//! request where h2load spends 12 (bench/h2.py). httlib-hpack copies and drains its input per
//! header and allocates every name and value; the h2 crate's decoder is private. What is left
//! to write is small (integers, the static table, the dynamic table); Huffman decoding itself
//! is the httlib-huffman crate's (table-driven, five bits at a time). The decoder is checked
//! against loona-hpack's and httlib-hpack's encoders, with and without Huffman coding, and
//! against RFC 7541's own examples.

use std::collections::VecDeque;
use std::fmt;

/// The dynamic table size pelt allows (the protocol's default SETTINGS_HEADER_TABLE_SIZE).
pub const TABLE_SIZE: usize = 4096;

/// RFC 7541 Appendix A.
const STATIC: [(&str, &str); 61] = [
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
];

/// Why a header block could not be decoded (a COMPRESSION_ERROR).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HpackError {
    /// The block ended inside a representation.
    Truncated,
    /// An integer too large to be meant.
    IntegerOverflow,
    /// Index 0, or past the end of the tables.
    BadIndex(usize),
    /// Invalid Huffman coding.
    Huffman,
    /// A dynamic table size update above what pelt allows.
    TableTooLarge(usize),
}

impl fmt::Display for HpackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HpackError::Truncated => write!(f, "the header block ends inside a field"),
            HpackError::IntegerOverflow => write!(f, "an integer overflows"),
            HpackError::BadIndex(i) => write!(f, "index {i} is in neither table"),
            HpackError::Huffman => write!(f, "invalid Huffman coding"),
            HpackError::TableTooLarge(n) => {
                write!(
                    f,
                    "a dynamic table of {n} bytes, over the {TABLE_SIZE} allowed"
                )
            }
        }
    }
}

impl std::error::Error for HpackError {}

/// One connection's HPACK decoding state: the dynamic table.
#[derive(Debug)]
pub struct Decoder {
    /// Newest first.
    table: VecDeque<(Vec<u8>, Vec<u8>)>,
    /// The table's size as RFC 7541 counts it (name + value + 32 per entry).
    size: usize,
    max_size: usize,
    /// Evicted entries' buffers, reused for new ones.
    spare: Vec<(Vec<u8>, Vec<u8>)>,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder {
            table: VecDeque::new(),
            size: 0,
            max_size: TABLE_SIZE,
            spare: Vec::new(),
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// Decodes one whole header block, calling `on(name, value)` for each field in order.
    pub fn decode(
        &mut self,
        block: &[u8],
        mut on: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), HpackError> {
        let mut p = block;
        while let Some(&first) = p.first() {
            if first & 0x80 != 0 {
                let index = integer(&mut p, 7)?;
                let (name, value) = self.entry(index)?;
                on(name, value);
            } else if first & 0xe0 == 0x20 {
                let size = integer(&mut p, 5)?;
                if size > TABLE_SIZE {
                    return Err(HpackError::TableTooLarge(size));
                }
                self.max_size = size;
                self.evict(0);
            } else {
                // Literal: with incremental indexing (01), never indexed (0001) or without
                // indexing (0000); the name by index, or a literal if the index is 0.
                let (prefix, index_it) = if first & 0x40 != 0 {
                    (6, true)
                } else {
                    (4, false)
                };
                let index = integer(&mut p, prefix)?;
                let mut name = std::mem::take(&mut self.name);
                name.clear();
                if index == 0 {
                    string(&mut p, 7, &mut name)?;
                } else {
                    name.extend_from_slice(self.entry(index)?.0);
                }
                let mut value = std::mem::take(&mut self.value);
                value.clear();
                let got = string(&mut p, 7, &mut value);
                if got.is_ok() {
                    on(&name, &value);
                    if index_it {
                        self.insert(&name, &value);
                    }
                }
                self.name = name;
                self.value = value;
                got?;
            }
        }
        Ok(())
    }

    fn entry(&self, index: usize) -> Result<(&[u8], &[u8]), HpackError> {
        match index {
            1..=61 => {
                let (n, v) = STATIC[index - 1];
                Ok((n.as_bytes(), v.as_bytes()))
            }
            _ => self
                .table
                .get(index.wrapping_sub(62))
                .map(|(n, v)| (&n[..], &v[..]))
                .ok_or(HpackError::BadIndex(index)),
        }
    }

    /// Evicts the oldest entries until `room` more bytes fit.
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max_size {
            let Some(old) = self.table.pop_back() else {
                break;
            };
            self.size -= old.0.len() + old.1.len() + 32;
            if self.spare.len() < 16 {
                self.spare.push(old);
            }
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = name.len() + value.len() + 32;
        self.evict(size);
        if size > self.max_size {
            // RFC 7541 section 4.4: an entry larger than the table empties it.
            return;
        }
        let (mut n, mut v) = self.spare.pop().unwrap_or_default();
        n.clear();
        n.extend_from_slice(name);
        v.clear();
        v.extend_from_slice(value);
        self.table.push_front((n, v));
        self.size += size;
    }
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 section 5.1; QPACK's are the same,
/// RFC 9204 section 4.1.1); advances `p`.
pub(crate) fn integer(p: &mut &[u8], n: u32) -> Result<usize, HpackError> {
    let (&first, mut rest) = p.split_first().ok_or(HpackError::Truncated)?;
    let max = (1usize << n) - 1;
    let mut value = first as usize & max;
    if value == max {
        let mut shift = 0;
        loop {
            let (&b, r) = rest.split_first().ok_or(HpackError::Truncated)?;
            rest = r;
            if shift > 21 {
                return Err(HpackError::IntegerOverflow);
            }
            value += ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
    }
    *p = rest;
    Ok(value)
}

/// Appends an HPACK (or QPACK) integer with an `n`-bit prefix; `first` holds the
/// representation's flag bits above the prefix.
pub(crate) fn put_integer(out: &mut Vec<u8>, first: u8, n: u32, mut value: usize) {
    let max = (1usize << n) - 1;
    if value < max {
        out.push(first | value as u8);
        return;
    }
    out.push(first | max as u8);
    value -= max;
    while value >= 128 {
        out.push((value % 128) as u8 | 0x80);
        value /= 128;
    }
    out.push(value as u8);
}

/// An HPACK string literal (RFC 7541 section 5.2), Huffman-decoded if coded; appended to
/// `out`; advances `p`. Its length has an `n`-bit prefix, the Huffman flag the bit above it
/// (HPACK's: 7; QPACK's literal names: 3, RFC 9204 section 4.1.2).
pub(crate) fn string(p: &mut &[u8], n: u32, out: &mut Vec<u8>) -> Result<(), HpackError> {
    let huffman = p.first().ok_or(HpackError::Truncated)? & (1 << n) != 0;
    let len = integer(p, n)?;
    if len > p.len() {
        return Err(HpackError::Truncated);
    }
    let (raw, rest) = p.split_at(len);
    if huffman {
        httlib_huffman::decode(raw, out, httlib_huffman::DecoderSpeed::FiveBits)
            .map_err(|_| HpackError::Huffman)?;
    } else {
        out.extend_from_slice(raw);
    }
    *p = rest;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn all(d: &mut Decoder, block: &[u8]) -> Result<Vec<(String, String)>, HpackError> {
        let mut out = vec![];
        d.decode(block, |n, v| {
            out.push((
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })?;
        Ok(out)
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn the_static_table_agrees_with_loona_hpack() {
        for i in 1..=61u8 {
            let theirs = loona_hpack::Decoder::new().decode(&[0x80 | i]).unwrap();
            let ours = all(&mut Decoder::new(), &[0x80 | i]).unwrap();
            let theirs: Vec<(String, String)> = theirs
                .into_iter()
                .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
                .collect();
            assert_eq!(ours, theirs, "index {i}");
        }
    }

    /// RFC 7541 C.6: three responses with Huffman coding and a 256-byte table (evictions).
    #[test]
    fn rfc7541_c6_responses_with_huffman_and_eviction() {
        let mut d = Decoder::new();
        // The size update the RFC's encoder would send for a 256-byte table.
        all(&mut d, &[0x3f, 0xe1, 0x01]).unwrap();
        assert_eq!(d.max_size, 256);
        let first = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        assert_eq!(
            all(&mut d, &first).unwrap(),
            pairs(&[
                (":status", "302"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222);
        let second = hex("4883 640e ff c1 c0 bf");
        assert_eq!(
            all(&mut d, &second).unwrap(),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.size, 222);
        let third = hex(
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
             9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        );
        assert_eq!(
            all(&mut d, &third).unwrap(),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                ),
            ])
        );
        assert_eq!(d.size, 215);
    }

    #[test]
    fn bad_blocks_are_errors_not_panics() {
        let mut d = Decoder::new();
        assert_eq!(all(&mut d, &[0x80]), Err(HpackError::BadIndex(0)));
        assert_eq!(all(&mut d, &[0xbe]), Err(HpackError::BadIndex(62)));
        assert_eq!(all(&mut d, &[0x40, 0x05, b'a']), Err(HpackError::Truncated));
        assert_eq!(
            all(&mut d, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Err(HpackError::IntegerOverflow)
        );
        assert_eq!(
            all(&mut d, &[0x3f, 0xe1, 0x7f]),
            Err(HpackError::TableTooLarge(16_384))
        );
        // EOS inside a Huffman string.
        assert_eq!(
            all(&mut d, &[0x00, 0x81, b'a', 0x84, 0xff, 0xff, 0xff, 0xff]),
            Err(HpackError::Huffman)
        );
    }

    fn header() -> impl Strategy<Value = (Vec<u8>, Vec<u8>)> {
        (
            prop::sample::select(vec![
                &b":status"[..],
                b"date",
                b"content-length",
                b"server",
                b"x-custom",
                b"set-cookie",
            ]),
            prop::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(n, v)| (n.to_vec(), v))
    }

    proptest! {
        /// Whatever loona-hpack's encoder (dynamic table, evictions) produces, block after
        /// block, decodes to what it encoded.
        #[test]
        fn decodes_what_loona_hpack_encodes(blocks in prop::collection::vec(
            prop::collection::vec(header(), 1..8), 1..12)) {
            let mut enc = loona_hpack::Encoder::new();
            let mut dec = Decoder::new();
            for block in &blocks {
                let wire = enc.encode(block.iter().map(|(n, v)| (&n[..], &v[..])));
                let mut got = vec![];
                dec.decode(&wire, |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
                prop_assert_eq!(&got, block);
            }
        }

        /// The same with httlib-hpack's encoder, Huffman-coding every string and indexing
        /// every field.
        #[test]
        fn decodes_what_httlib_hpack_encodes_with_huffman(blocks in prop::collection::vec(
            prop::collection::vec(header(), 1..8), 1..12)) {
            let mut enc = httlib_hpack::Encoder::default();
            let mut dec = Decoder::new();
            let flags = httlib_hpack::Encoder::HUFFMAN_NAME
                | httlib_hpack::Encoder::HUFFMAN_VALUE
                | httlib_hpack::Encoder::WITH_INDEXING
                | httlib_hpack::Encoder::BEST_FORMAT;
            for block in &blocks {
                let mut wire = vec![];
                for (n, v) in block {
                    enc.encode((n.clone(), v.clone(), flags), &mut wire).unwrap();
                }
                let mut got = vec![];
                dec.decode(&wire, |n, v| got.push((n.to_vec(), v.to_vec()))).unwrap();
                prop_assert_eq!(&got, block);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(block in prop::collection::vec(any::<u8>(), 0..200)) {
            let _ = Decoder::new().decode(&block, |_, _| {});
        }
    }
}
