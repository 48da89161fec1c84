//! The conformance tests generated at build time from the bundled declarations (see `build.rs`).

include!(concat!(env!("OUT_DIR"), "/conformance_tests.rs"));
