#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The input readers against the tools that define the formats: every x86_64 fixture object read into the
//! link graph is compared with what `readelf` prints for the same file (sections, symbols, relocations,
//! COMDAT groups, `.eh_frame` FDEs), archives with `ar`/`nm`, the foreign objects with `readelf` (AArch64
//! ELF) and the LLVM tools (COFF, Mach-O). Truncated and corrupted copies of every fixture must read to a
//! graph or to an error that names the input, and never panic.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use neverc_link::graph::LinkTarget;
use neverc_link::graph::{
    AtomId, Binding, ComdatSelection, Content, Definition, EdgeKind, InputId, InputKind, LinkGraph, Machine,
    MaterializationReason, ObjectFormat, SectionId, SectionKind, SymbolType, Visibility, section_flags,
};
use neverc_link::read::{ReadError, extract_all_members, graph_from_inputs, graph_from_inputs_for, probe};
use neverc_test_support::{Rng, scratch, seed_of};
use support::*;

/// Reads files into one graph, named by their paths, for the target of the first object.
fn read_files(paths: &[PathBuf]) -> LinkGraph {
    read_files_for(LinkTarget::FromFirstObject, paths)
}

/// Reads files into one graph, named by their paths, for `target`.
fn read_files_for(target: LinkTarget, paths: &[PathBuf]) -> LinkGraph {
    let inputs = paths.iter().map(|path| (input_name(path), read_bytes(path))).collect();
    match graph_from_inputs_for(target, inputs) {
        Ok(graph) => graph,
        Err(error) => panic!("reading {paths:?} failed: {error}"),
    }
}

fn input_id(graph: &LinkGraph, path: &Path) -> InputId {
    let name = input_name(path);
    let index = graph
        .inputs
        .iter()
        .position(|input| input.logical_name == name)
        .unwrap_or_else(|| panic!("no input named {name}"));
    InputId(index as u32)
}

/// The graph's sections of `input`, keyed by object section index.
fn sections_of(graph: &LinkGraph, input: InputId) -> BTreeMap<u32, SectionId> {
    graph
        .sections
        .iter()
        .enumerate()
        .filter(|(_, section)| section.input == input)
        .map(|(index, section)| (section.origin.object_entity, SectionId(index as u32)))
        .collect()
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    objects: usize,
    sections: usize,
    symbols: usize,
    relocations: usize,
    comdats: usize,
    comdat_members: usize,
    fdes: usize,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.objects += other.objects;
        self.sections += other.sections;
        self.symbols += other.symbols;
        self.relocations += other.relocations;
        self.comdats += other.comdats;
        self.comdat_members += other.comdat_members;
        self.fdes += other.fdes;
    }
}

/// The section flags readelf's `Flg` letters stand for (those the graph keeps).
fn expected_flags(section: &ElfSection) -> u64 {
    let letters = [
        ('A', section_flags::ALLOCATED),
        ('X', section_flags::EXECUTABLE),
        ('W', section_flags::WRITABLE),
        ('M', section_flags::MERGEABLE),
        ('S', section_flags::STRINGS),
        ('T', section_flags::TLS),
        ('R', section_flags::RETAIN),
    ];
    letters
        .iter()
        .filter(|(letter, _)| section.has_flag(*letter))
        .fold(0, |flags, (_, bit)| flags | bit)
}

const KEPT_FLAGS: u64 = section_flags::ALLOCATED
    | section_flags::EXECUTABLE
    | section_flags::WRITABLE
    | section_flags::MERGEABLE
    | section_flags::STRINGS
    | section_flags::TLS
    | section_flags::RETAIN;

/// Width, PC-relativity and signedness of the relocation types the fixtures use.
fn relocation_shape(type_name: &str) -> Option<(u8, bool, bool)> {
    Some(match type_name {
        "R_X86_64_64" => (64, false, false),
        "R_X86_64_32" => (32, false, false),
        "R_X86_64_32S" => (32, false, true),
        "R_X86_64_PC32" | "R_X86_64_PLT32" | "R_X86_64_GOTPCREL" | "R_X86_64_GOTPCRELX" | "R_X86_64_REX_GOTPCRELX" => {
            (32, true, false)
        }
        "R_AARCH64_ABS64" => (64, false, false),
        "R_AARCH64_PREL32" => (32, true, false),
        "R_AARCH64_CALL26" => (26, true, false),
        _ => return None,
    })
}

