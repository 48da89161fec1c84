//! The Redis reply reader of the LTO cache's client (`neverc_link::lto::remote::resp`): arbitrary bytes as
//! what a server sends, read whole and in pieces of 1 to 16 bytes (the first input byte picks the size), under
//! the cache's limit of 512 MiB or a small one (the second and third bytes pick it). Properties: no panic;
//! the same replies, and an error of the same kind, however the bytes are split; every reply
//! read is exactly the bytes it used (`Reply::encode`) and within the limit; an error message is short and
//! holds no control character; the reader never holds much more than twice the bytes it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::lto::remote::resp::{Feed, MAX_REPLY_SIZE, Reply, ReplyError, ReplyReader};

/// What a read of the whole stream found: the replies, then the error that stopped it, if any.
struct Read {
    replies: Vec<Reply>,
    error: Option<ReplyError>,
}

/// Reads `bytes` in pieces of `size` with a reader of `limit`, checking what holds at every step.
fn read(bytes: &[u8], size: usize, limit: usize) -> Read {
    let mut reader = ReplyReader::new(limit);
    let mut replies = Vec::new();
    // Bytes of the reply in progress given to the reader so far.
    let mut in_reply = 0;
    for piece in bytes.chunks(size) {
        let mut piece = piece;
        loop {
            match reader.feed(piece) {
                Ok(Feed::NeedMore) => {
                    in_reply += piece.len();
                    assert!(
                        reader.buffered_capacity() <= 2 * in_reply + 64,
                        "{} bytes held for {in_reply} given",
                        reader.buffered_capacity()
                    );
                    break;
                }
                Ok(Feed::Reply { reply, used }) => {
                    assert!(used <= piece.len());
                    let mut encoded = Vec::new();
                    reply.encode(&mut encoded);
                    assert_eq!(encoded.len(), in_reply + used, "{reply:?}");
                    assert!(encoded.len() <= limit);
                    // Whole, the reply is exactly the bytes it used.
                    if size >= bytes.len() {
                        assert_eq!(encoded, piece[..used], "{reply:?}");
                    }
                    replies.push(reply);
                    in_reply = 0;
                    piece = &piece[used..];
                    if piece.is_empty() {
                        break;
                    }
                }
                Err(error) => {
                    let message = error.to_string();
                    assert!(message.len() < 300, "{message}");
                    assert!(!message.chars().any(char::is_control), "{message:?}");
                    // A failed reader stays failed.
                    assert_eq!(reader.feed(b"+OK\r\n"), Err(error.clone()));
                    return Read {
                        replies,
                        error: Some(error),
                    };
                }
            }
        }
    }
    Read { replies, error: None }
}

fuzz_target!(|data: &[u8]| {
    let [size, small, limit_low, stream @ ..] = data else {
        return;
    };
    let size = usize::from(size % 16) + 1;
    let limit = if small % 2 == 0 {
        MAX_REPLY_SIZE
    } else {
        usize::from(*limit_low) * 16 + 1
    };
    let whole = read(stream, stream.len().max(1), limit);
    let pieces = read(stream, size, limit);
    assert_eq!(whole.replies, pieces.replies);
    match (&whole.error, &pieces.error) {
        (None, None) => {}
        (Some(whole), Some(pieces)) => {
            assert_eq!(
                std::mem::discriminant(whole),
                std::mem::discriminant(pieces),
                "{whole} / {pieces}"
            );
        }
        (whole, pieces) => panic!("whole: {whole:?}, in pieces: {pieces:?}"),
    }
});
