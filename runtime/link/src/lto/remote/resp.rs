//! Redis replies (RESP2, the protocol every Redis server speaks until a client asks for RESP3) read from the
//! bytes a server sends, as they arrive: [`ReplyReader::feed`] takes the next bytes and says that it needs
//! more, or gives the complete reply and how many of the bytes it used, or the error that makes the reply
//! unreadable. The reader is a pure function of the bytes (no I/O), which is what the fuzz target
//! `redis_reply` drives.
//!
//! A server is not trusted, so the reader is bounded in every way a reply could make it unbounded:
//!
//! - **Size.** A reply may take at most the limit given to [`ReplyReader::new`] (the LTO cache gives
//!   [`MAX_REPLY_SIZE`]) on the wire, headers included. A bulk string or array whose header claims more than
//!   is left of the limit is refused as soon as the header has been read, before any of it is read or
//!   allocated.
//! - **Memory.** Nothing is preallocated from a header's claim: a bulk string's buffer grows with the bytes
//!   that have arrived (at most doubling, never past the claim), so a header that lies costs nothing. A
//!   simple string or error line is at most [`MAX_LINE`] bytes, arrays nest at most [`MAX_DEPTH`] deep and
//!   a reply holds at most [`MAX_VALUES`] values.
//! - **Time.** Every byte is looked at a bounded number of times however the reply is split into reads: a
//!   line is searched for its end only in the bytes that have not been searched yet, and bulk bytes are
//!   copied once. Reading is linear in the size of the reply.
//! - **Echo.** An error shows at most a clipped, escaped prefix of what the server sent ([`Clipped`]), so a
//!   hostile reply can neither flood a terminal nor send it control sequences.
//!
//! The reader is strict: numbers are written canonically (no sign but a minus, no leading zeros, no `-0`),
//! lines end with CRLF and hold no lone CR, and only the five RESP2 types are known. A reply read is
//! therefore exactly the bytes [`Reply::encode`] writes for it.

use std::fmt;

use thiserror::Error;

/// The largest reply the LTO cache reads, headers included: 512 MiB. A cache entry is the objects LTO made
/// for one link, which are far smaller for any real program (LLVM's own largest object files are tens of MiB);
/// a larger value is not stored, and a reply that claims more is refused from its header.
pub const MAX_REPLY_SIZE: usize = 512 << 20;

/// The longest simple string or error line, without its type byte and CRLF: 64 KiB, the longest line Redis
/// itself reads from a client. A server's status and error messages are a few dozen bytes.
pub const MAX_LINE: usize = 64 << 10;

/// The longest number line (an integer, or the length of a bulk string or array), without its type byte and
/// CRLF: the 20 characters of `-9223372036854775808`.
const MAX_NUMBER: usize = 20;

/// The deepest arrays may nest (the commands of the cache are answered by no array at all).
pub const MAX_DEPTH: usize = 16;

/// The most values one reply may hold, counting every element of every array (each costs memory however
/// small it is on the wire).
pub const MAX_VALUES: usize = 1 << 16;

/// How many bytes of what a server sent an error shows, at most (escaped, so up to four times as many
/// characters).
const CLIP: usize = 32;

/// A reply of a Redis server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`+OK`).
    Status(Vec<u8>),
    /// An error (`-ERR unknown command`).
    Error(Vec<u8>),
    /// An integer (`:42`).
    Integer(i64),
    /// A bulk string (`$5` and its bytes), or the nil bulk string (`$-1`: a key that does not exist).
    Bulk(Option<Vec<u8>>),
    /// An array (`*2` and its values), or the nil array (`*-1`).
    Array(Option<Vec<Reply>>),
}

impl Reply {
    /// Appends the bytes a server sends for this reply to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Reply::Status(text) => push_line(out, b'+', text),
            Reply::Error(text) => push_line(out, b'-', text),
            Reply::Integer(value) => push_line(out, b':', value.to_string().as_bytes()),
            Reply::Bulk(None) => out.extend_from_slice(b"$-1\r\n"),
            Reply::Bulk(Some(bytes)) => {
                push_line(out, b'$', bytes.len().to_string().as_bytes());
                out.extend_from_slice(bytes);
                out.extend_from_slice(b"\r\n");
            }
            Reply::Array(None) => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(Some(values)) => {
                push_line(out, b'*', values.len().to_string().as_bytes());
                for value in values {
                    value.encode(out);
                }
            }
        }
    }

    /// What kind of reply this is, for a message (never its contents).
    pub fn describe(&self) -> String {
        match self {
            Reply::Status(_) => "a simple string".into(),
            Reply::Error(_) => "an error".into(),
            Reply::Integer(_) => "an integer".into(),
            Reply::Bulk(None) => "a nil bulk string".into(),
            Reply::Bulk(Some(bytes)) => format!("a bulk string of {} bytes", bytes.len()),
            Reply::Array(None) => "a nil array".into(),
            Reply::Array(Some(values)) => format!("an array of {} values", values.len()),
        }
    }
}