/// Compares everything the graph holds for ELF input `input` with readelf's view of `path` (the same
/// bytes: the file itself, or the archive member the input was extracted from).
fn check_elf_object(graph: &LinkGraph, input: InputId, path: &Path) -> Counts {
    let label = format!(
        "{} (input {})",
        path.display(),
        graph.inputs[input.index()].logical_name
    );
    let file = read_bytes(path);
    let elf_sections = readelf_sections(path);
    let elf_symbols = readelf_symbols(path);
    let elf_relocations = readelf_relocations(path, &elf_sections);
    let elf_groups = readelf_groups(path);
    let fdes = readelf_fdes(path);
    let entry = &graph.inputs[input.index()];
    assert_eq!(entry.kind, InputKind::Object, "{label}");
    assert_eq!(entry.format, Some(ObjectFormat::Elf), "{label}");
    let machine = tool("readelf", &["-hW", &path.display().to_string()], None);
    let expected_machine = if machine.contains("Advanced Micro Devices X86-64") {
        Machine::X86_64
    } else if machine.contains("AArch64") {
        Machine::AARCH64
    } else {
        panic!("{label}: unexpected machine in readelf -h")
    };
    assert_eq!(entry.machine, Some(expected_machine), "{label}");

    // Sections: every section that is content (not symbol/string/relocation/group tables).
    let by_index = sections_of(graph, input);
    let expected: Vec<&ElfSection> = elf_sections.iter().filter(|section| !section.is_structural()).collect();
    assert_eq!(
        by_index.keys().copied().collect::<Vec<_>>(),
        expected.iter().map(|section| section.index).collect::<Vec<_>>(),
        "{label}: section indices"
    );
    for elf in &expected {
        let section = &graph.sections[by_index[&elf.index].index()];
        let atom = &graph.atoms[section.atom.index()];
        let what = format!("{label}: section [{}] {}", elf.index, elf.name);
        assert_eq!(section.name, elf.name, "{what}");
        assert_eq!(atom.name, elf.name, "{what}");
        assert_eq!(atom.section, Some(by_index[&elf.index]), "{what}");
        assert_eq!(section.size, elf.size, "{what}: size");
        assert_eq!(atom.size(), elf.size, "{what}: atom size");
        assert_eq!(section.alignment, elf.align.max(1), "{what}: alignment");
        assert_eq!(atom.alignment, elf.align.max(1), "{what}: atom alignment");
        assert_eq!(section.entry_size, elf.entsize, "{what}: entry size");
        assert_eq!(
            section.flags & KEPT_FLAGS,
            expected_flags(elf),
            "{what}: flags {}",
            elf.flags
        );
        assert_eq!(
            section.flags & section_flags::UNWIND != 0,
            elf.name == ".eh_frame",
            "{what}: unwind flag"
        );
        if elf.sh_type == "NOBITS" {
            assert_eq!(atom.content, Content::ZeroFill, "{what}");
            assert_eq!(atom.zero_fill, elf.size, "{what}");
        } else {
            let start = elf.offset as usize;
            assert_eq!(
                graph.atom_bytes(atom),
                &file[start..start + elf.size as usize],
                "{what}: content bytes"
            );
        }
        let kind = section.kind;
        if elf.name == ".eh_frame" {
            assert_eq!(kind, SectionKind::Unwind, "{what}");
        } else if elf.sh_type == "NOBITS" {
            let tls = elf.has_flag('T');
            let wanted = if tls {
                SectionKind::UninitializedTls
            } else {
                SectionKind::UninitializedData
            };
            assert_eq!(kind, wanted, "{what}");
        } else if elf.sh_type == "PROGBITS" && elf.has_flag('A') {
            let wanted = if elf.has_flag('X') {
                SectionKind::Text
            } else if elf.has_flag('T') {
                SectionKind::Tls
            } else if elf.has_flag('W') {
                SectionKind::Data
            } else if elf.has_flag('S') {
                SectionKind::ReadOnlyString
            } else {
                SectionKind::ReadOnlyData
            };
            assert_eq!(kind, wanted, "{what}");
        } else if elf.sh_type == "PROGBITS" {
            assert_eq!(kind, SectionKind::Other, "{what}");
        }
    }

    // Symbols: every .symtab entry but the null one, in order.
    let symbols: Vec<usize> = graph
        .symbols
        .iter()
        .enumerate()
        .filter(|(_, symbol)| symbol.origin.input() == Some(input))
        .map(|(index, _)| index)
        .collect();
    let expected_symbols: Vec<&ElfSymbol> = elf_symbols.iter().filter(|symbol| symbol.index != 0).collect();
    assert_eq!(symbols.len(), expected_symbols.len(), "{label}: symbol count");
    let mut symbol_of_index: BTreeMap<u32, usize> = BTreeMap::new();
    for (&graph_index, elf) in symbols.iter().zip(&expected_symbols) {
        let symbol = &graph.symbols[graph_index];
        let what = format!("{label}: symbol [{}] {}", elf.index, elf.name);
        assert_eq!(symbol.origin.object_entity, elf.index, "{what}: object index");
        symbol_of_index.insert(elf.index, graph_index);
        let section_index = elf.ndx.parse::<u32>().ok();
        let defining_atom: Option<AtomId> = section_index
            .and_then(|index| by_index.get(&index))
            .map(|id| graph.sections[id.index()].atom);
        if elf.symbol_type == "SECTION" {
            assert_eq!(symbol.symbol_type, SymbolType::Section, "{what}");
            let atom = symbol
                .atom
                .unwrap_or_else(|| panic!("{what}: section symbol without an atom"));
            assert_eq!(
                graph.atoms[atom.index()].name,
                elf.name,
                "{what}: section symbol's section"
            );
        } else {
            assert_eq!(symbol.name, elf.name, "{what}: name");
        }
        let wanted_type = match elf.symbol_type.as_str() {
            "NOTYPE" => SymbolType::None,
            "FUNC" => SymbolType::Function,
            "OBJECT" => SymbolType::Object,
            "SECTION" => SymbolType::Section,
            "FILE" => SymbolType::File,
            "TLS" => SymbolType::Tls,
            _ => symbol.symbol_type,
        };
        assert_eq!(symbol.symbol_type, wanted_type, "{what}: type");
        let (wanted_definition, wanted_atom) = match elf.ndx.as_str() {
            "UND" => (Definition::Undefined, None),
            "ABS" => (Definition::Absolute, None),
            "COM" => (Definition::Common, None),
            _ => {
                let atom = defining_atom.unwrap_or_else(|| panic!("{what}: defined in an unplaced section"));
                (Definition::Defined, Some(atom))
            }
        };
        assert_eq!(symbol.definition, wanted_definition, "{what}: definition");
        assert_eq!(symbol.atom, wanted_atom, "{what}: defining atom");
        let wanted_binding = match (elf.bind.as_str(), elf.ndx.as_str()) {
            ("LOCAL", _) => Binding::Local,
            ("WEAK", _) => Binding::Weak,
            ("GLOBAL" | "UNIQUE", "COM") => Binding::Common,
            ("GLOBAL" | "UNIQUE", _) => Binding::Global,
            (other, _) => panic!("{what}: unexpected binding {other}"),
        };
        assert_eq!(symbol.binding, wanted_binding, "{what}: binding");
        let wanted_visibility = match elf.visibility.as_str() {
            "DEFAULT" => Visibility::Default,
            "HIDDEN" => Visibility::Hidden,
            "PROTECTED" => Visibility::Protected,
            "INTERNAL" => Visibility::Internal,
            other => panic!("{what}: unexpected visibility {other}"),
        };
        assert_eq!(symbol.visibility, wanted_visibility, "{what}: visibility");
        assert_eq!(symbol.value, elf.value, "{what}: value");
        assert_eq!(symbol.size, elf.size, "{what}: size");
    }

    // Relocations: per patched section, the same entries (offset, raw type, symbol, addend).
    let mut relocation_count = 0;
    let mut patched: BTreeSet<u32> = BTreeSet::new();
    for (target, relocations) in &elf_relocations {
        if relocations.is_empty() {
            continue;
        }
        patched.insert(*target);
        let section = by_index
            .get(target)
            .unwrap_or_else(|| panic!("{label}: relocations for unplaced section {target}"));
        let atom = graph.sections[section.index()].atom;
        let mut edges: Vec<_> = graph.edges_of(atom).map(|(_, edge)| edge).collect();
        assert_eq!(
            edges.len(),
            relocations.len(),
            "{label}: relocation count of section {target}"
        );
        edges.sort_by_key(|edge| (edge.offset, edge.relocation.raw, edge.addend));
        let mut relocations = relocations.clone();
        relocations.sort_by_key(|relocation| (relocation.offset, relocation.r_type, relocation.addend));
        for (edge, relocation) in edges.iter().zip(&relocations) {
            let what = format!("{label}: section {target} relocation {relocation:?}");
            assert_eq!(edge.kind, EdgeKind::Relocation, "{what}");
            assert_eq!(edge.source, atom, "{what}");
            assert_eq!(edge.offset, relocation.offset, "{what}: offset");
            assert_eq!(edge.relocation.format, ObjectFormat::Elf, "{what}");
            assert_eq!(edge.relocation.raw, relocation.r_type, "{what}: raw type");
            assert_eq!(edge.addend, relocation.addend, "{what}: addend");
            assert_eq!(edge.origin.input(), Some(input), "{what}: origin");
            if relocation.symbol == 0 {
                assert_eq!(edge.target_symbol.get(), None, "{what}: target");
            } else {
                let target_symbol = edge
                    .target_symbol
                    .get()
                    .unwrap_or_else(|| panic!("{what}: no target symbol"));
                assert_eq!(
                    Some(&target_symbol.index()),
                    symbol_of_index.get(&relocation.symbol),
                    "{what}: target"
                );
            }
            if let Some((width, pc_relative, signed)) = relocation_shape(&relocation.type_name) {
                assert_eq!(edge.width, width, "{what}: width");
                assert_eq!(edge.pc_relative, pc_relative, "{what}: pc-relative");
                assert_eq!(edge.signed, signed, "{what}: signed");
            }
        }
        relocation_count += relocations.len();
    }
    for (index, section) in &by_index {
        if !patched.contains(index) {
            let atom = graph.sections[section.index()].atom;
            assert_eq!(
                graph.edges_of(atom).count(),
                0,
                "{label}: section {index} has no relocations"
            );
        }
    }
    let input_edges = graph
        .edges
        .iter()
        .filter(|edge| edge.origin.input() == Some(input))
        .count();
    assert_eq!(input_edges, relocation_count, "{label}: edge count");

    // COMDAT groups: signature and member sections (the placed ones: `.rela.*` members are structure).
    let comdats: Vec<usize> = graph
        .comdats
        .iter()
        .enumerate()
        .filter(|(_, comdat)| comdat.input == input)
        .map(|(index, _)| index)
        .collect();
    let expected_groups: Vec<&ElfGroup> = elf_groups.iter().filter(|group| group.comdat).collect();
    assert_eq!(comdats.len(), expected_groups.len(), "{label}: COMDAT count");
    let mut in_group: BTreeMap<u32, usize> = BTreeMap::new();
    let mut comdat_members = 0;
    for (&comdat_index, group) in comdats.iter().zip(&expected_groups) {
        let comdat = &graph.comdats[comdat_index];
        let what = format!("{label}: COMDAT [{}]", group.signature);
        assert_eq!(comdat.name, group.signature, "{what}");
        assert_eq!(comdat.selection, ComdatSelection::Any, "{what}");
        assert_eq!(comdat.selected, None, "{what}");
        assert_eq!(comdat.origin.input(), Some(input), "{what}");
        let placed: Vec<u32> = group
            .members
            .iter()
            .copied()
            .filter(|index| {
                elf_sections
                    .iter()
                    .any(|section| section.index == *index && !section.is_structural())
            })
            .collect();
        let members: Vec<u32> = comdat
            .sections
            .iter()
            .map(|section| graph.sections[section.index()].origin.object_entity)
            .collect();
        assert_eq!(members, placed, "{what}: member sections");
        for index in placed {
            in_group.insert(index, comdat_index);
        }
        comdat_members += comdat.sections.len();
    }
    for (index, section) in &by_index {
        let section = &graph.sections[section.index()];
        let wanted = in_group
            .get(index)
            .map(|comdat| neverc_link::graph::ComdatId(*comdat as u32));
        assert_eq!(section.comdat, wanted, "{label}: section {index}'s COMDAT");
        assert_eq!(
            graph.atoms[section.atom.index()].comdat,
            wanted,
            "{label}: atom {index}'s COMDAT"
        );
    }

    // Unwind records: one per FDE, with its range in `.eh_frame` and the function it covers.
    let unwinds: Vec<usize> = graph
        .unwinds
        .iter()
        .enumerate()
        .filter(|(_, unwind)| unwind.origin.input() == Some(input))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(unwinds.len(), fdes.len(), "{label}: unwind records vs FDEs");
    if !fdes.is_empty() {
        let eh_frame = elf_sections
            .iter()
            .find(|section| section.name == ".eh_frame")
            .unwrap_or_else(|| panic!("{label}: FDEs without .eh_frame"));
        let table = graph.sections[by_index[&eh_frame.index].index()].atom;
        let eh_relocations = elf_relocations.get(&eh_frame.index).cloned().unwrap_or_default();
        for (&unwind_index, fde) in unwinds.iter().zip(&fdes) {
            let unwind = &graph.unwinds[unwind_index];
            let what = format!("{label}: FDE at {:#x}", fde.offset);
            assert_eq!(unwind.table, table, "{what}: table");
            assert_eq!(unwind.range, fde.offset..fde.offset + 4 + fde.length, "{what}: range");
            let relocation = eh_relocations
                .iter()
                .find(|relocation| relocation.offset == fde.offset + 8)
                .unwrap_or_else(|| panic!("{what}: no pc_begin relocation"));
            let symbol = elf_symbols
                .iter()
                .find(|symbol| symbol.index == relocation.symbol)
                .unwrap_or_else(|| panic!("{what}: no symbol {}", relocation.symbol));
            let function_section = symbol.ndx.parse::<u32>().expect("pc_begin symbol in a section");
            let function_atom = graph.sections[by_index[&function_section].index()].atom;
            assert_eq!(unwind.atom, Some(function_atom), "{what}: function");
            let function_kind = graph.sections[by_index[&function_section].index()].kind;
            assert_eq!(function_kind, SectionKind::Text, "{what}: function section kind");
        }
    }

    Counts {
        objects: 1,
        sections: expected.len(),
        symbols: expected_symbols.len(),
        relocations: relocation_count,
        comdats: comdats.len(),
        comdat_members,
        fdes: fdes.len(),
    }
}

