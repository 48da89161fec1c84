#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The tables this crate was built with are exactly what the code generator produces now, every time.

use std::path::Path;

use neverc_test_support::repo;

#[test]
fn generated_files_are_what_codegen_produces_now() {
    let files = neverc_schema::target_files(&repo().join("targets")).unwrap();
    let declarations = neverc_schema::load_declarations(&repo().join("PhaseSchema.json"), &files).unwrap();
    let abi = neverc_schema::load_plugin_abi_with(
        &neverc_schema::target_files(&repo().join("abi")).unwrap(),
        &declarations.phase_schema,
    )
    .unwrap();
    let generate = || {
        let mut files = neverc_codegen::generate(&declarations, &repo()).unwrap();
        files.push(neverc_codegen::plugin_abi(&abi, &repo()).unwrap());
        files
    };
    let first = generate();
    let second = generate();
    assert_eq!(first, second, "code generation is not deterministic");
    let out_dir = Path::new(env!("OUT_DIR"));
    for file in &first {
        let built = std::fs::read_to_string(out_dir.join(&file.name)).unwrap();
        assert!(built == file.contents, "{} differs from the build's copy", file.name);
    }
}
