//! The LTO cache pruning policy (`--thinlto-cache-policy=`, LLVM's syntax): parsing any text gives a policy or
//! an error naming the bad part, never a panic (or an overflow in the unit arithmetic).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = neverc_link::lto::prune::parse_policy(text);
});