fn push_line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    out.extend_from_slice(text);
    out.extend_from_slice(b"\r\n");
}

/// The bytes of a bulk string of `length` bytes on the wire: its header, its bytes and their CRLF.
pub fn bulk_size(length: usize) -> usize {
    length.to_string().len() + length + 5
}

/// At most the first few bytes of what a server sent, escaped (`\x1b`, `\r`, `\\`...), with `...` after them
/// and the whole length when there was more: the only form in which a reply's bytes reach a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clipped(String);

impl Clipped {
    /// Clips and escapes `bytes`.
    pub fn new(bytes: &[u8]) -> Clipped {
        let shown = bytes.get(..CLIP).unwrap_or(bytes).escape_ascii().to_string();
        if bytes.len() > CLIP {
            Clipped(format!("{shown}... ({} bytes)", bytes.len()))
        } else {
            Clipped(shown)
        }
    }
}

impl fmt::Display for Clipped {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

/// Why a reply cannot be read. Every variant is final: the connection cannot be trusted to be in step with
/// the server afterwards, and the reader keeps answering with the same error.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum ReplyError {
    #[error("a value starts with `{0}`, which is no RESP2 type (`+`, `-`, `:`, `$` or `*`)")]
    UnknownType(Clipped),
    #[error("a bulk string of {claimed} bytes is more than the {left} bytes left of the reply's limit")]
    BulkTooLarge { claimed: u64, left: usize },
    #[error("an array of {claimed} values cannot fit in the {left} bytes left of the reply's limit")]
    ArrayTooLarge { claimed: u64, left: usize },
    #[error("the reply is longer than its limit of {limit} bytes")]
    TooLong { limit: usize },
    #[error("a `{kind}` line is longer than {limit} bytes; it starts `{start}`", kind = char::from(*kind))]
    LineTooLong { kind: u8, limit: usize, start: Clipped },
    #[error("a line does not end with CRLF: `{0}`")]
    BadLineEnd(Clipped),
    #[error("`{0}` is not a length (a canonical number of bytes or values, or -1)")]
    BadLength(Clipped),
    #[error("`{0}` is not a canonical 64-bit integer")]
    BadInteger(Clipped),
    #[error("a bulk string of {length} bytes is followed by `{after}`, not CRLF")]
    MissingCrlf { length: usize, after: Clipped },
    #[error("arrays nest deeper than {MAX_DEPTH}")]
    TooDeep,
    #[error("the reply holds more than {MAX_VALUES} values")]
    TooManyValues,
}

/// What [`ReplyReader::feed`] made of the bytes it was given.
#[derive(Debug, PartialEq, Eq)]
pub enum Feed {
    /// All of them were used and the reply is not complete yet.
    NeedMore,
    /// The reply is complete; `used` of the bytes were part of it (the rest, if any, come after it). The
    /// reader is ready for the next reply.
    Reply { reply: Reply, used: usize },
}

/// An array whose values are being read.
#[derive(Debug)]
struct OpenArray {
    values: Vec<Reply>,
    /// How many values are still to come (at least one).
    left: usize,
}

#[derive(Debug)]
enum State {
    /// Reading a line: its type byte once it has arrived, and the bytes after it (the CR of its CRLF
    /// included once it has arrived, never the LF).
    Line {
        kind: Option<u8>,
        text: Vec<u8>,
    },
    /// Reading a bulk string's bytes (`claimed` of them), then its CRLF (`crlf` of its two bytes seen).
    Bulk {
        bytes: Vec<u8>,
        claimed: usize,
        crlf: usize,
    },
    Failed(ReplyError),
}

/// Reads one reply after another from the bytes a server sends; see the module documentation for its bounds.
#[derive(Debug)]
pub struct ReplyReader {
    limit: usize,
    /// The bytes of the current reply read so far.
    used: usize,
    /// The values of the current reply announced so far (each array's claim counted when it is read).
    values: usize,
    open: Vec<OpenArray>,
    state: State,
}

impl ReplyReader {
    /// A reader of replies of at most `limit` bytes each.
    pub fn new(limit: usize) -> ReplyReader {
        ReplyReader {
            limit,
            used: 0,
            values: 1,
            open: Vec::new(),
            state: State::Line {
                kind: None,
                text: Vec::new(),
            },
        }
    }

