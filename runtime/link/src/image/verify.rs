//! The checks of the sealed `image_verify` gate: the written bytes are parsed again (with `object`'s ELF
//! reader, so the gate judges what is on disk rather than what the writer meant) and compared with the
//! layout the link computed.
//!
//! The bytes may come from a plugin that replaced `emit_image` or intercepted `post_emit`, so nothing about
//! them is trusted: every rule runs over the parsed headers, and every violation is reported, not just the
//! first. Segment indices in findings count `PT_LOAD` headers in file order, which is the layout order when
//! the image matches its layout.

use std::fmt;

use object::LittleEndian;
use object::elf::FileHeader64;
use object::read::elf::{FileHeader as _, ProgramHeader as _, SectionHeader as _};

use super::dynamic_tags::{
    DF_TEXTREL, DT_FINI_ARRAY, DT_FINI_ARRAYSZ, DT_FLAGS, DT_GNU_HASH, DT_HASH, DT_INIT_ARRAY, DT_INIT_ARRAYSZ,
    DT_JMPREL, DT_NULL, DT_PLTRELSZ, DT_PREINIT_ARRAY, DT_PREINIT_ARRAYSZ, DT_RELA, DT_RELASZ, DT_RELR, DT_RELRSZ,
    DT_STRSZ, DT_STRTAB, DT_SYMTAB, DT_TEXTREL, DT_VERDEF, DT_VERNEED, DT_VERSYM,
};
use super::elf::{
    FILE_HEADER_SIZE, ImageLayout, PF_W, PF_X, PT_DYNAMIC, PT_GNU_RELRO, PT_GNU_STACK, PT_LOAD, PT_TLS,
    SECTION_HEADER_SIZE, SHF_ALLOC, SHF_COMPRESSED, SHF_EXECINSTR, SHF_MERGE, SHF_STRINGS, SHF_TLS, SHF_WRITE,
    SHT_NOBITS, SYNTHESIZED_SECTIONS, SegmentLayout, permission_string,
};
use super::sparse::SparseBytes;
use crate::sections::OutputSectionId;

/// One violation of the image rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageFinding {
    /// The bytes are not a well-formed ELF64 little-endian file (or a header table cannot be read).
    Malformed { reason: String },
    /// `e_type` is not the layout's.
    NotExecutable { e_type: u16 },
    /// A `PT_LOAD` starts below the one before it.
    SegmentsUnsorted {
        segment: usize,
        address: u64,
        previous: u64,
    },
    /// An alignment that is neither zero nor a power of two.
    AlignmentNotPowerOfTwo { item: String, alignment: u64 },
    /// `p_offset % p_align != p_vaddr % p_align`.
    SegmentMisaligned {
        segment: usize,
        file_offset: u64,
        address: u64,
        alignment: u64,
    },
    /// `p_filesz > p_memsz`.
    FileSizeExceedsMemorySize {
        segment: usize,
        file_size: u64,
        memory_size: u64,
    },
    /// A segment's or section's file range reaches past the end of the image (or overflows).
    OutsideImage {
        item: String,
        file_offset: u64,
        size: u64,
        image_size: u64,
    },
    /// Two segments share addresses.
    SegmentsOverlapInMemory { first: usize, second: usize },
    /// Two segments share file bytes.
    SegmentsOverlapInFile { first: usize, second: usize },
    /// A segment is both writable and executable.
    WritableExecutable { segment: usize, address: u64 },
    /// `PT_GNU_STACK` asks for an executable stack.
    ExecutableStack,
    /// The program headers are in no `PT_LOAD`: the kernel's `AT_PHDR` would point at unmapped memory, where
    /// a static libc looks for its TLS segment.
    ProgramHeadersNotLoaded { file_offset: u64, size: u64 },
    /// A nonzero entry point is not inside any executable segment.
    EntryOutsideLoaded { entry: u64 },
    /// `PT_GNU_RELRO` reaches past the memory the `PT_LOAD`s map from its start (one after the other, without
    /// a gap): the C library's `mprotect` over it fails at start-up and the program does not run.
    RelroNotMapped { address: u64, end: u64, mapped_end: u64 },
    /// `PT_TLS` starts at an address that is not a multiple of its alignment: the thread pointer offsets the
    /// link computed assume an aligned template, which the C library copies to an aligned block.
    TlsMisaligned { address: u64, alignment: u64 },
    /// Bytes after every declared range.
    TrailingBytes { claimed_end: u64, image_size: u64 },
    /// An entry of `.dynamic` (or `PT_DYNAMIC` itself) does not describe the section it names: the loader
    /// would read relocations, symbols or strings from the wrong place.
    DynamicMismatch { what: String, expected: u64, found: u64 },
    /// A dynamic relocation patches memory that no writable `PT_LOAD` maps: the loader would fault (or
    /// write to code).
    DynamicRelocationNotWritable { section: String, offset: u64 },
    /// An allocated section is not inside a segment, in memory or in the file.
    SectionOutsideSegment { section: String, address: u64, size: u64 },
    /// A section is not inside the segment the layout assigns it to.
    SectionOutsideDeclaredSegment { section: String, segment: usize },
    /// A layout section the image does not have.
    MissingSection { section: String },
    /// An image section the layout does not declare (other than the synthesised tables).
    UndeclaredSection { section: String },
    /// The image and the layout disagree about a value.
    LayoutMismatch {
        item: String,
        field: &'static str,
        expected: u64,
        found: u64,
    },
}

