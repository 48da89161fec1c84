#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The image module: the bounded writer's operations and its abort rule, ELF executables that `readelf`
//! accepts and that run, the `image_verify` rules on good and bad images, and the `-Map` side output.

use std::path::PathBuf;
use std::process::Command;

use neverc_link::image::{
    BoundedImageWriter, ElfError, ImageFinding, ImageLayout, MapFile, MapFinding, MapInputPiece, MapOutputSection,
    MapSymbol, ProgramHeaderKind, ProgramHeaderLayout, RelocationLayout, RelocationSectionLayout, SectionFlags,
    SectionKind, SectionLayout, SegmentFlags, SegmentLayout, SymbolBinding, SymbolKind, SymbolLayout, WriterError,
    WriterOperation, elf_file_size, elf_headers_size, parse_map_file, verify_image, verify_map_file, write_elf,
    write_elf_into, write_elf_moving, write_map_file,
};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol};

const BUDGET_TEXT: &str = "binary image: output budget rejected emitted image";

/// `mov eax, 60; mov edi, 42; syscall`: exit(42).
const EXIT_42: [u8; 12] = [0xb8, 0x3c, 0, 0, 0, 0xbf, 0x2a, 0, 0, 0, 0x0f, 0x05];

/// `mov dword [0x402010], 7; mov edi, [0x402000]; add edi, [0x402010]; mov eax, 60; syscall`: exit with
/// the sum of the first `.data` word and a `.bss` word it stored first.
const EXIT_DATA_PLUS_BSS: [u8; 32] = [
    0xc7, 0x04, 0x25, 0x10, 0x20, 0x40, 0x00, 0x07, 0x00, 0x00, 0x00, // mov dword [0x402010], 7
    0x8b, 0x3c, 0x25, 0x00, 0x20, 0x40, 0x00, // mov edi, [0x402000]
    0x03, 0x3c, 0x25, 0x10, 0x20, 0x40, 0x00, // add edi, [0x402010]
    0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60
    0x0f, 0x05, // syscall
];

// ---------------------------------------------------------------------------------------------------------
// Layout helpers.

fn segment(
    name: &str,
    flags: SegmentFlags,
    address: u64,
    offset: u64,
    file_size: u64,
    memory_size: u64,
) -> SegmentLayout {
    SegmentLayout {
        name: name.to_string(),
        flags,
        virtual_address: address,
        file_offset: offset,
        file_size,
        memory_size,
        alignment: 0x1000,
    }
}

fn section(
    name: &str,
    segment: usize,
    kind: SectionKind,
    flags: SectionFlags,
    address: u64,
    offset: u64,
    contents: &[u8],
) -> SectionLayout {
    SectionLayout {
        name: name.to_string(),
        segment: Some(segment),
        kind,
        flags,
        address,
        file_offset: offset,
        size: contents.len() as u64,
        alignment: 16,
        contents: contents.to_vec().into(),
    }
}

fn bss(name: &str, segment: usize, address: u64, offset: u64, size: u64) -> SectionLayout {
    SectionLayout {
        name: name.to_string(),
        segment: Some(segment),
        kind: SectionKind::NoBits,
        flags: SectionFlags::ALLOC | SectionFlags::WRITE,
        address,
        file_offset: offset,
        size,
        alignment: 16,
        contents: Vec::new().into(),
    }
}

fn symbol(name: &str, value: u64, size: u64, kind: SymbolKind, binding: SymbolBinding, section: usize) -> SymbolLayout {
    SymbolLayout {
        name: name.to_string(),
        value,
        size,
        kind,
        binding,
        section: Some(section),
        undefined: false,
    }
}

/// A headers segment (R) at 0x400000, `code` in an R+X segment at 0x401000, and an RW segment at 0x402000
/// with an 8-byte `.data` (the word 35) and a 16-byte `.bss`.
fn program(code: &[u8]) -> ImageLayout {
    let read = SegmentFlags::READ;
    let headers = elf_headers_size(3);
    let data = 35u64.to_le_bytes();
    ImageLayout {
        entry: 0x401000,
        output_kind: neverc_link::output_kind::OutputKind::StaticExecutable,
        machine: neverc_link::graph::Machine::X86_64.0,
        flags: 0,
        segments: vec![
            segment("headers", read, 0x400000, 0, headers, headers),
            segment(
                "text",
                read | SegmentFlags::EXECUTE,
                0x401000,
                0x1000,
                code.len() as u64,
                code.len() as u64,
            ),
            segment("data", read | SegmentFlags::WRITE, 0x402000, 0x2000, 8, 0x20),
        ],
        program_headers: Vec::new(),
        sections: vec![
            section(
                ".text",
                1,
                SectionKind::ProgBits,
                SectionFlags::ALLOC | SectionFlags::EXECUTE,
                0x401000,
                0x1000,
                code,
            ),
            section(
                ".data",
                2,
                SectionKind::ProgBits,
                SectionFlags::ALLOC | SectionFlags::WRITE,
                0x402000,
                0x2000,
                &data,
            ),
            bss(".bss", 2, 0x402010, 0x2008, 0x10),
        ],
        symbols: vec![
            symbol(
                "_start",
                0x401000,
                code.len() as u64,
                SymbolKind::Function,
                SymbolBinding::Global,
                0,
            ),
            symbol("answer", 0x402000, 8, SymbolKind::Object, SymbolBinding::Local, 1),
            symbol("scratch", 0x402010, 0x10, SymbolKind::Object, SymbolBinding::Global, 2),
        ],
        relocations: Vec::new(),
    }
}

fn write(layout: &ImageLayout) -> Vec<u8> {
    let size = elf_file_size(layout).unwrap();
    let image = write_elf(layout, size).unwrap();
    assert_eq!(image.len(), size);
    image.to_vec().unwrap()
}

fn output_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("image-{name}-{}", std::process::id()))
}