    /// The bytes the reader holds allocated for the reply in progress (its line or bulk string buffer):
    /// never more than twice what has arrived of it.
    pub fn buffered_capacity(&self) -> usize {
        match &self.state {
            State::Line { text, .. } => text.capacity(),
            State::Bulk { bytes, .. } => bytes.capacity(),
            State::Failed(_) => 0,
        }
    }

    /// Reads `bytes`, the next bytes the server sent.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Feed, ReplyError> {
        let mut at = 0;
        let result = loop {
            match self.step(bytes, &mut at) {
                Ok(Some(reply)) => break Ok(Feed::Reply { reply, used: at }),
                Ok(None) if at == bytes.len() => break Ok(Feed::NeedMore),
                Ok(None) => {}
                Err(error) => break Err(error),
            }
        };
        match &result {
            Ok(Feed::Reply { .. }) => *self = ReplyReader::new(self.limit),
            Err(error) => self.state = State::Failed(error.clone()),
            Ok(Feed::NeedMore) => {}
        }
        result
    }

    /// Reads from `bytes[*at..]` until a value or a line is complete or the bytes run out, moving `at` past
    /// what it used; gives the reply when it is complete.
    fn step(&mut self, bytes: &[u8], at: &mut usize) -> Result<Option<Reply>, ReplyError> {
        let rest = bytes.get(*at..).unwrap_or_default();
        match &mut self.state {
            State::Failed(error) => Err(error.clone()),
            State::Line { kind, text } => {
                let Some((&first, _)) = rest.split_first() else {
                    return Ok(None);
                };
                let kind = match *kind {
                    Some(kind) => kind,
                    None => {
                        if !matches!(first, b'+' | b'-' | b':' | b'$' | b'*') {
                            return Err(ReplyError::UnknownType(Clipped::new(rest)));
                        }
                        self.used = checked_add_within(self.used, 1, self.limit)?;
                        *at += 1;
                        *kind = Some(first);
                        return Ok(None);
                    }
                };
                let limit = if matches!(kind, b'+' | b'-') {
                    MAX_LINE
                } else {
                    MAX_NUMBER
                };
                // Only the bytes not searched before are searched for the line's end.
                let (segment, ended) = match rest.iter().position(|&byte| byte == b'\n') {
                    Some(end) => (&rest[..end], true),
                    None => (rest, false),
                };
                // The text may hold the CR of the CRLF besides its `limit` bytes, and the reply's limit counts
                // the LF too. The first byte past either bound decides the error, so that it is the same however
                // the bytes were split.
                let taken = segment.len() + usize::from(ended);
                let line_room = (limit + 1).saturating_sub(text.len());
                let reply_room = self.limit - self.used;
                let past_line = (segment.len() > line_room).then_some(line_room);
                let past_reply = (taken > reply_room).then_some(reply_room);
                match (past_line, past_reply) {
                    (Some(line), reply) if reply.is_none_or(|reply| line <= reply) => {
                        let start = [text.as_slice(), segment].concat();
                        return Err(ReplyError::LineTooLong {
                            kind,
                            limit,
                            start: Clipped::new(start.get(..CLIP).unwrap_or(&start)),
                        });
                    }
                    (_, Some(_)) => return Err(ReplyError::TooLong { limit: self.limit }),
                    _ => {}
                }
                self.used += taken;
                text.extend_from_slice(segment);
                *at += taken;
                if !ended {
                    return Ok(None);
                }
                let mut text = std::mem::take(text);
                match text.split_last() {
                    Some((b'\r', before)) if !before.contains(&b'\r') => text.truncate(before.len()),
                    _ => {
                        text.push(b'\n');
                        return Err(ReplyError::BadLineEnd(Clipped::new(&text)));
                    }
                }
                self.state = State::Line {
                    kind: None,
                    text: Vec::new(),
                };
                self.line(kind, text)
            }
            State::Bulk { bytes, claimed, crlf } => {
                let wanted = (*claimed - bytes.len()).min(rest.len());
                if wanted > bytes.capacity() - bytes.len() {
                    // Grows with what has arrived: doubling (linear in all), never past the claim.
                    let target = (bytes.len() + wanted)
                        .max(bytes.capacity().saturating_mul(2))
                        .min(*claimed);
                    bytes.reserve_exact(target - bytes.len());
                }
                bytes.extend_from_slice(&rest[..wanted]);
                *at += wanted;
                let rest = &rest[wanted..];
                if bytes.len() < *claimed || rest.is_empty() {
                    return Ok(None);
                }
                let seen = (2 - *crlf).min(rest.len());
                if rest[..seen] != b"\r\n"[*crlf..*crlf + seen] {
                    return Err(ReplyError::MissingCrlf {
                        length: *claimed,
                        after: Clipped::new(rest),
                    });
                }
                *crlf += seen;
                *at += seen;
                if *crlf < 2 {
                    return Ok(None);
                }
                let bytes = std::mem::take(bytes);
                self.state = State::Line {
                    kind: None,
                    text: Vec::new(),
                };
                Ok(self.complete(Reply::Bulk(Some(bytes))))
            }
        }
    }

    /// Acts on a complete line of type `kind` (its text without the CRLF): a value, or the header of a bulk
    /// string or array.
    fn line(&mut self, kind: u8, text: Vec<u8>) -> Result<Option<Reply>, ReplyError> {
        let left = self.limit - self.used;
        match kind {
            b'+' => Ok(self.complete(Reply::Status(text))),
            b'-' => Ok(self.complete(Reply::Error(text))),
            b':' => {
                let value = parse_integer(&text).ok_or_else(|| ReplyError::BadInteger(Clipped::new(&text)))?;
                Ok(self.complete(Reply::Integer(value)))
            }
            b'$' => match parse_length(&text)? {
                None => Ok(self.complete(Reply::Bulk(None))),
                Some(claimed) => {
                    // The claim is checked before anything of it is read or allocated.
                    let fits = usize::try_from(claimed)
                        .ok()
                        .filter(|claimed| claimed.checked_add(2).is_some_and(|size| size <= left));
                    let claimed = fits.ok_or(ReplyError::BulkTooLarge { claimed, left })?;
                    self.used += claimed + 2;
                    self.state = State::Bulk {
                        bytes: Vec::new(),
                        claimed,
                        crlf: 0,
                    };
                    Ok(None)
                }
            },
            _ => match parse_length(&text)? {
                None => Ok(self.complete(Reply::Array(None))),
                Some(0) => Ok(self.complete(Reply::Array(Some(Vec::new())))),
                Some(claimed) => {
                    // Every value takes at least three bytes (`+` and CRLF).
                    let count = usize::try_from(claimed)
                        .ok()
                        .filter(|count| count.checked_mul(3).is_some_and(|size| size <= left))
                        .ok_or(ReplyError::ArrayTooLarge { claimed, left })?;
                    if self.open.len() >= MAX_DEPTH {
                        return Err(ReplyError::TooDeep);
                    }
                    self.values = self
                        .values
                        .checked_add(count)
                        .filter(|values| *values <= MAX_VALUES)
                        .ok_or(ReplyError::TooManyValues)?;
                    self.open.push(OpenArray {
                        values: Vec::new(),
                        left: count,
                    });
                    Ok(None)
                }
            },
        }
    }

    /// Puts a complete value in the array it belongs to, closing every array it completes; gives the reply
    /// when the value (or an array it completed) is the reply itself.
    fn complete(&mut self, mut value: Reply) -> Option<Reply> {
        loop {
            let Some(array) = self.open.last_mut() else {
                return Some(value);
            };
            array.values.push(value);
            array.left -= 1;
            if array.left > 0 {
                return None;
            }
            let values = self.open.pop().map(|array| array.values).unwrap_or_default();
            value = Reply::Array(Some(values));
        }
    }
}

