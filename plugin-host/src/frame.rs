//! What a C callback reaches through its frame: `NevercLinkPhaseAPI.GetGraph` and the Link API's slots,
//! served from the runtime's phase frame lent for the callback (`neverc_sys::scoped`). The frame's Task
//! handle carries the token; handles of the graph carry its generation, so a handle kept from an earlier
//! generation is STALE_HANDLE and one of another task is WRONG_SESSION. Slots not served yet answer
//! CAPABILITY_UNAVAILABLE (the generated `unavailable` tables).

use std::any::Any;
use std::ffi::c_void;

use neverc_link::frame::{Mutation, PhaseFrame};
use neverc_link::graph::EntityKind;
use neverc_sys::plugin::{read_in, write_element, write_out};
use neverc_sys::scoped::CallError;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

use crate::status::{OK, c_status, guarded};

/// The owner of task handles: the value is the token of the lent frame.
pub(crate) const TASK_OWNER: u64 = 0x4e43_5441_534b_0001;
/// The owner of graph handles: the value is the graph's generation.
const GRAPH_OWNER: u64 = 0x4e43_4752_4150_0001;

/// A request from C to the lent frame; its answer is written back into it. It lives on the stack for one
/// call, so its size does not matter and boxing the summary would only allocate.
#[allow(clippy::large_enum_variant)]
pub(crate) enum FrameRequest {
    /// The graph's summary.
    GraphInfo(Option<ffi::LinkGraphInfo>),
    /// One page of entities of a kind, written straight into the caller's page.
    Page {
        kind: EntityKind,
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    /// Run the rest of an interceptor chain.
    Continue(Option<ffi::Status>),
    /// One page of the image's segments.
    SegmentPage {
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    /// Begin, commit or abandon a mutation, or stage one operation in it; the answer is the status (and the
    /// new mutation's handle value).
    Mutate {
        change: Change,
        answer: Option<Result<u64, Status>>,
    },
}

/// A change a plugin asks for through the Link API.
#[derive(Clone)]
pub(crate) enum Change {
    Begin,
    Commit(ffi::Handle),
    Abandon(ffi::Handle),
    SetSymbolRoot {
        mutation: ffi::Handle,
        symbol: ffi::Handle,
        root: bool,
    },
    /// A layout constraint on the atom whose handle value is `subject`.
    CreateConstraint {
        mutation: ffi::Handle,
        kind: String,
        subject: u64,
        value: u64,
        required: bool,
    },
}

/// The tables the frame's graph is described with.
#[derive(Clone, Copy)]
pub(crate) struct Service {
    pub(crate) tables: &'static PhaseTables,
}

/// The rest of an interceptor chain, as the runtime hands it to an interceptor.
pub(crate) type Next<'n> = dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status> + 'n;

/// Answers one request from the frame.
pub(crate) fn serve<'n>(
    frame: &mut PhaseFrame<'_>,
    service: Service,
    request: &mut dyn Any,
    next: Option<&mut Next<'n>>,
    mutations: &mut Vec<Mutation>,
) -> Option<Result<(), Status>> {
    let request = request.downcast_mut::<FrameRequest>()?;
    match request {
        FrameRequest::GraphInfo(slot) => {
            *slot = Some(graph_info(frame, service.tables));
            None
        }
        FrameRequest::Page {
            kind,
            cursor,
            page,
            answer,
        } => {
            *answer = Some(fill_page(frame, *kind, *cursor, *page));
            None
        }
        FrameRequest::Mutate { change, answer } => {
            *answer = Some(mutate(frame, change.clone(), mutations));
            None
        }
        FrameRequest::SegmentPage { answer, .. } => {
            *answer = Some(Err(StatusCode::InvalidState));
            None
        }
        FrameRequest::Continue(slot) => {
            let result = match next {
                Some(next) => next(frame),
                None => Err(Status::new(
                    StatusCode::InvalidState,
                    "only an interceptor has a continuation",
                )),
            };
            *slot = Some(crate::status::c_result(&result));
            Some(result)
        }
    }
}

fn graph_info(frame: &PhaseFrame<'_>, tables: &'static PhaseTables) -> ffi::LinkGraphInfo {
    let graph = frame.graph();
    let count = |kind: EntityKind| graph.count(kind) as u64;
    let state = neverc_link::execute::link_state_machine(tables)
        .and_then(|machine| machine.state_by_name(frame.state()))
        .unwrap_or(0);
    ffi::LinkGraphInfo {
        header: header::<ffi::LinkGraphInfo>(),
        graph: ffi::LinkGraphHandle(ffi::Handle {
            owner: GRAPH_OWNER,
            value: frame.generation(),
        }),
        state,
        generation: frame.generation(),
        input_count: count(EntityKind::Input),
        archive_count: count(EntityKind::Archive),
        archive_member_count: count(EntityKind::ArchiveMember),
        shared_library_count: count(EntityKind::SharedLibrary),
        bitcode_module_count: count(EntityKind::BitcodeModule),
        section_count: count(EntityKind::Section),
        atom_count: count(EntityKind::Atom),
        symbol_count: count(EntityKind::Symbol),
        edge_count: count(EntityKind::Edge),
        comdat_count: count(EntityKind::Comdat),
        import_count: count(EntityKind::Import),
        export_count: count(EntityKind::Export),
        unwind_count: count(EntityKind::Unwind),
        synthetic_count: count(EntityKind::Synthetic),
        constraint_count: count(EntityKind::Constraint),
        ..ffi::LinkGraphInfo::default()
    }
}

const MUTATION_OWNER: u64 = 0x4e43_4d55_5441_0001;

/// The mutation a handle names: one this callback began.
fn mutation_of(handle: ffi::Handle, mutations: &[Mutation]) -> Result<Mutation, Status> {
    let index = usize::try_from(handle.value)
        .ok()
        .and_then(|value| value.checked_sub(1));
    match index.and_then(|index| mutations.get(index)) {
        Some(mutation) if handle.owner == MUTATION_OWNER => Ok(*mutation),
        _ => Err(Status::new(
            StatusCode::StaleHandle,
            "not a mutation this callback began",
        )),
    }
}

/// The runtime's handle of the entity an ABI handle names, checked for its kind and generation.
fn entity_of(
    frame: &PhaseFrame<'_>,
    handle: ffi::Handle,
    kind: EntityKind,
) -> Result<neverc_link::frame::Handle, Status> {
    if handle.owner != (ENTITY_OWNER | kind as u64) {
        return Err(Status::new(StatusCode::WrongType, format!("not a {kind:?} handle")));
    }
    if handle.value >> 40 != frame.generation() {
        return Err(Status::new(
            StatusCode::StaleHandle,
            format!("a {kind:?} handle of an earlier generation"),
        ));
    }
    frame.handle(kind, (handle.value & ((1 << 40) - 1)) as usize)
}

fn mutate(frame: &mut PhaseFrame<'_>, change: Change, mutations: &mut Vec<Mutation>) -> Result<u64, Status> {
    match change {
        Change::Begin => {
            let mutation = frame.begin_mutation()?;
            mutations.push(mutation);
            Ok(mutations.len() as u64)
        }
        Change::Commit(handle) => frame.commit_mutation(mutation_of(handle, mutations)?).map(|()| 0),
        Change::Abandon(handle) => frame.abandon_mutation(mutation_of(handle, mutations)?).map(|()| 0),
        Change::SetSymbolRoot { mutation, symbol, root } => {
            let mutation = mutation_of(mutation, mutations)?;
            let symbol = entity_of(frame, symbol, EntityKind::Symbol)?;
            frame.set_symbol_root(mutation, symbol, root).map(|()| 0)
        }
        Change::CreateConstraint {
            mutation,
            kind,
            subject,
            value,
            required,
        } => {
            let mutation = mutation_of(mutation, mutations)?;
            let atom = ffi::Handle {
                owner: ENTITY_OWNER | EntityKind::Atom as u64,
                value: subject,
            };
            let atom = frame.resolve(entity_of(frame, atom, EntityKind::Atom)?, EntityKind::Atom)?;
            frame
                .create_constraint(mutation, &kind, atom as u64, value, required)
                .map(|()| 0)
        }
    }
}

/// The owner of entity handles: the kind in the low byte; the value is the index with the generation above
/// bit 40, so a handle kept past a change is stale.
const ENTITY_OWNER: u64 = 0x4e43_454e_5400_0000;

fn entity_handle(kind: EntityKind, index: usize, generation: u64) -> ffi::Handle {
    ffi::Handle {
        owner: ENTITY_OWNER | kind as u64,
        value: index as u64 | (generation << 40),
    }
}

fn view(text: &str) -> ffi::StringView {
    ffi::StringView {
        data: text.as_ptr().cast(),
        length: text.len() as u64,
    }
}

/// No extensions (none are defined yet).
const NO_EXTENSIONS: ffi::StructArrayView = ffi::StructArrayView {
    data: std::ptr::null(),
    count: 0,
    element_stride: 0,
};

/// An origin not reported yet (the origins come with the entity infos).
fn no_origin() -> ffi::LinkOrigin {
    let none = ffi::StringView {
        data: std::ptr::null(),
        length: 0,
    };
    ffi::LinkOrigin {
        header: header::<ffi::LinkOrigin>(),
        input: ffi::LinkInputHandle::default(),
        archive_member: ffi::LinkArchiveMemberHandle::default(),
        object_graph: ffi::ObjectGraphHandle::default(),
        object_entity_id: 0,
        created_by_phase: ffi::InterfaceId::default(),
        created_by_provider: none,
        last_mutation_phase: ffi::InterfaceId::default(),
        last_mutation_plugin: none,
    }
}

fn flag(value: bool) -> u32 {
    u32::from(value)
}

/// Writes entities of `kind` from `cursor` into the caller's page: as many as fit, each `ElementStride` apart.
/// A stride smaller than the element, a null `Data` with a capacity, or a kind without pages is
/// INVALID_ARGUMENT. Names and other views point into the graph and are valid for the callback only.
fn fill_page(
    frame: &PhaseFrame<'_>,
    kind: EntityKind,
    cursor: u64,
    mut page: ffi::LinkEntityPage,
) -> Result<ffi::LinkEntityPage, StatusCode> {
    let graph = frame.graph();
    let generation = frame.generation();
    let total = graph.count(kind) as u64;
    let start = cursor.min(total);
    let fit = page.element_capacity.min(total - start);
    let element = match kind {
        EntityKind::Symbol => std::mem::size_of::<ffi::LinkSymbolInfo>(),
        EntityKind::Section => std::mem::size_of::<ffi::LinkSectionInfo>(),
        _ => return Err(StatusCode::CapabilityUnavailable),
    } as u64;
    if page.element_stride < element || (page.data.is_null() && page.element_capacity > 0) {
        return Err(StatusCode::InvalidArgument);
    }
    for (slot, index) in (start..start + fit).enumerate() {
        let index = index as usize;
        let written = match kind {
            EntityKind::Symbol => {
                let symbol = &graph.symbols[index];
                let info = ffi::LinkSymbolInfo {
                    header: header::<ffi::LinkSymbolInfo>(),
                    symbol: ffi::LinkSymbolHandle(entity_handle(kind, index, generation)),
                    name: view(&symbol.name),
                    version: symbol.version.as_deref().map(view).unwrap_or(ffi::StringView {
                        data: std::ptr::null(),
                        length: 0,
                    }),
                    binding: symbol.binding as u32,
                    visibility: symbol.visibility as u32,
                    definition: symbol.definition as u32,
                    r#type: 0,
                    atom: ffi::LinkAtomHandle(
                        symbol
                            .atom
                            .map(|atom| entity_handle(EntityKind::Atom, atom.index(), generation))
                            .unwrap_or_default(),
                    ),
                    value: symbol.value,
                    size: symbol.size,
                    is_prevailing: flag(symbol.prevailing),
                    is_exported: flag(symbol.exported),
                    is_imported: flag(symbol.imported),
                    is_root: flag(symbol.root),
                    origin: no_origin(),
                    extensions: NO_EXTENSIONS,
                };
                write_element(page.data, page.element_stride, slot as u64, info)
            }
            _ => {
                let section = &graph.sections[index];
                let info = ffi::LinkSectionInfo {
                    header: header::<ffi::LinkSectionInfo>(),
                    section: ffi::LinkSectionHandle(entity_handle(kind, index, generation)),
                    name: view(&section.name),
                    kind: 0,
                    reserved: 0,
                    flags: section.flags,
                    alignment: section.alignment,
                    address: section.address,
                    file_offset: section.file_offset,
                    size: section.size,
                    comdat: ffi::LinkComdatHandle(
                        section
                            .comdat
                            .map(|comdat| entity_handle(EntityKind::Comdat, comdat.index(), generation))
                            .unwrap_or_default(),
                    ),
                    origin: no_origin(),
                    extensions: NO_EXTENSIONS,
                };
                write_element(page.data, page.element_stride, slot as u64, info)
            }
        };
        if !written {
            return Err(StatusCode::InvalidArgument);
        }
    }
    page.out_count = fit;
    page.next_cursor = start + fit;
    page.has_more = flag(start + fit < total);
    Ok(page)
}

fn header<T>() -> ffi::AbiTableHeader {
    ffi::AbiTableHeader {
        struct_size: u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX),
        major: 1,
        minor: 0,
        flags: 0,
    }
}