impl ImageFinding {
    /// The rule's fixed text, without the details.
    pub fn rule(&self) -> &'static str {
        match self {
            ImageFinding::Malformed { .. } => "image is not a well-formed ELF64 little-endian file",
            ImageFinding::NotExecutable { .. } => "image is not an executable",
            ImageFinding::SegmentsUnsorted { .. } => "segments are not sorted by address",
            ImageFinding::AlignmentNotPowerOfTwo { .. } => "alignment is not a power of two",
            ImageFinding::SegmentMisaligned { .. } => "segment file offset and address disagree modulo the alignment",
            ImageFinding::FileSizeExceedsMemorySize { .. } => "segment file size exceeds its memory size",
            ImageFinding::OutsideImage { .. } => "range lies outside the image",
            ImageFinding::SegmentsOverlapInMemory { .. } => "segments overlap in memory",
            ImageFinding::SegmentsOverlapInFile { .. } => "segments overlap in the file",
            ImageFinding::WritableExecutable { .. } => "writable-executable segment is forbidden",
            ImageFinding::ExecutableStack => "executable stack is forbidden",
            ImageFinding::ProgramHeadersNotLoaded { .. } => "program headers lie outside every loaded segment",
            ImageFinding::EntryOutsideLoaded { .. } => "entry point lies outside every loaded segment",
            ImageFinding::RelroNotMapped { .. } => "PT_GNU_RELRO reaches past the mapped memory",
            ImageFinding::TlsMisaligned { .. } => "PT_TLS starts at an address its alignment does not divide",
            ImageFinding::TrailingBytes { .. } => "unclaimed bytes trail the declared image ranges",
            ImageFinding::DynamicMismatch { .. } => "the dynamic section disagrees with the sections it names",
            ImageFinding::DynamicRelocationNotWritable { .. } => {
                "a dynamic relocation patches memory no writable segment maps"
            }
            ImageFinding::SectionOutsideSegment { .. } => "allocated section lies outside every segment",
            ImageFinding::SectionOutsideDeclaredSegment { .. } => "section lies outside its declared segment",
            ImageFinding::MissingSection { .. } => "layout section is missing from the image",
            ImageFinding::UndeclaredSection { .. } => "image section is not declared by the layout",
            ImageFinding::LayoutMismatch { .. } => "image disagrees with the layout",
        }
    }
}

