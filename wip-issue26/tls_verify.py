p='runtime/link/src/image/verify.rs'
s=open(p).read()
def rep(old,new):
    global s
    assert s.count(old)==1,old
    s=s.replace(old,new)
rep("""PT_GNU_RELRO, PT_GNU_STACK, PT_LOAD,""","""PT_GNU_RELRO, PT_GNU_STACK, PT_LOAD, PT_TLS,""")
rep("""    RelroNotMapped { address: u64, end: u64, mapped_end: u64 },""","""    RelroNotMapped { address: u64, end: u64, mapped_end: u64 },
    /// `PT_TLS` starts at an address that is not a multiple of its alignment: the thread pointer offsets the
    /// link computed assume an aligned template, which the C library copies to an aligned block.
    TlsMisaligned { address: u64, alignment: u64 },""")
rep("""            ImageFinding::RelroNotMapped { .. } => "PT_GNU_RELRO reaches past the mapped memory",""","""            ImageFinding::RelroNotMapped { .. } => "PT_GNU_RELRO reaches past the mapped memory",
            ImageFinding::TlsMisaligned { .. } => "PT_TLS starts at an address its alignment does not divide",""")
rep("""                "{rule}: PT_GNU_RELRO covers {address:#x} to {end:#x}, the loads map it only up to {mapped_end:#x}"
            ),""","""                "{rule}: PT_GNU_RELRO covers {address:#x} to {end:#x}, the loads map it only up to {mapped_end:#x}"
            ),
            ImageFinding::TlsMisaligned { address, alignment } => {
                write!(formatter, "{rule}: PT_TLS at {address:#x} with alignment {alignment:#x}")
            }""")
rep("""    check_relro(&parsed.segments, &loads, &mut findings);
""","""    check_relro(&parsed.segments, &loads, &mut findings);
    check_tls(&parsed.segments, &mut findings);
""")
rep("""/// A nonzero entry point must lie inside an executable `PT_LOAD`.""","""/// `PT_TLS` must start at a multiple of its alignment (its alignment itself is checked with the loads').
fn check_tls(segments: &[ParsedSegment], findings: &mut Vec<ImageFinding>) {
    for tls in segments.iter().filter(|segment| segment.kind == PT_TLS) {
        if tls.alignment.is_power_of_two() && tls.address % tls.alignment != 0 {
            findings.push(ImageFinding::TlsMisaligned {
                address: tls.address,
                alignment: tls.alignment,
            });
        }
    }
}

/// A nonzero entry point must lie inside an executable `PT_LOAD`.""")
open(p,'w').write(s)

p='runtime/link/tests/image.rs'
s=open(p).read()
old="""#[test]
fn overlapping_segments_are_reported_in_memory_and_in_the_file() {"""
new="""#[test]
fn the_tls_template_must_start_aligned() {
    let mut layout = program(&EXIT_42);
    let headers = elf_headers_size(4);
    layout.segments[0].file_size = headers;
    layout.segments[0].memory_size = headers;
    // A template over `.data` (at 0x402000) aligned to 64 KiB.
    let tls = ProgramHeaderLayout {
        kind: ProgramHeaderKind::Tls,
        flags: SegmentFlags::READ,
        virtual_address: 0x402000,
        file_offset: 0x2000,
        file_size: 8,
        memory_size: 8,
        alignment: 0x10000,
    };
    layout.program_headers.push(tls);
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::TlsMisaligned {
            address: 0x402000,
            alignment: 0x10000
        }]
    );
    assert_eq!(findings[0].rule(), "PT_TLS starts at an address its alignment does not divide");
    layout.program_headers[0].alignment = 0x1000;
    assert_eq!(verify_image(&write(&layout).into(), &layout), Vec::new());
}

#[test]
fn overlapping_segments_are_reported_in_memory_and_in_the_file() {"""
assert old in s
s=s.replace(old,new)
open(p,'w').write(s)