/// Writes `image` to a fresh executable file and returns its path.
fn save_executable(name: &str, image: &[u8]) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = output_path(name);
    std::fs::write(&path, image).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Runs `tool` with `arguments` on `path`, asserting it succeeds without a word on stderr.
fn tool(tool: &str, arguments: &[&str], path: &PathBuf) -> String {
    let output = Command::new(tool).args(arguments).arg(path).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{tool} failed: {stderr}");
    assert!(stderr.is_empty(), "{tool} complained: {stderr}");
    String::from_utf8(output.stdout).unwrap()
}

/// Runs the executable at `path` and returns its exit code (retrying while it is text file busy).
fn run(path: &PathBuf) -> Option<i32> {
    neverc_test_support::status_retrying_busy(&mut Command::new(path)).code()
}

fn rules(findings: &[ImageFinding]) -> Vec<&'static str> {
    findings.iter().map(ImageFinding::rule).collect()
}

/// Overwrites the little-endian u64 at `offset`.
fn patch_u64(image: &mut [u8], offset: usize, value: u64) {
    image[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

/// The file offset of program header `index`.
fn program_header(index: usize) -> usize {
    64 + 56 * index
}

// ---------------------------------------------------------------------------------------------------------
// The bounded writer.

#[test]
fn write_advances_the_cursor_and_overwrites() {
    let mut writer = BoundedImageWriter::with_bound(16).unwrap();
    writer.write(b"abcd").unwrap();
    assert_eq!(writer.tell(), 4);
    writer.write(b"ef").unwrap();
    assert_eq!(writer.tell(), 6);
    writer.write_at(1, b"XY").unwrap();
    assert_eq!(writer.tell(), 6, "write_at leaves the cursor");
    assert_eq!(&*writer.read_at(0, 6).unwrap(), b"aXYdef");
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"aXYdef");
}

#[test]
fn write_at_zero_fills_a_gap() {
    let mut writer = BoundedImageWriter::with_bound(8).unwrap();
    writer.write_at(5, b"z").unwrap();
    assert_eq!(writer.len(), 6);
    assert_eq!(writer.tell(), 0);
    writer.write(b"a").unwrap();
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"a\0\0\0\0z");
}

#[test]
fn read_at_past_the_end_fails_without_aborting() {
    let mut writer = BoundedImageWriter::with_bound(8).unwrap();
    writer.write(b"abc").unwrap();
    assert_eq!(&*writer.read_at(1, 2).unwrap(), b"bc");
    assert_eq!(&*writer.read_at(3, 0).unwrap(), b"");
    assert!(matches!(writer.read_at(2, 2), Err(WriterError::PastEnd { .. })));
    assert!(matches!(
        writer.read_at(u64::MAX, 2),
        Err(WriterError::RangeOverflow { .. })
    ));
    assert!(writer.abort_cause().is_none());
    writer.write(b"d").unwrap();
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"abcd");
}

#[test]
fn insert_shifts_the_tail_and_the_cursor_after_it() {
    let mut writer = BoundedImageWriter::with_bound(16).unwrap();
    writer.write(b"abef").unwrap();
    writer.insert(2, b"cd").unwrap();
    assert_eq!(&*writer.read_at(0, 6).unwrap(), b"abcdef");
    assert_eq!(
        writer.tell(),
        6,
        "the cursor keeps addressing the end of what was written"
    );
    writer.insert(6, b"g").unwrap();
    assert_eq!(writer.tell(), 6, "an insertion at the cursor does not move it");
    writer.insert(0, b"_").unwrap();
    assert_eq!(writer.tell(), 7);
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"_abcdefg");
}

#[test]
fn insert_past_the_end_fails_and_aborts() {
    let mut writer = BoundedImageWriter::with_bound(16).unwrap();
    writer.write(b"ab").unwrap();
    assert!(matches!(writer.insert(3, b"x"), Err(WriterError::PastEnd { .. })));
    assert!(matches!(writer.finish(), Err(WriterError::Aborted { .. })));
}

#[test]
fn append_writes_at_the_end_and_keeps_the_cursor() {
    let mut writer = BoundedImageWriter::with_bound(16).unwrap();
    writer.write_at(4, b"e").unwrap();
    writer.append(b"fg").unwrap();
    assert_eq!(writer.tell(), 0);
    assert_eq!(writer.len(), 7);
    writer.write(b"abcd").unwrap();
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"abcdefg");
}

#[test]
fn resize_truncates_and_zero_extends() {
    let mut writer = BoundedImageWriter::with_bound(8).unwrap();
    writer.write(b"abcdef").unwrap();
    writer.resize(3).unwrap();
    assert_eq!(writer.len(), 3);
    assert_eq!(writer.tell(), 6, "resize leaves the cursor");
    writer.resize(5).unwrap();
    assert_eq!(&*writer.read_at(0, 5).unwrap(), b"abc\0\0");
    writer.write(b"x").unwrap();
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), b"abc\0\0\0x");
}

#[test]
fn nothing_can_be_staged_before_reserve() {
    let mut writer = BoundedImageWriter::new();
    assert_eq!(writer.bound(), 0);
    let error = writer.write(b"a").unwrap_err();
    assert!(error.to_string().starts_with(BUDGET_TEXT), "{error}");
    assert!(writer.finish().is_err());
}

#[test]
fn reserve_grows_the_bound_and_never_shrinks_it() {
    let mut writer = BoundedImageWriter::new();
    writer.reserve(2).unwrap();
    writer.write(b"ab").unwrap();
    writer.reserve(4).unwrap();
    writer.reserve(4).unwrap();
    writer.write(b"cd").unwrap();
    assert_eq!(writer.bound(), 4);
    assert!(matches!(
        writer.reserve(3),
        Err(WriterError::ReserveShrinks { bound: 4, requested: 3 })
    ));
    assert!(matches!(writer.finish(), Err(WriterError::Aborted { .. })));
}

