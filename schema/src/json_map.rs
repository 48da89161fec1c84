//! Finds where each value of a JSON text sits, by JSON pointer.
//!
//! Runs only over text `serde_json` has already accepted, so nesting depth is bounded by its limit; it still
//! returns what it found so far rather than panicking on anything unexpected.

use std::collections::HashMap;
use std::ops::Range;

use crate::diagnostic::{SourceMap, escape_token};

#[derive(Debug, Default)]
pub(crate) struct JsonSourceMap {
    values: HashMap<String, Range<usize>>,
    keys: HashMap<String, Range<usize>>,
    /// Pointers of members whose key repeats an earlier key of the same object.
    pub(crate) duplicate_keys: Vec<String>,
}

impl SourceMap for JsonSourceMap {
    fn span_of(&self, pointer: &str, key: bool) -> Option<Range<usize>> {
        if key && let Some(span) = self.keys.get(pointer) {
            return Some(span.clone());
        }
        self.values.get(pointer).cloned()
    }
}

impl JsonSourceMap {
    pub(crate) fn build(text: &str) -> JsonSourceMap {
        let mut map = JsonSourceMap::default();
        let mut scanner = Scanner {
            bytes: text.as_bytes(),
            text,
            pos: 0,
        };
        scanner.value(&mut map, String::new());
        map
    }
}

struct Scanner<'a> {
    bytes: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl Scanner<'_> {
    fn skip_blank(&mut self) {
        while self.pos < self.bytes.len() && matches!(self.bytes[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn value(&mut self, map: &mut JsonSourceMap, pointer: String) -> Option<()> {
        self.skip_blank();
        let start = self.pos;
        match self.peek()? {
            b'{' => {
                self.pos += 1;
                loop {
                    self.skip_blank();
                    match self.peek()? {
                        b'}' => {
                            self.pos += 1;
                            break;
                        }
                        b',' => self.pos += 1,
                        b'"' => {
                            let key_start = self.pos;
                            self.string()?;
                            let raw = self.text.get(key_start..self.pos)?;
                            let key: String = serde_json::from_str(raw).ok()?;
                            let child = format!("{pointer}/{}", escape_token(&key));
                            if map.keys.insert(child.clone(), key_start..self.pos).is_some() {
                                map.duplicate_keys.push(child.clone());
                            }
                            self.skip_blank();
                            if self.peek()? != b':' {
                                return None;
                            }
                            self.pos += 1;
                            self.value(map, child)?;
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.pos += 1;
                let mut index = 0usize;
                loop {
                    self.skip_blank();
                    match self.peek()? {
                        b']' => {
                            self.pos += 1;
                            break;
                        }
                        b',' => self.pos += 1,
                        _ => {
                            self.value(map, format!("{pointer}/{index}"))?;
                            index += 1;
                        }
                    }
                }
            }
            b'"' => self.string()?,
            _ => {
                while self.pos < self.bytes.len()
                    && !matches!(self.bytes[self.pos], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                {
                    self.pos += 1;
                }
            }
        }
        map.values.insert(pointer, start..self.pos);
        Some(())
    }

    fn string(&mut self) -> Option<()> {
        self.pos += 1;
        while let Some(byte) = self.peek() {
            self.pos += 1;
            match byte {
                b'\\' => self.pos += 1,
                b'"' => return Some(()),
                _ => {}
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_nested_pointers_to_their_text() {
        let text = "{\n  \"a/b\": [1, {\"k\": \"v\\\"\"}],\n  \"c\": true\n}";
        let map = JsonSourceMap::build(text);
        let span = map.span_of("/a~1b/1/k", false).unwrap_or_default();
        assert_eq!(&text[span], "\"v\\\"\"");
        let key = map.span_of("/c", true).unwrap_or_default();
        assert_eq!(&text[key], "\"c\"");
        let whole = map.span_of("/a~1b/0", false).unwrap_or_default();
        assert_eq!(&text[whole], "1");
    }
}
