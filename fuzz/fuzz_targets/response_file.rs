//! Response files (`@FILE`): splitting never panics, and arguments quoted the way the splitter reads them
//! (every byte escaped with a backslash, an empty argument as `''`) come back exactly.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_link::response_file::split;

fuzz_target!(|data: &[u8]| {
    let arguments = split(data);
    let mut quoted = Vec::new();
    for argument in &arguments {
        if argument.is_empty() {
            quoted.extend_from_slice(b"''");
        }
        for byte in argument {
            quoted.push(b'\\');
            quoted.push(*byte);
        }
        quoted.push(b'\n');
    }
    assert_eq!(split(&quoted), arguments);
});