#[test]
fn every_growing_operation_past_the_bound_fails_with_the_budget_text() {
    type Operation = fn(&mut BoundedImageWriter) -> Result<(), WriterError>;
    let cases: [(WriterOperation, Operation); 5] = [
        (WriterOperation::Write, |writer| writer.write(b"12345")),
        (WriterOperation::WriteAt, |writer| writer.write_at(4, b"x")),
        (WriterOperation::Insert, |writer| writer.insert(0, b"12")),
        (WriterOperation::Append, |writer| writer.append(b"12")),
        (WriterOperation::Resize, |writer| writer.resize(5)),
    ];
    for (operation, call) in cases {
        let mut writer = BoundedImageWriter::with_bound(4).unwrap();
        writer.write(b"abc").unwrap();
        let error = call(&mut writer).unwrap_err();
        assert!(
            matches!(error, WriterError::BudgetExceeded { operation: failed, bound: 4, .. } if failed == operation),
            "{operation}: {error:?}"
        );
        assert!(error.to_string().starts_with(BUDGET_TEXT), "{error}");
        assert_eq!(
            writer.read_at(0, 3).ok(),
            None,
            "{operation}: reads fail once staging is aborted"
        );
        assert_eq!(writer.len(), 3, "{operation}: the failing call changed nothing");
    }
}

#[test]
fn an_abort_makes_every_later_call_and_finish_fail() {
    let mut writer = BoundedImageWriter::with_bound(4).unwrap();
    writer.write(b"abcde").unwrap_err();
    let attempts = [
        writer.write(b"a"),
        writer.write_at(0, b"a"),
        writer.insert(0, b"a"),
        writer.append(b"a"),
        writer.resize(0),
        writer.reserve(100),
    ];
    for attempt in attempts {
        let error = attempt.unwrap_err();
        assert!(matches!(error, WriterError::Aborted { .. }), "{error:?}");
        assert!(
            error.to_string().contains(BUDGET_TEXT),
            "the first failure is named: {error}"
        );
    }
    assert!(matches!(writer.abort_cause(), Some(WriterError::BudgetExceeded { .. })));
    let error = writer.finish().unwrap_err();
    assert!(matches!(
        error,
        WriterError::Aborted {
            operation: WriterOperation::Finish,
            ..
        }
    ));
}

#[test]
fn overflowing_offsets_and_lengths_are_errors_not_panics() {
    let mut writer = BoundedImageWriter::with_bound(u64::MAX).unwrap();
    assert!(matches!(
        writer.write_at(u64::MAX, b"ab"),
        Err(WriterError::RangeOverflow { .. })
    ));

    // Zero-extending is a hole: it allocates nothing, however large; reading all of it back is an
    // allocation error, not an abort of the process.
    let mut writer = BoundedImageWriter::with_bound(u64::MAX).unwrap();
    writer.resize(u64::MAX).unwrap();
    writer.write_at(u64::MAX - 2, b"ab").unwrap();
    assert_eq!(&*writer.read_at(u64::MAX - 3, 3).unwrap(), b"\0ab");
    assert!(matches!(
        writer.read_at(0, u64::MAX),
        Err(WriterError::Allocation { .. } | WriterError::RangeOverflow { .. })
    ));
    let image = writer.finish().unwrap();
    assert_eq!((image.len(), image.stored_len()), (u64::MAX, 2));

    let mut writer = BoundedImageWriter::with_bound(u64::MAX).unwrap();
    assert!(matches!(
        writer.insert(u64::MAX, b"a"),
        Err(WriterError::PastEnd { .. })
    ));

    let mut writer = BoundedImageWriter::with_bound(16).unwrap();
    let error = writer.write_at(u64::MAX - 1, b"abc").unwrap_err();
    assert!(matches!(error, WriterError::RangeOverflow { .. }));
    assert!(error.to_string().starts_with(BUDGET_TEXT), "{error}");
}

// ---------------------------------------------------------------------------------------------------------
// ELF executables.

