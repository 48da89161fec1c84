//! Plan strings: never panic; the fast path and the pest grammar accept exactly the same strings with the
//! same plan; every accepted plan serializes to text that parses back to itself; validation never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::plan::{Plan, fast};
use neverc_cc::plan_validation::validate_plan;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let grammar = Plan::parse_with_grammar(text);
    assert_eq!(
        fast::parse(text),
        grammar.clone().ok(),
        "fast path and grammar disagree on {text:?}"
    );
    match grammar {
        Ok(plan) => {
            let again = Plan::parse(&plan.serialize()).expect("a serialized plan parses");
            assert_eq!(again, plan);
            for target in neverc_tables::BUNDLED_TARGETS {
                let _ = validate_plan(&plan, target, None);
            }
        }
        Err(error) => assert!(
            error.span.start <= error.span.end && error.span.end <= text.len(),
            "{error:?}"
        ),
    }
});
