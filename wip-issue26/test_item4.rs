
/// `PT_TLS` of a `readelf -lW` listing: (address, file size, memory size, alignment).
fn tls_header(rows: &[Vec<String>]) -> Option<(u64, u64, u64, u64)> {
    headers(rows)
        .into_iter()
        .find(|header| header.0 == "TLS")
        .map(|(_, address, file_size, memory_size, alignment)| (address, file_size, memory_size, alignment))
}

#[test]
fn over_aligned_thread_local_data_links_and_runs_like_ld_bfds_builds() {
    // Each thread prints its variables' offsets from the thread pointer, so the TPOFF values the link wrote
    // are compared with ld.bfd's; `PT_TLS` must be aligned as ld.bfd aligns it, at an aligned start.
    let names = [both("tls-glibc"), both("tls-musl")].concat();
    check(&names, |name, case, program| {
        let theirs = tls_header(&program_header_rows(&read_text(&case.join("ref.segments"))));
        let ours = tls_header(&program_headers(program));
        match (ours, theirs) {
            (Some((address, file_size, memory_size, alignment)), Some((_, their_file, their_memory, their_alignment))) => {
                let fields = (file_size, memory_size, alignment);
                let their_fields = (their_file, their_memory, their_alignment);
                if fields != their_fields || address % alignment != 0 {
                    Some(format!(
                        "{name}: PT_TLS at {address:#x} (file size, memory size, alignment) {fields:#x?}, ld.bfd's \
                         {their_fields:#x?}"
                    ))
                } else {
                    relro_inside_loads(name, program)
                }
            }
            _ => Some(format!("{name}: PT_TLS: ours {ours:x?}, ld.bfd's {theirs:x?}")),
        }
    });
}