impl fmt::Display for ImageFinding {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rule = self.rule();
        match self {
            ImageFinding::Malformed { reason } => write!(formatter, "{rule}: {reason}"),
            ImageFinding::NotExecutable { e_type } => write!(formatter, "{rule}: e_type is {e_type}"),
            ImageFinding::SegmentsUnsorted {
                segment,
                address,
                previous,
            } => write!(
                formatter,
                "{rule}: segment {segment} at {address:#x} follows a segment at {previous:#x}"
            ),
            ImageFinding::AlignmentNotPowerOfTwo { item, alignment } => {
                write!(formatter, "{rule}: {item} has alignment {alignment:#x}")
            }
            ImageFinding::SegmentMisaligned {
                segment,
                file_offset,
                address,
                alignment,
            } => write!(
                formatter,
                "{rule}: segment {segment} at offset {file_offset:#x}, address {address:#x}, alignment {alignment:#x}"
            ),
            ImageFinding::FileSizeExceedsMemorySize {
                segment,
                file_size,
                memory_size,
            } => write!(
                formatter,
                "{rule}: segment {segment} has file size {file_size:#x} and memory size {memory_size:#x}"
            ),
            ImageFinding::OutsideImage {
                item,
                file_offset,
                size,
                image_size,
            } => write!(
                formatter,
                "{rule}: {item} at offset {file_offset:#x} with size {size:#x}, the image has {image_size:#x} bytes"
            ),
            ImageFinding::SegmentsOverlapInMemory { first, second }
            | ImageFinding::SegmentsOverlapInFile { first, second } => {
                write!(formatter, "{rule}: segments {first} and {second}")
            }
            ImageFinding::WritableExecutable { segment, address } => {
                write!(formatter, "{rule}: segment {segment} at {address:#x}")
            }
            ImageFinding::ExecutableStack => formatter.write_str(rule),
            ImageFinding::ProgramHeadersNotLoaded { file_offset, size } => {
                write!(formatter, "{rule}: {size:#x} bytes at file offset {file_offset:#x}")
            }
            ImageFinding::EntryOutsideLoaded { entry } => write!(formatter, "{rule}: entry {entry:#x}"),
            ImageFinding::RelroNotMapped {
                address,
                end,
                mapped_end,
            } => write!(
                formatter,
                "{rule}: PT_GNU_RELRO covers {address:#x} to {end:#x}, the loads map it only up to {mapped_end:#x}"
            ),
            ImageFinding::TlsMisaligned { address, alignment } => {
                write!(
                    formatter,
                    "{rule}: PT_TLS at {address:#x} with alignment {alignment:#x}"
                )
            }
            ImageFinding::TrailingBytes {
                claimed_end,
                image_size,
            } => write!(
                formatter,
                "{rule}: the declared ranges end at {claimed_end:#x}, the image has {image_size:#x} bytes"
            ),
            ImageFinding::DynamicMismatch { what, expected, found } => {
                write!(
                    formatter,
                    "{rule}: {what} is {found:#x}, the section says {expected:#x}"
                )
            }
            ImageFinding::DynamicRelocationNotWritable { section, offset } => {
                write!(formatter, "{rule}: {section} relocates {offset:#x}")
            }
            ImageFinding::SectionOutsideSegment { section, address, size } => {
                write!(
                    formatter,
                    "{rule}: section {section} at {address:#x} with size {size:#x}"
                )
            }
            ImageFinding::SectionOutsideDeclaredSegment { section, segment } => {
                write!(formatter, "{rule}: section {section} is not inside segment {segment}")
            }
            ImageFinding::MissingSection { section } | ImageFinding::UndeclaredSection { section } => {
                write!(formatter, "{rule}: section {section}")
            }
            ImageFinding::LayoutMismatch {
                item,
                field,
                expected,
                found,
            } => write!(
                formatter,
                "{rule}: {item} has {field} {found:#x}, the layout says {expected:#x}"
            ),
        }
    }
}

/// Checks the executable `image` against the rules and against `layout`, returning every violation (none
/// when the image passes).
pub fn verify_image(image: &SparseBytes, layout: &ImageLayout) -> Vec<ImageFinding> {
    let mut findings = Vec::new();
    let Some(parsed) = parse(image, &mut findings) else {
        return findings;
    };
    let image_size = image.len();
    let loads: Vec<&ParsedSegment> = parsed
        .segments
        .iter()
        .filter(|segment| segment.kind == PT_LOAD)
        .collect();
    check_header(&parsed, layout, &mut findings);
    check_segments(&loads, image_size, &mut findings);
    check_overlaps(&loads, &mut findings);
    check_stack(&parsed.segments, &mut findings);
    check_program_headers_loaded(&parsed, &loads, &mut findings);
    check_entry(parsed.entry, &loads, &mut findings);
    check_relro(&parsed.segments, &loads, &mut findings);
    check_tls(&parsed.segments, &mut findings);
    check_dynamic(image, &parsed, &loads, &mut findings);
    check_sections(&parsed.sections, &loads, image_size, &mut findings);
    check_trailing(&parsed, image_size, &mut findings);
    compare_segments(&loads, &layout.segments, &mut findings);
    compare_sections(&parsed.sections, &loads, layout, &mut findings);
    findings
}

/// A program header as read from the image.
struct ParsedSegment {
    kind: u32,
    flags: u32,
    file_offset: u64,
    address: u64,
    file_size: u64,
    memory_size: u64,
    alignment: u64,
}

/// A section header as read from the image.
struct ParsedSection {
    name: String,
    kind: u32,
    flags: u64,
    address: u64,
    file_offset: u64,
    size: u64,
    alignment: u64,
}

impl ParsedSection {
    /// Whether the section occupies file bytes.
    fn has_file_bytes(&self) -> bool {
        self.kind != SHT_NOBITS && self.kind != 0 && self.size > 0
    }
}

/// What the gate reads from the image.
struct ParsedImage {
    e_type: u16,
    machine: u16,
    entry: u64,
    segments: Vec<ParsedSegment>,
    sections: Vec<ParsedSection>,
    /// The start of the program header table.
    program_headers_offset: u64,
    /// The end of the program header table.
    program_headers_end: u64,
    /// The end of the section header table (0 when there is none).
    section_headers_end: u64,
}

