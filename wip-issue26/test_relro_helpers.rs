/// A number of a `readelf -lW` row.
fn number(field: &str) -> u64 {
    u64::from_str_radix(field.trim_start_matches("0x"), 16).unwrap_or_else(|_| panic!("`{field}` is no number"))
}

/// The program headers of a `readelf -lW` listing as (type, address, file size, memory size, alignment).
fn headers(rows: &[Vec<String>]) -> Vec<(String, u64, u64, u64, u64)> {
    rows.iter()
        .filter(|row| row.len() >= 7 && row[1].starts_with("0x"))
        .map(|row| {
            (
                row[0].clone(),
                number(&row[2]),
                number(&row[4]),
                number(&row[5]),
                number(row.last().unwrap()),
            )
        })
        .collect()
}

/// A failure unless `PT_GNU_RELRO` lies in memory that `PT_LOAD`s map: inside one, or a run of them each
/// beginning where the one before ends.
fn relro_inside_loads(name: &str, program: &Path) -> Option<String> {
    let headers = headers(&program_headers(program));
    let (_, start, _, size, _) = headers.iter().find(|header| header.0 == "GNU_RELRO")?;
    let end = start + size;
    let mut loads: Vec<(u64, u64)> = headers
        .iter()
        .filter(|header| header.0 == "LOAD")
        .map(|header| (header.1, header.1 + header.3))
        .collect();
    loads.sort();
    let mut covered = *start;
    for (load_start, load_end) in loads {
        if load_start <= covered && covered < load_end {
            covered = load_end;
        }
    }
    (covered < end).then(|| {
        format!("{name}: PT_GNU_RELRO [{start:#x}, {end:#x}) is mapped only up to {covered:#x}:\n{headers:#x?}")
    })
}