/// `used + more`, or the reply's limit error if that passes `limit`.
fn checked_add_within(used: usize, more: usize, limit: usize) -> Result<usize, ReplyError> {
    used.checked_add(more)
        .filter(|total| *total <= limit)
        .ok_or(ReplyError::TooLong { limit })
}

/// Canonical decimal digits (no leading zero unless the number is 0) as a number, if it fits in a `u64`.
fn parse_digits(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    digits.iter().try_fold(0u64, |value, &digit| {
        let digit = digit.is_ascii_digit().then(|| u64::from(digit - b'0'))?;
        value.checked_mul(10)?.checked_add(digit)
    })
}

/// A length line: a number of bytes or values, or `-1` for nil (`None`).
fn parse_length(text: &[u8]) -> Result<Option<u64>, ReplyError> {
    if text == b"-1" {
        return Ok(None);
    }
    parse_digits(text)
        .map(Some)
        .ok_or_else(|| ReplyError::BadLength(Clipped::new(text)))
}

/// An integer line: canonical decimal with an optional minus, in range of `i64` (`-0` is not canonical).
fn parse_integer(text: &[u8]) -> Option<i64> {
    match text.strip_prefix(b"-") {
        Some(digits) => {
            let magnitude = parse_digits(digits).filter(|magnitude| *magnitude != 0)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        None => i64::try_from(parse_digits(text)?).ok(),
    }
}

#[cfg(test)]
mod tests;