/// Parses the ELF headers, recording a [`ImageFinding::Malformed`] for every part that cannot be read;
/// `None` when not even the file header can.
fn parse(image: &SparseBytes, findings: &mut Vec<ImageFinding>) -> Option<ParsedImage> {
    let malformed = |reason: &str| ImageFinding::Malformed {
        reason: reason.to_string(),
    };
    let header = match FileHeader64::<LittleEndian>::parse(image) {
        Ok(header) => header,
        Err(error) => {
            findings.push(malformed(&error.to_string()));
            return None;
        }
    };
    let endian = match header.endian() {
        Ok(endian) => endian,
        Err(error) => {
            findings.push(malformed(&error.to_string()));
            return None;
        }
    };
    let segments = match header.program_headers(endian, image) {
        Ok(headers) => headers
            .iter()
            .map(|segment| ParsedSegment {
                kind: segment.p_type(endian),
                flags: segment.p_flags(endian),
                file_offset: segment.p_offset(endian),
                address: segment.p_vaddr(endian),
                file_size: segment.p_filesz(endian),
                memory_size: segment.p_memsz(endian),
                alignment: segment.p_align(endian),
            })
            .collect(),
        Err(error) => {
            findings.push(malformed(&format!("program headers: {error}")));
            Vec::new()
        }
    };
    let sections = match header.sections(endian, image) {
        Ok(table) => table
            .iter()
            .map(|section| ParsedSection {
                name: table.section_name(endian, section).map_or_else(
                    |_| String::from("<unnamed>"),
                    |name| String::from_utf8_lossy(name).into_owned(),
                ),
                kind: section.sh_type(endian),
                flags: section.sh_flags(endian),
                address: section.sh_addr(endian),
                file_offset: section.sh_offset(endian),
                size: section.sh_size(endian),
                alignment: section.sh_addralign(endian),
            })
            .collect(),
        Err(error) => {
            findings.push(malformed(&format!("section headers: {error}")));
            Vec::new()
        }
    };
    let table_end =
        |offset: u64, count: usize, entry_size: u64| offset.saturating_add((count as u64).saturating_mul(entry_size));
    let program_headers_end = table_end(
        header.e_phoff(endian),
        segments.len(),
        u64::from(header.e_phentsize(endian)),
    );
    let section_headers_end = if sections.is_empty() {
        0
    } else {
        table_end(header.e_shoff(endian), sections.len(), SECTION_HEADER_SIZE)
    };
    Some(ParsedImage {
        e_type: header.e_type(endian),
        machine: header.e_machine(endian),
        entry: header.e_entry(endian),
        segments,
        sections,
        program_headers_offset: header.e_phoff(endian),
        program_headers_end,
        section_headers_end,
    })
}

/// The file type, machine and entry point.
fn check_header(parsed: &ParsedImage, layout: &ImageLayout, findings: &mut Vec<ImageFinding>) {
    if parsed.e_type != layout.output_kind.elf_type() {
        findings.push(ImageFinding::NotExecutable { e_type: parsed.e_type });
    }
    mismatch(
        "the image",
        "e_machine",
        layout.machine.into(),
        parsed.machine.into(),
        findings,
    );
    mismatch("the image", "e_entry", layout.entry, parsed.entry, findings);
}

/// The rules each `PT_LOAD` must satisfy on its own, and their order.
fn check_segments(loads: &[&ParsedSegment], image_size: u64, findings: &mut Vec<ImageFinding>) {
    for (index, segment) in loads.iter().enumerate() {
        let alignment = segment.alignment;
        if alignment > 1 && !alignment.is_power_of_two() {
            findings.push(ImageFinding::AlignmentNotPowerOfTwo {
                item: format!("segment {index}"),
                alignment,
            });
        } else if alignment > 1 && segment.file_offset % alignment != segment.address % alignment {
            findings.push(ImageFinding::SegmentMisaligned {
                segment: index,
                file_offset: segment.file_offset,
                address: segment.address,
                alignment,
            });
        }
        if segment.file_size > segment.memory_size {
            findings.push(ImageFinding::FileSizeExceedsMemorySize {
                segment: index,
                file_size: segment.file_size,
                memory_size: segment.memory_size,
            });
        }
        if !range_inside(segment.file_offset, segment.file_size, image_size) {
            findings.push(ImageFinding::OutsideImage {
                item: format!("segment {index}"),
                file_offset: segment.file_offset,
                size: segment.file_size,
                image_size,
            });
        }
        if segment.address.checked_add(segment.memory_size).is_none() {
            findings.push(ImageFinding::OutsideImage {
                item: format!("segment {index} memory range"),
                file_offset: segment.address,
                size: segment.memory_size,
                image_size,
            });
        }
        if segment.flags & PF_W != 0 && segment.flags & PF_X != 0 {
            findings.push(ImageFinding::WritableExecutable {
                segment: index,
                address: segment.address,
            });
        }
    }
    for (index, pair) in loads.windows(2).enumerate() {
        let [previous, segment] = pair else { continue };
        if segment.address < previous.address {
            findings.push(ImageFinding::SegmentsUnsorted {
                segment: index + 1,
                address: segment.address,
                previous: previous.address,
            });
        }
    }
}