#[test]
fn moving_the_contents_writes_the_same_image_without_copying_them() {
    let layout = program(&EXIT_DATA_PLUS_BSS);
    let expected = write(&layout);
    let mut moved = layout.clone();
    let text = moved
        .sections
        .iter()
        .position(|section| section.name == ".text")
        .unwrap();
    let allocation = moved.sections[text].contents.extents()[0].bytes().as_ptr();
    let image = write_elf_moving(&mut moved, elf_file_size(&layout).unwrap()).unwrap();
    assert_eq!(image.to_vec().unwrap(), expected);
    // The section's bytes are the image's now (the same allocation); the layout keeps their lengths.
    assert!(
        image
            .extents()
            .iter()
            .any(|extent| extent.bytes().as_ptr() == allocation)
    );
    for (before, after) in layout.sections.iter().zip(&moved.sections) {
        assert_eq!(after.contents.len(), before.contents.len(), "{}", before.name);
        assert_eq!(after.contents.stored_len(), 0, "{}", before.name);
    }
    assert_eq!(verify_image(&image, &moved), Vec::new());
    let path = save_executable("moved", &expected);
    assert_eq!(run(&path), Some(42));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn exit_42_is_accepted_by_readelf_and_runs() {
    let layout = program(&EXIT_42);
    let image = write(&layout);
    assert_eq!(verify_image(&image.clone().into(), &layout), Vec::new());
    let path = save_executable("exit42", &image);

    let headers = tool("readelf", &["-lSW"], &path);
    for expected in [
        ".text",
        ".data",
        ".bss",
        ".symtab",
        ".strtab",
        ".shstrtab",
        "GNU_STACK",
        "Entry point 0x401000",
    ] {
        assert!(headers.contains(expected), "readelf -lSW lacks {expected}:\n{headers}");
    }
    assert!(
        headers.contains("R E 0x1000"),
        "text is R+X with 4 KiB alignment:\n{headers}"
    );
    assert!(headers.contains("RW  0x1000"), "data is RW:\n{headers}");
    assert!(
        headers.contains("RW  0x10"),
        "the stack is RW, not executable:\n{headers}"
    );
    assert!(!headers.contains("RWE"), "{headers}");

    let symbols = tool("nm", &[], &path);
    assert!(symbols.contains("0000000000401000 T _start"), "{symbols}");
    assert!(symbols.contains("0000000000402000 d answer"), "{symbols}");
    assert!(symbols.contains("0000000000402010 B scratch"), "{symbols}");

    assert_eq!(run(&path), Some(42));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn data_and_bss_are_mapped_writable() {
    let layout = program(&EXIT_DATA_PLUS_BSS);
    let image = write(&layout);
    assert_eq!(verify_image(&image.clone().into(), &layout), Vec::new());
    let path = save_executable("data-bss", &image);
    tool("readelf", &["-lSW"], &path);
    assert_eq!(run(&path), Some(42), "35 from .data plus 7 stored in .bss");
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn two_writes_of_one_layout_are_byte_identical() {
    let layout = program(&EXIT_42);
    assert_eq!(write(&layout), write(&layout.clone()));
}

#[test]
fn the_object_crate_reads_back_what_was_laid_out() {
    let layout = program(&EXIT_42);
    let image = write(&layout);
    let file = object::File::parse(&*image).unwrap();
    assert_eq!(file.architecture(), object::Architecture::X86_64);
    assert_eq!(file.kind(), object::ObjectKind::Executable);
    assert_eq!(file.entry(), 0x401000);
    let segments: Vec<(u64, u64)> = file
        .segments()
        .map(|segment| (segment.address(), segment.size()))
        .collect();
    assert_eq!(
        segments,
        [(0x400000, elf_headers_size(3)), (0x401000, 12), (0x402000, 0x20)]
    );
    let text = file.section_by_name(".text").unwrap();
    assert_eq!((text.address(), text.data().unwrap()), (0x401000, &EXIT_42[..]));
    let bss = file.section_by_name(".bss").unwrap();
    assert_eq!((bss.address(), bss.size()), (0x402010, 0x10));
    let start = file.symbols().find(|symbol| symbol.name() == Ok("_start")).unwrap();
    assert_eq!(
        (start.address(), start.size(), start.kind()),
        (0x401000, 12, object::SymbolKind::Text)
    );
    assert!(start.is_global());
    assert_eq!(start.section_index(), Some(text.index()));
}

#[test]
fn aarch64_is_a_parameter() {
    let mut layout = program(&[0x40, 0x05, 0x80, 0xd2, 0xa8, 0x0b, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4]);
    layout.machine = neverc_link::graph::Machine::AARCH64.0;
    let image = write(&layout);
    assert_eq!(verify_image(&image.clone().into(), &layout), Vec::new());
    let file = object::File::parse(&*image).unwrap();
    assert_eq!(file.architecture(), object::Architecture::Aarch64);
    let path = output_path("aarch64");
    std::fs::write(&path, &image).unwrap();
    assert!(tool("readelf", &["-hW"], &path).contains("AArch64"));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn an_image_without_symbols_has_no_symtab() {
    let mut layout = program(&EXIT_42);
    layout.symbols.clear();
    let image = write(&layout);
    assert_eq!(verify_image(&image.clone().into(), &layout), Vec::new());
    let file = object::File::parse(&*image).unwrap();
    assert!(file.section_by_name(".symtab").is_none());
    assert!(file.section_by_name(".shstrtab").is_some());
}

#[test]
fn an_image_larger_than_the_bound_is_rejected() {
    let layout = program(&EXIT_42);
    let size = elf_file_size(&layout).unwrap();
    let error = write_elf(&layout, size - 1).unwrap_err();
    assert!(
        matches!(error, ElfError::Writer(WriterError::BudgetExceeded { .. })),
        "{error:?}"
    );
    assert!(error.to_string().starts_with(BUDGET_TEXT), "{error}");
}

#[test]
fn the_writer_rejects_layouts_it_cannot_write() {
    let base = program(&EXIT_42);
    let mut cases: Vec<(&str, ImageLayout)> = Vec::new();

    let mut layout = base.clone();
    layout.segments[1].file_offset = 0x1008;
    cases.push(("not congruent", layout));
    let mut layout = base.clone();
    layout.segments[1].alignment = 0x1800;
    cases.push(("neither zero nor a power of two", layout));
    let mut layout = base.clone();
    layout.segments[2].file_size = 0x40;
    cases.push(("exceeds memory size", layout));
    let mut layout = base.clone();
    layout.segments.swap(1, 2);
    layout.sections[0].segment = Some(2);
    layout.sections[1].segment = Some(1);
    layout.sections[2].segment = Some(1);
    cases.push(("segments must ascend", layout));
    let mut layout = base.clone();
    layout.sections[2].contents = vec![0; 16].into();
    cases.push(("NoBits section cannot have contents", layout));
    let mut layout = base.clone();
    layout.sections[1].size = 4;
    cases.push(("content bytes for a section of size 4", layout));
    let mut layout = base.clone();
    layout.sections[1].file_offset = 0x1004;
    cases.push(("overlap in the file", layout));
    let mut layout = base.clone();
    layout.sections[0].file_offset = 0x40;
    cases.push(("overlap the headers", layout));
    let mut layout = base.clone();
    layout.sections[0].segment = Some(7);
    cases.push(("segment 7 does not exist", layout));
    let mut layout = base.clone();
    layout.symbols[0].section = Some(9);
    cases.push(("section 9 does not exist", layout));
    let mut layout = base.clone();
    layout.sections[1].name = ".strtab".to_string();
    cases.push(("reserved", layout));
    let mut layout = base.clone();
    layout.symbols[0].name = "a\0b".to_string();
    cases.push(("NUL", layout));
    let mut layout = base;
    layout.segments[2].memory_size = u64::MAX;
    cases.push(("overflows u64", layout));

    for (expected, layout) in cases {
        let error = write_elf(&layout, u64::MAX).unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("binary image: "), "{message}");
        assert!(message.contains(expected), "expected `{expected}` in `{message}`");
        assert_eq!(elf_file_size(&layout), Err(error));
    }
}

// ---------------------------------------------------------------------------------------------------------
// The image_verify rules.

#[test]
fn a_writable_executable_segment_is_forbidden() {
    let mut layout = program(&EXIT_42);
    layout.segments[1].flags = SegmentFlags::READ | SegmentFlags::WRITE | SegmentFlags::EXECUTE;
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::WritableExecutable {
            segment: 1,
            address: 0x401000
        }]
    );
    assert_eq!(findings[0].rule(), "writable-executable segment is forbidden");
    assert!(
        findings[0]
            .to_string()
            .starts_with("writable-executable segment is forbidden")
    );
}

#[test]
fn the_entry_point_must_lie_in_a_loaded_segment() {
    let mut layout = program(&EXIT_42);
    // In the data segment, as `-e` may name a data symbol (GNU ld allows it): accepted.
    layout.entry = 0x402000;
    assert_eq!(verify_image(&write(&layout).into(), &layout), Vec::new());
    // Past everything loaded.
    layout.entry = 0x403000;
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(findings, [ImageFinding::EntryOutsideLoaded { entry: 0x403000 }]);
    assert_eq!(findings[0].rule(), "entry point lies outside every loaded segment");

    // One past the end of the code is still outside; a zero entry is not checked.
    layout.entry = 0x401000 + EXIT_42.len() as u64;
    assert_eq!(
        rules(&verify_image(&write(&layout).into(), &layout)),
        ["entry point lies outside every loaded segment"]
    );
    layout.entry = 0;
    assert_eq!(verify_image(&write(&layout).into(), &layout), Vec::new());
}

#[test]
fn the_program_headers_must_be_loaded() {
    let mut layout = program(&EXIT_42);
    let headers = elf_headers_size(3);
    // The first segment now maps the ELF header only: `AT_PHDR` would point at unmapped memory.
    layout.segments[0].file_size = 64;
    layout.segments[0].memory_size = 64;
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::ProgramHeadersNotLoaded {
            file_offset: 64,
            size: headers - 64
        }]
    );
    assert_eq!(findings[0].rule(), "program headers lie outside every loaded segment");
}

