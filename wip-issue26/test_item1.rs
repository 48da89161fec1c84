
/// The address of symbol `name` in `program` (`nm`).
fn symbol_address(program: &Path, name: &str) -> Option<u64> {
    let listing = Command::new("nm").arg(program).output().expect("nm runs");
    text(&listing.stdout).lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.len() == 3 && fields[2] == name)
            .then(|| u64::from_str_radix(fields[0], 16).ok())
            .flatten()
    })
}

#[test]
fn identical_code_folding_keeps_the_init_and_fini_pieces_and_the_programs_run() {
    // `--icf=all` (ld.bfd's build has no folding): the program runs its constructors, atexit handler and
    // destructor and exits as ld.bfd's build does, and the identical functions it calls directly still fold.
    check(&both("icf"), |name, _, program| {
        let twins = (symbol_address(program, "twin_a"), symbol_address(program, "twin_b"));
        let taken = symbol_address(program, "twin_c");
        match twins {
            (Some(a), Some(b)) if a == b && taken.is_some_and(|c| c != a) => None,
            _ => Some(format!(
                "{name}: twin_a and twin_b at {twins:x?} should fold, twin_c (address taken) at {taken:x?} not"
            )),
        }
    });
}