/// No two `PT_LOAD`s share an address or a file byte.
fn check_overlaps(loads: &[&ParsedSegment], findings: &mut Vec<ImageFinding>) {
    for (first, a) in loads.iter().enumerate() {
        for (second, b) in loads.iter().enumerate().skip(first + 1) {
            if ranges_overlap((a.address, a.memory_size), (b.address, b.memory_size)) {
                findings.push(ImageFinding::SegmentsOverlapInMemory { first, second });
            }
            if ranges_overlap((a.file_offset, a.file_size), (b.file_offset, b.file_size)) {
                findings.push(ImageFinding::SegmentsOverlapInFile { first, second });
            }
        }
    }
}

/// `PT_GNU_STACK`, when present, must not make the stack executable.
fn check_stack(segments: &[ParsedSegment], findings: &mut Vec<ImageFinding>) {
    if segments
        .iter()
        .any(|segment| segment.kind == PT_GNU_STACK && segment.flags & PF_X != 0)
    {
        findings.push(ImageFinding::ExecutableStack);
    }
}

/// The program header table must lie inside the file bytes of a `PT_LOAD`.
fn check_program_headers_loaded(parsed: &ParsedImage, loads: &[&ParsedSegment], findings: &mut Vec<ImageFinding>) {
    let (file_offset, end) = (parsed.program_headers_offset, parsed.program_headers_end);
    let size = end.saturating_sub(file_offset);
    if size == 0 {
        return;
    }
    let loaded = loads
        .iter()
        .any(|segment| contains(segment.file_offset, segment.file_size, file_offset, size));
    if !loaded {
        findings.push(ImageFinding::ProgramHeadersNotLoaded { file_offset, size });
    }
}

/// `PT_GNU_RELRO` must lie in memory that `PT_LOAD`s map: from its start, one load after the other, each
/// beginning inside (or where) the one before ends.
fn check_relro(segments: &[ParsedSegment], loads: &[&ParsedSegment], findings: &mut Vec<ImageFinding>) {
    let mut mapped: Vec<(u64, u64)> = loads
        .iter()
        .map(|load| (load.address, load.address.saturating_add(load.memory_size)))
        .collect();
    mapped.sort_unstable();
    for relro in segments.iter().filter(|segment| segment.kind == PT_GNU_RELRO) {
        let end = relro.address.saturating_add(relro.memory_size);
        let mut mapped_end = relro.address;
        for (start, stop) in &mapped {
            if *start <= mapped_end && mapped_end < *stop {
                mapped_end = *stop;
            }
        }
        if mapped_end < end {
            findings.push(ImageFinding::RelroNotMapped {
                address: relro.address,
                end,
                mapped_end,
            });
        }
    }
}