/// Sends `request` to the frame lent under a task handle's token.
fn ask(task: ffi::Handle, request: &mut FrameRequest) -> Result<(), StatusCode> {
    if task.owner != TASK_OWNER {
        return Err(StatusCode::WrongSession);
    }
    match neverc_sys::scoped::call(task.value, request) {
        Ok(()) => Ok(()),
        Err(CallError::Unknown) => Err(StatusCode::StaleHandle),
        Err(CallError::Busy) => Err(StatusCode::ReentrancyDenied),
    }
}

/// The graph's summary through a task handle; `None` with the status when the handles do not hold.
fn summary(task: ffi::Handle, graph: Option<ffi::Handle>) -> Result<ffi::LinkGraphInfo, StatusCode> {
    let mut request = FrameRequest::GraphInfo(None);
    ask(task, &mut request)?;
    let FrameRequest::GraphInfo(Some(info)) = request else {
        return Err(StatusCode::InvalidState);
    };
    match graph {
        Some(graph) if graph.owner != GRAPH_OWNER => Err(StatusCode::WrongType),
        Some(graph) if graph.value != info.generation => Err(StatusCode::StaleHandle),
        _ => Ok(info),
    }
}

/// `NevercLinkPhaseAPI.GetGraph`.
pub(crate) extern "C" fn get_graph(
    _context: *mut c_void,
    frame: *const ffi::PhaseFrame,
    _artifact: ffi::ArtifactHandle,
    out: *mut ffi::LinkPhaseGraphInfo,
) -> ffi::Status {
    guarded(|| {
        let Some(frame) = read_in(frame) else {
            return c_status(StatusCode::InvalidArgument);
        };
        let info = match summary(frame.task.0, None) {
            Ok(info) => info,
            Err(code) => return c_status(code),
        };
        let link_api = crate::load::link_api_address();
        let answer = ffi::LinkPhaseGraphInfo {
            header: header::<ffi::LinkPhaseGraphInfo>(),
            link: link_api as *const ffi::LinkApi,
            graph: info.graph,
            proof: ffi::LinkProofHandle::default(),
            state: info.state,
            reserved: 0,
            generation: info.generation,
        };
        if write_out(out, answer) {
            OK
        } else {
            c_status(StatusCode::InvalidArgument)
        }
    })
}