/// Every entity's origin names the input it was read from (and the member, for extracted members), and
/// every id the graph holds is in range.
fn check_origins(graph: &LinkGraph) {
    let inputs = graph.inputs.len();
    for (index, input) in graph.inputs.iter().enumerate() {
        assert_eq!(input.ordinal as usize, index);
        match input.member {
            None => {
                assert_eq!(
                    input.origin.input(),
                    Some(InputId(index as u32)),
                    "{}",
                    input.logical_name
                );
                assert_eq!(input.origin.member(), None, "{}", input.logical_name);
            }
            Some(member) => {
                let archive = graph.archive_members[member.index()].archive;
                let archive_input = graph.archives[archive.index()].input;
                assert_eq!(input.archive, Some(archive), "{}", input.logical_name);
                assert_eq!(input.origin.input(), Some(archive_input), "{}", input.logical_name);
                assert_eq!(input.origin.member(), Some(member), "{}", input.logical_name);
            }
        }
    }
    let member_of = |input: InputId| graph.inputs[input.index()].member;
    for (index, section) in graph.sections.iter().enumerate() {
        assert!(section.input.index() < inputs);
        assert_eq!(section.origin.input(), Some(section.input), "section {index}");
        assert_eq!(section.origin.member(), member_of(section.input), "section {index}");
        let atom = &graph.atoms[section.atom.index()];
        assert_eq!(atom.section, Some(SectionId(index as u32)), "section {index}'s atom");
        assert_eq!(atom.origin.input(), Some(section.input), "atom of section {index}");
        assert_eq!(
            atom.origin.member(),
            member_of(section.input),
            "atom of section {index}"
        );
        if let Content::Input { input, range } = &atom.content {
            assert_eq!(*input, section.input, "atom of section {index}");
            assert!(
                range.end <= graph.inputs[input.index()].data.len(),
                "atom of section {index}"
            );
        }
    }
    assert_eq!(graph.atoms.len(), graph.sections.len(), "one atom per section");
    for (index, symbol) in graph.symbols.iter().enumerate() {
        let input = symbol
            .origin
            .input()
            .unwrap_or_else(|| panic!("symbol {index} has no input"));
        assert_eq!(symbol.origin.member(), member_of(input), "symbol {index}");
        if let Some(atom) = symbol.atom {
            let section = graph.atoms[atom.index()].section.expect("input atoms have a section");
            assert_eq!(
                graph.sections[section.index()].input,
                input,
                "symbol {index} ({})",
                symbol.name
            );
        }
    }
    for (index, edge) in graph.edges.iter().enumerate() {
        let section = graph.atoms[edge.source.index()]
            .section
            .expect("input atoms have a section");
        let input = graph.sections[section.index()].input;
        assert_eq!(edge.origin.input(), Some(input), "edge {index}");
        assert_eq!(edge.origin.member(), member_of(input), "edge {index}");
        if let Some(symbol) = edge.target_symbol.get() {
            assert_eq!(
                graph.symbols[symbol.index()].origin.input(),
                Some(input),
                "edge {index}'s target"
            );
        }
        if let Some(atom) = edge.target_atom.get() {
            assert!(atom.index() < graph.atoms.len(), "edge {index}'s target");
        }
    }
    for (index, comdat) in graph.comdats.iter().enumerate() {
        assert_eq!(comdat.origin.input(), Some(comdat.input), "COMDAT {index}");
        for section in &comdat.sections {
            assert_eq!(graph.sections[section.index()].input, comdat.input, "COMDAT {index}");
        }
    }
    for (index, unwind) in graph.unwinds.iter().enumerate() {
        let section = graph.atoms[unwind.table.index()]
            .section
            .expect("input atoms have a section");
        let input = graph.sections[section.index()].input;
        assert_eq!(unwind.origin.input(), Some(input), "unwind {index}");
        assert_eq!(unwind.origin.member(), member_of(input), "unwind {index}");
        if let Some(atom) = unwind.atom {
            let section = graph.atoms[atom.index()].section.expect("input atoms have a section");
            assert_eq!(
                graph.sections[section.index()].input,
                input,
                "unwind {index}'s function"
            );
        }
    }
    for (index, archive) in graph.archives.iter().enumerate() {
        assert_eq!(archive.origin.input(), Some(archive.input), "archive {index}");
        assert_eq!(
            graph.inputs[archive.input.index()].archive.map(|id| id.index()),
            Some(index)
        );
        for member in archive.members.clone() {
            let entry = &graph.archive_members[member as usize];
            assert_eq!(entry.archive.index(), index);
            assert_eq!(entry.origin.input(), Some(archive.input), "member {}", entry.name);
            assert_eq!(
                entry.origin.member().map(|id| id.0),
                Some(member),
                "member {}",
                entry.name
            );
        }
    }
    let edge_total: usize = (0..graph.atoms.len())
        .map(|atom| graph.edges_of(AtomId(atom as u32)).count())
        .sum();
    assert_eq!(edge_total, graph.edges.len(), "edges_of covers every edge");
}

