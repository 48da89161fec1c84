//! Response files (`@FILE` on a GNU ld command line): arguments separated by white space, with libiberty's
//! quoting rules (`'...'`, `"..."`, and a backslash that takes the next byte literally, even inside quotes).
//! Arguments are bytes: file names need not be UTF-8.
//!
//! [`expand`] replaces every argument `@FILE` by the arguments FILE holds, recursively, as libiberty's
//! `expandargv` does (an `@FILE` naming no file stays as it is), within bounds: files nest at most
//! [`MAX_DEPTH`] deep, at most [`MAX_FILES`] `@name` arguments are looked up (libiberty's own limit, which counts
//! those naming no file too), and the expansion holds
//! at most [`MAX_ARGUMENTS`] arguments of [`MAX_BYTES`] bytes in all. Files that name each other twice over
//! (thirty-two of them make 2^32 expansions) are refused, naming the file where a bound was reached.

/// How deeply response files may name each other. A file that names itself is refused at this depth.
pub const MAX_DEPTH: usize = 32;

/// How many `@name` arguments one expansion looks up at most, counting a file each time it is named and a name
/// that is no file too (libiberty's `expandargv` stops at the same number, counted the same way).
pub const MAX_FILES: usize = 2000;

/// How many arguments one expansion may hold.
pub const MAX_ARGUMENTS: usize = 1 << 22;

/// How many bytes the arguments of one expansion may hold in all.
pub const MAX_BYTES: usize = 256 << 20;

/// Why an expansion stopped: a bound reached at a file, or a file that could not be read (`E`, the reader's
/// error).
#[derive(Debug, thiserror::Error)]
pub enum ExpandError<E: std::error::Error + 'static> {
    #[error("response files nest deeper than {MAX_DEPTH} levels: {chain}")]
    Depth { chain: String },
    #[error("more than {MAX_FILES} response files named, at `{file}` (do files name each other many times?)")]
    Files { file: String },
    #[error(
        "response files expand to more than {MAX_ARGUMENTS} arguments or {} MiB, at `{file}`",
        MAX_BYTES >> 20
    )]
    Size { file: String },
    #[error(transparent)]
    Read(E),
}

/// The arguments with every `@FILE` replaced by what FILE holds, recursively. `read` gives a file's bytes
/// (by its name, the bytes after the `@`), `None` when there is no such file, or an error that stops the
/// expansion.
pub fn expand<E: std::error::Error + 'static>(
    arguments: Vec<Vec<u8>>,
    mut read: impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
) -> Result<Vec<Vec<u8>>, ExpandError<E>> {
    let mut expansion = Expansion {
        out: Vec::with_capacity(arguments.len()),
        chain: Vec::new(),
        files: 0,
        bytes: 0,
    };
    expansion.expand(arguments, &mut read)?;
    Ok(expansion.out)
}

/// An expansion under way: what it has produced and what it has counted.
struct Expansion {
    out: Vec<Vec<u8>>,
    /// The response files being expanded, outermost first.
    chain: Vec<Vec<u8>>,
    files: usize,
    bytes: usize,
}

impl Expansion {
    fn expand<E: std::error::Error + 'static>(
        &mut self,
        arguments: Vec<Vec<u8>>,
        read: &mut impl FnMut(&[u8]) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<(), ExpandError<E>> {
        for argument in arguments {
            let name = match argument.split_first() {
                Some((b'@', name)) if !name.is_empty() => name,
                _ => {
                    self.push(argument)?;
                    continue;
                }
            };
            // Every lookup counts, of a file or not: otherwise files could name missing ones without bound.
            self.files += 1;
            if self.files > MAX_FILES {
                return Err(ExpandError::Files { file: self.innermost() });
            }
            let Some(bytes) = read(name).map_err(ExpandError::Read)? else {
                // As with GNU ld, `@name` that names no file is an argument like any other.
                self.push(argument)?;
                continue;
            };
            self.chain.push(name.to_vec());
            if self.chain.len() > MAX_DEPTH {
                return Err(ExpandError::Depth {
                    chain: self
                        .chain
                        .iter()
                        .map(|name| format!("@{}", String::from_utf8_lossy(name)))
                        .collect::<Vec<_>>()
                        .join(" -> "),
                });
            }
            self.expand(split(&bytes), read)?;
            self.chain.pop();
        }
        Ok(())
    }