/// A page of `kind` through a task handle, after the graph handle is checked.
fn page_of(
    kind: EntityKind,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    guarded(|| {
        if let Err(code) = summary(task.0, Some(graph.0)) {
            return c_status(code);
        }
        deliver_page(task.0, page, |given| FrameRequest::Page {
            kind,
            cursor,
            page: given,
            answer: None,
        })
    })
}

/// Reads the caller's page, asks the lent frame or image to fill it (`request` made from it) and writes the
/// filled page back: the answer of every pager.
fn deliver_page(
    task: ffi::Handle,
    page: *mut ffi::LinkEntityPage,
    request: impl FnOnce(ffi::LinkEntityPage) -> FrameRequest,
) -> ffi::Status {
    let Some(given) = read_in(page) else {
        return c_status(StatusCode::InvalidArgument);
    };
    let mut request = request(given);
    if let Err(code) = ask(task, &mut request) {
        return c_status(code);
    }
    let answer = match request {
        FrameRequest::Page { answer, .. } | FrameRequest::SegmentPage { answer, .. } => answer,
        _ => None,
    };
    match answer {
        Some(Ok(filled)) => {
            write_out(page, filled);
            OK
        }
        Some(Err(code)) => c_status(code),
        None => c_status(StatusCode::InvalidState),
    }
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

page_slot!(get_symbol_page, Symbol);
page_slot!(get_section_page, Section);

/// Sends a change through a task handle and answers with its status (and the handle value it made).
fn change(task: ffi::TaskHandle, change: Change) -> (ffi::Status, u64) {
    std::panic::catch_unwind(|| {
        let mut request = FrameRequest::Mutate { change, answer: None };
        if let Err(code) = ask(task.0, &mut request) {
            return (c_status(code), 0);
        }
        match request {
            FrameRequest::Mutate {
                answer: Some(Ok(value)),
                ..
            } => (OK, value),
            FrameRequest::Mutate {
                answer: Some(Err(status)),
                ..
            } => (c_status(status.code), 0),
            _ => (c_status(StatusCode::InvalidState), 0),
        }
    })
    .unwrap_or_else(|_| (c_status(StatusCode::PluginFailure), 0))
}

/// `NevercLinkAPI.BeginMutation`: POLICY_VIOLATION in an observer.
pub(crate) extern "C" fn begin_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    _graph: ffi::LinkGraphHandle,
    out: *mut ffi::LinkMutationHandle,
) -> ffi::Status {
    let (status, value) = change(task, Change::Begin);
    if status.code == OK.code
        && !write_out(
            out,
            ffi::LinkMutationHandle(ffi::Handle {
                owner: MUTATION_OWNER,
                value,
            }),
        )
    {
        return c_status(StatusCode::InvalidArgument);
    }
    status
}

