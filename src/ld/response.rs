//! `@file` response files, expanded as GNU ld (libiberty's `expandargv`) expands them: every argument
//! `@FILE` is replaced by the arguments FILE holds, which may name further response files. An `@FILE` that
//! does not exist stays as it is (then it is an input file named `@FILE`, as with GNU ld). The expansion and
//! its bounds are `neverc_link::response_file::expand`'s.
//!
//! Quoting follows libiberty's `buildargv`: white space separates arguments; a backslash takes the next
//! character literally, even inside quotes; single and double quotes group (and are removed); `''` or `""`
//! is an empty argument.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::Path;

use neverc_userfile::{TEXT_LIMIT, UserFileError, read_user_file};

use super::error::LdError;

/// The arguments with every `@file` replaced by its contents, recursively, within the bounds of
/// [`neverc_link::response_file::expand`].
pub(crate) fn expand(arguments: Vec<OsString>) -> Result<Vec<OsString>, LdError> {
    let arguments = arguments.into_iter().map(OsString::into_vec).collect();
    let expanded = neverc_link::response_file::expand(arguments, |name| {
        let path = Path::new(std::ffi::OsStr::from_bytes(name));
        match read_user_file(path, TEXT_LIMIT) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(UserFileError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error),
        }
    })?;
    Ok(expanded.into_iter().map(OsString::from_vec).collect())
}