#[test]
fn x86_64_objects_match_readelf() {
    let mut total = Counts::default();
    for program in program_names() {
        let dir = programs().join(&program);
        let objects: Vec<PathBuf> = x86_objects()
            .into_iter()
            .filter(|path| path.starts_with(&dir))
            .collect();
        assert!(!objects.is_empty(), "{program} has objects");
        // All of a program's objects (inputs and archive members) in one graph.
        let graph = read_files(&objects);
        assert_eq!(graph.inputs.len(), objects.len());
        assert!(graph.archives.is_empty() && graph.archive_members.is_empty());
        for path in &objects {
            total.add(check_elf_object(&graph, input_id(&graph, path), path));
        }
        check_origins(&graph);
    }
    eprintln!("x86_64 objects compared with readelf: {total:?}");
    assert!(total.objects >= 40, "{total:?}");
    assert!(
        total.comdats >= 18 && total.fdes > 0 && total.relocations > 500,
        "{total:?}"
    );
}

#[test]
fn program_inputs_read_in_link_order() {
    for program in program_names() {
        let inputs = program_inputs(&program);
        let graph = read_files(&inputs);
        assert_eq!(graph.inputs.len(), inputs.len(), "{program}");
        for (index, path) in inputs.iter().enumerate() {
            let input = &graph.inputs[index];
            assert_eq!(input.logical_name, input_name(path), "{program}");
            assert_eq!(input.ordinal as usize, index, "{program}");
            let wanted = if path.extension().is_some_and(|extension| extension == "a") {
                InputKind::Archive
            } else {
                InputKind::Object
            };
            assert_eq!(input.kind, wanted, "{program}: {}", path.display());
            assert_eq!(probe(&read_bytes(path)), wanted, "{program}: {}", path.display());
            if wanted == InputKind::Object {
                assert_eq!(input.format, Some(ObjectFormat::Elf), "{program}");
                assert_eq!(input.machine, Some(Machine::X86_64), "{program}");
            }
        }
        let archives = inputs
            .iter()
            .filter(|path| path.extension().is_some_and(|e| e == "a"))
            .count();
        assert_eq!(graph.archives.len(), archives, "{program}");
        check_origins(&graph);
    }
}

#[test]
fn comdat_groups_of_the_cxx_units() {
    let dir = programs().join("cxx_comdat");
    let units = [dir.join("unit_a.o"), dir.join("unit_b.o")];
    let graph = read_files(&units);
    let signatures = [
        "_Z4bumpv",
        "_Z6scaledIiET_S0_",
        "_Z6scaledIlET_S0_",
        "_Z8describeRK5Shape",
        "_ZNK4Rect4areaEv",
        "_ZNK4Rect4kindEv",
        "_ZTV4Rect",
        "shared_setting",
        "_ZZ4bumpvE5count",
    ];
    for (index, unit) in units.iter().enumerate() {
        let input = InputId(index as u32);
        let names: BTreeSet<&str> = graph
            .comdats
            .iter()
            .filter(|comdat| comdat.input == input)
            .map(|comdat| comdat.name.as_str())
            .collect();
        assert_eq!(names, signatures.iter().copied().collect(), "{}", unit.display());
        // The string section of `kind()` is not inside the group.
        let strings = graph
            .sections
            .iter()
            .find(|section| section.input == input && section.name == ".rodata._ZNK4Rect4kindEv.str1.1");
        if let Some(strings) = strings {
            assert_eq!(strings.comdat, None);
        }
        // STB_GNU_UNIQUE group symbols read as global, the others as weak.
        for symbol in graph
            .symbols
            .iter()
            .filter(|symbol| symbol.origin.input() == Some(input))
        {
            match symbol.name.as_str() {
                "shared_setting" | "_ZZ4bumpvE5count" => assert_eq!(symbol.binding, Binding::Global),
                "_Z4bumpv" | "_ZTV4Rect" | "_ZNK4Rect4areaEv" => assert_eq!(symbol.binding, Binding::Weak),
                _ => {}
            }
        }
        check_elf_object(&graph, input, unit);
    }
}

#[test]
fn common_weak_and_undefined_symbols() {
    let dir = programs().join("symbols");
    let files = [dir.join("common_a.o"), dir.join("defaults.o"), dir.join("main.o")];
    let graph = read_files(&files);
    let find = |input: u32, name: &str| {
        graph
            .symbols
            .iter()
            .find(|symbol| symbol.origin.input() == Some(InputId(input)) && symbol.name == name)
            .unwrap_or_else(|| panic!("no symbol {name} in input {input}"))
    };
    for name in ["tally", "mixed", "history"] {
        let symbol = find(0, name);
        assert_eq!(
            (symbol.binding, symbol.definition, symbol.atom),
            (Binding::Common, Definition::Common, None)
        );
    }
    assert_eq!(find(0, "history").value, 32, "a common symbol's value is its alignment");
    assert_eq!(find(1, "hook_value").binding, Binding::Weak);
    assert_eq!(find(1, "hook_value").definition, Definition::Defined);
    for name in ["missing_fn", "missing_var"] {
        let symbol = find(2, name);
        assert_eq!(
            (symbol.binding, symbol.definition),
            (Binding::Weak, Definition::Undefined)
        );
    }
}

#[test]
fn archives_match_ar_and_nm() {
    let archives = archives();
    assert_eq!(archives.len(), 2, "{archives:?}");
    for path in &archives {
        let graph = read_files(std::slice::from_ref(path));
        assert_eq!(graph.inputs.len(), 1);
        assert_eq!(graph.inputs[0].kind, InputKind::Archive);
        assert_eq!(graph.archives.len(), 1);
        assert!(
            graph.sections.is_empty() && graph.symbols.is_empty(),
            "members are not read yet"
        );
        let archive = &graph.archives[0];
        let thin = read_bytes(path).starts_with(b"!<thin>\n");
        assert_eq!(archive.thin, thin, "{}", path.display());
        let names = ar_members(path);
        let members: Vec<_> = graph.archive_members[archive.members.start as usize..archive.members.end as usize]
            .iter()
            .collect();
        assert_eq!(members.len(), graph.archive_members.len());
        assert_eq!(
            members.iter().map(|member| member.name.clone()).collect::<Vec<_>>(),
            names,
            "{}: ar t",
            path.display()
        );
        let nm = nm_archive_definitions(path);
        let armap = nm_armap(path);
        let dir = path.parent().expect("archive directory");
        for (ordinal, member) in members.iter().enumerate() {
            let what = format!("{}: member {}", path.display(), member.name);
            assert_eq!(member.ordinal as usize, ordinal, "{what}");
            assert_eq!(member.materialized, None, "{what}");
            // The member's bytes are the object it was made from.
            assert_eq!(
                &member.data[member.range.clone()],
                read_bytes(&dir.join(&member.name)),
                "{what}"
            );
            if thin {
                assert_eq!(member.range, 0..member.data.len(), "{what}");
            }
            let mut defines = member.defines.clone();
            defines.sort();
            let mut from_nm = nm.get(&member.name).cloned().unwrap_or_default();
            from_nm.sort();
            assert_eq!(defines, from_nm, "{what}: defined globals vs nm -A -g --defined-only");
            let mut from_index: Vec<String> = armap
                .iter()
                .filter(|(_, owner)| *owner == member.name)
                .map(|(symbol, _)| symbol.clone())
                .collect();
            from_index.sort();
            assert_eq!(defines, from_index, "{what}: defined globals vs the archive index");
        }
        eprintln!(
            "{}: {} members, {} defined symbols",
            path.display(),
            members.len(),
            members.iter().map(|member| member.defines.len()).sum::<usize>()
        );
        check_origins(&graph);
    }
}