/// `NevercLinkAPI.CommitMutation`.
pub(crate) extern "C" fn commit_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
) -> ffi::Status {
    change(task, Change::Commit(mutation.0)).0
}

/// `NevercLinkAPI.AbandonMutation`.
pub(crate) extern "C" fn abandon_mutation(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
) -> ffi::Status {
    change(task, Change::Abandon(mutation.0)).0
}

/// `NevercLinkAPI.SetSymbolRoot`.
pub(crate) extern "C" fn set_symbol_root(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    symbol: ffi::LinkSymbolHandle,
    root: ffi::Bool,
) -> ffi::Status {
    change(
        task,
        Change::SetSymbolRoot {
            mutation: mutation.0,
            symbol: symbol.0,
            root: root != 0,
        },
    )
    .0
}

/// `NevercLinkAPI.CreateConstraint`: the descriptor's `SubjectID` is the value of the constrained atom's
/// handle (from a symbol's or atom's info); the new constraint's handle comes with the next generation, so
/// the one written out is null.
pub(crate) extern "C" fn create_constraint(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    mutation: ffi::LinkMutationHandle,
    descriptor: *const ffi::LinkConstraintInfo,
    out: *mut ffi::LinkConstraintHandle,
) -> ffi::Status {
    let Some(descriptor) = read_in(descriptor) else {
        return c_status(StatusCode::InvalidArgument);
    };
    let kind = neverc_sys::plugin::copy_view(descriptor.kind.data.cast(), descriptor.kind.length, 256)
        .and_then(|bytes| String::from_utf8(bytes).ok());
    let Some(kind) = kind else {
        return c_status(StatusCode::InvalidArgument);
    };
    let (status, _) = change(
        task,
        Change::CreateConstraint {
            mutation: mutation.0,
            kind,
            subject: descriptor.subject_id,
            value: descriptor.value,
            required: descriptor.required != 0,
        },
    );
    write_out(out, ffi::LinkConstraintHandle::default());
    status
}

