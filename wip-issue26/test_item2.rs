
#[test]
fn relro_with_a_large_maximum_page_size_lies_in_mapped_memory_and_the_program_runs() {
    // `-z max-page-size=0x10000` and `0x200000`; AArch64's default is 64 KiB already.
    let names = [both("relro-64k"), both("relro-2m")].concat();
    check(&names, |name, _, program| relro_inside_loads(name, program));
}
