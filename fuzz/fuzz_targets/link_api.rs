//! The C plugin ABI's Link API tables: random calls into every slot of NevercLinkAPI and NevercLinkPhaseAPI
//! through the real tables, over frames lent from a linked program (and its image), the way a C callback
//! makes them: random handles (handed out, altered, forged, of earlier callbacks), cursors, capacities,
//! strides, `StructSize`s, booleans, views, and mutation begin/commit/abandon orders. Properties: no panic,
//! every status declared, pages within their capacity (`neverc_plugin_host::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    neverc_plugin_host::fuzzing::drive(data);
});
