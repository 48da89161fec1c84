//! What a C callback reaches through its frame: `NevercLinkPhaseAPI.GetGraph` and the Link API's slots,
//! served from the runtime's phase frame lent for the callback (`neverc_sys::scoped`). The frame's Task
//! handle carries the lending's token; every request goes to the lent frame with it, and the handles the
//! frame hands out carry the session and the frame's stamp (`handles`). Slots the runtime has no concept
//! for keep answering CAPABILITY_UNAVAILABLE (the generated `unavailable` tables; docs/c-plugins.md lists
//! them with the reason).
//!
//! The concerns live in files of their own: `handles` (minting and checking handles), `infos` (the entity
//! infos), `pages` (the pagers and `Get<Kind>Info` slots), `staging` (mutations), `image` (what an image
//! verifier reads).

pub(crate) mod handles;
pub(crate) mod image;
mod infos;
mod pages;
mod staging;

use std::any::Any;
use std::ffi::c_void;

use neverc_link::frame::{Mutation, PhaseFrame};
use neverc_link::graph::EntityKind;
use neverc_sys::scoped::CallError;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::{Status, StatusCode};

use crate::memory::{read_struct, write_struct};
use crate::status::{OK, c_answer, c_status, guarded};

pub(crate) use crate::views::{NO_ELEMENTS as NO_EXTENSIONS, header};
pub(crate) use handles::Scope;
pub(crate) use image::{
    get_binary_image_info, get_binary_section_page, get_binary_segment_page, get_image, image_info, serve_image,
};
pub(crate) use pages::*;
pub(crate) use staging::*;

/// The owner of task handles: the value is the token of the lent frame.
pub(crate) const TASK_OWNER: u64 = 0x4e43_5441_534b_0001;

/// A request from C to the lent frame (or image) and the token it was sent under.
pub(crate) struct Asked {
    pub(crate) token: u64,
    pub(crate) request: FrameRequest,
}

