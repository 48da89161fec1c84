//! The infos of the fifteen entity kinds, as pages and `Get<Kind>Info` write them, and the proof's. Names,
//! contents and other views point into the graph lent for the callback: they are valid for the callback
//! only (the generated headers say so of every view the host hands out).

use std::ffi::c_void;

use neverc_link::graph::{EntityKind, LinkGraph, MaterializationReason, Origin, SyntheticRole};
use neverc_sys::plugin::write_element;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi::{self, Versioned};
use neverc_tables::status::StatusCode;

use super::handles::Scope;
use super::{NO_EXTENSIONS, empty_view, flag, header, view};
use crate::memory::write_struct;

/// Where an info goes: an element of a caller-owned page, or a caller's out-parameter (whose header's
/// `StructSize` says how large it is).
#[derive(Clone, Copy)]
pub(crate) enum Place {
    Element { data: *mut c_void, stride: u64, slot: u64 },
    Out(*mut c_void),
}

impl Place {
    /// Writes `value` there: INVALID_ARGUMENT for a null pointer or a stride smaller than the structure,
    /// ABI_MISMATCH for an out-parameter whose `StructSize` is smaller than the structure.
    pub(crate) fn put<T: Versioned>(self, value: T) -> Result<(), StatusCode> {
        match self {
            Place::Element { data, stride, slot } => write_element(data, stride, slot, value)
                .then_some(())
                .ok_or(StatusCode::InvalidArgument),
            Place::Out(out) => write_struct(out.cast::<T>(), value),
        }
    }
}

/// The size of the info of `kind` (the least `ElementStride` of its pages); `None` for a kind the Link API
/// does not page.
pub(crate) fn info_size(kind: EntityKind) -> Option<u64> {
    use std::mem::size_of;
    let size = match kind {
        EntityKind::Input => size_of::<ffi::LinkInputInfo>(),
        EntityKind::Archive => size_of::<ffi::LinkArchiveInfo>(),
        EntityKind::ArchiveMember => size_of::<ffi::LinkArchiveMemberInfo>(),
        EntityKind::SharedLibrary => size_of::<ffi::LinkSharedLibraryInfo>(),
        EntityKind::BitcodeModule => size_of::<ffi::LinkBitcodeModuleInfo>(),
        EntityKind::Section => size_of::<ffi::LinkSectionInfo>(),
        EntityKind::Atom => size_of::<ffi::LinkAtomInfo>(),
        EntityKind::Symbol => size_of::<ffi::LinkSymbolInfo>(),
        EntityKind::Edge => size_of::<ffi::LinkEdgeInfo>(),
        EntityKind::Comdat => size_of::<ffi::LinkComdatInfo>(),
        EntityKind::Import => size_of::<ffi::LinkImportInfo>(),
        EntityKind::Export => size_of::<ffi::LinkExportInfo>(),
        EntityKind::Unwind => size_of::<ffi::LinkUnwindInfo>(),
        EntityKind::Synthetic => size_of::<ffi::LinkSyntheticInfo>(),
        EntityKind::Constraint => size_of::<ffi::LinkConstraintInfo>(),
        EntityKind::LtoResolution => return None,
    };
    Some(size as u64)
}

/// Describes the entities of one graph in one scope.
pub(crate) struct Describer<'g> {
    pub(crate) graph: &'g LinkGraph,
    pub(crate) scope: Scope,
    pub(crate) tables: &'static PhaseTables,
}

impl<'g> Describer<'g> {
    fn handle(&self, kind: EntityKind, index: Option<usize>) -> ffi::Handle {
        self.scope.optional(kind, index)
    }

    fn phase(&self, index: Option<u16>) -> ffi::InterfaceId {
        index
            .and_then(|index| self.tables.phases.get(usize::from(index)))
            .map(|phase| ffi::InterfaceId {
                high: phase.id.high,
                low: phase.id.low,
            })
            .unwrap_or_default()
    }