#[test]
fn extracted_archive_members_match_readelf() {
    for path in archives() {
        let mut graph = read_files(std::slice::from_ref(&path));
        let member_count = graph.archive_members.len();
        if let Err(error) = extract_all_members(&mut graph) {
            panic!("extracting {}: {error}", path.display());
        }
        assert_eq!(graph.inputs.len(), 1 + member_count);
        let dir = path.parent().expect("archive directory");
        let mut total = Counts::default();
        for member_index in 0..member_count {
            let member = &graph.archive_members[member_index];
            let Some((input, reason)) = member.materialized.clone() else {
                panic!("{} not materialized", member.name);
            };
            assert_eq!(reason, MaterializationReason::WholeArchive);
            let entry = &graph.inputs[input.index()];
            assert_eq!(entry.logical_name, format!("{}({})", input_name(&path), member.name));
            assert_eq!(entry.kind, InputKind::Object);
            assert_eq!(entry.member.map(|id| id.index()), Some(member_index));
            assert_eq!(entry.archive, Some(member.archive));
            assert_eq!(
                &entry.data[entry.object_range.clone()],
                &member.data[member.range.clone()]
            );
            total.add(check_elf_object(&graph, input, &dir.join(&member.name)));
        }
        check_origins(&graph);
        // Extracting again changes nothing.
        let before = graph.inputs.len();
        extract_all_members(&mut graph).expect("second extraction");
        assert_eq!(graph.inputs.len(), before);
        eprintln!("{}: extracted members compared with readelf: {total:?}", path.display());
    }
}

/// GNU ar's symbol index lists every global symbol a member defines: TLS variables, IFUNCs, absolute
/// symbols and common symbols too (ld extracts members for all of them).
#[test]
fn archive_definitions_match_the_index_for_every_symbol_kind() {
    let dir = scratch!("link-read/kinds");
    let source = "__thread int kinds_tls = 1;\n\
                  int kinds_common;\n\
                  static int kinds_impl(void) { return 3; }\n\
                  static void *kinds_resolve(void) { return (void *)kinds_impl; }\n\
                  int kinds_ifunc(void) __attribute__((ifunc(\"kinds_resolve\")));\n\
                  __asm__(\".globl kinds_absolute\\n.set kinds_absolute, 0x1234\\n\"\n\
                          \".globl kinds_notype\\nkinds_notype:\\n.byte 0\\n\");\n\
                  int kinds_function(void) { return kinds_tls + kinds_common; }\n";
    std::fs::write(dir.join("kinds.c"), source).expect("write kinds.c");
    tool(
        "gcc",
        &["-O2", "-fcommon", "-fno-pie", "-c", "kinds.c", "-o", "kinds.o"],
        Some(&dir),
    );
    tool("ar", &["rcsD", "libkinds.a", "kinds.o"], Some(&dir));
    let path = dir.join("libkinds.a");
    let graph = read_files(std::slice::from_ref(&path));
    let mut defines = graph.archive_members[0].defines.clone();
    defines.sort();
    let mut index: Vec<String> = nm_armap(&path).into_iter().map(|(symbol, _)| symbol).collect();
    index.sort();
    assert_eq!(
        index,
        [
            "kinds_absolute",
            "kinds_common",
            "kinds_function",
            "kinds_ifunc",
            "kinds_notype",
            "kinds_tls"
        ],
        "the fixture itself"
    );
    assert_eq!(
        defines,
        index,
        "member definitions vs the archive index of {}",
        path.display()
    );
}

/// Member definitions come from the archive's symbol index when it has one (as ld.bfd and lld read them) and
/// from the members' own symbol tables when it has none (`ar S`): both give what `nm` lists, member by member.
#[test]
fn archives_with_and_without_an_index_list_the_same_definitions() {
    let dir = scratch!("link-read/index");
    std::fs::write(
        dir.join("one.c"),
        "int one_a(void) { return 1; }\nint one_b;\n__thread int one_t = 2;\n",
    )
    .expect("write one.c");
    std::fs::write(
        dir.join("two.c"),
        "static int hidden(void) { return 3; }\nint two(void) { return hidden(); }\n",
    )
    .expect("write two.c");
    std::fs::write(
        dir.join("three.c"),
        "static int nothing_global;\nint *three_local(void);\n",
    )
    .expect("write three.c");
    for name in ["one", "two", "three"] {
        tool("gcc", &["-O2", "-fcommon", "-c", &format!("{name}.c")], Some(&dir));
    }
    tool("ar", &["rcsD", "indexed.a", "one.o", "two.o", "three.o"], Some(&dir));
    tool("ar", &["rcSD", "plain.a", "one.o", "two.o", "three.o"], Some(&dir));
    assert!(!nm_armap(&dir.join("indexed.a")).is_empty(), "the fixture has an index");
    let listed = |name: &str| -> Vec<Vec<String>> {
        let graph = read_files(&[dir.join(name)]);
        graph
            .archive_members
            .iter()
            .map(|member| {
                let mut defines = member.defines.clone();
                defines.sort();
                defines
            })
            .collect()
    };
    let indexed = listed("indexed.a");
    assert_eq!(
        indexed,
        [
            vec!["one_a".to_string(), "one_b".to_string(), "one_t".to_string()],
            vec!["two".to_string()],
            vec![],
        ]
    );
    assert_eq!(listed("plain.a"), indexed, "without an index, from the members");
}

#[test]
fn foreign_objects_read_into_one_graph() {
    let foreign = foreign_objects();
    let elf_object = programs().join("basics/main.o");
    let mut files = foreign.clone();
    files.push(elf_object.clone());
    // Objects of four machines and three formats: read for inspection, as no link would take them together.
    let graph = read_files_for(LinkTarget::AnyMachine, &files);
    assert_eq!(graph.inputs.len(), 5);
    let expectations = [
        (ObjectFormat::Elf, Machine::AARCH64),
        (ObjectFormat::Coff, Machine::X86_64),
        (ObjectFormat::MachO, Machine::X86_64),
        (ObjectFormat::MachO, Machine::AARCH64),
        (ObjectFormat::Elf, Machine::X86_64),
    ];
    for (index, (format, machine)) in expectations.iter().enumerate() {
        let input = &graph.inputs[index];
        assert_eq!(probe(&input.data), InputKind::Object, "{}", input.logical_name);
        assert_eq!(
            (input.format, input.machine),
            (Some(*format), Some(*machine)),
            "{}",
            input.logical_name
        );
    }
    let aarch64 = check_elf_object(&graph, InputId(0), &foreign[0]);
    assert!(aarch64.relocations >= 6, "{aarch64:?}");
    check_elf_object(&graph, InputId(4), &elf_object);
    for (index, path) in foreign.iter().enumerate().skip(1) {
        check_llvm_object(&graph, InputId(index as u32), path);
    }
    // The C names, in each format's spelling, and the relocation types the README promises.
    let wanted: [(usize, &str, &[&str]); 4] = [
        (0, "", &["R_AARCH64_ADR_PREL_PG_HI21", "R_AARCH64_ABS64"]),
        (1, "", &["IMAGE_REL_AMD64_REL32", "IMAGE_REL_AMD64_ADDR64"]),
        (
            2,
            "_",
            &["X86_64_RELOC_BRANCH", "X86_64_RELOC_SIGNED", "X86_64_RELOC_UNSIGNED"],
        ),
        (
            3,
            "_",
            &["ARM64_RELOC_PAGE21", "ARM64_RELOC_PAGEOFF12", "ARM64_RELOC_BRANCH26"],
        ),
    ];
    for (index, prefix, relocations) in wanted {
        let input = InputId(index as u32);
        let label = &graph.inputs[index].logical_name;
        let symbol = |name: &str| {
            let full = format!("{prefix}{name}");
            graph
                .symbols
                .iter()
                .find(|symbol| symbol.origin.input() == Some(input) && symbol.name == full)
                .unwrap_or_else(|| panic!("{label}: no symbol {full}"))
        };
        for name in ["foreign_entry", "foreign_counter", "foreign_table"] {
            let entry = symbol(name);
            assert_eq!(
                (entry.binding, entry.definition),
                (Binding::Global, Definition::Defined),
                "{label}: {name}"
            );
            assert!(entry.atom.is_some(), "{label}: {name}");
        }
        assert_eq!(symbol("foreign_entry").symbol_type, SymbolType::Function, "{label}");
        assert_eq!(symbol("foreign_external").definition, Definition::Undefined, "{label}");
        let text_name = if prefix.is_empty() { ".text" } else { "__text" };
        let text = graph
            .sections
            .iter()
            .find(|section| section.input == input && section.name == text_name)
            .unwrap_or_else(|| panic!("{label}: no {text_name}"));
        assert_eq!(text.kind, SectionKind::Text, "{label}");
        let entry_atom = symbol("foreign_entry").atom.expect("defined");
        assert_eq!(entry_atom, text.atom, "{label}: foreign_entry is in {text_name}");
        // Every relocation type the README lists is there (by the tools' names, see `check_*`).
        let edges = graph
            .edges
            .iter()
            .filter(|edge| edge.origin.input() == Some(input))
            .count();
        assert!(edges >= relocations.len(), "{label}: {edges} edges");
        let names = if index == 0 {
            readelf_relocations(&foreign[0], &readelf_sections(&foreign[0]))
                .into_values()
                .flatten()
                .map(|relocation| relocation.type_name)
                .collect::<BTreeSet<_>>()
        } else {
            llvm_relocations(&foreign[index]).into_values().flatten().collect()
        };
        for relocation in relocations {
            assert!(names.contains(*relocation), "{label}: {relocation} in {names:?}");
        }
        assert!(
            graph
                .edges
                .iter()
                .filter(|edge| edge.origin.input() == Some(input))
                .all(|edge| edge.relocation.format == graph.inputs[index].format.expect("read")),
            "{label}: relocation formats"
        );
    }
    check_origins(&graph);
}