#[test]
fn relro_must_lie_in_memory_the_loads_map() {
    let mut layout = program(&EXIT_42);
    let headers = elf_headers_size(4);
    layout.segments[0].file_size = headers;
    layout.segments[0].memory_size = headers;
    // RELRO over the data segment to the end of its page, which the segment maps only 0x20 bytes of (with a
    // 64 KiB maximum page size, the rest of the range is unmapped on a system with 4 KiB pages).
    layout.program_headers.push(ProgramHeaderLayout {
        kind: ProgramHeaderKind::GnuRelro,
        flags: SegmentFlags::READ,
        virtual_address: 0x402000,
        file_offset: 0x2000,
        file_size: 0x1000,
        memory_size: 0x1000,
        alignment: 1,
    });
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::RelroNotMapped {
            address: 0x402000,
            end: 0x403000,
            mapped_end: 0x402020
        }]
    );
    assert_eq!(findings[0].rule(), "PT_GNU_RELRO reaches past the mapped memory");
    // The data segment padded in memory to the end of the page maps all of it.
    layout.segments[2].memory_size = 0x1000;
    assert_eq!(verify_image(&write(&layout).into(), &layout), Vec::new());
}

#[test]
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
    assert_eq!(
        findings[0].rule(),
        "PT_TLS starts at an address its alignment does not divide"
    );
    if let Some(tls) = layout.program_headers.last_mut() {
        tls.alignment = 0x1000;
    }
    assert_eq!(verify_image(&write(&layout).into(), &layout), Vec::new());
}

#[test]
fn overlapping_segments_are_reported_in_memory_and_in_the_file() {
    let mut layout = program(&EXIT_42);
    layout.segments[1].file_size = 0x1010;
    layout.segments[1].memory_size = 0x1010;
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [
            ImageFinding::SegmentsOverlapInMemory { first: 1, second: 2 },
            ImageFinding::SegmentsOverlapInFile { first: 1, second: 2 },
        ]
    );
}

#[test]
fn trailing_bytes_are_unclaimed() {
    let layout = program(&EXIT_42);
    let mut image = write(&layout);
    let size = image.len() as u64;
    image.extend_from_slice(b"junk");
    let findings = verify_image(&image.clone().into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::TrailingBytes {
            claimed_end: size,
            image_size: size + 4
        }]
    );
    assert_eq!(findings[0].rule(), "unclaimed bytes trail the declared image ranges");
}

#[test]
fn unsorted_segments_are_reported() {
    let layout = program(&EXIT_42);
    let mut image = write(&layout);
    let (first, second) = (program_header(1), program_header(2));
    let text: Vec<u8> = image[first..second].to_vec();
    image.copy_within(second..second + 56, first);
    image[second..second + 56].copy_from_slice(&text);
    let findings = verify_image(&image.clone().into(), &layout);
    assert!(
        findings.contains(&ImageFinding::SegmentsUnsorted {
            segment: 2,
            address: 0x401000,
            previous: 0x402000
        }),
        "{findings:?}"
    );
    assert!(rules(&findings).contains(&"image disagrees with the layout"));
}

#[test]
fn alignments_must_be_powers_of_two() {
    let layout = program(&EXIT_42);
    let mut image = write(&layout);
    patch_u64(&mut image, program_header(1) + 48, 0x1800);
    let findings = verify_image(&image.clone().into(), &layout);
    assert!(
        findings.contains(&ImageFinding::AlignmentNotPowerOfTwo {
            item: "segment 1".to_string(),
            alignment: 0x1800
        }),
        "{findings:?}"
    );
}

