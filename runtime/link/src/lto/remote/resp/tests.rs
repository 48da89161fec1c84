//! The reply reader on real RESP2 bytes: every reply reads back from its encoding however the bytes are
//! split, huge and lying headers are refused or cost only what arrived (issue 23, item 7), and each malformed
//! form has its error, clipped and escaped.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use super::*;

/// Replies of every type, nested arrays and binary bulk strings among them.
fn samples() -> Vec<Reply> {
    vec![
        Reply::Status(b"OK".to_vec()),
        Reply::Status(Vec::new()),
        Reply::Error(b"WRONGPASS invalid username-password pair or user is disabled.".to_vec()),
        Reply::Integer(0),
        Reply::Integer(i64::MIN),
        Reply::Integer(i64::MAX),
        Reply::Bulk(None),
        Reply::Bulk(Some(Vec::new())),
        Reply::Bulk(Some(b"\r\n\0\xff$-1\r\n".to_vec())),
        Reply::Array(None),
        Reply::Array(Some(Vec::new())),
        Reply::Array(Some(vec![
            Reply::Integer(-7),
            Reply::Array(Some(vec![Reply::Bulk(None), Reply::Array(Some(Vec::new()))])),
            Reply::Bulk(Some(b"value".to_vec())),
        ])),
    ]
}

/// Feeds `bytes` in pieces of `size` and gives every reply read with where it ended.
fn read_in_pieces(bytes: &[u8], size: usize) -> Result<Vec<Reply>, ReplyError> {
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    let mut replies = Vec::new();
    for piece in bytes.chunks(size) {
        let mut piece = piece;
        while let Feed::Reply { reply, used } = reader.feed(piece)? {
            replies.push(reply);
            piece = &piece[used..];
        }
    }
    Ok(replies)
}

#[test]
fn every_reply_reads_back_from_its_encoding_however_it_is_split() {
    let replies = samples();
    let mut bytes = Vec::new();
    for reply in &replies {
        reply.encode(&mut bytes);
    }
    for size in [1, 2, 3, 5, 7, 64, bytes.len()] {
        assert_eq!(read_in_pieces(&bytes, size).unwrap(), replies, "pieces of {size}");
    }
}

#[test]
fn a_reply_says_how_many_bytes_it_used() {
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    assert_eq!(
        reader.feed(b"$3\r\nabc\r\n:12\r\n").unwrap(),
        Feed::Reply {
            reply: Reply::Bulk(Some(b"abc".to_vec())),
            used: 9
        }
    );
    assert_eq!(
        reader.feed(b":12\r\n").unwrap(),
        Feed::Reply {
            reply: Reply::Integer(12),
            used: 5
        }
    );
    assert_eq!(reader.feed(b"").unwrap(), Feed::NeedMore);
}

#[test]
fn item_7_a_2_gb_bulk_header_is_refused_before_any_of_its_bytes() {
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    assert_eq!(reader.feed(b"$21474836").unwrap(), Feed::NeedMore);
    let error = reader.feed(b"48\r\n").unwrap_err();
    assert_eq!(
        error,
        ReplyError::BulkTooLarge {
            claimed: 2_147_483_648,
            left: MAX_REPLY_SIZE - 13
        }
    );
    assert_eq!(
        error.to_string(),
        "a bulk string of 2147483648 bytes is more than the 536870899 bytes left of the reply's limit"
    );
    assert_eq!(reader.buffered_capacity(), 0);
    // The reader stays failed: the bytes after the header are never taken.
    assert_eq!(reader.feed(&[b'A'; 4096]).unwrap_err(), error);
    // One byte past the limit is refused as well; the limit itself is read.
    let at_limit = MAX_REPLY_SIZE - bulk_size(MAX_REPLY_SIZE - 16);
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE - at_limit);
    assert_eq!(
        reader.feed(format!("${}\r\n", MAX_REPLY_SIZE - 16).as_bytes()).unwrap(),
        Feed::NeedMore
    );
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE - at_limit - 1);
    assert!(matches!(
        reader.feed(format!("${}\r\n", MAX_REPLY_SIZE - 16).as_bytes()),
        Err(ReplyError::BulkTooLarge { .. })
    ));
    // A length past any integer is refused as well, not wrapped around.
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    assert!(matches!(
        reader.feed(b"$99999999999999999999\r\n"),
        Err(ReplyError::BadLength(_))
    ));
}

#[test]
fn item_7_a_lying_header_allocates_only_what_arrived() {
    // A header claiming 500 MB (within the limit), then 1000 bytes, then nothing.
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    assert_eq!(reader.feed(b"$500000000\r\n").unwrap(), Feed::NeedMore);
    assert_eq!(reader.buffered_capacity(), 0);
    for _ in 0..10 {
        assert_eq!(reader.feed(&[b'A'; 100]).unwrap(), Feed::NeedMore);
    }
    assert!(reader.buffered_capacity() <= 2000, "{}", reader.buffered_capacity());
    // An array claim allocates nothing either.
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    assert_eq!(reader.feed(b"*60000\r\n:1\r\n").unwrap(), Feed::NeedMore);
    assert_eq!(reader.open[0].values.capacity(), 4);
    // And the buffer never holds more than the claim.
    let mut reader = ReplyReader::new(MAX_REPLY_SIZE);
    reader.feed(b"$1500\r\n").unwrap();
    reader.feed(&[b'A'; 1000]).unwrap();
    reader.feed(&[b'A'; 499]).unwrap();
    assert_eq!(reader.buffered_capacity(), 1500);
}