/// In an image with `PT_DYNAMIC`: the segment is the `.dynamic` section; the entries that name sections
/// (`DT_SYMTAB`, `DT_STRTAB` and `DT_STRSZ`, `DT_GNU_HASH`, `DT_HASH`, `DT_RELA` and `DT_RELASZ`, `DT_JMPREL` and
/// `DT_PLTRELSZ`) give those sections' addresses and sizes; and every relocation of `.rela.dyn` and
/// `.rela.plt` patches 8 bytes that a writable `PT_LOAD` maps (the `PT_GNU_RELRO` part included, which is
/// made read-only only after relocation), or, with text relocations (`DT_TEXTREL`), any `PT_LOAD`.
fn check_dynamic(
    image: &SparseBytes,
    parsed: &ParsedImage,
    loads: &[&ParsedSegment],
    findings: &mut Vec<ImageFinding>,
) {
    let Some(segment) = parsed.segments.iter().find(|segment| segment.kind == PT_DYNAMIC) else {
        return;
    };
    let named = |name: &str| parsed.sections.iter().find(|section| section.name == name);
    let mismatch = |what: &str, expected: u64, found: u64| ImageFinding::DynamicMismatch {
        what: what.to_string(),
        expected,
        found,
    };
    let Some(dynamic) = named(OutputSectionId::Dynamic.name()) else {
        findings.push(mismatch(
            "PT_DYNAMIC's address (there is no .dynamic)",
            0,
            segment.address,
        ));
        return;
    };
    if (segment.address, segment.file_size) != (dynamic.address, dynamic.size) {
        findings.push(mismatch("PT_DYNAMIC's address", dynamic.address, segment.address));
    }
    let bytes = match image.read(dynamic.file_offset, dynamic.size) {
        Ok(Some(bytes)) => bytes.into_owned(),
        _ => return,
    };
    let word = |chunk: &[u8], at: usize| {
        let mut value = [0u8; 8];
        value.copy_from_slice(&chunk[at..at + 8]);
        u64::from_le_bytes(value)
    };
    let described: [(u64, &str, OutputSectionId, bool); 20] = [
        (
            DT_PREINIT_ARRAY,
            "DT_PREINIT_ARRAY",
            OutputSectionId::PreinitArray,
            false,
        ),
        (
            DT_PREINIT_ARRAYSZ,
            "DT_PREINIT_ARRAYSZ",
            OutputSectionId::PreinitArray,
            true,
        ),
        (DT_INIT_ARRAY, "DT_INIT_ARRAY", OutputSectionId::InitArray, false),
        (DT_INIT_ARRAYSZ, "DT_INIT_ARRAYSZ", OutputSectionId::InitArray, true),
        (DT_FINI_ARRAY, "DT_FINI_ARRAY", OutputSectionId::FiniArray, false),
        (DT_FINI_ARRAYSZ, "DT_FINI_ARRAYSZ", OutputSectionId::FiniArray, true),
        (DT_VERSYM, "DT_VERSYM", OutputSectionId::GnuVersion, false),
        (DT_VERDEF, "DT_VERDEF", OutputSectionId::GnuVersionD, false),
        (DT_VERNEED, "DT_VERNEED", OutputSectionId::GnuVersionR, false),
        (DT_SYMTAB, "DT_SYMTAB", OutputSectionId::DynSym, false),
        (DT_STRTAB, "DT_STRTAB", OutputSectionId::DynStr, false),
        (DT_STRSZ, "DT_STRSZ", OutputSectionId::DynStr, true),
        (DT_GNU_HASH, "DT_GNU_HASH", OutputSectionId::GnuHash, false),
        (DT_HASH, "DT_HASH", OutputSectionId::Hash, false),
        (DT_RELA, "DT_RELA", OutputSectionId::RelaDyn, false),
        (DT_RELASZ, "DT_RELASZ", OutputSectionId::RelaDyn, true),
        (DT_RELR, "DT_RELR", OutputSectionId::RelrDyn, false),
        (DT_RELRSZ, "DT_RELRSZ", OutputSectionId::RelrDyn, true),
        (DT_JMPREL, "DT_JMPREL", OutputSectionId::RelaIplt, false),
        (DT_PLTRELSZ, "DT_PLTRELSZ", OutputSectionId::RelaIplt, true),
    ];
    // With text relocations (`-z notext`) the loader makes the pages it relocates writable for the time it
    // relocates them: then every mapped word may be relocated.
    let mut text_relocations = false;
    for entry in bytes.chunks_exact(16) {
        let (tag, value) = (word(entry, 0), word(entry, 8));
        if tag == DT_NULL {
            break;
        }
        text_relocations |= tag == DT_TEXTREL || (tag == DT_FLAGS && value & DF_TEXTREL != 0);
        let Some((_, what, name, size)) = described.iter().find(|(known, ..)| *known == tag) else {
            continue;
        };
        let expected = named(name.name()).map_or(0, |section| if *size { section.size } else { section.address });
        if expected != value {
            findings.push(mismatch(what, expected, value));
        }
    }
    // The hash tables cover `.dynsym`: the System V table has a chain entry per symbol, GNU's starts its
    // hashed symbols within it.
    if let Some(symbols) = named(OutputSectionId::DynSym.name()) {
        let count = symbols.size / 24;
        let header = |id: OutputSectionId| {
            named(id.name())
                .and_then(|table| image.read(table.file_offset, 8.min(table.size)).ok().flatten())
                .filter(|bytes| bytes.len() == 8)
                .map(|bytes| u64::from(u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]])))
        };
        if let Some(chains) = header(OutputSectionId::Hash)
            && chains != count
        {
            findings.push(mismatch(".hash's chain count (the .dynsym entries)", count, chains));
        }
        if let Some(first) = header(OutputSectionId::GnuHash)
            && first > count
        {
            findings.push(mismatch(
                ".gnu.hash's first hashed symbol (at most the .dynsym entries)",
                count,
                first,
            ));
        }
    }
    // A copy relocation patches its symbol's size (from `.dynsym`); every other one a word.
    let copy = neverc_tables::target_by_elf(parsed.machine, 64, true)
        .and_then(|target| {
            target
                .relocations
                .iter()
                .find(|record| record.kind == neverc_tables::RelocationKind::Copy)
        })
        .map(|record| u64::from(record.number));
    let symbol_size = |index: u64| {
        let symbols = named(OutputSectionId::DynSym.name())?;
        let at = index.checked_mul(24)?.checked_add(16)?;
        let bytes = image.read(symbols.file_offset.checked_add(at)?, 8).ok()??;
        (at + 8 <= symbols.size).then(|| word(&bytes, 0))
    };
    let mut check_writable = |name: &str, offset: u64, length: u64| {
        let writable = loads.iter().any(|load| {
            (load.flags & PF_W != 0 || text_relocations)
                && load.address <= offset
                && offset.saturating_add(length) <= load.address.saturating_add(load.memory_size)
        });
        if !writable {
            findings.push(ImageFinding::DynamicRelocationNotWritable {
                section: name.to_string(),
                offset,
            });
        }
    };
    for name in [OutputSectionId::RelaDyn.name(), OutputSectionId::RelaIplt.name()] {
        let Some(section) = named(name) else {
            continue;
        };
        let Ok(Some(relocations)) = image.read(section.file_offset, section.size) else {
            continue;
        };
        for relocation in relocations.chunks_exact(24) {
            let info = word(relocation, 8);
            let length = match copy {
                Some(copy) if info & 0xffff_ffff == copy => symbol_size(info >> 32).unwrap_or(1).max(1),
                _ => 8,
            };
            check_writable(name, word(relocation, 0), length);
        }
    }
    // The words `.relr.dyn` relocates: an address, then the words its bitmaps mark (63 per bitmap).
    let name = OutputSectionId::RelrDyn.name();
    if let Some(section) = named(name)
        && let Ok(Some(entries)) = image.read(section.file_offset, section.size)
    {
        let mut next = 0u64;
        for entry in entries.chunks_exact(8).map(|entry| word(entry, 0)) {
            if entry & 1 == 0 {
                check_writable(name, entry, 8);
                next = entry.saturating_add(8);
                continue;
            }
            for bit in 1..64 {
                if entry >> bit & 1 != 0 {
                    check_writable(name, next.saturating_add((bit - 1) * 8), 8);
                }
            }
            next = next.saturating_add(63 * 8);
        }
    }
}