/// The raw relocation type of an LLVM relocation type name (COFF AMD64 and Mach-O x86_64 / arm64).
fn raw_relocation_type(name: &str) -> u32 {
    let table: &[(&str, u32)] = &[
        ("IMAGE_REL_AMD64_ABSOLUTE", 0),
        ("IMAGE_REL_AMD64_ADDR64", 1),
        ("IMAGE_REL_AMD64_ADDR32", 2),
        ("IMAGE_REL_AMD64_ADDR32NB", 3),
        ("IMAGE_REL_AMD64_REL32", 4),
        ("IMAGE_REL_AMD64_REL32_1", 5),
        ("IMAGE_REL_AMD64_REL32_2", 6),
        ("IMAGE_REL_AMD64_REL32_3", 7),
        ("IMAGE_REL_AMD64_REL32_4", 8),
        ("IMAGE_REL_AMD64_REL32_5", 9),
        ("IMAGE_REL_AMD64_SECTION", 10),
        ("IMAGE_REL_AMD64_SECREL", 11),
        ("X86_64_RELOC_UNSIGNED", 0),
        ("X86_64_RELOC_SIGNED", 1),
        ("X86_64_RELOC_BRANCH", 2),
        ("X86_64_RELOC_GOT_LOAD", 3),
        ("X86_64_RELOC_GOT", 4),
        ("X86_64_RELOC_SUBTRACTOR", 5),
        ("X86_64_RELOC_SIGNED_1", 6),
        ("X86_64_RELOC_SIGNED_2", 7),
        ("X86_64_RELOC_SIGNED_4", 8),
        ("X86_64_RELOC_TLV", 9),
        ("ARM64_RELOC_UNSIGNED", 0),
        ("ARM64_RELOC_SUBTRACTOR", 1),
        ("ARM64_RELOC_BRANCH26", 2),
        ("ARM64_RELOC_PAGE21", 3),
        ("ARM64_RELOC_PAGEOFF12", 4),
        ("ARM64_RELOC_GOT_LOAD_PAGE21", 5),
        ("ARM64_RELOC_GOT_LOAD_PAGEOFF12", 6),
        ("ARM64_RELOC_POINTER_TO_GOT", 7),
        ("ARM64_RELOC_TLVP_LOAD_PAGE21", 8),
        ("ARM64_RELOC_TLVP_LOAD_PAGEOFF12", 9),
        ("ARM64_RELOC_ADDEND", 10),
    ];
    table
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, raw)| *raw)
        .unwrap_or_else(|| panic!("unknown relocation type {name}"))
}

/// A COFF or Mach-O input against `llvm-objdump-14 -h`, `llvm-nm-14 -a` and `llvm-readobj-14 -r`.
fn check_llvm_object(graph: &LinkGraph, input: InputId, path: &Path) {
    let label = path.display().to_string();
    let sections = llvm_sections(path);
    let by_name: BTreeMap<&str, SectionId> = graph
        .sections
        .iter()
        .enumerate()
        .filter(|(_, section)| section.input == input)
        .map(|(index, section)| (section.name.as_str(), SectionId(index as u32)))
        .collect();
    // Every section with code or data is in the graph, with its size.
    for section in &sections {
        let placed = by_name.get(section.name.as_str());
        if matches!(section.section_type.as_str(), "TEXT" | "DATA" | "BSS") {
            let id = placed.unwrap_or_else(|| panic!("{label}: section {} not read", section.name));
            let ours = &graph.sections[id.index()];
            assert_eq!(ours.size, section.size, "{label}: size of {}", section.name);
            assert!(
                ours.flags & section_flags::ALLOCATED != 0,
                "{label}: {} allocated",
                section.name
            );
            let kind = match section.section_type.as_str() {
                "TEXT" => SectionKind::Text,
                "BSS" => SectionKind::UninitializedData,
                _ => ours.kind,
            };
            assert_eq!(ours.kind, kind, "{label}: kind of {}", section.name);
        }
    }
    for name in by_name.keys() {
        assert!(
            sections.iter().any(|section| section.name == *name),
            "{label}: section {name} unknown to llvm"
        );
    }
    // Symbols: the same names, definitions and offsets within their section.
    let ours: Vec<&neverc_link::graph::Symbol> = graph
        .symbols
        .iter()
        .filter(|symbol| symbol.origin.input() == Some(input) && !symbol.name.is_empty())
        .collect();
    // llvm-nm names a COFF file symbol `.file`; the graph gives it the file name of its auxiliary record.
    let coff = graph.inputs[input.index()].format == Some(ObjectFormat::Coff);
    let name_of = |symbol: &neverc_link::graph::Symbol| -> String {
        if coff && symbol.symbol_type == SymbolType::File {
            ".file".to_string()
        } else {
            symbol.name.clone()
        }
    };
    let nm = llvm_nm(path);
    let mut nm_names: Vec<String> = nm.iter().map(|symbol| symbol.name.clone()).collect();
    let mut our_names: Vec<String> = ours.iter().map(|symbol| name_of(symbol)).collect();
    nm_names.sort_unstable();
    our_names.sort_unstable();
    assert_eq!(our_names, nm_names, "{label}: symbol names vs llvm-nm -a");
    for expected in &nm {
        let what = format!("{label}: symbol {} ({})", expected.name, expected.letter);
        let symbol = ours
            .iter()
            .find(|symbol| name_of(symbol) == expected.name)
            .unwrap_or_else(|| panic!("{what}: missing"));
        match expected.letter {
            'U' => assert_eq!(symbol.definition, Definition::Undefined, "{what}"),
            'a' | 'A' => assert_eq!(symbol.definition, Definition::Absolute, "{what}"),
            'n' | 'N' => {}
            letter => {
                assert_eq!(symbol.definition, Definition::Defined, "{what}");
                let wanted = if letter.is_ascii_uppercase() {
                    Binding::Global
                } else {
                    Binding::Local
                };
                assert_eq!(symbol.binding, wanted, "{what}");
                let atom = symbol.atom.unwrap_or_else(|| panic!("{what}: no atom"));
                let section = graph.atoms[atom.index()].section.expect("input atom");
                let name = &graph.sections[section.index()].name;
                let address = sections
                    .iter()
                    .find(|candidate| candidate.name == *name)
                    .map_or(0, |candidate| candidate.address);
                let value = expected.value.unwrap_or_else(|| panic!("{what}: no value"));
                assert_eq!(
                    symbol.value,
                    value - address,
                    "{what}: offset within {name} (at {address:#x})"
                );
            }
        }
    }
    // Relocations: per section, the same raw types.
    let relocations = llvm_relocations(path);
    let mut total = 0;
    for (section, names) in &relocations {
        let id = by_name
            .get(section.as_str())
            .unwrap_or_else(|| panic!("{label}: relocated section {section} not read"));
        let atom = graph.sections[id.index()].atom;
        let mut ours: Vec<u32> = graph.edges_of(atom).map(|(_, edge)| edge.relocation.raw).collect();
        let mut theirs: Vec<u32> = names.iter().map(|name| raw_relocation_type(name)).collect();
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs, "{label}: relocation types of {section} ({names:?})");
        total += names.len();
    }
    let edges = graph
        .edges
        .iter()
        .filter(|edge| edge.origin.input() == Some(input))
        .count();
    assert_eq!(edges, total, "{label}: edge count");
    eprintln!(
        "{label}: {} sections, {} named symbols, {total} relocations compared with the LLVM tools",
        by_name.len(),
        ours.len()
    );
}