/// A request from C to the lent frame; its answer is written back into it. It lives on the stack for one
/// call, so its size does not matter and boxing the summary would only allocate.
#[allow(clippy::large_enum_variant)]
pub(crate) enum FrameRequest {
    /// The graph's summary, after the graph handle (if any) is checked.
    GraphInfo {
        graph: Option<ffi::Handle>,
        answer: Option<Result<ffi::LinkGraphInfo, StatusCode>>,
    },
    /// What `NevercLinkPhaseAPI.GetGraph` answers.
    PhaseGraph(Option<ffi::LinkPhaseGraphInfo>),
    /// One page of entities of a kind, written straight into the caller's page.
    Page {
        kind: EntityKind,
        graph: ffi::Handle,
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    /// One entity's info, written to the caller's `out` by the frame.
    Info {
        kind: EntityKind,
        handle: ffi::Handle,
        out: *mut c_void,
        answer: Option<Result<(), StatusCode>>,
    },
    /// What the current proof pins, written to the caller's `out`.
    Proof {
        proof: ffi::Handle,
        out: *mut ffi::LinkProofInfo,
        answer: Option<Result<(), StatusCode>>,
    },
    /// Run the rest of an interceptor chain.
    Continue(Option<ffi::Status>),
    /// One page of the image's segments (`sections` false) or sections.
    ImagePage {
        sections: bool,
        image: ffi::Handle,
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    /// The image's summary, written to the caller's `out`.
    ImageInfo {
        image: ffi::Handle,
        out: *mut ffi::BinaryImageInfo,
        answer: Option<Result<(), StatusCode>>,
    },
    /// What `NevercLinkPhaseAPI.GetImage` answers: `None` when the phase has no image yet.
    PhaseImage(Option<Result<ffi::LinkPhaseImageInfo, StatusCode>>),
    /// One operation of the MutableBinaryAPI on the image staged for the lending.
    Binary {
        builder: ffi::Handle,
        operation: image::BinaryOperation,
        answer: Option<Result<image::BinaryAnswer, StatusCode>>,
    },
    /// Begin, commit or abandon a mutation, or stage one operation in it; the answer is the status (and the
    /// new mutation's handle).
    Mutate {
        change: Change,
        answer: Option<Result<ffi::Handle, Status>>,
    },
}

/// What one lending keeps until its callback returns: the mutations it began (every Begin ends in one
/// Commit or Abandon: those left open are abandoned) and the image it stages through the MutableBinaryAPI
/// (published as the phase's image when the callback returns, unless staging was aborted), with the views
/// `ReadAt` handed out.
#[derive(Default)]
pub(crate) struct FrameState {
    pub(crate) mutations: Vec<Mutation>,
    pub(crate) staging: Option<neverc_link::image::BoundedImageWriter>,
    /// The phase's image and layout while no write has asked whether this callback may publish.
    pub(crate) image: Option<(neverc_link::image::SparseBytes, neverc_link::image::ImageLayout)>,
    pub(crate) views: Vec<Box<[u8]>>,
}

impl FrameState {
    /// Ends the lending: abandons what is open and publishes the staged image.
    pub(crate) fn finish(self, frame: &mut PhaseFrame<'_>) {
        for mutation in self.mutations {
            let _ = frame.abandon_mutation(mutation);
        }
        // A staging image only read from changes nothing.
        if self.image.is_none() {
            image::publish(frame, self.staging);
        }
    }
}

/// The tables the frame's graph is described with, and the plugin instance the frames are lent to.
#[derive(Clone, Copy)]
pub(crate) struct Service {
    pub(crate) tables: &'static PhaseTables,
    instance: u32,
}

impl Service {
    /// The service of a newly registered plugin instance: its handles are of none other.
    pub(crate) fn new(tables: &'static PhaseTables) -> Service {
        static INSTANCES: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        Service {
            tables,
            instance: INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
}

/// The rest of an interceptor chain, as the runtime hands it to an interceptor.
pub(crate) type Next<'n> = dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status> + 'n;

/// Answers one request from the frame; `Some` with the chain's result when the continuation ran.
pub(crate) fn serve<'n>(
    frame: &mut PhaseFrame<'_>,
    service: Service,
    request: &mut dyn Any,
    next: Option<&mut Next<'n>>,
    state: &mut FrameState,
) -> Option<Result<(), Status>> {
    let Asked { token, request } = request.downcast_mut::<Asked>()?;
    let scope = Scope::new(frame, service.instance, *token);
    let describer = infos::Describer {
        graph: frame.graph(),
        scope,
        tables: service.tables,
    };
    match request {
        FrameRequest::GraphInfo { graph, answer } => {
            let checked = graph.map_or(Ok(()), |graph| scope.check_graph(graph));
            *answer = Some(
                checked
                    .map(|()| graph_info(frame, scope, service.tables))
                    .map_err(|status| status.code),
            );
        }
        FrameRequest::PhaseGraph(slot) => {
            let info = graph_info(frame, scope, service.tables);
            *slot = Some(ffi::LinkPhaseGraphInfo {
                header: header::<ffi::LinkPhaseGraphInfo>(),
                link: crate::load::link_api_address() as *const ffi::LinkApi,
                graph: info.graph,
                proof: ffi::LinkProofHandle(frame.proof().map(|_| scope.proof()).unwrap_or_default()),
                state: info.state,
                reserved: 0,
                generation: info.generation,
            });
        }
        FrameRequest::Page {
            kind,
            graph,
            cursor,
            page,
            answer,
        } => {
            *answer = Some(match scope.check_graph(*graph) {
                Ok(()) => pages::fill_page(frame, &describer, *kind, *cursor, *page),
                Err(status) => Err(status.code),
            });
        }
        FrameRequest::Info {
            kind,
            handle,
            out,
            answer,
        } => {
            *answer = Some(
                scope
                    .entity_index(frame, *handle, *kind)
                    .map_err(|status| status.code)
                    .and_then(|index| describer.write(*kind, index, infos::Place::Out(*out))),
            );
        }
        FrameRequest::Proof { proof, out, answer } => {
            *answer = Some(proof_info(frame, scope, *proof, *out));
        }
        FrameRequest::ImagePage { .. }
        | FrameRequest::ImageInfo { .. }
        | FrameRequest::PhaseImage(_)
        | FrameRequest::Binary { .. } => {
            image::serve_frame_image(frame, *token, request, state);
        }
        FrameRequest::Mutate { change, answer } => {
            *answer = Some(staging::mutate(frame, scope, change.clone(), &mut state.mutations));
        }
        FrameRequest::Continue(slot) => {
            let result = match next {
                // The rest of the chain is the host's work (until it enters the next plugin).
                Some(next) => neverc_sys::crash::outside_plugins(|| next(frame)),
                None => Err(Status::new(
                    StatusCode::InvalidState,
                    "only an interceptor has a continuation",
                )),
            };
            *slot = Some(crate::status::c_result(&result));
            return Some(result);
        }
    }
    None
}

fn graph_info(frame: &PhaseFrame<'_>, scope: Scope, tables: &'static PhaseTables) -> ffi::LinkGraphInfo {
    let graph = frame.graph();
    let count = |kind: EntityKind| graph.count(kind) as u64;
    let state = neverc_link::execute::link_state_machine(tables)
        .and_then(|machine| machine.state_by_name(frame.state()))
        .unwrap_or(0);
    ffi::LinkGraphInfo {
        header: header::<ffi::LinkGraphInfo>(),
        graph: ffi::LinkGraphHandle(scope.graph()),
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

/// What the current proof pins, for the proof handle `GetGraph` handed out in this scope: INVALID_STATE
/// before the link issues proofs.
fn proof_info(
    frame: &PhaseFrame<'_>,
    scope: Scope,
    proof: ffi::Handle,
    out: *mut ffi::LinkProofInfo,
) -> Result<(), StatusCode> {
    scope.check_proof(proof).map_err(|status| status.code)?;
    let current = frame.proof().ok_or(StatusCode::InvalidState)?;
    let mut semantic = [0u8; 32];
    semantic[..8].copy_from_slice(&current.semantic_digest[0].to_le_bytes());
    semantic[8..16].copy_from_slice(&current.semantic_digest[1].to_le_bytes());
    infos::Place::Out(out.cast()).put(ffi::LinkProofInfo {
        header: header::<ffi::LinkProofInfo>(),
        proof: ffi::LinkProofHandle(proof),
        graph: ffi::LinkGraphHandle(scope.graph()),
        state: current.state,
        reserved: 0,
        graph_generation: current.generation,
        target_id: ffi::TargetId::default(),
        format_id: ffi::ObjectFormatId::default(),
        output_artifact: ffi::InterfaceId::default(),
        route_digest: [0; 32],
        semantic_digest: semantic,
        image_base: current.image_base,
        entry_address: current.entry,
    })
}

pub(crate) fn view(text: &str) -> ffi::StringView {
    ffi::StringView {
        data: if text.is_empty() {
            std::ptr::null()
        } else {
            text.as_ptr().cast()
        },
        length: text.len() as u64,
    }
}

pub(crate) fn empty_view() -> ffi::StringView {
    ffi::StringView {
        data: std::ptr::null(),
        length: 0,
    }
}

pub(crate) fn flag(value: bool) -> u32 {
    u32::from(value)
}

/// Sends `request` to the frame lent under a task handle's token and answers it: WRONG_TYPE for a handle
/// that is not a task's, STALE_HANDLE for a task whose callback has returned, REENTRANCY_DENIED from inside
/// the frame's own service.
pub(crate) fn ask(task: ffi::Handle, request: &mut FrameRequest) -> Result<(), StatusCode> {
    if task.owner != TASK_OWNER {
        return Err(StatusCode::WrongType);
    }
    // The request travels with the token; a placeholder stands in for it meanwhile.
    let taken = std::mem::replace(request, FrameRequest::Continue(None));
    let mut asked = Asked {
        token: task.value,
        request: taken,
    };
    let result = neverc_sys::scoped::call(task.value, &mut asked);
    *request = asked.request;
    match result {
        Ok(()) => Ok(()),
        Err(CallError::Unknown) => Err(StatusCode::StaleHandle),
        Err(CallError::Busy) => Err(StatusCode::ReentrancyDenied),
    }
}

/// Sends a request whose answer is a status (an info written to the caller's out-parameter) and returns it.
pub(crate) fn answer_of(task: ffi::Handle, mut request: FrameRequest) -> ffi::Status {
    if let Err(code) = ask(task, &mut request) {
        return c_status(code);
    }
    let answer = match request {
        FrameRequest::Info { answer, .. }
        | FrameRequest::Proof { answer, .. }
        | FrameRequest::ImageInfo { answer, .. } => answer,
        _ => None,
    };
    match answer {
        Some(Ok(())) => OK,
        Some(Err(code)) => c_status(code),
        None => c_status(StatusCode::InvalidState),
    }
}

/// Reads the caller's page, asks the lent frame or image to fill it (`request` made from it) and writes the
/// filled page back: the answer of every pager.
pub(crate) fn deliver_page(
    task: ffi::Handle,
    page: *mut ffi::LinkEntityPage,
    request: impl FnOnce(ffi::LinkEntityPage) -> FrameRequest,
) -> ffi::Status {
    let given = match read_struct(page.cast_const()) {
        Ok(given) => given,
        Err(code) => return c_status(code),
    };
    let mut request = request(given);
    if let Err(code) = ask(task, &mut request) {
        return c_status(code);
    }
    let answer = match request {
        FrameRequest::Page { answer, .. } | FrameRequest::ImagePage { answer, .. } => answer,
        _ => None,
    };
    match answer {
        Some(Ok(filled)) => c_answer(write_struct(page, filled)),
        Some(Err(code)) => c_status(code),
        None => c_status(StatusCode::InvalidState),
    }
}

/// `NevercLinkPhaseAPI.GetGraph`: the graph of the frame's task, the Link API bound to it and, from the
/// state the link issues proofs in, the current proof's handle.
pub(crate) extern "C" fn get_graph(
    _context: *mut c_void,
    frame: *const ffi::PhaseFrame,
    _artifact: ffi::ArtifactHandle,
    out: *mut ffi::LinkPhaseGraphInfo,
) -> ffi::Status {
    guarded(|| {
        let frame = match read_struct(frame) {
            Ok(frame) => frame,
            Err(code) => return c_status(code),
        };
        let mut request = FrameRequest::PhaseGraph(None);
        if let Err(code) = ask(frame.task.0, &mut request) {
            return c_status(code);
        }
        let FrameRequest::PhaseGraph(Some(answer)) = request else {
            return c_status(StatusCode::InvalidState);
        };
        c_answer(write_struct(out, answer))
    })
}

/// `NevercLinkAPI.GetGraphInfo`.
pub(crate) extern "C" fn get_graph_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    graph: ffi::LinkGraphHandle,
    out: *mut ffi::LinkGraphInfo,
) -> ffi::Status {
    guarded(|| {
        let mut request = FrameRequest::GraphInfo {
            graph: Some(graph.0),
            answer: None,
        };
        if let Err(code) = ask(task.0, &mut request) {
            return c_status(code);
        }
        match request {
            FrameRequest::GraphInfo {
                answer: Some(Ok(info)), ..
            } => c_answer(write_struct(out, info)),
            FrameRequest::GraphInfo {
                answer: Some(Err(code)),
                ..
            } => c_status(code),
            _ => c_status(StatusCode::InvalidState),
        }
    })
}

/// `NevercLinkAPI.GetProofInfo`: the proof handle is the one `GetGraph` handed out in this callback.
pub(crate) extern "C" fn get_proof_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    proof: ffi::LinkProofHandle,
    out: *mut ffi::LinkProofInfo,
) -> ffi::Status {
    guarded(|| {
        answer_of(
            task.0,
            FrameRequest::Proof {
                proof: proof.0,
                out,
                answer: None,
            },
        )
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
