#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Dynamically linked executables, held to what gcc and ld.bfd make of the same sources. So far: the program
//! interpreter each target declares (`[elf] interpreter`) is the one a default `gcc` link names in
//! `PT_INTERP`.

use neverc_test_support::cross::{AARCH64, X86_64};
use neverc_test_support::{run_in, scratch, succeeded, text};

#[test]
fn the_declared_interpreter_is_the_one_gcc_and_ld_bfd_write() {
    let dir = scratch!("dynamic-interpreter");
    std::fs::write(
        dir.join("hello.c"),
        "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }\n",
    )
    .unwrap();
    for arch in [X86_64, AARCH64] {
        let program = format!("hello-{}", arch.name);
        succeeded(&run_in(arch.gcc, &dir, &["hello.c", "-o", &program]), arch.gcc);
        let readelf = format!("{}readelf", arch.binutils);
        let headers = text(&run_in(&readelf, &dir, &["-lW", &program]).stdout);
        let written = headers
            .lines()
            .find_map(|line| line.trim().strip_prefix("[Requesting program interpreter: "))
            .and_then(|rest| rest.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{program} has no PT_INTERP: {headers}"));
        let declared = neverc_tables::target_by_name(arch.name)
            .and_then(|target| target.elf)
            .and_then(|elf| elf.interpreter);
        assert_eq!(declared, Some(written), "{}", arch.name);
    }
}