#[test]
fn unsupported_inputs_are_errors_naming_the_input() {
    let basics = programs().join("basics");
    let object = read_bytes(&basics.join("main.o"));
    let mut shared = object.clone();
    shared[16] = 3; // e_type = ET_DYN
    let cases: Vec<(String, Vec<u8>, InputKind)> = vec![
        (
            "ref.elf".to_string(),
            read_bytes(&basics.join("ref.elf")),
            InputKind::Object,
        ),
        ("shared.so".to_string(), shared, InputKind::SharedLibrary),
        ("notes.txt".to_string(), b"hello, linker\n".to_vec(), InputKind::Unknown),
        ("empty".to_string(), Vec::new(), InputKind::Unknown),
        ("script.ld".to_string(), b"INPUT(a.o)\n".to_vec(), InputKind::Script),
        (
            "module.bc".to_string(),
            b"BC\xc0\xde\x35\x14\x00\x00".to_vec(),
            InputKind::Bitcode,
        ),
        ("arch.a".to_string(), b"!<arch>\n".to_vec(), InputKind::Archive),
    ];
    for (name, data, kind) in cases {
        assert_eq!(probe(&data), kind, "{name}");
        let good = ("good.o".to_string(), object.clone());
        match graph_from_inputs(vec![good, (name.clone(), data)]) {
            Ok(graph) => {
                // Only an empty archive reads.
                assert_eq!(kind, InputKind::Archive, "{name} read");
                assert_eq!(graph.archive_members.len(), 0);
            }
            Err(error) => {
                assert_eq!(error.input, name, "{error}");
                assert!(!error.message.is_empty(), "{name}");
                assert!(error.to_string().starts_with(&name), "{error}");
            }
        }
    }
}

/// Reads `data` as input `name` (and extracts every member of an archive), whatever its machine and format:
/// never panics; an error names the input, or the member `name(member)` of an archive input.
fn read_must_not_panic(name: &str, data: Vec<u8>) -> bool {
    let check_error = |error: &ReadError| {
        assert!(error.names_input(name), "error `{error}` does not name input {name}");
        assert!(!error.message.is_empty(), "error for {name} has no message");
    };
    match graph_from_inputs_for(LinkTarget::AnyMachine, vec![(name.to_string(), data)]) {
        Ok(mut graph) => {
            touch_graph(&graph);
            match extract_all_members(&mut graph) {
                Ok(()) => {
                    touch_graph(&graph);
                    true
                }
                Err(error) => {
                    check_error(&error);
                    false
                }
            }
        }
        Err(error) => {
            check_error(&error);
            false
        }
    }
}

/// Walks every id the graph holds (out-of-range ids panic) and every atom's bytes.
fn touch_graph(graph: &LinkGraph) {
    assert_eq!(graph.dangling_id(), None);
    for atom in &graph.atoms {
        let _ = graph.atom_bytes(atom).len();
        let _ = atom.size();
    }
    for atom in 0..graph.atoms.len() {
        let _ = graph.edges_of(AtomId(atom as u32)).count();
    }
}

/// Every fixture file the mutation tests start from.
fn mutation_fixtures() -> Vec<PathBuf> {
    let mut files = x86_objects();
    files.push(fixture_library());
    files.extend(archives());
    files.extend(foreign_objects());
    files
}

#[test]
fn truncated_inputs_never_panic() {
    let mut runs = 0;
    let mut accepted = 0;
    for path in mutation_fixtures() {
        let data = read_bytes(&path);
        let name = input_name(&path);
        let mut rng = Rng::new(seed_of(&name));
        let mut lengths: BTreeSet<usize> = (0..data.len().min(96)).collect();
        lengths.extend((1..16).map(|back| data.len().saturating_sub(back)));
        for _ in 0..160 {
            lengths.insert(rng.below(data.len()));
        }
        for length in lengths {
            runs += 1;
            if read_must_not_panic(&name, data[..length].to_vec()) {
                accepted += 1;
            }
        }
    }
    eprintln!("truncations: {runs} reads, {accepted} read without error");
    assert!(runs > 10_000);
}

#[test]
fn corrupted_inputs_never_panic() {
    let mut runs = 0;
    let mut accepted = 0;
    for path in mutation_fixtures() {
        let data = read_bytes(&path);
        let name = input_name(&path);
        let mut rng = Rng::new(seed_of(&name) ^ 0x5eed);
        for round in 0..400 {
            let mut copy = data.clone();
            // One to four flipped bytes, biased to the headers (the first 256 bytes) half of the time.
            let flips = 1 + rng.below(4);
            for _ in 0..flips {
                let range = if round % 2 == 0 {
                    data.len().min(256)
                } else {
                    data.len()
                };
                let offset = rng.below(range);
                let mask = (1 + rng.below(255)) as u8;
                copy[offset] ^= mask;
            }
            runs += 1;
            if read_must_not_panic(&name, copy) {
                accepted += 1;
            }
        }
    }
    eprintln!("corruptions: {runs} reads, {accepted} read without error");
    assert!(runs > 10_000);
}

/// Sets every field of every ELF section header, symbol and relocation entry to extreme values in turn.
#[test]
fn elf_fields_set_to_extremes_never_panic() {
    let mut runs = 0;
    let mut files: Vec<PathBuf> = x86_objects();
    files.push(foreign_objects()[0].clone());
    for path in files {
        let data = read_bytes(&path);
        let name = input_name(&path);
        let sections = readelf_sections(&path);
        let le64 = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes")) as usize;
        let le16 = |at: usize| u16::from_le_bytes(data[at..at + 2].try_into().expect("2 bytes")) as usize;
        let shoff = le64(0x28);
        let shentsize = le16(0x3a);
        // (offset, width) of every field to overwrite.
        let mut fields: Vec<(usize, usize)> = Vec::new();
        let shdr = [
            (0, 4),
            (4, 4),
            (8, 8),
            (16, 8),
            (24, 8),
            (32, 8),
            (40, 4),
            (44, 4),
            (48, 8),
            (56, 8),
        ];
        for section in &sections {
            let base = shoff + section.index as usize * shentsize;
            fields.extend(shdr.iter().map(|(at, width)| (base + at, *width)));
            // The first entries of symbol and relocation tables.
            let entry: &[(usize, usize)] = match section.sh_type.as_str() {
                "SYMTAB" => &[(0, 4), (4, 1), (5, 1), (6, 2), (8, 8), (16, 8)],
                "RELA" => &[(0, 8), (8, 4), (12, 4), (16, 8)],
                _ => &[],
            };
            if !entry.is_empty() && section.entsize > 0 {
                let count = (section.size / section.entsize).min(12) as usize;
                for index in 0..count {
                    let base = section.offset as usize + index * section.entsize as usize;
                    fields.extend(entry.iter().map(|(at, width)| (base + at, *width)));
                }
            }
        }
        for (offset, width) in fields {
            let values: [u64; 4] = [u64::MAX, 0, 0x7fff_ffff, data.len() as u64 - 1];
            for value in values {
                let mut copy = data.clone();
                copy[offset..offset + width].copy_from_slice(&value.to_le_bytes()[..width]);
                runs += 1;
                read_must_not_panic(&name, copy);
            }
        }
    }
    eprintln!("ELF field extremes: {runs} reads");
}

