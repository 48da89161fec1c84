//! `--version-script` files and `--defsym` arguments (user input): parsing never panics, an error's offset
//! lies inside the script, and matching any name against a parsed script terminates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::symbol_options::{Defsym, VersionScript, glob_matches};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match VersionScript::parse(text) {
        Ok(script) => {
            for name in ["main", "", "a*b", text] {
                let _ = script.makes_local(name);
            }
        }
        Err(error) => assert!(error.offset <= text.len(), "{error:?}"),
    }
    let _ = Defsym::parse(text);
    if let Some((pattern, name)) = text.split_once('\n') {
        let _ = glob_matches(pattern, name);
    }
});