/// `PT_TLS` must start at a multiple of its alignment (its alignment itself is checked with the loads').
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

/// A nonzero entry point must lie inside a `PT_LOAD`: GNU ld lets `-e` name a symbol in data (a program
/// that is started some other way), but not an address nothing maps.
fn check_entry(entry: u64, loads: &[&ParsedSegment], findings: &mut Vec<ImageFinding>) {
    if entry == 0 {
        return;
    }
    let inside = loads
        .iter()
        .any(|segment| contains(segment.address, segment.memory_size, entry, 1));
    if !inside {
        findings.push(ImageFinding::EntryOutsideLoaded { entry });
    }
}

/// Section alignment, file ranges, and that every allocated section lies in a segment.
fn check_sections(
    sections: &[ParsedSection],
    loads: &[&ParsedSegment],
    image_size: u64,
    findings: &mut Vec<ImageFinding>,
) {
    for section in sections.iter().skip(1) {
        if section.alignment > 1 && !section.alignment.is_power_of_two() {
            findings.push(ImageFinding::AlignmentNotPowerOfTwo {
                item: format!("section {}", section.name),
                alignment: section.alignment,
            });
        }
        if section.has_file_bytes() && !range_inside(section.file_offset, section.size, image_size) {
            findings.push(ImageFinding::OutsideImage {
                item: format!("section {}", section.name),
                file_offset: section.file_offset,
                size: section.size,
                image_size,
            });
        }
        if section.flags & SHF_ALLOC != 0 && !loads.iter().any(|segment| section_in_segment(section, segment)) {
            findings.push(ImageFinding::SectionOutsideSegment {
                section: section.name.clone(),
                address: section.address,
                size: section.size,
            });
        }
    }
}

/// Whether `section` lies inside `segment` in memory and, when it has file bytes, at the matching place in
/// the segment's file range.
fn section_in_segment(section: &ParsedSection, segment: &ParsedSegment) -> bool {
    // `.tbss` takes no room in its segment (each thread's block holds it), so only its start must lie in
    // the segment, as ld.bfd judges it.
    if section.kind == SHT_NOBITS && section.flags & SHF_TLS != 0 {
        return contains(segment.address, segment.memory_size, section.address, 0);
    }
    if !contains(segment.address, segment.memory_size, section.address, section.size) {
        return false;
    }
    if !section.has_file_bytes() {
        return true;
    }
    let delta = section.address - segment.address;
    contains(
        segment.file_offset,
        segment.file_size,
        section.file_offset,
        section.size,
    ) && section.file_offset - segment.file_offset == delta
}

/// Nothing may follow the last declared range: headers, segments, sections and the section header table.
fn check_trailing(parsed: &ParsedImage, image_size: u64, findings: &mut Vec<ImageFinding>) {
    let segment_ends = parsed
        .segments
        .iter()
        .map(|segment| segment.file_offset.saturating_add(segment.file_size));
    let section_ends = parsed
        .sections
        .iter()
        .filter(|section| section.has_file_bytes())
        .map(|section| section.file_offset.saturating_add(section.size));
    let claimed_end = [FILE_HEADER_SIZE, parsed.program_headers_end, parsed.section_headers_end]
        .into_iter()
        .chain(segment_ends)
        .chain(section_ends)
        .max()
        .unwrap_or(0);
    if image_size > claimed_end {
        findings.push(ImageFinding::TrailingBytes {
            claimed_end,
            image_size,
        });
    }
}