/// A shared library built by gcc (once per run) with a `DT_SONAME`, a `DT_NEEDED`, two versions
/// (`FIX_1` and `FIX_2`, a version script) and a function defined at both (`both@FIX_1`, hidden, and the
/// default `both@@FIX_2`), a weak definition, an object, a thread-local and an undefined reference.
fn fixture_library() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let dir = scratch!("link-read/shared");
            std::fs::write(
                dir.join("fix.c"),
                "extern int needed_elsewhere(void);\n\
                 int counter = 3;\n\
                 __thread int per_thread;\n\
                 int first(void) { return counter + needed_elsewhere(); }\n\
                 __attribute__((weak)) int maybe(void) { return 1; }\n\
                 int both_old(void) { return 1; }\n\
                 int both_new(void) { return 2; }\n\
                 __asm__(\".symver both_old, both@FIX_1\");\n\
                 __asm__(\".symver both_new, both@@FIX_2\");\n\
                 static int hidden_helper(void) { return 4; }\n\
                 int (*keep)(void) = hidden_helper;\n",
            )
            .unwrap();
            std::fs::write(
                dir.join("fix.map"),
                "FIX_1 { global: first; counter; per_thread; maybe; keep; local: *; };\nFIX_2 { } FIX_1;\n",
            )
            .unwrap();
            tool(
                "gcc",
                &[
                    "-shared",
                    "-fPIC",
                    "-O2",
                    "-Wl,-soname,libfix.so.1",
                    "-Wl,--version-script=fix.map",
                    "fix.c",
                    "-o",
                    "libfix.so",
                    "-Wl,--no-as-needed",
                    "-lm",
                ],
                Some(&dir),
            );
            dir.join("libfix.so")
        })
        .clone()
}

/// What `readelf -d` and `readelf --dyn-syms` say a shared library is.
struct ReadelfLibrary {
    soname: Option<String>,
    needed: Vec<String>,
    /// The names it references.
    references: BTreeSet<String>,
    /// Its definitions that an unversioned reference may bind to (global, weak or unique, not hidden), each
    /// with its version.
    definitions: BTreeSet<(String, Option<String>)>,
}

fn readelf_library(path: &Path) -> ReadelfLibrary {
    let path_text = path.display().to_string();
    let dynamic = tool("readelf", &["-d", "-W", &path_text], None);
    let bracketed = |line: &str| {
        line.split('[')
            .nth(1)
            .and_then(|rest| rest.split(']').next())
            .map(str::to_string)
    };
    let soname = dynamic
        .lines()
        .find(|line| line.contains("(SONAME)"))
        .and_then(bracketed);
    let needed = dynamic
        .lines()
        .filter(|line| line.contains("(NEEDED)"))
        .filter_map(bracketed)
        .collect();
    let symbols = tool("readelf", &["--dyn-syms", "-W", &path_text], None);
    // The versions the library defines (`readelf -V`: `Rev: 1  Flags: none  Index: 2  Cnt: 1  Name: FIX_1`).
    let versions = tool("readelf", &["-V", "-W", &path_text], None);
    let version_names: BTreeSet<&str> = versions
        .lines()
        .filter(|line| line.contains("Index:"))
        .filter_map(|line| line.split("Name: ").nth(1))
        .map(str::trim)
        .collect();
    let (mut references, mut definitions) = (BTreeSet::new(), BTreeSet::new());
    for line in symbols.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, _, _, _, bind, _, ndx, name, ..] = fields[..] else {
            continue;
        };
        if !matches!(bind, "GLOBAL" | "WEAK" | "UNIQUE") {
            continue;
        }
        if ndx == "UND" {
            if bind == "GLOBAL" {
                references.insert(name.split('@').next().unwrap_or(name).to_string());
            }
            continue;
        }
        if let Some((name, version)) = name.split_once("@@") {
            definitions.insert((name.to_string(), Some(version.to_string())));
        } else if !name.contains('@') && ndx == "ABS" && version_names.contains(name) {
            // The symbol naming a version definition is at that version; readelf leaves out `@@NAME`.
            definitions.insert((name.to_string(), Some(name.to_string())));
        } else if let Some((_, version)) = name.split_once('@') {
            // A hidden version is read under its versioned name, which only a versioned reference names.
            definitions.insert((name.to_string(), Some(version.to_string())));
        } else {
            definitions.insert((name.to_string(), None));
        }
    }
    ReadelfLibrary {
        soname,
        needed,
        references,
        definitions,
    }
}

#[test]
fn shared_libraries_match_readelf() {
    let mut libraries = vec![fixture_library()];
    for name in ["libc.so.6", "libm.so.6", "libstdc++.so.6"] {
        let found = tool("gcc", &[&format!("-print-file-name={name}")], None);
        libraries.push(PathBuf::from(found.trim()));
    }
    for path in &libraries {
        let graph = read_files(std::slice::from_ref(path));
        let ReadelfLibrary {
            soname,
            needed,
            references,
            definitions,
        } = readelf_library(path);
        assert_eq!(graph.inputs[0].kind, InputKind::SharedLibrary, "{}", path.display());
        assert_eq!(graph.shared_libraries.len(), 1);
        let library = &graph.shared_libraries[0];
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(library.install_name, soname.unwrap_or(file_name), "{}", path.display());
        assert_eq!(library.needed, needed, "{}", path.display());
        let read_references: BTreeSet<String> = library.references.iter().cloned().collect();
        assert_eq!(read_references, references, "{}", path.display());
        let read: BTreeSet<(String, Option<String>)> = graph
            .symbols
            .iter()
            .map(|symbol| {
                assert_eq!(symbol.definition, Definition::Shared, "{}", symbol.name);
                assert_eq!(symbol.atom, None);
                (symbol.name.clone(), symbol.version.clone())
            })
            .collect();
        assert_eq!(
            read.len(),
            graph.symbols.len(),
            "{}: a definition read twice",
            path.display()
        );
        assert_eq!(read, definitions, "{}", path.display());
        eprintln!(
            "{}: {} definitions, {} references",
            path.display(),
            read.len(),
            references.len()
        );
    }
    // The fixture's versions: the default `both@@FIX_2` is read as `both` (libc.so.6's hidden versions, such
    // as `memcpy@GLIBC_2.2.5`, under their versioned names, as readelf lists them).
    let graph = read_files(&[fixture_library()]);
    let version_of = |name: &str| {
        graph
            .symbols
            .iter()
            .find(|symbol| symbol.name == name)
            .map(|symbol| (symbol.version.clone(), symbol.binding, symbol.symbol_type))
    };
    assert_eq!(
        version_of("both"),
        Some((Some("FIX_2".into()), Binding::Global, SymbolType::Function))
    );
    assert_eq!(
        version_of("maybe"),
        Some((Some("FIX_1".into()), Binding::Weak, SymbolType::Function))
    );
    assert_eq!(version_of("per_thread").map(|found| found.2), Some(SymbolType::Tls));
    assert_eq!(version_of("counter").map(|found| found.2), Some(SymbolType::Object));
    assert_eq!(version_of("hidden_helper"), None);
    assert_eq!(graph.shared_libraries[0].needed, ["libm.so.6", "libc.so.6"]);
}
