//! ELF symbol names are bytes, not text: `__asm__("bad\377name")` is a valid name that is not UTF-8. The
//! graph keeps names as `String`s, so a name is held in a lossless, injective encoding: its valid UTF-8 runs
//! as themselves, and every byte that is not part of one as the private-use character `U+10FF00 + byte`.
//! A name that really holds one of those 256 characters has that character's four bytes encoded one by one,
//! so two different byte strings never share an encoding, and [`to_bytes`] gives back exactly the bytes
//! read. Valid UTF-8 names without those characters (every name a compiler makes in practice) are held
//! unchanged and borrowed.
//!
//! [`display`] renders a name for messages: each byte that was not UTF-8 as U+FFFD, as a terminal shows
//! the raw bytes GNU ld prints.

use std::borrow::Cow;

/// The first of the 256 private-use characters that stand for single bytes.
const BYTE_BASE: u32 = 0x10_FF00;

/// The byte a character stands for, if it is one of the 256 byte characters.
fn byte_of(character: char) -> Option<u8> {
    u32::from(character)
        .checked_sub(BYTE_BASE)
        .and_then(|offset| u8::try_from(offset).ok())
}

/// The character standing for `byte`.
fn character_of(byte: u8) -> char {
    char::from_u32(BYTE_BASE + u32::from(byte)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The encoding of the name `bytes` (see the module's documentation).
pub fn from_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes)
        && !text.chars().any(|character| byte_of(character).is_some())
    {
        return Cow::Borrowed(text);
    }
    let mut encoded = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for character in chunk.valid().chars() {
            if byte_of(character).is_some() {
                let mut buffer = [0; 4];
                for byte in character.encode_utf8(&mut buffer).bytes() {
                    encoded.push(character_of(byte));
                }
            } else {
                encoded.push(character);
            }
        }
        encoded.extend(chunk.invalid().iter().map(|byte| character_of(*byte)));
    }
    Cow::Owned(encoded)
}

/// The bytes of the name `name` encodes.
pub fn to_bytes(name: &str) -> Cow<'_, [u8]> {
    if !name.chars().any(|character| byte_of(character).is_some()) {
        return Cow::Borrowed(name.as_bytes());
    }
    let mut bytes = Vec::with_capacity(name.len());
    for character in name.chars() {
        match byte_of(character) {
            Some(byte) => bytes.push(byte),
            None => {
                let mut buffer = [0; 4];
                bytes.extend_from_slice(character.encode_utf8(&mut buffer).as_bytes());
            }
        }
    }
    Cow::Owned(bytes)
}

/// The name `name` encodes, for a message: its bytes as UTF-8, every invalid sequence as U+FFFD.
pub fn display(name: &str) -> Cow<'_, str> {
    match to_bytes(name) {
        Cow::Borrowed(_) => Cow::Borrowed(name),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_never_collide() {
        let byte_character = "\u{10FF41}".as_bytes();
        let names: [&[u8]; 7] = [
            b"main",
            b"bad\xffname",
            b"bad\xfename",
            "caf\u{e9}".as_bytes(),
            byte_character,
            b"\x41",
            b"\xf4\x8f\xbd",
        ];
        let encoded: Vec<String> = names.iter().map(|name| from_bytes(name).into_owned()).collect();
        for (name, encoding) in names.iter().zip(&encoded) {
            assert_eq!(to_bytes(encoding).as_ref(), *name);
        }
        for (index, encoding) in encoded.iter().enumerate() {
            assert!(!encoded[index + 1..].contains(encoding), "{encoding:?} is shared");
        }
        assert!(matches!(from_bytes(b"main"), Cow::Borrowed("main")));
        assert_eq!(display(&encoded[1]), "bad\u{fffd}name");
        assert_eq!(display("main"), "main");
    }
}