/// The `PT_LOAD`s must be the layout's segments, in order.
fn compare_segments(loads: &[&ParsedSegment], expected: &[SegmentLayout], findings: &mut Vec<ImageFinding>) {
    mismatch(
        "the image",
        "PT_LOAD count",
        expected.len() as u64,
        loads.len() as u64,
        findings,
    );
    for (segment, declared) in loads.iter().zip(expected) {
        let item = format!("segment {} ({})", declared.name, permission_string(segment.flags));
        let pairs = [
            ("p_flags", u64::from(declared.flags.to_elf()), u64::from(segment.flags)),
            ("p_vaddr", declared.virtual_address, segment.address),
            ("p_offset", declared.file_offset, segment.file_offset),
            ("p_filesz", declared.file_size, segment.file_size),
            ("p_memsz", declared.memory_size, segment.memory_size),
            ("p_align", declared.alignment, segment.alignment),
        ];
        for (field, expected, found) in pairs {
            mismatch(&item, field, expected, found, findings);
        }
    }
}

/// Every layout section must be in the image with the declared values and inside its declared segment, and
/// the image may hold no other section than the synthesised tables and the kept relocation sections the
/// layout declares (`--emit-relocs`).
fn compare_sections(
    sections: &[ParsedSection],
    loads: &[&ParsedSegment],
    layout: &ImageLayout,
    findings: &mut Vec<ImageFinding>,
) {
    let mut matched = vec![false; sections.len()];
    for declared in &layout.sections {
        let found =
            sections.iter().enumerate().skip(1).find(|(index, section)| {
                section.name == declared.name && !matched.get(*index).copied().unwrap_or(true)
            });
        let Some((index, section)) = found else {
            findings.push(ImageFinding::MissingSection {
                section: declared.name.clone(),
            });
            continue;
        };
        if let Some(slot) = matched.get_mut(index) {
            *slot = true;
        }
        let item = format!("section {}", declared.name);
        let attribute_mask = SHF_ALLOC | SHF_WRITE | SHF_EXECINSTR | SHF_TLS | SHF_MERGE | SHF_STRINGS | SHF_COMPRESSED;
        let pairs = [
            ("sh_type", u64::from(declared.kind.sh_type()), u64::from(section.kind)),
            ("sh_flags", declared.flags.to_elf(), section.flags & attribute_mask),
            ("sh_addr", declared.address, section.address),
            ("sh_offset", declared.file_offset, section.file_offset),
            ("sh_size", declared.size, section.size),
            ("sh_addralign", declared.alignment, section.alignment),
        ];
        for (field, expected, found) in pairs {
            mismatch(&item, field, expected, found, findings);
        }
        if let Some(segment) = declared.segment {
            let inside = loads.get(segment).is_some_and(|load| section_in_segment(section, load));
            if !inside {
                findings.push(ImageFinding::SectionOutsideDeclaredSegment {
                    section: declared.name.clone(),
                    segment,
                });
            }
        }
    }
    for (section, _) in sections.iter().zip(&matched).skip(1).filter(|(_, matched)| !**matched) {
        let kept_relocations = layout
            .relocations
            .iter()
            .any(|relocations| relocations.name == section.name);
        if !SYNTHESIZED_SECTIONS.contains(&section.name.as_str()) && !kept_relocations {
            findings.push(ImageFinding::UndeclaredSection {
                section: section.name.clone(),
            });
        }
    }
}

/// Records a [`ImageFinding::LayoutMismatch`] when `found` is not `expected`.
fn mismatch(item: &str, field: &'static str, expected: u64, found: u64, findings: &mut Vec<ImageFinding>) {
    if expected != found {
        findings.push(ImageFinding::LayoutMismatch {
            item: item.to_string(),
            field,
            expected,
            found,
        });
    }
}

/// Whether `offset..offset + size` lies inside an image of `image_size` bytes.
fn range_inside(offset: u64, size: u64, image_size: u64) -> bool {
    offset.checked_add(size).is_some_and(|end| end <= image_size)
}

/// Whether `start..start + size` lies inside `base..base + length` (an empty range may sit at the end).
fn contains(base: u64, length: u64, start: u64, size: u64) -> bool {
    let (Some(end), Some(limit)) = (start.checked_add(size), base.checked_add(length)) else {
        return false;
    };
    start >= base && end <= limit
}

/// Whether two nonempty `(start, length)` ranges share a value.
fn ranges_overlap(a: (u64, u64), b: (u64, u64)) -> bool {
    if a.1 == 0 || b.1 == 0 {
        return false;
    }
    let a_end = a.0.saturating_add(a.1);
    let b_end = b.0.saturating_add(b.1);
    a.0 < b_end && b.0 < a_end
}
