//! Spec strings: parsing never fails or panics, every token's span is inside the input and holds the
//! token, and planning any signature under the spec never panics on any bundled target.
#![no_main]

use libfuzzer_sys::fuzz_target;
use neverc_cc::layout::TypeTable;
use neverc_cc::planner::plan_from_spec;
use neverc_cc::signature::Signature;
use neverc_schema::Spec;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let spec = Spec::parse(text);
    for segment in &spec.segments {
        assert_eq!(&text[segment.key.span()], segment.key.text);
        for item in &segment.items {
            assert_eq!(&text[item.span()], item.text);
        }
    }
    let Ok(signature) = Signature::parse("i32 (i32, i64, double, <4 x float>, ptr, i128, float)") else {
        return;
    };
    for target in neverc_tables::BUNDLED_TARGETS {
        if let Ok(planned) = plan_from_spec(target, text, &signature, &TypeTable::new(), "f") {
            neverc_cc::plan_validation::validate_plan(&planned.plan, target, None).expect("planner output is valid");
        }
    }
});
