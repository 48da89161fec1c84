#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A link of 70,000 inputs (issue 23, item 5): a process may hold only `vm.max_map_count` memory maps (65,530
//! by default), so a linker that maps every input must stop mapping before it runs out. This test has a binary
//! of its own so that the one big link of the suite runs alone, never beside the small bounded runs of
//! `tests/hostile_inputs.rs`.

use std::process::Command;

use neverc_test_support::{Bounds, run_bounded, run_in, scratch, status_retrying_busy, succeeded, text};

#[test]
fn item_5_seventy_thousand_inputs_link_without_running_out_of_memory_maps() {
    let dir = scratch!("many-inputs");
    std::fs::write(
        dir.join("start.c"),
        "void _start(void) { __asm__ volatile(\"mov $60, %eax; mov $7, %edi; syscall\"); }\n",
    )
    .unwrap();
    let start = [
        "-c",
        "-O2",
        "-fno-pie",
        "-fno-asynchronous-unwind-tables",
        "start.c",
        "-o",
        "start.o",
    ];
    succeeded(&run_in("gcc", &dir, &start), "gcc");
    // An object with a section and a local symbol only: any number of copies link together. The one file is
    // named 70,000 times: each name is an input of its own, read (and mapped) again, as GNU ld reads it, so
    // the link holds as many inputs as 70,000 files would give it without 70,000 files on the disk.
    std::fs::write(dir.join("empty.c"), "static int unused[4];\nint *empty(void);\n").unwrap();
    succeeded(&run_in("gcc", &dir, &["-c", "-O0", "empty.c", "-o", "empty.o"]), "gcc");
    let mut arguments = String::from("-o prog start.o\n");
    for _ in 0..70_000 {
        arguments.push_str("empty.o\n");
    }
    std::fs::write(dir.join("inputs.rsp"), arguments).unwrap();
    let bounds = Bounds {
        timeout: std::time::Duration::from_secs(300),
        memory_kib: 8 << 20,
    };
    let output = run_bounded(env!("CARGO_BIN_EXE_neverc-spec"), &dir, &["ld", "@inputs.rsp"], bounds);
    assert!(output.status.success(), "{:?}: {}", output.status, text(&output.stderr));
    let status = status_retrying_busy(&mut Command::new(dir.join("prog")));
    assert_eq!(status.code(), Some(7));
    // Every one of the 70,000 inputs is in the link: each contributes its local `unused` to the symbol table.
    let symbols = Command::new("nm").arg(dir.join("prog")).output().unwrap();
    let unused = text(&symbols.stdout)
        .lines()
        .filter(|line| line.ends_with(" unused"))
        .count();
    assert_eq!(unused, 70_000);
    std::fs::remove_dir_all(&dir).unwrap();
}