#[test]
fn item_7_replies_split_into_single_bytes_read_in_linear_time() {
    // A bulk string of 1 MiB and a status line of 64 KiB, fed a byte at a time: a reader that searched or
    // copied what it had already seen again would take billions of steps.
    let mut bytes = Vec::new();
    Reply::Bulk(Some(vec![b'A'; 1 << 20])).encode(&mut bytes);
    Reply::Status(vec![b'A'; MAX_LINE]).encode(&mut bytes);
    let started = Instant::now();
    let replies = read_in_pieces(&bytes, 1).unwrap();
    let elapsed = started.elapsed();
    eprintln!("item 7: {} bytes fed a byte at a time in {elapsed:.2?}", bytes.len());
    assert_eq!(replies.len(), 2);
    assert!(elapsed < Duration::from_secs(2), "{elapsed:?}");
    // 50 MB in reads of 64 KiB, as a socket delivers them.
    let mut bytes = Vec::new();
    Reply::Bulk(Some(vec![b'A'; 50 << 20])).encode(&mut bytes);
    let started = Instant::now();
    let replies = read_in_pieces(&bytes, 64 << 10).unwrap();
    let elapsed = started.elapsed();
    eprintln!("item 7: a 50 MB bulk string in reads of 64 KiB in {elapsed:.2?}");
    assert_eq!(replies.len(), 1);
    assert!(elapsed < Duration::from_secs(1), "{elapsed:?}");
}

#[test]
fn item_7_malformed_replies_have_clipped_escaped_errors() {
    let long_line = [b"+".as_slice(), &[b'A'; MAX_LINE + 2]].concat();
    let cases: [(&[u8], &str); 14] = [
        (
            b"?\x1b[2J\x00\xffAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            r"a value starts with `?\x1b[2J\x00\xffAAAAAAAAAAAAAAAAAAAAAAAAA... (53 bytes)`, which is no RESP2 type",
        ),
        (b"%1\r\n", "a value starts with `%1\\r\\n`, which is no RESP2 type"),
        (
            &long_line,
            "a `+` line is longer than 65536 bytes; it starts `AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA`",
        ),
        (b":123456789012345678901\r\n", "a `:` line is longer than 20 bytes"),
        (b"+OK\n", r"a line does not end with CRLF: `OK\n`"),
        (b"+O\rK\r\n", r"a line does not end with CRLF: `O\rK\r\n`"),
        (b"$012\r\n", "`012` is not a length"),
        (b"$-2\r\n", "`-2` is not a length"),
        (b"*+1\r\n", "`+1` is not a length"),
        (b":-0\r\n", "`-0` is not a canonical 64-bit integer"),
        (
            b":9223372036854775808\r\n",
            "`9223372036854775808` is not a canonical 64-bit integer",
        ),
        (
            b"$3\r\nabcd\r\n",
            "a bulk string of 3 bytes is followed by `d\\r\\n`, not CRLF",
        ),
        (
            b"$3\r\nabc\rX",
            "a bulk string of 3 bytes is followed by `\\rX`, not CRLF",
        ),
        (
            &[b"*1\r\n".repeat(MAX_DEPTH), b"*1\r\n".to_vec()].concat(),
            "arrays nest deeper than 16",
        ),
    ];
    for (bytes, expected) in cases {
        let whole = read_in_pieces(bytes, bytes.len()).unwrap_err();
        let message = whole.to_string();
        assert!(message.starts_with(expected), "{message}\nis not\n{expected}");
        assert!(message.len() < 200 && !message.contains('\x1b'), "{message}");
        // Fed a byte at a time, the same error (its clipped bytes are what had arrived).
        let bytewise = read_in_pieces(bytes, 1).unwrap_err();
        assert_eq!(
            std::mem::discriminant(&bytewise),
            std::mem::discriminant(&whole),
            "{bytewise}"
        );
    }
    assert_eq!(
        read_in_pieces(b"*60000\r\n*10000\r\n", 100).unwrap_err(),
        ReplyError::TooManyValues
    );
    let mut reader = ReplyReader::new(100);
    assert_eq!(
        reader.feed(b"*40\r\n"),
        Err(ReplyError::ArrayTooLarge { claimed: 40, left: 95 })
    );
    let mut reader = ReplyReader::new(10);
    assert_eq!(reader.feed(b"*2\r\n+AAAAAAA"), Err(ReplyError::TooLong { limit: 10 }));
}