    /// Adds an argument to the expansion, within its bounds.
    fn push<E: std::error::Error + 'static>(&mut self, argument: Vec<u8>) -> Result<(), ExpandError<E>> {
        self.bytes = self.bytes.saturating_add(argument.len());
        if self.out.len() >= MAX_ARGUMENTS || self.bytes > MAX_BYTES {
            return Err(ExpandError::Size { file: self.innermost() });
        }
        self.out.push(argument);
        Ok(())
    }

    /// The response file being expanded, for an error (`the command line` outside every file).
    fn innermost(&self) -> String {
        self.chain.last().map_or_else(
            || "the command line".to_string(),
            |name| String::from_utf8_lossy(name).into_owned(),
        )
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    fn split_text(text: &str) -> Vec<String> {
        split(text.as_bytes())
            .into_iter()
            .map(|argument| String::from_utf8_lossy(&argument).into_owned())
            .collect()
    }

    #[test]
    fn quoting_follows_libiberty() {
        assert_eq!(split_text("a\\ b \"c d\" 'e\\'f' \"\"\n"), ["a b", "c d", "e'f", ""]);
        assert_eq!(split_text("  -o\tout\n\n-lm  "), ["-o", "out", "-lm"]);
        assert_eq!(split_text("x'y z'w"), ["xy zw"]);
        assert_eq!(split_text("'it''s'"), ["its"]);
        assert!(split_text(" \n\t ").is_empty());
        // An unterminated quote runs to the end of the file, as in libiberty.
        assert_eq!(split_text("'a b"), ["a b"]);
    }

    /// Files in memory: `f<N>` holds what `files(N)` gives.
    fn expand_files(
        arguments: &[&str],
        files: impl Fn(usize) -> Option<String>,
    ) -> Result<Vec<String>, ExpandError<std::io::Error>> {
        let mut reads = 0usize;
        let expanded = expand(arguments.iter().map(|a| a.as_bytes().to_vec()).collect(), |name| {
            reads += 1;
            let index = std::str::from_utf8(name)
                .ok()
                .and_then(|name| name.strip_prefix('f'))
                .and_then(|number| number.parse().ok());
            Ok(index.and_then(&files).map(String::into_bytes))
        })?;
        assert!(reads <= MAX_FILES + 1, "{reads} files read");
        Ok(expanded
            .into_iter()
            .map(|argument| String::from_utf8_lossy(&argument).into_owned())
            .collect())
    }

    #[test]
    fn files_expand_in_place_and_missing_ones_stay_arguments() {
        let expanded = expand_files(&["-o", "@f0", "x.o", "@missing", "@"], |index| match index {
            0 => Some("a.o @f1 'b c.o'".into()),
            1 => Some("-lm".into()),
            _ => None,
        });
        assert_eq!(expanded.unwrap(), ["-o", "a.o", "-lm", "b c.o", "x.o", "@missing", "@"]);
    }

    #[test]
    fn item_4_files_naming_each_other_twice_over_are_refused_not_expanded_without_end() {
        // Thirty-two files, each naming the next twice: 2^32 expansions without a bound.
        let error = expand_files(&["@f0"], |index| {
            (index < 32).then(|| format!("@f{0} @f{0} x", index + 1))
        })
        .unwrap_err();
        assert!(matches!(error, ExpandError::Files { .. }), "{error}");
        assert!(error.to_string().contains("more than 2000 response files"), "{error}");
        // A file naming itself is refused by depth, with the chain.
        let error = expand_files(&["@f0"], |_| Some("@f0".into())).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("response files nest deeper than 32 levels: @f0 -> @f0"),
            "{error}"
        );
        // Few files that expand to more arguments than the bound: refused by size, naming the file.
        let error = expand_files(&["@f0"], |index| {
            (index == 0)
                .then(|| "@f1 ".repeat(1999))
                .or_else(|| (index == 1).then(|| "y ".repeat(3000)))
        })
        .unwrap_err();
        assert!(matches!(&error, ExpandError::Size { file } if file == "f1"), "{error}");
        // Names of no file count too (as in libiberty): files naming each other and many missing names do
        // not look up files without bound (found by fuzzing).
        let mut reads = 0usize;
        let error = expand(vec![b"@f0".to_vec()], |name| {
            reads += 1;
            let index: Option<usize> = std::str::from_utf8(name)
                .ok()
                .and_then(|name| name.strip_prefix('f'))
                .and_then(|number| number.parse().ok());
            Ok::<_, std::io::Error>(
                index
                    .filter(|index| *index < 32)
                    .map(|index| format!("@f{0} @f{0} {1}", index + 1, "@missing ".repeat(100)).into_bytes()),
            )
        })
        .unwrap_err();
        assert!(matches!(error, ExpandError::Files { .. }), "{error}");
        assert!(reads <= MAX_FILES, "{reads} names looked up");
    }
}