#[test]
fn segment_ranges_must_lie_inside_the_image() {
    let layout = program(&EXIT_42);
    let mut image = write(&layout);
    patch_u64(&mut image, program_header(2) + 32, 0x10_0000);
    patch_u64(&mut image, program_header(2) + 40, 0x10_0000);
    let findings = verify_image(&image.clone().into(), &layout);
    assert!(
        rules(&findings).contains(&"range lies outside the image"),
        "{findings:?}"
    );
}

#[test]
fn an_executable_stack_is_forbidden() {
    let layout = program(&EXIT_42);
    let mut image = write(&layout);
    image[program_header(3) + 4] = 7;
    assert_eq!(
        verify_image(&image.clone().into(), &layout),
        [ImageFinding::ExecutableStack]
    );
}

#[test]
fn allocated_sections_must_lie_in_a_segment() {
    let mut layout = program(&EXIT_42);
    layout.sections.push(SectionLayout {
        name: ".orphan".to_string(),
        segment: None,
        kind: SectionKind::ProgBits,
        flags: SectionFlags::ALLOC,
        address: 0x500000,
        file_offset: 0x2008,
        size: 4,
        alignment: 4,
        contents: vec![1, 2, 3, 4].into(),
    });
    // A non-allocated section needs no segment.
    layout.sections.push(SectionLayout {
        name: ".comment".to_string(),
        segment: None,
        kind: SectionKind::ProgBits,
        flags: SectionFlags::empty(),
        address: 0,
        file_offset: 0x200c,
        size: 4,
        alignment: 1,
        contents: b"hi!\0".to_vec().into(),
    });
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::SectionOutsideSegment {
            section: ".orphan".to_string(),
            address: 0x500000,
            size: 4
        }]
    );
}

#[test]
fn sections_must_lie_in_their_declared_segment() {
    let mut layout = program(&EXIT_42);
    layout.sections[1].segment = Some(1);
    let findings = verify_image(&write(&layout).into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::SectionOutsideDeclaredSegment {
            section: ".data".to_string(),
            segment: 1
        }]
    );
}

#[test]
fn an_executable_is_written_into_an_empty_writer() {
    let layout = program(&EXIT_42);
    let mut writer = BoundedImageWriter::with_bound(u64::MAX).unwrap();
    writer.write(b"x").unwrap();
    let error = write_elf_into(&layout, &mut writer).unwrap_err();
    assert_eq!(error, ElfError::WriterNotEmpty { length: 1 });

    let mut writer = BoundedImageWriter::with_bound(elf_file_size(&layout).unwrap()).unwrap();
    write_elf_into(&layout, &mut writer).unwrap();
    assert_eq!(writer.finish().unwrap().to_vec().unwrap(), write(&layout));
}

#[test]
fn every_violation_is_reported_not_just_the_first() {
    let mut layout = program(&EXIT_42);
    layout.segments[1].flags = SegmentFlags::READ | SegmentFlags::WRITE | SegmentFlags::EXECUTE;
    layout.entry = 0x403004;
    let mut image = write(&layout);
    image.push(0);
    assert_eq!(
        rules(&verify_image(&image.clone().into(), &layout)),
        [
            "writable-executable segment is forbidden",
            "entry point lies outside every loaded segment",
            "unclaimed bytes trail the declared image ranges",
        ]
    );
}

#[test]
fn the_image_is_compared_with_its_layout() {
    let layout = program(&EXIT_42);
    let image = write(&layout);
    let mut other = layout.clone();
    other.entry = 0x401004;
    other.segments[2].memory_size = 0x40;
    other.sections[2].size = 0x30;
    other.sections.push(bss(".tbss", 2, 0x402040, 0x2040, 0));
    other.sections.remove(1);
    let findings = verify_image(&image.into(), &other);
    let messages: Vec<String> = findings.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "image disagrees with the layout: the image has e_entry 0x401000, the layout says 0x401004",
            "image disagrees with the layout: segment data (RW ) has p_memsz 0x20, the layout says 0x40",
            "image disagrees with the layout: section .bss has sh_size 0x10, the layout says 0x30",
            "layout section is missing from the image: section .tbss",
            "image section is not declared by the layout: section .data",
        ]
    );
}

#[test]
fn garbage_is_malformed() {
    let layout = program(&EXIT_42);
    let findings = verify_image(
        &b"not an ELF file at all, not even close to sixty-four bytes long...."
            .to_vec()
            .into(),
        &layout,
    );
    assert_eq!(
        rules(&findings),
        ["image is not a well-formed ELF64 little-endian file"]
    );
    let mut image = write(&layout);
    image.truncate(0x1800);
    let findings = verify_image(&image.clone().into(), &layout);
    assert!(
        rules(&findings).contains(&"image is not a well-formed ELF64 little-endian file"),
        "{findings:?}"
    );
    assert!(
        rules(&findings).contains(&"range lies outside the image"),
        "{findings:?}"
    );
}

// ---------------------------------------------------------------------------------------------------------
// The map file.

fn map_for(layout: &ImageLayout) -> MapFile {
    let pieces = |section: &SectionLayout| -> Vec<MapInputPiece> {
        let symbols: Vec<MapSymbol> = layout
            .symbols
            .iter()
            .filter(|symbol| symbol.value >= section.address && symbol.value < section.address + section.size.max(1))
            .map(|symbol| MapSymbol {
                name: symbol.name.clone(),
                address: symbol.value,
                size: symbol.size,
            })
            .collect();
        vec![MapInputPiece {
            file: "start.o".to_string(),
            section: section.name.clone(),
            address: section.address,
            size: section.size,
            alignment: 1,
            symbols,
        }]
    };
    MapFile {
        output_sections: layout
            .sections
            .iter()
            .map(|section| MapOutputSection {
                name: section.name.clone(),
                address: section.address,
                size: section.size,
                alignment: section.alignment,
                inputs: pieces(section),
            })
            .collect(),
    }
}

