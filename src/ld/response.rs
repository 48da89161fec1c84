//! `@file` response files, expanded as GNU ld (libiberty's `expandargv`) expands them: every argument
//! `@FILE` is replaced by the arguments FILE holds, which may name further response files. An `@FILE` that
//! does not exist stays as it is (then it is an input file named `@FILE`, as with GNU ld).
//!
//! Quoting follows libiberty's `buildargv`: white space separates arguments; a backslash takes the next
//! character literally, even inside quotes; single and double quotes group (and are removed); `''` or `""`
//! is an empty argument.

use std::ffi::{OsStr, OsString};
use std::path::Path;

use neverc_userfile::{TEXT_LIMIT, UserFileError, read_user_file};

use super::error::LdError;

/// How deeply response files may name each other. A file that names itself is refused at this depth.
pub(crate) const MAX_RESPONSE_DEPTH: usize = 32;

/// The arguments with every `@file` replaced by its contents, recursively.
pub(crate) fn expand(arguments: Vec<OsString>) -> Result<Vec<OsString>, LdError> {
    let mut expanded = Vec::with_capacity(arguments.len());
    let mut chain = Vec::new();
    expand_into(arguments, &mut expanded, &mut chain)?;
    Ok(expanded)
}

fn expand_into(arguments: Vec<OsString>, out: &mut Vec<OsString>, chain: &mut Vec<OsString>) -> Result<(), LdError> {
    for argument in arguments {
        let Some(name) = response_file_name(&argument) else {
            out.push(argument);
            continue;
        };
        let path = Path::new(name);
        let bytes = match read_user_file(path, TEXT_LIMIT) {
            Ok(bytes) => bytes,
            // As with GNU ld, `@name` that names no file is an argument like any other.
            Err(UserFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                out.push(argument);
                continue;
            }
            Err(error) => return Err(error.into()),
        };
        chain.push(argument.clone());
        if chain.len() > MAX_RESPONSE_DEPTH {
            let chain = chain
                .iter()
                .map(|name| name.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" -> ");
            return Err(LdError::ResponseDepth {
                limit: MAX_RESPONSE_DEPTH,
                chain,
            });
        }
        expand_into(split_arguments(&bytes), out, chain)?;
        chain.pop();
    }
    Ok(())
}

/// `FILE` of an argument `@FILE`.
fn response_file_name(argument: &OsStr) -> Option<&OsStr> {
    let bytes = argument.as_encoded_bytes();
    match bytes.split_first() {
        Some((b'@', rest)) if !rest.is_empty() => Some(super::args::os_from_bytes_of(argument, 1)),
        _ => None,
    }
}

/// Splits response-file text into arguments with libiberty's quoting rules.
pub(crate) fn split_arguments(text: &[u8]) -> Vec<OsString> {
    neverc_link::response_file::split(text)
        .into_iter()
        .map(super::args::os_from_vec)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Vec<String> {
        split_arguments(text.as_bytes())
            .into_iter()
            .map(|argument| argument.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn quoting_follows_libiberty() {
        assert_eq!(split("a\\ b \"c d\" 'e\\'f' \"\"\n"), ["a b", "c d", "e'f", ""]);
        assert_eq!(split("  -o\tout\n\n-lm  "), ["-o", "out", "-lm"]);
        assert_eq!(split("x'y z'w"), ["xy zw"]);
        assert_eq!(split("'it''s'"), ["its"]);
        assert!(split(" \n\t ").is_empty());
        // An unterminated quote runs to the end of the file, as in libiberty.
        assert_eq!(split("'a b"), ["a b"]);
    }
}
