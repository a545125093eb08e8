//! What a ledger record says about the data it was charged for: a fingerprint of the parsed
//! records, for audit. The budget itself never depends on it (docs/DESIGN.md §5): a ledger holds
//! one budget per dataset name, whatever bytes the file has today. The fingerprint only lets
//! `dpstat budget` show when the data changed between two releases.
//!
//! The fingerprint is the SHA-256 of the records re-encoded in one canonical CSV: fields joined
//! by `,`, a field quoted (with `"` doubled) only when it holds `,`, `"`, CR or LF, or when it is
//! the only field of its record and empty; every record ends with LF; empty lines, a UTF-8
//! byte-order mark, the delimiter, the line terminators (LF, CRLF, CR), the final newline and
//! unneeded quotes therefore do not change it, and gzip input is fingerprinted after
//! decompression. The records are those the csv crate reads (csv-core, quoting on, no escape, no
//! comments, any of CR, LF and CRLF ending a record), the header included.
//!
//! A file whose bytes already are that canonical CSV (comma-delimited, no quote, no CR) is
//! hashed as it streams, line by line, skipping empty lines; anything else goes through
//! csv-core from the first line that needs it. Both paths give the same digest (tested below).

use std::io::Read;

use memchr::{memchr, memchr2, memrchr};
use sha2::{Digest, Sha256};

use crate::numeric::format::hex;

/// How a fingerprint is written: the prefix names what was hashed.
const PREFIX: &str = "csv-sha256:";

/// The fingerprint of a stream of CSV bytes, fed in order with [`update`](Self::update).
pub struct Fingerprinter {
    delimiter: u8,
    hasher: Sha256,
    /// The first bytes, held until a byte-order mark can be recognised.
    head: Vec<u8>,
    started: bool,
    /// Bytes after the last complete line (the fast path).
    pending: Vec<u8>,
    /// csv-core, from the first line the fast path cannot take.
    slow: Option<Slow>,
}

struct Slow {
    reader: csv_core::Reader,
    field: Vec<u8>,
    ends: Vec<usize>,
    /// Bytes of the current record written to `field` so far, and field ends found so far.
    filled: usize,
    ended: usize,
    canonical: Vec<u8>,
}

impl Fingerprinter {
    pub fn new(delimiter: u8) -> Fingerprinter {
        Fingerprinter {
            delimiter,
            hasher: Sha256::new(),
            head: Vec::new(),
            started: false,
            pending: Vec::new(),
            slow: None,
        }
    }

    /// The next bytes of the input.
    pub fn update(&mut self, bytes: &[u8]) {
        if self.started {
            return self.take(bytes);
        }
        self.head.extend_from_slice(bytes);
        if self.head.len() >= 3 {
            self.start();
        }
    }

    /// The fingerprint of everything fed: `csv-sha256:<hex>`.
    pub fn finish(mut self) -> String {
        if !self.started {
            self.start();
        }
        match self.slow.take() {
            Some(mut slow) => {
                slow.feed(&[], &mut self.hasher);
            }
            None => {
                let rest = std::mem::take(&mut self.pending);
                self.lines(&rest);
                if !rest.is_empty() {
                    self.hasher.update(b"\n");
                }
            }
        }
        format!("{PREFIX}{}", hex(&self.hasher.finalize()))
    }

    /// The head is complete (or the input ended): drop a byte-order mark and go on.
    fn start(&mut self) {
        self.started = true;
        let head = std::mem::take(&mut self.head);
        let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head);
        self.take(body);
    }

    fn take(&mut self, bytes: &[u8]) {
        if let Some(slow) = &mut self.slow {
            slow.feed(bytes, &mut self.hasher);
            return;
        }
        if self.delimiter != b',' || memchr2(b'"', b'\r', bytes).is_some() {
            // `pending` starts a record: csv-core takes over from there, in its start state.
            // (It would drop a byte-order mark at the start of that line, as at the start of a
            // file: an audit fingerprint can live with that.)
            let mut slow = Slow::new(self.delimiter);
            let pending = std::mem::take(&mut self.pending);
            slow.feed(&pending, &mut self.hasher);
            slow.feed(bytes, &mut self.hasher);
            self.slow = Some(slow);
            return;
        }
        let Some(last) = memrchr(b'\n', bytes) else {
            self.pending.extend_from_slice(bytes);
            return;
        };
        if self.pending.is_empty() {
            self.lines(&bytes[..=last]);
        } else {
            let mut line = std::mem::take(&mut self.pending);
            let first = memchr(b'\n', bytes).unwrap_or(last);
            line.extend_from_slice(&bytes[..=first]);
            self.lines(&line);
            self.lines(&bytes[first + 1..=last]);
        }
        self.pending.extend_from_slice(&bytes[last + 1..]);
    }

    /// Hashes whole LF-terminated lines free of quotes and CR (the last may lack its LF), less
    /// the empty ones: those are already canonical records.
    fn lines(&mut self, bytes: &[u8]) {
        let has_empty = bytes.first() == Some(&b'\n') || memchr::memmem::find(bytes, b"\n\n").is_some();
        if !has_empty {
            self.hasher.update(bytes);
            return;
        }
        for line in bytes.split_inclusive(|&b| b == b'\n') {
            if line != b"\n" {
                self.hasher.update(line);
            }
        }
    }
}

impl Slow {
    fn new(delimiter: u8) -> Slow {
        Slow {
            reader: csv_core::ReaderBuilder::new().delimiter(delimiter).build(),
            field: vec![0; 64 << 10],
            ends: vec![0; 64],
            filled: 0,
            ended: 0,
            canonical: Vec::new(),
        }
    }

