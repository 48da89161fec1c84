//! The pagers of the fifteen entity kinds: caller-owned pages of `ElementCapacity` elements `ElementStride`
//! bytes apart, filled from a cursor with the runtime's page semantics (`PhaseFrame::page`: a cursor past
//! the end is INVALID_ARGUMENT).

use std::ffi::c_void;

use neverc_link::frame::{Handle, PhaseFrame};
use neverc_link::graph::EntityKind;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::StatusCode;

use super::infos::{Describer, Place, info_size};
use super::{FrameRequest, deliver_page, flag};
use crate::status::guarded;

/// The most elements one page is filled with: a capacity above it gets this many and `HasMore`.
const PAGE_LIMIT: u64 = 1 << 16;

/// Fills the caller's page with infos of `kind` from `cursor`. A stride smaller than the info, a null
/// `Data` with a capacity, or a cursor past the end is INVALID_ARGUMENT.
pub(crate) fn fill_page(
    frame: &PhaseFrame<'_>,
    describer: &Describer<'_>,
    kind: EntityKind,
    cursor: u64,
    mut page: ffi::LinkEntityPage,
) -> Result<ffi::LinkEntityPage, StatusCode> {
    let element = info_size(kind).ok_or(StatusCode::CapabilityUnavailable)?;
    if page.element_stride < element || (page.data.is_null() && page.element_capacity > 0) {
        return Err(StatusCode::InvalidArgument);
    }
    // The runtime's pager says which entities the page holds (and refuses a cursor past the end).
    let remaining = (frame.graph().count(kind) as u64).saturating_sub(cursor);
    let capacity = page.element_capacity.min(remaining).min(PAGE_LIMIT) as usize;
    let mut handles = vec![
        Handle {
            kind,
            index: 0,
            generation: 0,
            session: 0,
        };
        capacity
    ];
    let paged = frame.page(kind, cursor, &mut handles).map_err(|status| status.code)?;
    for (slot, handle) in handles.iter().take(paged.count).enumerate() {
        let place = Place::Element {
            data: page.data,
            stride: page.element_stride,
            slot: slot as u64,
        };
        describer.write(kind, handle.index as usize, place)?;
    }
    page.out_count = paged.count as u64;
    page.next_cursor = paged.next_cursor;
    page.has_more = flag(paged.has_more);
    Ok(page)
}

/// A page of `kind` through a task handle.
fn page_of(
    kind: EntityKind,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    guarded(|| {
        deliver_page(task.0, page, |given| FrameRequest::Page {
            kind,
            graph: graph.0,
            cursor,
            page: given,
            answer: None,
        })
    })
}

/// A `NevercLinkAPI.Get<Kind>Page` slot: the pages of one entity kind.
macro_rules! page_slot {
    ($name:ident, $kind:ident) => {
        #[doc = concat!("`NevercLinkAPI.", stringify!($name), "`: the pages of `EntityKind::", stringify!($kind), "`.")]
        pub(crate) extern "C" fn $name(
            _context: *mut c_void,
            task: ffi::TaskHandle,
            graph: ffi::LinkGraphHandle,
            cursor: u64,
            page: *mut ffi::LinkEntityPage,
        ) -> ffi::Status {
            page_of(EntityKind::$kind, task, graph, cursor, page)
        }
    };
}

page_slot!(get_input_page, Input);
page_slot!(get_archive_page, Archive);
page_slot!(get_archive_member_page, ArchiveMember);
page_slot!(get_shared_library_page, SharedLibrary);
page_slot!(get_bitcode_module_page, BitcodeModule);
page_slot!(get_section_page, Section);
page_slot!(get_atom_page, Atom);
page_slot!(get_symbol_page, Symbol);
page_slot!(get_edge_page, Edge);
page_slot!(get_comdat_page, Comdat);
page_slot!(get_import_page, Import);
page_slot!(get_export_page, Export);
page_slot!(get_unwind_page, Unwind);
page_slot!(get_synthetic_page, Synthetic);
page_slot!(get_constraint_page, Constraint);

/// Sends a request for one info to the frame lent under a task handle: the answer is written to `out` there.
fn info_of(kind: EntityKind, task: ffi::TaskHandle, handle: ffi::Handle, out: *mut c_void) -> ffi::Status {
    guarded(|| {
        super::answer_of(
            task.0,
            FrameRequest::Info {
                kind,
                handle,
                out,
                answer: None,
            },
        )
    })
}

/// A `NevercLinkAPI.Get<Kind>Info` slot: one info of one entity kind.
macro_rules! info_slot {
    ($name:ident, $kind:ident, $handle:ident, $info:ident) => {
        #[doc = concat!("`NevercLinkAPI.", stringify!($name), "`: one `", stringify!($info), "`.")]
        pub(crate) extern "C" fn $name(
            _context: *mut c_void,
            task: ffi::TaskHandle,
            handle: ffi::$handle,
            out: *mut ffi::$info,
        ) -> ffi::Status {
            info_of(EntityKind::$kind, task, handle.0, out.cast())
        }
    };
}

info_slot!(get_input_info, Input, LinkInputHandle, LinkInputInfo);
info_slot!(get_archive_info, Archive, LinkArchiveHandle, LinkArchiveInfo);
info_slot!(
    get_archive_member_info,
    ArchiveMember,
    LinkArchiveMemberHandle,
    LinkArchiveMemberInfo
);
info_slot!(
    get_shared_library_info,
    SharedLibrary,
    LinkSharedLibraryHandle,
    LinkSharedLibraryInfo
);
info_slot!(
    get_bitcode_module_info,
    BitcodeModule,
    LinkBitcodeModuleHandle,
    LinkBitcodeModuleInfo
);
info_slot!(get_section_info, Section, LinkSectionHandle, LinkSectionInfo);
info_slot!(get_atom_info, Atom, LinkAtomHandle, LinkAtomInfo);
info_slot!(get_symbol_info, Symbol, LinkSymbolHandle, LinkSymbolInfo);
info_slot!(get_edge_info, Edge, LinkEdgeHandle, LinkEdgeInfo);
info_slot!(get_comdat_info, Comdat, LinkComdatHandle, LinkComdatInfo);
info_slot!(get_import_info, Import, LinkImportHandle, LinkImportInfo);
info_slot!(get_export_info, Export, LinkExportHandle, LinkExportInfo);
info_slot!(get_unwind_info, Unwind, LinkUnwindHandle, LinkUnwindInfo);
info_slot!(get_synthetic_info, Synthetic, LinkSyntheticHandle, LinkSyntheticInfo);
info_slot!(
    get_constraint_info,
    Constraint,
    LinkConstraintHandle,
    LinkConstraintInfo
);
