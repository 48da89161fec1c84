//! `--version-script` files and `--defsym` arguments (user input): parsing never panics, an error's offset
//! lies inside the script, a parsed script's nodes and their parents are versions it defines, and matching
//! any name (and demangled name) against it terminates.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::symbol_options::{Defsym, VersionScript, glob_matches};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match VersionScript::parse(text) {
        Ok(mut script) => {
            for name in ["main", "", "a*b", text] {
                let _ = script.makes_local(name);
                let _ = script.version_of(name, Some(text));
            }
            // Every node a script names is one its versions can be looked up by, and so are its parents.
            for node in script.named_nodes() {
                assert!(script.defines_version(node.name.as_deref().unwrap_or_default()));
                assert!(node.parents.iter().all(|parent| script.defines_version(parent)));
            }
            let _ = script.exact_global_names().count();
            script.merge(script.clone());
        }
        Err(error) => assert!(error.offset <= text.len(), "{error:?}"),
    }
    let _ = Defsym::parse(text);
    if let Some((pattern, name)) = text.split_once('\n') {
        let _ = glob_matches(pattern, name);
    }
});
