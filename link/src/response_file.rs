//! Response files (`@FILE` on a GNU ld command line): arguments separated by white space, with libiberty's
//! quoting rules (`'...'`, `"..."`, and a backslash that takes the next byte literally, even inside quotes).
//! Arguments are bytes: file names need not be UTF-8.

/// Splits response-file text into arguments with libiberty's quoting rules. An unterminated quote runs to
/// the end of the text, as in libiberty.
pub fn split(text: &[u8]) -> Vec<Vec<u8>> {
    let mut arguments = Vec::new();
    let mut current = Vec::new();
    let mut started = false;
    let (mut single, mut double, mut escaped) = (false, false, false);
    for &byte in text {
        if escaped {
            escaped = false;
            current.push(byte);
        } else if byte == b'\\' {
            escaped = true;
            started = true;
        } else if single {
            if byte == b'\'' {
                single = false;
            } else {
                current.push(byte);
            }
        } else if double {
            if byte == b'"' {
                double = false;
            } else {
                current.push(byte);
            }
        } else if byte.is_ascii_whitespace() || byte == 0x0b {
            if started {
                arguments.push(std::mem::take(&mut current));
                started = false;
            }
        } else {
            started = true;
            match byte {
                b'\'' => single = true,
                b'"' => double = true,
                _ => current.push(byte),
            }
        }
    }
    if started {
        arguments.push(current);
    }
    arguments
}