#[test]
fn the_map_file_looks_like_lld_output() {
    let text = write_map_file(&map_for(&program(&EXIT_42)));
    let expected = "             VMA              LMA     Size Align Out     In      Symbol
          401000           401000        c    16 .text
          401000           401000        c     1         start.o:(.text)
          401000           401000        c     1                 _start
          402000           402000        8    16 .data
          402000           402000        8     1         start.o:(.data)
          402000           402000        8     1                 answer
          402010           402010       10    16 .bss
          402010           402010       10     1         start.o:(.bss)
          402010           402010       10     1                 scratch
";
    assert_eq!(text, expected);
}

#[test]
fn the_map_file_round_trips_and_verifies() {
    let layout = program(&EXIT_42);
    let mut map = map_for(&layout);
    map.output_sections[0].inputs.push(MapInputPiece {
        file: "libc.a(exit.o)".to_string(),
        section: ".text.exit".to_string(),
        address: 0x40100c,
        size: 0,
        alignment: 4,
        symbols: vec![
            MapSymbol {
                name: "exit".to_string(),
                address: 0x40100c,
                size: 0,
            },
            MapSymbol {
                name: "zz".to_string(),
                address: 0x40100c,
                size: 0,
            },
        ],
    });
    let text = write_map_file(&map);
    assert_eq!(parse_map_file(&text).unwrap(), map);
    assert_eq!(write_map_file(&map), text, "deterministic");
    assert_eq!(verify_map_file(&text, &layout), Vec::new());
}

#[test]
fn the_map_file_is_checked_against_the_layout() {
    let layout = program(&EXIT_42);
    let mut map = map_for(&layout);
    map.output_sections[0].address = 0x401004;
    map.output_sections[1].size = 4;
    map.output_sections.remove(2);
    map.output_sections.push(MapOutputSection {
        name: ".stray".to_string(),
        address: 0x403000,
        size: 4,
        alignment: 1,
        inputs: Vec::new(),
    });
    map.output_sections.push(MapOutputSection {
        name: ".shstrtab".to_string(),
        address: 0,
        size: 0x20,
        alignment: 1,
        inputs: Vec::new(),
    });
    let findings = verify_map_file(&write_map_file(&map), &layout);
    assert_eq!(
        findings,
        [
            MapFinding::AddressMismatch {
                section: ".text".to_string(),
                expected: 0x401000,
                found: 0x401004
            },
            MapFinding::SizeMismatch {
                section: ".data".to_string(),
                expected: 8,
                found: 4
            },
            MapFinding::MissingSection {
                section: ".bss".to_string()
            },
            MapFinding::UnknownSection {
                section: ".stray".to_string()
            },
            MapFinding::PieceOutsideSection {
                section: ".text".to_string(),
                file: "start.o".to_string(),
                input_section: ".text".to_string(),
            },
            MapFinding::PieceOutsideSection {
                section: ".data".to_string(),
                file: "start.o".to_string(),
                input_section: ".data".to_string(),
            },
        ]
    );
}

#[test]
fn a_map_file_that_cannot_be_read_is_one_finding() {
    let layout = program(&EXIT_42);
    for (text, line) in [
        ("", 1),
        ("VMA LMA\n", 1),
        (
            "             VMA              LMA     Size Align Out     In      Symbol\n  1 2 3 x .text\n",
            2,
        ),
        (
            "             VMA              LMA     Size Align Out     In      Symbol\n  1 2 3 4         a.o:(.text)\n",
            2,
        ),
        (
            "             VMA              LMA     Size Align Out     In      Symbol\n  1 2 3 4    .text\n",
            2,
        ),
    ] {
        let findings = verify_map_file(text, &layout);
        assert!(
            matches!(&findings[..], [MapFinding::Unparsable(error)] if error.line == line),
            "{text:?}: {findings:?}"
        );
    }
}

#[test]
fn kept_relocations_are_written_against_the_symbol_table_and_the_image_verifies() {
    use object::read::elf::{FileHeader as _, SectionHeader as _};
    let mut layout = program(&EXIT_42);
    // A section symbol for `.data`, listed after the others: the writer puts locals first.
    layout.symbols.push(SymbolLayout {
        name: String::new(),
        value: 0x402000,
        size: 0,
        kind: SymbolKind::Section,
        binding: SymbolBinding::Local,
        section: Some(1),
        undefined: false,
    });
    let relocations = vec![
        // Against `scratch` (global: `.symtab` index 4, after the null symbol and three locals).
        RelocationLayout {
            offset: 0x401001,
            kind: 10,
            symbol: Some(2),
            addend: 0,
        },
        // Against `.data`'s section symbol (local: index 2), and against nothing (symbol 0).
        RelocationLayout {
            offset: 0x401006,
            kind: 10,
            symbol: Some(3),
            addend: 4,
        },
        RelocationLayout {
            offset: 0x401006,
            kind: 0,
            symbol: None,
            addend: -1,
        },
    ];
    layout.relocations = vec![RelocationSectionLayout::new(0, ".text", relocations)];
    let image = write(&layout);
    let path = save_executable("kept-relocations", &image);
    let listing = tool("readelf", &["-SrsW"], &path);
    assert!(listing.contains(".rela.text"), "{listing}");
    assert_eq!(run(&path), Some(42));
    assert!(verify_image(&write_elf(&layout, elf_file_size(&layout).unwrap()).unwrap(), &layout).is_empty());
    let endian = object::LittleEndian;
    let header = object::elf::FileHeader64::<object::LittleEndian>::parse(&image[..]).unwrap();
    let sections = header.sections(endian, &image[..]).unwrap();
    let (index, rela) = sections
        .iter()
        .enumerate()
        .find(|(_, section)| sections.section_name(endian, section).unwrap() == b".rela.text")
        .unwrap();
    let symtab = sections
        .iter()
        .position(|section| section.sh_type(endian) == object::elf::SHT_SYMTAB)
        .unwrap();
    // After the layout's three sections, before `.symtab`.
    assert_eq!(index, 4);
    assert_eq!(rela.sh_type(endian), object::elf::SHT_RELA);
    assert_eq!(rela.sh_flags(endian), u64::from(object::elf::SHF_INFO_LINK));
    assert_eq!(rela.sh_link(endian) as usize, symtab);
    assert_eq!(rela.sh_info(endian), 1);
    let bytes = rela.data(endian, &image[..]).unwrap();
    let info = |entry: usize| u64::from_le_bytes(bytes[entry * 24 + 8..entry * 24 + 16].try_into().unwrap());
    assert_eq!(info(0), (4 << 32) | 10);
    assert_eq!(info(1), (2 << 32) | 10);
    assert_eq!(info(2), 0);
    let symbols = tool("readelf", &["-sW"], &path);
    assert!(
        symbols
            .lines()
            .any(|line| line.contains("2: 0000000000402000") && line.contains("SECTION")),
        "{symbols}"
    );
}