/// `NevercLinkAPI.GetGraphInfo`.
pub(crate) extern "C" fn get_graph_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    out: *mut ffi::LinkGraphInfo,
) -> ffi::Status {
    guarded(|| match summary(task.0, Some(graph.0)) {
        Ok(info) => {
            if write_out(out, info) {
                OK
            } else {
                c_status(StatusCode::InvalidArgument)
            }
        }
        Err(code) => c_status(code),
    })
}

/// `NevercPhaseContinueFn`: the rest of the chain, through the frame lent under the context's token.
pub(crate) extern "C" fn continue_chain(continue_context: *mut c_void, _frame: *const ffi::PhaseFrame) -> ffi::Status {
    guarded(|| {
        let task = ffi::Handle {
            owner: TASK_OWNER,
            value: continue_context as usize as u64,
        };
        let mut request = FrameRequest::Continue(None);
        match ask(task, &mut request) {
            Ok(()) => match request {
                FrameRequest::Continue(Some(status)) => status,
                _ => c_status(StatusCode::InvalidState),
            },
            Err(StatusCode::StaleHandle) => c_status(StatusCode::InvalidArgument),
            Err(code) => c_status(code),
        }
    })
}

/// The owner of image handles handed to verifiers.
const IMAGE_OWNER: u64 = 0x4e43_494d_4147_0001;

