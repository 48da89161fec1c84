//! What a C callback reaches through its frame: `NevercLinkPhaseAPI.GetGraph` and the Link API's slots,
//! served from the runtime's phase frame lent for the callback (`neverc_sys::scoped`). The frame's Task
//! handle carries the token; handles of the graph carry its generation, so a handle kept from an earlier
//! generation is STALE_HANDLE and one of another task is WRONG_SESSION. Slots not served yet answer
//! CAPABILITY_UNAVAILABLE (the generated `unavailable` tables).

use std::any::Any;
use std::ffi::c_void;

use neverc_link::frame::PhaseFrame;
use neverc_link::graph::EntityKind;
use neverc_sys::plugin::{read_in, write_out};
use neverc_sys::scoped::CallError;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

use crate::status::{OK, c_status};

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
    /// Run the rest of an interceptor chain.
    Continue(Option<ffi::Status>),
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
) -> Option<Result<(), Status>> {
    let request = request.downcast_mut::<FrameRequest>()?;
    match request {
        FrameRequest::GraphInfo(slot) => {
            *slot = Some(graph_info(frame, service.tables));
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
    std::panic::catch_unwind(|| {
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
    .unwrap_or_else(|_| c_status(StatusCode::PluginFailure))
}

/// `NevercLinkAPI.GetGraphInfo`.
pub(crate) extern "C" fn get_graph_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    out: *mut ffi::LinkGraphInfo,
) -> ffi::Status {
    std::panic::catch_unwind(|| match summary(task.0, Some(graph.0)) {
        Ok(info) => {
            if write_out(out, info) {
                OK
            } else {
                c_status(StatusCode::InvalidArgument)
            }
        }
        Err(code) => c_status(code),
    })
    .unwrap_or_else(|_| c_status(StatusCode::PluginFailure))
}

/// `NevercPhaseContinueFn`: the rest of the chain, through the frame lent under the context's token.
pub(crate) extern "C" fn continue_chain(continue_context: *mut c_void, _frame: *const ffi::PhaseFrame) -> ffi::Status {
    std::panic::catch_unwind(|| {
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
    .unwrap_or_else(|_| c_status(StatusCode::PluginFailure))
}
