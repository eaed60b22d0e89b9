//! Bounded line reading for every text input (tables, update streams,
//! traces, addresses on standard input).
//!
//! A line is read into one reusable buffer of at most [`MAX_LINE_BYTES`];
//! a longer line is an error naming the input and the line, quoting only
//! its first characters. So memory stays bounded by the limit whatever the
//! input holds: a compressed file that expands to gigabytes of spaces
//! stops at its first line, after reading a little over 64 KiB of it,
//! where `BufRead::read_until` would have tried to hold all of it.

use std::io::{BufRead, ErrorKind};
use std::path::{Path, PathBuf};

use super::LoadError;
use crate::prefix::excerpt;

/// The longest line any text input may have, in bytes (without its line
/// ending). Real lines are under 100 bytes: a prefix, a label or next hop,
/// a timestamp.
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The UTF-8 byte order mark, dropped from the start of the first line.
const UTF8_BOM: &[u8] = b"\xef\xbb\xbf";

/// Reads the lines of a [`BufRead`], each at most [`MAX_LINE_BYTES`] long.
pub struct LineReader<R> {
    reader: R,
    path: PathBuf,
    line: Vec<u8>,
    number: u64,
}

impl<R: BufRead> LineReader<R> {
    /// Reads `reader`, named `path` in messages (a file, or a description
    /// such as `standard input`).
    pub fn new(reader: R, path: impl Into<PathBuf>) -> Self {
        LineReader {
            reader,
            path: path.into(),
            line: Vec::with_capacity(256),
            number: 0,
        }
    }

    /// The next line's number (from 1) and text without its line ending
    /// (`\n` or `\r\n`) or, on line 1, a UTF-8 byte order mark; `None` at
    /// the end of the input. An error for a
    /// line over [`MAX_LINE_BYTES`] and for a read error, both naming the
    /// line.
    pub fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, LoadError> {
        self.line.clear();
        let mut empty_input = true;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(LoadError::bad(
                        &self.path,
                        self.number + 1,
                        format!("read error: {e}"),
                    ))
                }
            };
            if available.is_empty() {
                if empty_input {
                    return Ok(None);
                }
                break;
            }
            empty_input = false;
            let newline = available.iter().position(|&byte| byte == b'\n');
            let take = newline.unwrap_or(available.len());
            if self.line.len() + take > MAX_LINE_BYTES {
                let room = MAX_LINE_BYTES - self.line.len();
                self.line.extend_from_slice(&available[..room]);
                self.number += 1;
                return Err(LoadError::bad(
                    &self.path,
                    self.number,
                    format!(
                        "the line is longer than {MAX_LINE_BYTES} bytes, the limit for text \
                         input (it starts `{}`)",
                        excerpt(&String::from_utf8_lossy(&self.line))
                    ),
                ));
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take + newline.is_some() as usize);
            if newline.is_some() {
                break;
            }
        }
        self.number += 1;
        if self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        // Editors on Windows start UTF-8 text with a byte order mark, which
        // is not part of the first record.
        if self.number == 1 && self.line.starts_with(UTF8_BOM) {
            self.line.drain(..UTF8_BOM.len());
        }
        Ok(Some((self.number, &self.line)))
    }

    /// How many lines were read.
    pub fn lines_read(&self) -> u64 {
        self.number
    }

    /// The name used in messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The reader, to see what it holds buffered (a co-process answers
    /// before it blocks waiting for more input).
    pub fn get_ref(&self) -> &R {
        &self.reader
    }

    /// The reader, to read on past the lines.
    pub fn into_inner(self) -> R {
        self.reader
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &[u8]) -> Vec<Result<String, String>> {
        let mut reader = LineReader::new(bytes, "input");
        let mut out = Vec::new();
        loop {
            match reader.next_line() {
                Ok(Some((_, line))) => out.push(Ok(String::from_utf8_lossy(line).into_owned())),
                Ok(None) => return out,
                Err(e) => {
                    out.push(Err(e.to_string()));
                    return out;
                }
            }
        }
    }

    #[test]
    fn lines_end_at_newlines_with_or_without_carriage_returns() {
        let ok = |s: &str| Ok(s.to_string());
        assert_eq!(lines(b""), vec![]);
        assert_eq!(lines(b"\n"), vec![ok("")]);
        assert_eq!(
            lines(b"a\r\nb\n\nc"),
            vec![ok("a"), ok("b"), ok(""), ok("c")]
        );
    }

    #[test]
    fn a_line_at_the_limit_passes_one_byte_more_fails() {
        let mut at_limit = vec![b'x'; MAX_LINE_BYTES];
        at_limit.extend_from_slice(b"\nnext\n");
        let read = lines(&at_limit);
        assert_eq!(read.len(), 2);
        assert_eq!(read[1], Ok("next".to_string()));
        let mut over = vec![b' '; MAX_LINE_BYTES + 1];
        over.push(b'\n');
        let read = lines(&[b"first\n".as_slice(), &over].concat());
        let error = read[1].clone().unwrap_err();
        assert!(
            error.starts_with("input:2: the line is longer than 65536 bytes"),
            "{error}"
        );
        assert!(error.len() < 300, "{error}");
    }

    #[test]
    fn an_endless_line_stops_after_the_limit() {
        /// Spaces forever, counting how many were read.
        struct Spaces(usize);
        impl std::io::Read for Spaces {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                buf.fill(b' ');
                self.0 += buf.len();
                Ok(buf.len())
            }
        }
        let mut source = Spaces(0);
        let mut reader = LineReader::new(std::io::BufReader::new(&mut source), "spaces");
        assert!(reader.next_line().is_err());
        drop(reader);
        assert!(
            source.0 <= MAX_LINE_BYTES + (64 << 10),
            "read {} bytes",
            source.0
        );
    }
}