    /// Parses `input` (empty: the end of the data) and hashes every record completed.
    fn feed(&mut self, mut input: &[u8], hasher: &mut Sha256) {
        let at_end = input.is_empty();
        loop {
            let (result, read, written, ends) =
                self.reader.read_record(input, &mut self.field[self.filled..], &mut self.ends[self.ended..]);
            input = &input[read..];
            self.filled += written;
            self.ended += ends;
            match result {
                csv_core::ReadRecordResult::InputEmpty => {
                    if !at_end {
                        return;
                    }
                }
                csv_core::ReadRecordResult::OutputFull => self.field.resize(self.field.len() * 2, 0),
                csv_core::ReadRecordResult::OutputEndsFull => self.ends.resize(self.ends.len() * 2, 0),
                csv_core::ReadRecordResult::Record => {
                    self.canonical.clear();
                    canonical_record(&self.field, &self.ends[..self.ended], &mut self.canonical);
                    hasher.update(&self.canonical);
                    self.filled = 0;
                    self.ended = 0;
                }
                csv_core::ReadRecordResult::End => return,
            }
        }
    }
}

/// One record, its fields `data[ends[i-1]..ends[i]]`, as canonical CSV with its LF.
fn canonical_record(data: &[u8], ends: &[usize], out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, &end) in ends.iter().enumerate() {
        let field = &data[start..end];
        if i > 0 {
            out.push(b',');
        }
        let alone_and_empty = ends.len() == 1 && field.is_empty();
        if alone_and_empty || field.iter().any(|&b| matches!(b, b',' | b'"' | b'\r' | b'\n')) {
            out.push(b'"');
            for &b in field {
                if b == b'"' {
                    out.push(b'"');
                }
                out.push(b);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(field);
        }
        start = end;
    }
    out.push(b'\n');
}

/// The fingerprint of a whole reader (for `dpstat budget FILE`).
pub fn fingerprint_of(mut reader: impl Read, delimiter: u8) -> std::io::Result<String> {
    let mut fingerprinter = Fingerprinter::new(delimiter);
    let mut buffer = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut buffer)? {
            0 => return Ok(fingerprinter.finish()),
            n => fingerprinter.update(&buffer[..n]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn of(bytes: &[u8], delimiter: u8) -> String {
        fingerprint_of(bytes, delimiter).unwrap()
    }

    /// Fed in pieces of `piece` bytes.
    fn in_pieces(bytes: &[u8], delimiter: u8, piece: usize) -> String {
        let mut f = Fingerprinter::new(delimiter);
        for chunk in bytes.chunks(piece.max(1)) {
            f.update(chunk);
        }
        f.finish()
    }

    /// The canonical CSV through csv-core alone, whatever the bytes.
    fn slow_only(bytes: &[u8], delimiter: u8) -> String {
        let mut hasher = Sha256::new();
        let mut slow = Slow::new(delimiter);
        slow.feed(bytes, &mut hasher);
        slow.feed(&[], &mut hasher);
        format!("{PREFIX}{}", hex(&hasher.finalize()))
    }

    #[test]
    fn the_canonical_form_is_plain_csv() {
        let digest = |s: &str| format!("{PREFIX}{}", hex(&Sha256::digest(s.as_bytes())));
        assert_eq!(of(b"a,b\n1,2\n", b','), digest("a,b\n1,2\n"));
        assert_eq!(of(b"a;b\r\n\"1,5\";\"x\"\r\n", b';'), digest("a,b\n\"1,5\",x\n"));
        assert_eq!(of(b"a\n\"\"\n", b','), digest("a\n\"\"\n"));
    }

    #[test]
    fn re_encodings_of_the_same_records_agree() {
        let plain = of(b"name,x\nAl,1\nBo,2\n", b',');
        for other in [
            &b"name,x\r\nAl,1\r\nBo,2\r\n"[..],
            b"name,x\nAl,1\nBo,2",
            b"name,x\n\nAl,1\nBo,2\n\n",
            b"\xEF\xBB\xBFname,x\nAl,1\nBo,2\n",
            b"\"name\",\"x\"\n\"Al\",1\nBo,\"2\"\n",
            b"name,x\rAl,1\rBo,2\r",
        ] {
            assert_eq!(of(other, b','), plain, "{}", String::from_utf8_lossy(other));
        }
        assert_eq!(of(b"name;x\nAl;1\nBo;2\n", b';'), plain);
        assert_eq!(of(b"name\tx\nAl\t1\nBo\t2\n", b'\t'), plain);
        assert_ne!(of(b"name,x\nAl,1\nBo,3\n", b','), plain, "a changed cell changes it");
        assert_ne!(of(b"name,x\nAl,1\nBo,2\nCy,3\n", b','), plain, "an appended row changes it");
        assert_ne!(of(b"name,x\nAl,1\n", b','), plain);
    }

    proptest! {
        /// The streaming fast path, fed in any pieces, gives csv-core's canonical digest.
        #[test]
        fn fast_and_slow_paths_agree(
            text in proptest::collection::vec(
                prop_oneof![Just(b'a'), Just(b','), Just(b'\n'), Just(b'\r'), Just(b'"'), Just(b' '), Just(b';')],
                0..80,
            ),
            bom in any::<bool>(),
            piece in 1usize..9,
        ) {
            let mut bytes = if bom { b"\xEF\xBB\xBF".to_vec() } else { vec![] };
            bytes.extend_from_slice(&text);
            let want = slow_only(&bytes, b',');
            prop_assert_eq!(in_pieces(&bytes, b',', piece), want.clone());
            prop_assert_eq!(of(&bytes, b','), want);
        }
    }
}