/// What a verifier reads of the image lent for its call: the summary and the segments.
pub(crate) fn serve_image(layout: &neverc_link::image::ImageLayout, request: &mut dyn Any) {
    // A verifier has no graph: other requests stay unanswered, which their slots report as INVALID_STATE.
    let Some(FrameRequest::SegmentPage { cursor, page, answer }) = request.downcast_mut::<FrameRequest>() else {
        return;
    };
    let total = layout.segments.len() as u64;
    let start = (*cursor).min(total);
    let fit = page.element_capacity.min(total - start);
    if page.element_stride < std::mem::size_of::<ffi::BinarySegmentInfo>() as u64
        || (page.data.is_null() && page.element_capacity > 0)
    {
        *answer = Some(Err(StatusCode::InvalidArgument));
        return;
    }
    for (slot, index) in (start..start + fit).enumerate() {
        let segment = &layout.segments[index as usize];
        let mut flags = 0u64;
        for (ours, theirs) in [
            (neverc_link::image::SegmentFlags::READ, ffi_flags::READ),
            (neverc_link::image::SegmentFlags::WRITE, ffi_flags::WRITE),
            (neverc_link::image::SegmentFlags::EXECUTE, ffi_flags::EXECUTE),
        ] {
            if segment.flags.contains(ours) {
                flags |= theirs.bits();
            }
        }
        let info = ffi::BinarySegmentInfo {
            header: header::<ffi::BinarySegmentInfo>(),
            segment: ffi::BinarySegmentHandle(ffi::Handle {
                owner: IMAGE_OWNER,
                value: index + 1,
            }),
            name: view(&segment.name),
            flags,
            address: segment.virtual_address,
            memory_size: segment.memory_size,
            file_offset: segment.file_offset,
            file_size: segment.file_size,
            alignment: segment.alignment,
        };
        if !write_element(page.data, page.element_stride, slot as u64, info) {
            *answer = Some(Err(StatusCode::InvalidArgument));
            return;
        }
    }
    page.out_count = fit;
    page.next_cursor = start + fit;
    page.has_more = flag(start + fit < total);
    *answer = Some(Ok(*page));
}

use neverc_tables::plugin_abi::link::BinarySegmentFlags as ffi_flags;

/// The summary a verifier is handed, for the image lent under `token`.
pub(crate) fn image_info(layout: &neverc_link::image::ImageLayout, size: u64, token: u64) -> ffi::BinaryImageInfo {
    ffi::BinaryImageInfo {
        header: header::<ffi::BinaryImageInfo>(),
        image: ffi::BinaryImageHandle(ffi::Handle {
            owner: IMAGE_OWNER,
            value: token,
        }),
        state: neverc_tables::plugin_abi::link::BinaryImageState::Candidate.raw(),
        output_kind: neverc_tables::plugin_abi::link::LinkOutputKind::Executable.raw(),
        target_id: ffi::TargetId::default(),
        format_id: ffi::ObjectFormatId::default(),
        entry_address: layout.entry,
        image_base: layout.segments.first().map_or(0, |segment| segment.virtual_address),
        size,
        segment_count: layout.segments.len() as u64,
        section_count: layout.sections.len() as u64,
        import_count: 0,
        export_count: 0,
        dynamic_relocation_count: 0,
        content_digest: [0; 32],
        binary: std::ptr::null(),
        builder: ffi::BinaryBuilderHandle::default(),
        extensions: NO_EXTENSIONS,
    }
}

/// `NevercLinkAPI.GetBinarySegmentPage`: the segments of the image lent to a verifier.
pub(crate) extern "C" fn get_binary_segment_page(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    image: ffi::BinaryImageHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    guarded(|| {
        if image.0.owner != IMAGE_OWNER || image.0.value != task.0.value {
            return c_status(StatusCode::WrongType);
        }
        deliver_page(task.0, page, |given| FrameRequest::SegmentPage {
            cursor,
            page: given,
            answer: None,
        })
    })
}