    fn origin(&self, origin: &Origin) -> ffi::LinkOrigin {
        ffi::LinkOrigin {
            header: header::<ffi::LinkOrigin>(),
            input: ffi::LinkInputHandle(self.handle(EntityKind::Input, origin.input().map(|input| input.index()))),
            archive_member: ffi::LinkArchiveMemberHandle(
                self.handle(EntityKind::ArchiveMember, origin.member().map(|member| member.index())),
            ),
            object_graph: ffi::ObjectGraphHandle::default(),
            object_entity_id: u64::from(origin.object_entity),
            created_by_phase: self.phase(origin.created_by_phase()),
            created_by_provider: empty_view(),
            last_mutation_phase: self.phase(origin.last_mutation_phase()),
            last_mutation_plugin: empty_view(),
        }
    }

    /// Writes the info of entity `index` of `kind` at `place`; the caller checked the index.
    pub(crate) fn write(&self, kind: EntityKind, index: usize, place: Place) -> Result<(), StatusCode> {
        let graph = self.graph;
        let me = self.scope.entity(kind, index);
        match kind {
            EntityKind::Input => {
                let input = &graph.inputs[index];
                let find = |found: Option<usize>, kind: EntityKind| self.handle(kind, found);
                place.put(ffi::LinkInputInfo {
                    header: header::<ffi::LinkInputInfo>(),
                    input: ffi::LinkInputHandle(me),
                    kind: input.kind as u32,
                    reserved: 0,
                    flags: 0,
                    ordinal: u64::from(input.ordinal),
                    logical_uri: view(&input.logical_name),
                    content_digest: [0; 32],
                    reader_route: ffi::InterfaceId::default(),
                    object_graph: ffi::ObjectGraphHandle::default(),
                    archive: ffi::LinkArchiveHandle(find(
                        graph.archives.iter().position(|archive| archive.input.index() == index),
                        EntityKind::Archive,
                    )),
                    shared_library: ffi::LinkSharedLibraryHandle(find(
                        graph
                            .shared_libraries
                            .iter()
                            .position(|library| library.input.index() == index),
                        EntityKind::SharedLibrary,
                    )),
                    bitcode_module: ffi::LinkBitcodeModuleHandle(find(
                        graph
                            .bitcode_modules
                            .iter()
                            .position(|module| module.input.index() == index),
                        EntityKind::BitcodeModule,
                    )),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Archive => {
                let archive = &graph.archives[index];
                place.put(ffi::LinkArchiveInfo {
                    header: header::<ffi::LinkArchiveInfo>(),
                    archive: ffi::LinkArchiveHandle(me),
                    thin: flag(archive.thin),
                    reserved: 0,
                    origin: self.origin(&archive.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::ArchiveMember => {
                let member = &graph.archive_members[index];
                let reason = match &member.materialized {
                    Some((_, MaterializationReason::Defines(symbol))) => view(symbol),
                    Some((_, MaterializationReason::WholeArchive)) => view("--whole-archive"),
                    None => empty_view(),
                };
                place.put(ffi::LinkArchiveMemberInfo {
                    header: header::<ffi::LinkArchiveMemberInfo>(),
                    member: ffi::LinkArchiveMemberHandle(me),
                    ordinal: u64::from(member.ordinal),
                    content_digest: [0; 32],
                    materialized: flag(member.materialized.is_some()),
                    reserved: 0,
                    materialization_reason: reason,
                    origin: self.origin(&member.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::SharedLibrary => {
                let library = &graph.shared_libraries[index];
                place.put(ffi::LinkSharedLibraryInfo {
                    header: header::<ffi::LinkSharedLibraryInfo>(),
                    shared_library: ffi::LinkSharedLibraryHandle(me),
                    install_name: view(&library.install_name),
                    content_digest: [0; 32],
                    origin: self.origin(&library.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::BitcodeModule => {
                let module = &graph.bitcode_modules[index];
                place.put(ffi::LinkBitcodeModuleInfo {
                    header: header::<ffi::LinkBitcodeModuleInfo>(),
                    bitcode_module: ffi::LinkBitcodeModuleHandle(me),
                    content_digest: [0; 32],
                    summary: ffi::ByteView {
                        data: std::ptr::null(),
                        length: 0,
                    },
                    origin: self.origin(&module.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Section => {
                let section = &graph.sections[index];
                place.put(ffi::LinkSectionInfo {
                    header: header::<ffi::LinkSectionInfo>(),
                    section: ffi::LinkSectionHandle(me),
                    name: view(&section.name),
                    kind: 0,
                    reserved: 0,
                    flags: section.flags,
                    alignment: section.alignment,
                    address: section.address,
                    file_offset: section.file_offset,
                    size: section.size,
                    comdat: ffi::LinkComdatHandle(
                        self.handle(EntityKind::Comdat, section.comdat.map(|comdat| comdat.index())),
                    ),
                    origin: self.origin(&section.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Atom => {
                let atom = &graph.atoms[index];
                let bytes = graph.atom_bytes(atom);
                place.put(ffi::LinkAtomInfo {
                    header: header::<ffi::LinkAtomInfo>(),
                    atom: ffi::LinkAtomHandle(me),
                    section: ffi::LinkSectionHandle(
                        self.handle(EntityKind::Section, atom.section.map(|section| section.index())),
                    ),
                    name: view(&atom.name),
                    flags: atom.flags,
                    alignment: atom.alignment,
                    address: atom.address,
                    file_offset: atom.file_offset,
                    content: ffi::ByteView {
                        data: if bytes.is_empty() {
                            std::ptr::null()
                        } else {
                            bytes.as_ptr()
                        },
                        length: bytes.len() as u64,
                    },
                    zero_fill_size: atom.zero_fill,
                    comdat: ffi::LinkComdatHandle(
                        self.handle(EntityKind::Comdat, atom.comdat.map(|comdat| comdat.index())),
                    ),
                    fold_leader: ffi::LinkAtomHandle(
                        self.handle(EntityKind::Atom, atom.fold_leader.map(|leader| leader.index())),
                    ),
                    origin: self.origin(&atom.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Symbol => {
                let symbol = &graph.symbols[index];
                place.put(ffi::LinkSymbolInfo {
                    header: header::<ffi::LinkSymbolInfo>(),
                    symbol: ffi::LinkSymbolHandle(me),
                    name: view(&symbol.name),
                    version: symbol.version.as_deref().map_or_else(empty_view, view),
                    binding: symbol.binding as u32,
                    visibility: symbol.visibility as u32,
                    definition: symbol.definition as u32,
                    r#type: 0,
                    atom: ffi::LinkAtomHandle(self.handle(EntityKind::Atom, symbol.atom.map(|atom| atom.index()))),
                    value: symbol.value,
                    size: symbol.size,
                    is_prevailing: flag(symbol.prevailing),
                    is_exported: flag(symbol.exported),
                    is_imported: flag(symbol.imported),
                    is_root: flag(symbol.root),
                    origin: self.origin(&symbol.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Edge => {
                let edge = &graph.edges[index];
                place.put(ffi::LinkEdgeInfo {
                    header: header::<ffi::LinkEdgeInfo>(),
                    edge: ffi::LinkEdgeHandle(me),
                    kind: edge.kind as u32,
                    reserved: 0,
                    source: ffi::LinkAtomHandle(self.handle(EntityKind::Atom, Some(edge.source.index()))),
                    offset: edge.offset,
                    relocation_kind: edge.relocation.raw,
                    width: u32::from(edge.width),
                    addend: edge.addend,
                    is_pc_relative: flag(edge.pc_relative),
                    is_signed: flag(edge.signed),
                    reserved2: [0; 2],
                    target_symbol: ffi::LinkSymbolHandle(self.handle(
                        EntityKind::Symbol,
                        edge.target_symbol.get().map(|symbol| symbol.index()),
                    )),
                    target_atom: ffi::LinkAtomHandle(
                        self.handle(EntityKind::Atom, edge.target_atom.get().map(|atom| atom.index())),
                    ),
                    origin: self.origin(&edge.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Comdat => {
                let comdat = &graph.comdats[index];
                // The chosen copy's section: the first section of the group that prevailed.
                let selected = comdat
                    .selected
                    .and_then(|chosen| graph.comdats.get(chosen.index()))
                    .and_then(|chosen| chosen.sections.first())
                    .map(|section| section.index());
                place.put(ffi::LinkComdatInfo {
                    header: header::<ffi::LinkComdatInfo>(),
                    comdat: ffi::LinkComdatHandle(me),
                    name: view(&comdat.name),
                    selection: comdat.selection as u32,
                    reserved: 0,
                    selected: ffi::LinkSectionHandle(self.handle(EntityKind::Section, selected)),
                    origin: self.origin(&comdat.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Import => {
                let import = &graph.imports[index];
                let library = import
                    .library
                    .and_then(|library| graph.shared_libraries.get(library.index()))
                    .map_or_else(empty_view, |library| view(&library.install_name));
                place.put(ffi::LinkImportInfo {
                    header: header::<ffi::LinkImportInfo>(),
                    import: ffi::LinkImportHandle(me),
                    name: view(&import.name),
                    library,
                    symbol: ffi::LinkSymbolHandle(self.handle(EntityKind::Symbol, Some(import.symbol.index()))),
                    origin: self.origin(&import.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Export => {
                let export = &graph.exports[index];
                place.put(ffi::LinkExportInfo {
                    header: header::<ffi::LinkExportInfo>(),
                    export: ffi::LinkExportHandle(me),
                    name: view(&export.name),
                    symbol: ffi::LinkSymbolHandle(self.handle(EntityKind::Symbol, Some(export.symbol.index()))),
                    origin: self.origin(&export.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Unwind => {
                let unwind = &graph.unwinds[index];
                place.put(ffi::LinkUnwindInfo {
                    header: header::<ffi::LinkUnwindInfo>(),
                    unwind: ffi::LinkUnwindHandle(me),
                    atom: ffi::LinkAtomHandle(self.handle(EntityKind::Atom, unwind.atom.map(|atom| atom.index()))),
                    personality_symbol: ffi::LinkSymbolHandle(
                        self.handle(EntityKind::Symbol, unwind.personality.map(|symbol| symbol.index())),
                    ),
                    origin: self.origin(&unwind.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Synthetic => {
                let synthetic = &graph.synthetics[index];
                let role = match &synthetic.role {
                    SyntheticRole::GotEntry(_) => view(".got"),
                    SyntheticRole::IpltEntry(_) => view(".iplt"),
                    SyntheticRole::LinkerDefined(name) | SyntheticRole::Plugin(name) => view(name),
                };
                place.put(ffi::LinkSyntheticInfo {
                    header: header::<ffi::LinkSyntheticInfo>(),
                    synthetic: ffi::LinkSyntheticHandle(me),
                    role,
                    section: ffi::LinkSectionHandle(
                        self.handle(EntityKind::Section, synthetic.section.map(|section| section.index())),
                    ),
                    atom: ffi::LinkAtomHandle(self.handle(EntityKind::Atom, synthetic.atom.map(|atom| atom.index()))),
                    origin: self.origin(&synthetic.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::Constraint => {
                let constraint = &graph.constraints[index];
                // An "order" constraint's subject is an atom: it is reported as the atom's handle value, the
                // way CreateConstraint takes it.
                let subject = match usize::try_from(constraint.subject) {
                    Ok(atom) if constraint.kind == "order" && atom < graph.atoms.len() => {
                        self.scope.entity(EntityKind::Atom, atom).value
                    }
                    _ => constraint.subject,
                };
                place.put(ffi::LinkConstraintInfo {
                    header: header::<ffi::LinkConstraintInfo>(),
                    constraint: ffi::LinkConstraintHandle(me),
                    kind: view(&constraint.kind),
                    subject_id: subject,
                    value: constraint.value,
                    required: flag(constraint.required),
                    reserved: 0,
                    origin: self.origin(&constraint.origin),
                    extensions: NO_EXTENSIONS,
                })
            }
            EntityKind::LtoResolution => Err(StatusCode::CapabilityUnavailable),
        }
    }
}