/// `program(&EXIT_42)` as a position-independent image would carry it: a `.rela.dyn` after the code with
/// one `RELATIVE` relocation of `.data`'s word, and a `.dynamic` after `.data` (`DT_RELA`, `DT_RELASZ`,
/// `DT_NULL`) under `PT_DYNAMIC`; `.bss` moves after it. Returns the layout and the file offsets of the
/// relocation's `r_offset` and of `DT_RELASZ`'s value.
fn dynamic_program() -> (ImageLayout, usize, usize) {
    let mut layout = program(&EXIT_42);
    let mut rela = Vec::new();
    for word in [0x402000u64, 8, 0x402000] {
        rela.extend_from_slice(&word.to_le_bytes());
    }
    let mut dynamic = Vec::new();
    for word in [7u64, 0x401010, 8, 24, 0, 0] {
        dynamic.extend_from_slice(&word.to_le_bytes());
    }
    // PT_DYNAMIC is a fourth program header: the headers segment grows to hold it.
    let headers = elf_headers_size(4);
    layout.segments[0].file_size = headers;
    layout.segments[0].memory_size = headers;
    layout.segments[1].file_size = 0x28;
    layout.segments[1].memory_size = 0x28;
    layout.segments[2].file_size = 0x38;
    layout.segments[2].memory_size = 0x50;
    let mut rela_section = section(
        ".rela.dyn",
        1,
        SectionKind::Rela,
        SectionFlags::ALLOC,
        0x401010,
        0x1010,
        &rela,
    );
    rela_section.alignment = 8;
    let mut dynamic_section = section(
        ".dynamic",
        2,
        SectionKind::Dynamic,
        SectionFlags::ALLOC | SectionFlags::WRITE,
        0x402008,
        0x2008,
        &dynamic,
    );
    dynamic_section.alignment = 8;
    layout.sections.insert(1, rela_section);
    layout.sections.insert(3, dynamic_section);
    layout.sections[4] = bss(".bss", 2, 0x402040, 0x2038, 0x10);
    for symbol in &mut layout.symbols {
        if let Some(section) = symbol.section.as_mut()
            && *section >= 1
        {
            *section += if *section >= 2 { 2 } else { 1 };
        }
    }
    layout.symbols[2].value = 0x402040;
    layout.program_headers.push(ProgramHeaderLayout {
        kind: ProgramHeaderKind::Dynamic,
        flags: SegmentFlags::READ | SegmentFlags::WRITE,
        virtual_address: 0x402008,
        file_offset: 0x2008,
        file_size: 48,
        memory_size: 48,
        alignment: 8,
    });
    (layout, 0x1010, 0x2008 + 24)
}

#[test]
fn dynamic_entries_must_describe_their_sections_and_dynamic_relocations_patch_writable_memory() {
    let (layout, relocation, relasz) = dynamic_program();
    let image = write(&layout);
    assert_eq!(verify_image(&image.clone().into(), &layout), Vec::new());
    // DT_RELASZ says two relocations where there is one.
    let mut wrong_size = image.clone();
    patch_u64(&mut wrong_size, relasz, 48);
    let findings = verify_image(&wrong_size.into(), &layout);
    assert_eq!(
        findings,
        [ImageFinding::DynamicMismatch {
            what: "DT_RELASZ".to_string(),
            expected: 24,
            found: 48
        }]
    );
    assert_eq!(
        findings[0].rule(),
        "the dynamic section disagrees with the sections it names"
    );
    // The relocation patches the code.
    let mut into_code = image;
    patch_u64(&mut into_code, relocation, 0x401000);
    assert_eq!(
        verify_image(&into_code.clone().into(), &layout),
        [ImageFinding::DynamicRelocationNotWritable {
            section: ".rela.dyn".to_string(),
            offset: 0x401000
        }]
    );
    // Unless the image has text relocations (`-z notext`): DT_TEXTREL, or DF_TEXTREL in DT_FLAGS, where the
    // last entry was DT_NULL; the loader then makes the pages writable while it relocates them.
    for (tag, value) in [(22u64, 0u64), (30, 0x4)] {
        let mut text_relocations = into_code.clone();
        patch_u64(&mut text_relocations, relasz + 8, tag);
        patch_u64(&mut text_relocations, relasz + 16, value);
        assert_eq!(verify_image(&text_relocations.into(), &layout), Vec::new(), "tag {tag}");
    }
    // DT_FLAGS without DF_TEXTREL changes nothing.
    let mut other_flags = into_code;
    patch_u64(&mut other_flags, relasz + 8, 30);
    patch_u64(&mut other_flags, relasz + 16, 0x8);
    assert_eq!(verify_image(&other_flags.into(), &layout).len(), 1);
}
