//! The driver of the `link_api` fuzz target (cargo feature `fuzzing`): random calls into the Link API's
//! slots (and, while an LTO request of two modules is lent as to an LTO provider, the LTO API's and the
//! artifact API's), the way a C plugin makes them, through the real tables and the real `extern "C"` slot functions
//! (called through `neverc_sys::plugin::CFunction`). A small program is compiled with gcc and linked once;
//! every input then starts from a copy of that link's context, lends its frame as a C callback sees it, and
//! reads the bytes as a sequence of calls: which slot, then each argument (handles from the ones the host
//! handed out so far, altered or made up; cursors, capacities, strides, `StructSize`s, booleans; views
//! whose length is exact, zero or has a null `Data`). Some bytes end the callback and lend a new frame (so
//! kept handles go stale) or lend the linked image the way an image verifier sees it.
//!
//! Every pointer passed is valid host memory of the size it claims: only the values are random, so any
//! crash is the host's. The properties: no panic (a panic caught by `guarded` would answer PLUGIN_FAILURE,
//! which is checked too), every status is a declared code, and a page the host fills stays within its
//! capacity and advances the cursor by what it wrote.
//!
//! The slot list is written by hand over the generated tables (one entry a slot, in declaration order); a
//! test checks it has as many entries as the generated `LinkApi` has slots, so a slot added to the
//! declaration fails the test until it is listed.
// The driver plays the plugin: it writes its own out-structures and pages into its own arena, as a C plugin
// would, not through the host's `memory` module.
#![allow(clippy::disallowed_methods)]

use std::any::Any;
use std::cell::RefCell;
use std::ffi::c_void;
use std::path::{Path, PathBuf};

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::{link_state_machine, run_link, with_frame};
use neverc_link::frame::ExecutionState;
use neverc_link::lto::request::LtoRequest;
use neverc_link::plugin::Registry;
use neverc_sys::plugin::CFunction;
use neverc_tables::BUNDLED_PHASES;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::StatusCode;

use neverc_link::graph::EntityKind;

use crate::frame::{FrameState, Service, TASK_OWNER, handles, serve, serve_image};

/// The program the frames are lent over: an entry, a function nobody calls, data, a string and `.bss`, with
/// the library part in an archive.
const MAIN_C: &str = r#"
extern long helper(long);
extern const char message[];
static long unused_static(long v) { return v * 7; }
long unused(long v) { return unused_static(v) + 1; }
__attribute__((noreturn)) void _start(void) {
    long r = helper(3) + message[0];
    __asm__ volatile("syscall" :: "a"(60), "D"(r & 0x7f));
    __builtin_unreachable();
}
"#;

const LIB_C: &str = r#"
const char message[] = "fuzzing the link api";
long table[4] = {1, 2, 3, 4};
long scratch[32];
long helper(long v) { scratch[v & 31] = v; return v + table[v & 3]; }
"#;

/// What every input starts from: the linked program's context and the execution state of its frames.
struct Harness {
    /// An LTO request of two modules, lent to the LTO and artifact slots.
    lto_request: LtoRequest,
    context: LinkContext,
    execution: ExecutionState,
    service: Service,
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

/// Compiles the program with gcc in `dir`; returns the link's inputs (an object and an archive).
fn build_program(dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    let run = |program: &str, arguments: &[&str]| -> Result<(), String> {
        let status = std::process::Command::new(program)
            .args(arguments)
            .current_dir(dir)
            .status()
            .map_err(|error| format!("cannot run {program}: {error}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("{program} {arguments:?} failed: {status}"))
        }
    };
    for (name, source) in [("main.c", MAIN_C), ("lib.c", LIB_C)] {
        std::fs::write(dir.join(name), source).map_err(|error| format!("cannot write {name}: {error}"))?;
    }
    let flags = [
        "-c",
        "-O1",
        "-ffunction-sections",
        "-fdata-sections",
        "-fno-pie",
        "-fno-stack-protector",
        "-fcf-protection=none",
        "-ffreestanding",
    ];
    for name in ["main", "lib"] {
        let (source, object) = (format!("{name}.c"), format!("{name}.o"));
        let mut arguments: Vec<&str> = flags.to_vec();
        arguments.extend([source.as_str(), "-o", object.as_str()]);
        run("gcc", &arguments)?;
    }
    run("ar", &["rcs", "liblib.a", "lib.o"])?;
    Ok(vec![dir.join("main.o"), dir.join("liblib.a")])
}

impl Harness {
    fn new() -> Result<Harness, String> {
        let dir = std::env::temp_dir().join(format!("neverc-fuzz-link-api-{}", std::process::id()));
        let inputs = build_program(&dir)?;
        let mut context = LinkContext::new(LinkOptions::new(inputs, dir.join("a.out")));
        run_link(&mut context, &BUNDLED_PHASES, &mut Registry::default()).map_err(|error| error.to_string())?;
        let machine = link_state_machine(&BUNDLED_PHASES).ok_or("no link state machine")?;
        let mut execution = ExecutionState::new(0x5eed);
        execution.state = machine.state_by_name("LAYOUT_COMPLETE").unwrap_or(0);
        Ok(Harness {
            lto_request: lto_request(),
            context,
            execution,
            service: Service::new(&BUNDLED_PHASES),
        })
    }
}

/// Runs one input: the calls its bytes say, over frames lent from a copy of the linked program's context.
pub fn drive(bytes: &[u8]) {
    answers(bytes);
}

/// Runs one input and answers which slot (its index in the Link API, then the Link phase API) answered
/// which status code, call by call.
fn answers(bytes: &[u8]) -> Vec<(usize, i32)> {
    HARNESS.with(|harness| {
        let mut harness = harness.borrow_mut();
        if harness.is_none() {
            match Harness::new() {
                Ok(made) => *harness = Some(made),
                Err(error) => panic!("the link_api fuzz harness cannot be set up: {error}"),
            }
        }
        harness.as_ref().map(|harness| run(harness, bytes)).unwrap_or_default()
    })
}

fn run(harness: &Harness, bytes: &[u8]) -> Vec<(usize, i32)> {
    let mut context = harness.context.clone();
    let mut execution = harness.execution.clone();
    let mut source = Source::new(bytes);
    let service = harness.service;
    // At most 8 lendings an input: a frame, or the image.
    for _ in 0..8 {
        if source.exhausted() {
            break;
        }
        if source.byte() % 8 == 2 {
            crate::lto::lend(&harness.lto_request, |token, task, request| {
                lto_calls(&mut source, token, task, request)
            });
            continue;
        }
        if source.byte() % 4 == 3 {
            let Some(layout) = context.image_layout().cloned() else {
                continue;
            };
            let size = context.image().map_or(0, |image| image.len());
            let mut body = |request: &mut dyn Any| serve_image(&layout, size, request);
            neverc_sys::scoped::lend(&mut body, |token| {
                // The image's handle is the one a verifier is handed.
                source.pool.push(ffi::Handle {
                    owner: crate::frame::image::IMAGE_OWNER,
                    value: token,
                });
                calls(&mut source, token, false)
            });
            continue;
        }
        with_frame(
            &mut context,
            &mut execution,
            &BUNDLED_PHASES,
            "neverc.link.layout",
            |frame| {
                let mut state = FrameState::default();
                {
                    let frame = &mut *frame;
                    let mut body = |request: &mut dyn Any| {
                        serve(frame, service, request, None, &mut state);
                    };
                    neverc_sys::scoped::lend(&mut body, |token| calls(&mut source, token, true));
                }
                state.finish(frame);
            },
        );
    }
    source.answers
}

/// A request of two bitcode modules (their bytes need not be bitcode: the slots only hand them out), with a
/// resolution for each symbol.
fn lto_request() -> LtoRequest {
    use neverc_link::graph::BitcodeModuleId;
    use neverc_link::lto::request::{LtoOptions, RequestFile, RequestModule};
    use neverc_link::lto::{LtoResolution, ResolutionFlags};
    let files = (0..2)
        .map(|index| RequestFile {
            logical_name: format!("module{index}.o"),
            path: None,
            bytes: vec![0x42 + index as u8; 100 + 50 * index],
            content_digest: [index as u8; 32],
        })
        .collect();
    let modules: Vec<RequestModule> = (0..2)
        .map(|index| RequestModule {
            file: index,
            ordinal: 0,
            identifier: format!("module{index}.c"),
            symbols: vec!["main".to_string(), format!("helper{index}"), "shared".to_string()],
        })
        .collect();
    let resolutions = (0..2u32)
        .flat_map(|module| {
            (0..3).map(move |symbol| LtoResolution {
                module: BitcodeModuleId(module),
                symbol,
                flags: ResolutionFlags::PREVAILING,
                link_symbol: None,
            })
        })
        .collect();
    LtoRequest::new(
        "x86_64-unknown-linux-gnu".to_string(),
        LtoOptions::default(),
        files,
        modules,
        resolutions,
    )
}

/// Makes calls into the LTO and artifact slots while `request` is lent under `token`, as an LTO provider's
/// callback would; the request's handles join the pool.
fn lto_calls(source: &mut Source<'_>, token: u64, task: ffi::TaskHandle, request: &ffi::LtoRequest) {
    source.tasks.push(token);
    source.lto_task = Some(task);
    source.pool.push(request.request.0);
    for array in [request.modules, request.resolutions] {
        for index in 0..array.count.min(4) {
            if let Some(handle) =
                neverc_sys::plugin::read_element::<ffi::Handle>(array.data, array.element_stride, index)
            {
                source.pool.push(handle);
            }
        }
    }
    for _ in 0..64 {
        if source.exhausted() {
            break;
        }
        let choice = source.byte() % 8;
        let status = crate::load::with_lto_tables(|lto, artifact| match choice {
            0 => Some(call(lto.get_request, source)),
            1 => Some(call(lto.get_module_page, source)),
            2 => Some(call(lto.get_resolution_page, source)),
            3 => Some(call(lto.get_module_info, source)),
            4 => Some(call(lto.get_resolution_info, source)),
            5 => Some(call(artifact.read_artifact, source)),
            6 => Some(call(artifact.create_artifact, source)),
            _ => None,
        });
        let Some(status) = status else {
            break;
        };
        let code = StatusCode::from_raw(status.code);
        assert!(
            code.is_some() || status.code == 0,
            "LTO slot {choice} answered undeclared status {}",
            status.code
        );
        assert_ne!(
            code,
            Some(StatusCode::PluginFailure),
            "LTO slot {choice} panicked in the host"
        );
        source.answers.push((1000 + usize::from(choice), status.code));
        source.check_page(status);
        source.harvest();
    }
    source.lto_task = None;
}

/// Does what a plugin does first in a callback: asks for the graph and pages 16 entities of every kind
/// from a cursor the input says; the handles handed out join the pool.
fn survey(source: &mut Source<'_>) {
    let task = ffi::TaskHandle(ffi::Handle {
        owner: TASK_OWNER,
        value: source.tasks.last().copied().unwrap_or(0),
    });
    let frame = ffi::PhaseFrame {
        task,
        ..ffi::PhaseFrame::default()
    };
    let buffer = source.buffer(std::mem::size_of::<ffi::LinkPhaseGraphInfo>());
    let out = source.pointer(buffer).cast::<ffi::LinkPhaseGraphInfo>();
    let got = crate::load::with_link_tables(|_, phase, _| {
        call_with(
            phase.get_graph,
            (std::ptr::null_mut(), &frame, ffi::ArtifactHandle::default(), out),
        )
    });
    let graph = neverc_sys::plugin::read_in(out.cast_const())
        .map(|info| info.graph)
        .unwrap_or_default();
    source.harvest();
    if got.code != 0 {
        return;
    }
    let pagers: [LinkPager; 15] = crate::load::with_link_tables(|link, _, _| {
        [
            link.get_input_page,
            link.get_archive_page,
            link.get_archive_member_page,
            link.get_shared_library_page,
            link.get_bitcode_module_page,
            link.get_section_page,
            link.get_atom_page,
            link.get_symbol_page,
            link.get_edge_page,
            link.get_comdat_page,
            link.get_import_page,
            link.get_export_page,
            link.get_unwind_page,
            link.get_synthetic_page,
            link.get_constraint_page,
        ]
    });
    // The image (once the phase has one) and its builder.
    let buffer = source.buffer(std::mem::size_of::<ffi::LinkPhaseImageInfo>());
    let out = source.pointer(buffer).cast::<ffi::LinkPhaseImageInfo>();
    crate::load::with_link_tables(|_, phase, _| {
        call_with(
            phase.get_image,
            (std::ptr::null_mut(), &frame, ffi::ArtifactHandle::default(), out),
        )
    });
    if let Some(image) = neverc_sys::plugin::read_in(out.cast_const()) {
        // A zeroed structure whose header says its size.
        let buffer = source.buffer(std::mem::size_of::<ffi::BinaryImageInfo>());
        let whole = source.pointer(buffer).cast::<ffi::BinaryImageInfo>();
        neverc_sys::plugin::write_out(
            whole.cast::<ffi::AbiTableHeader>(),
            crate::frame::header::<ffi::BinaryImageInfo>(),
        );
        crate::load::with_link_tables(|link, _, _| {
            call_with(
                link.get_binary_image_info,
                (std::ptr::null_mut(), task, image.image, whole),
            )
        });
    }
    source.harvest();
    let cursor = u64::from(source.byte() % 8);
    for pager in pagers {
        let buffer = source.buffer(16 * 512);
        let page = ffi::LinkEntityPage {
            header: crate::frame::header::<ffi::LinkEntityPage>(),
            data: source.pointer(buffer),
            element_capacity: 16,
            element_stride: 512,
            out_count: 0,
            next_cursor: 0,
            has_more: 0,
            reserved: 0,
        };
        let buffer = source.buffer(std::mem::size_of::<ffi::LinkEntityPage>());
        let pointer = source.pointer(buffer).cast::<ffi::LinkEntityPage>();
        neverc_sys::plugin::write_out(pointer, page);
        call_with(pager, (std::ptr::null_mut(), task, graph, cursor, pointer));
        source.harvest();
    }
}

/// Makes calls under the lending `token` until the bytes end or say to end the callback; a frame's
/// callback (`frame`) starts by asking for the graph and paging it.
fn calls(source: &mut Source, token: u64, frame: bool) {
    source.tasks.push(token);
    if frame {
        survey(source);
    }
    let slots = link_slots();
    let count = slots.len() + PHASE_SLOTS.len() + BINARY_SLOTS.len() + 1;
    for _ in 0..64 {
        if source.exhausted() {
            return;
        }
        let choice = source.byte() as usize % count;
        let status = crate::load::with_link_tables(|link, phase, binary| {
            if choice < slots.len() {
                Some(slots[choice](link, source))
            } else if choice < slots.len() + PHASE_SLOTS.len() {
                Some(PHASE_SLOTS[choice - slots.len()](phase, source))
            } else if choice < slots.len() + PHASE_SLOTS.len() + BINARY_SLOTS.len() {
                Some(BINARY_SLOTS[choice - slots.len() - PHASE_SLOTS.len()](binary, source))
            } else {
                None
            }
        });
        let Some(status) = status else {
            // End of this callback.
            return;
        };
        let code = StatusCode::from_raw(status.code);
        assert!(
            code.is_some() || status.code == 0,
            "slot {choice} answered undeclared status {}",
            status.code
        );
        assert_ne!(
            code,
            Some(StatusCode::PluginFailure),
            "slot {choice} panicked in the host"
        );
        source.answers.push((choice, status.code));
        source.check_page(status);
        source.harvest();
    }
}

/// Reads the input's bytes as argument values, and owns the host memory the arguments point at.
struct Source<'b> {
    bytes: &'b [u8],
    position: usize,
    /// Buffers the current call's pointers point into (dropped after the call, once harvested).
    arena: Vec<Vec<u64>>,
    /// Handles the host handed out (and the image's), to be used again.
    pool: Vec<ffi::Handle>,
    /// The tokens of every lending of this input; the last is the current one.
    tasks: Vec<u64>,
    /// The page of the last call (its buffer index in the arena), with the capacity and cursor given.
    page: Option<(usize, u64, u64)>,
    /// Which slot answered which code, call by call.
    answers: Vec<(usize, i32)>,
    /// The task of the LTO request lent now, if one is.
    lto_task: Option<ffi::TaskHandle>,
}

impl<'b> Source<'b> {
    fn new(bytes: &'b [u8]) -> Source<'b> {
        Source {
            bytes,
            position: 0,
            arena: Vec::new(),
            pool: Vec::new(),
            tasks: Vec::new(),
            page: None,
            answers: Vec::new(),
            lto_task: None,
        }
    }

    fn exhausted(&self) -> bool {
        self.position >= self.bytes.len()
    }

    fn byte(&mut self) -> u8 {
        let byte = self.bytes.get(self.position).copied().unwrap_or(0);
        self.position += 1;
        byte
    }

    fn u64(&mut self) -> u64 {
        let mut value = 0u64;
        for _ in 0..8 {
            value = (value << 8) | u64::from(self.byte());
        }
        value
    }

    /// A count or cursor: small mostly, sometimes at the edges of u64.
    fn number(&mut self) -> u64 {
        match self.byte() % 8 {
            0 => u64::MAX,
            1 => self.u64(),
            2 => u64::from(self.byte()) << 32,
            3 => u64::from(self.byte()),
            _ => u64::from(self.byte() % 16),
        }
    }

    /// A zeroed buffer of at least `bytes` bytes, aligned for any ABI structure; its index in the arena.
    fn buffer(&mut self, bytes: usize) -> usize {
        self.arena.push(vec![0u64; bytes.div_ceil(8).max(1)]);
        self.arena.len() - 1
    }

    fn pointer(&mut self, buffer: usize) -> *mut c_void {
        self.arena[buffer].as_mut_ptr().cast()
    }

    /// `value` in host memory that lives until the call returns.
    fn place<T: Copy>(&mut self, value: T) -> *mut T {
        let buffer = self.buffer(std::mem::size_of::<T>());
        let pointer = self.pointer(buffer).cast::<T>();
        neverc_sys::plugin::write_out(pointer, value);
        pointer
    }

    /// An out-structure of `size` bytes whose header says a random `StructSize`; null now and then.
    fn out(&mut self, size: usize) -> *mut c_void {
        if self.byte() % 16 == 0 {
            return std::ptr::null_mut();
        }
        let buffer = self.buffer(size.max(16));
        let struct_size = match self.byte() % 4 {
            0 => u32::from(self.byte()),
            1 => u32::MAX,
            _ => u32::try_from(size).unwrap_or(u32::MAX),
        };
        self.arena[buffer][0] = u64::from(struct_size);
        self.pointer(buffer)
    }

    /// A handle: one the host handed out (as it is, or with a bit flipped), null, or made up.
    fn handle(&mut self) -> ffi::Handle {
        let pick = self.byte();
        // Half the time one of the latest four: those of the current callback, most likely still good.
        let from_pool = |source: &mut Source<'_>| {
            let byte = usize::from(source.byte());
            let length = source.pool.len();
            let index = if byte % 2 == 0 {
                length.saturating_sub(1 + (byte / 2) % 4)
            } else {
                (byte / 2) % length.max(1)
            };
            source.pool.get(index).copied().unwrap_or_default()
        };
        match pick % 8 {
            0 => ffi::Handle::default(),
            1 => ffi::Handle {
                owner: self.u64(),
                value: self.u64(),
            },
            2 => {
                let mut handle = from_pool(self);
                let bit = self.byte() % 128;
                if bit < 64 {
                    handle.owner ^= 1 << bit;
                } else {
                    handle.value ^= 1 << (bit - 64);
                }
                handle
            }
            _ => from_pool(self),
        }
    }

    /// A task: the current one mostly, else an earlier one or a forged one.
    fn task(&mut self) -> ffi::TaskHandle {
        let current = self.tasks.last().copied().unwrap_or(0);
        let value = match self.byte() % 8 {
            0 => {
                let index = usize::from(self.byte()) % self.tasks.len().max(1);
                self.tasks.get(index).copied().unwrap_or(0)
            }
            1 => self.u64(),
            _ => current,
        };
        let owner = if self.byte() % 16 == 0 { self.u64() } else { TASK_OWNER };
        ffi::TaskHandle(ffi::Handle { owner, value })
    }

    /// A view: exact over host bytes, empty, or with a null `Data` and any length.
    fn view(&mut self, text: &'static [u8]) -> (*const u8, u64) {
        match self.byte() % 4 {
            0 => (std::ptr::null(), self.number()),
            1 => (text.as_ptr(), 0),
            _ => (text.as_ptr(), text.len() as u64),
        }
    }

    /// A caller-owned page: `Data` of room for exactly `ElementCapacity` elements `ElementStride` apart, or
    /// null with any capacity.
    fn entity_page(&mut self) -> *mut ffi::LinkEntityPage {
        if self.byte() % 16 == 0 {
            return std::ptr::null_mut();
        }
        let (capacity, stride) = (
            u64::from(self.byte() % 17),
            u64::from(self.byte()) * 8 + u64::from(self.byte() % 8),
        );
        let null_data = self.byte() % 8 == 0;
        let (data, capacity) = if null_data {
            (std::ptr::null_mut(), self.number())
        } else {
            let buffer = self.buffer((capacity * stride) as usize);
            (self.pointer(buffer), capacity)
        };
        let page = ffi::LinkEntityPage {
            header: ffi::AbiTableHeader {
                struct_size: u32::from(self.byte()),
                major: 1,
                minor: 0,
                flags: 0,
            },
            data,
            element_capacity: capacity,
            element_stride: stride,
            out_count: self.number(),
            next_cursor: self.number(),
            has_more: u32::from(self.byte()),
            reserved: 0,
        };
        let buffer = self.buffer(std::mem::size_of::<ffi::LinkEntityPage>());
        let pointer = self.pointer(buffer).cast::<ffi::LinkEntityPage>();
        neverc_sys::plugin::write_out(pointer, page);
        self.page = Some((buffer, capacity, 0));
        pointer
    }

    /// After a page call that succeeded: the host wrote at most the capacity and moved the cursor by it.
    fn check_page(&mut self, status: ffi::Status) {
        let Some((buffer, capacity, _)) = self.page.take() else {
            return;
        };
        if status.code != 0 {
            return;
        }
        let pointer = self.pointer(buffer).cast::<ffi::LinkEntityPage>().cast_const();
        if let Some(page) = neverc_sys::plugin::read_in(pointer) {
            assert!(
                page.out_count <= capacity,
                "a page holds {} of {capacity}",
                page.out_count
            );
            assert!(page.has_more <= 1);
        }
    }

    /// Keeps every handle the host wrote into this call's buffers (any pair of words whose owner is one of
    /// the host's tags), then frees the buffers.
    fn harvest(&mut self) {
        for buffer in std::mem::take(&mut self.arena) {
            for pair in buffer.windows(2) {
                let handle = ffi::Handle {
                    owner: pair[0],
                    value: pair[1],
                };
                if handle.owner >> 48 == 0x4e43 && !self.pool.contains(&handle) {
                    // The pool keeps the latest 256.
                    if self.pool.len() == 256 {
                        self.pool.remove(0);
                    }
                    self.pool.push(handle);
                }
            }
        }
    }
}

/// An argument of a slot, made from the input's bytes.
trait Fuzzed {
    fn fuzzed(source: &mut Source<'_>) -> Self;
}

impl Fuzzed for u64 {
    fn fuzzed(source: &mut Source<'_>) -> u64 {
        source.number()
    }
}

/// `Bool`: 0 or 1 mostly, anything now and then.
impl Fuzzed for u32 {
    fn fuzzed(source: &mut Source<'_>) -> u32 {
        match source.byte() % 4 {
            0 => u32::from(source.byte()),
            byte => u32::from(byte & 1),
        }
    }
}

/// `Tell`'s out-parameter: room for the position, or null now and then.
impl Fuzzed for *mut u64 {
    fn fuzzed(source: &mut Source<'_>) -> *mut u64 {
        source.out(8).cast()
    }
}

/// The table's context: the host ignores it.
impl Fuzzed for *mut c_void {
    fn fuzzed(source: &mut Source<'_>) -> *mut c_void {
        let buffer = source.buffer(8);
        source.pointer(buffer)
    }
}

impl Fuzzed for ffi::TaskHandle {
    fn fuzzed(source: &mut Source<'_>) -> ffi::TaskHandle {
        // While an LTO request is lent, mostly its task (the task of a link frame otherwise).
        let lent = source.lto_task;
        match lent {
            Some(task) if source.byte() % 8 != 0 => task,
            _ => source.task(),
        }
    }
}

impl Fuzzed for ffi::MutableByteView {
    fn fuzzed(source: &mut Source<'_>) -> ffi::MutableByteView {
        if source.byte() % 8 == 0 {
            return ffi::MutableByteView {
                data: std::ptr::null_mut(),
                length: source.number(),
            };
        }
        let length = usize::from(source.byte()) * 16;
        let buffer = source.buffer(length);
        ffi::MutableByteView {
            data: source.pointer(buffer).cast(),
            length: length as u64,
        }
    }
}

impl Fuzzed for ffi::StringView {
    fn fuzzed(source: &mut Source<'_>) -> ffi::StringView {
        let (data, length) = source.view(b"an object");
        ffi::StringView {
            data: data.cast(),
            length,
        }
    }
}

impl Fuzzed for *mut ffi::LinkEntityPage {
    fn fuzzed(source: &mut Source<'_>) -> *mut ffi::LinkEntityPage {
        source.entity_page()
    }
}

impl Fuzzed for ffi::ByteView {
    fn fuzzed(source: &mut Source<'_>) -> ffi::ByteView {
        let (data, length) = source.view(b"\x90\x90\xc3 replaced bytes of an atom");
        ffi::ByteView { data, length }
    }
}

impl Fuzzed for *const ffi::PhaseFrame {
    fn fuzzed(source: &mut Source<'_>) -> *const ffi::PhaseFrame {
        if source.byte() % 16 == 0 {
            return std::ptr::null();
        }
        let frame = ffi::PhaseFrame {
            task: source.task(),
            ..ffi::PhaseFrame::default()
        };
        source.place(frame).cast_const()
    }
}

impl Fuzzed for *const ffi::LinkConstraintInfo {
    fn fuzzed(source: &mut Source<'_>) -> *const ffi::LinkConstraintInfo {
        if source.byte() % 16 == 0 {
            return std::ptr::null();
        }
        let (data, length) = source.view(b"order");
        let subject = source.handle().value;
        let descriptor = ffi::LinkConstraintInfo {
            kind: ffi::StringView {
                data: data.cast(),
                length,
            },
            subject_id: subject,
            value: source.number(),
            required: u32::fuzzed(source),
            header: crate::frame::header::<ffi::LinkConstraintInfo>(),
            constraint: ffi::LinkConstraintHandle::default(),
            reserved: 0,
            origin: no_origin(),
            extensions: crate::frame::NO_EXTENSIONS,
        };
        source.place(descriptor).cast_const()
    }
}

impl Fuzzed for *const ffi::LinkSyntheticInfo {
    fn fuzzed(source: &mut Source<'_>) -> *const ffi::LinkSyntheticInfo {
        let (data, length) = source.view(b".got");
        let descriptor = ffi::LinkSyntheticInfo {
            role: ffi::StringView {
                data: data.cast(),
                length,
            },
            header: crate::frame::header::<ffi::LinkSyntheticInfo>(),
            synthetic: ffi::LinkSyntheticHandle(source.handle()),
            section: ffi::LinkSectionHandle(source.handle()),
            atom: ffi::LinkAtomHandle(source.handle()),
            origin: no_origin(),
            extensions: crate::frame::NO_EXTENSIONS,
        };
        source.place(descriptor).cast_const()
    }
}

impl Fuzzed for *const ffi::LinkSymbolResolutionUpdate {
    fn fuzzed(source: &mut Source<'_>) -> *const ffi::LinkSymbolResolutionUpdate {
        let update = ffi::LinkSymbolResolutionUpdate {
            binding: u32::fuzzed(source),
            visibility: u32::fuzzed(source),
            definition: u32::fuzzed(source),
            is_prevailing: u32::fuzzed(source),
            is_exported: u32::fuzzed(source),
            ..ffi::LinkSymbolResolutionUpdate::default()
        };
        source.place(update).cast_const()
    }
}

/// An origin naming nothing.
fn no_origin() -> ffi::LinkOrigin {
    ffi::LinkOrigin {
        header: crate::frame::header::<ffi::LinkOrigin>(),
        input: ffi::LinkInputHandle::default(),
        archive_member: ffi::LinkArchiveMemberHandle::default(),
        object_graph: ffi::ObjectGraphHandle::default(),
        object_entity_id: 0,
        created_by_phase: ffi::InterfaceId::default(),
        created_by_provider: crate::frame::empty_view(),
        last_mutation_phase: ffi::InterfaceId::default(),
        last_mutation_plugin: crate::frame::empty_view(),
    }
}

/// Typed handles: half the time the latest handle of the pool with the type's tag (and kind), else any.
macro_rules! fuzzed_handles {
    ($($handle:ident => $tag:expr),* $(,)?) => {
        $(impl Fuzzed for ffi::$handle {
            fn fuzzed(source: &mut Source<'_>) -> ffi::$handle {
                let tag: Option<(u64, u8)> = $tag;
                let typed = tag.filter(|_| source.byte() % 2 == 0).and_then(|(tag, low)| {
                    source
                        .pool
                        .iter()
                        .rev()
                        .find(|handle| handle.owner >> 40 == tag && handle.owner as u8 == low)
                        .copied()
                });
                ffi::$handle(typed.unwrap_or_else(|| source.handle()))
            }
        })*
    };
}

/// The tag and low byte of an entity handle of `kind`.
fn entity(kind: EntityKind) -> Option<(u64, u8)> {
    Some((handles::ENTITY_TAG, handles::kind_code(kind)))
}

fuzzed_handles!(
    LinkRequestHandle => None,
    LinkGraphHandle => Some((handles::GRAPH_TAG, 0)),
    LinkInputHandle => entity(EntityKind::Input),
    LinkArchiveHandle => entity(EntityKind::Archive),
    LinkArchiveMemberHandle => entity(EntityKind::ArchiveMember),
    LinkSharedLibraryHandle => entity(EntityKind::SharedLibrary),
    LinkBitcodeModuleHandle => entity(EntityKind::BitcodeModule),
    LinkSectionHandle => entity(EntityKind::Section),
    LinkAtomHandle => entity(EntityKind::Atom),
    LinkSymbolHandle => entity(EntityKind::Symbol),
    LinkEdgeHandle => entity(EntityKind::Edge),
    LinkComdatHandle => entity(EntityKind::Comdat),
    LinkImportHandle => entity(EntityKind::Import),
    LinkExportHandle => entity(EntityKind::Export),
    LinkUnwindHandle => entity(EntityKind::Unwind),
    LinkSyntheticHandle => entity(EntityKind::Synthetic),
    LinkConstraintHandle => entity(EntityKind::Constraint),
    LinkMutationHandle => Some((handles::MUTATION_TAG, 0)),
    LinkProofHandle => Some((handles::PROOF_TAG, 0)),
    BinaryImageHandle => Some((crate::frame::image::IMAGE_OWNER >> 40, crate::frame::image::IMAGE_OWNER as u8)),
    BinaryBuilderHandle => Some((crate::frame::image::BUILDER_OWNER >> 40, crate::frame::image::BUILDER_OWNER as u8)),
    ArtifactHandle => None,
    LtoRequestHandle => None,
    LtoInputModuleHandle => None,
    LtoResolutionHandle => None,
);

/// Out-structures: room for the structure, with a random `StructSize` in its header.
macro_rules! fuzzed_outs {
    ($($out:ident),* $(,)?) => {
        $(impl Fuzzed for *mut ffi::$out {
            fn fuzzed(source: &mut Source<'_>) -> *mut ffi::$out {
                source.out(std::mem::size_of::<ffi::$out>()).cast()
            }
        })*
    };
}

fuzzed_outs!(
    LinkRequest,
    LinkGraphInfo,
    LinkInputInfo,
    LinkArchiveInfo,
    LinkArchiveMemberInfo,
    LinkSharedLibraryInfo,
    LinkBitcodeModuleInfo,
    LinkSectionInfo,
    LinkAtomInfo,
    LinkSymbolInfo,
    LinkEdgeInfo,
    LinkComdatInfo,
    LinkImportInfo,
    LinkExportInfo,
    LinkUnwindInfo,
    LinkSyntheticInfo,
    LinkConstraintInfo,
    LinkProofInfo,
    BinaryImageInfo,
    LinkMutationHandle,
    LinkSyntheticHandle,
    LinkConstraintHandle,
    LinkPhaseGraphInfo,
    LinkPhaseImageInfo,
    ArtifactHandle,
    ByteView,
    LtoRequest,
    LtoInputModuleInfo,
    LtoSymbolResolution,
);

macro_rules! fuzzed_tuples {
    ($($argument:ident),*) => {
        impl<$($argument: Fuzzed),*> Fuzzed for ($($argument,)*) {
            fn fuzzed(source: &mut Source<'_>) -> Self {
                // Arguments are made in order, left to right.
                ($($argument::fuzzed(source),)*)
            }
        }
    };
}

fuzzed_tuples!(A, B);
fuzzed_tuples!(A, B, C);
fuzzed_tuples!(A, B, C, D);
fuzzed_tuples!(A, B, C, D, E);
fuzzed_tuples!(A, B, C, D, E, G);

/// Calls a slot with arguments made from the input.
fn call<F>(slot: Option<F>, source: &mut Source<'_>) -> ffi::Status
where
    F: CFunction<Output = ffi::Status>,
    F::Arguments: Fuzzed,
{
    // The generated tables have no null slot; a null one would be the host's bug.
    let Some(slot) = slot else {
        panic!("a null slot in a table the host hands out");
    };
    let arguments = F::Arguments::fuzzed(source);
    slot.call(driver(), arguments)
}

/// The driver as the caller of the host's slots: it plays the plugin, so a crash report would name it.
fn driver() -> neverc_sys::crash::Callee<'static> {
    static NAME: std::sync::OnceLock<neverc_sys::crash::PluginName> = std::sync::OnceLock::new();
    neverc_sys::crash::Callee {
        plugin: NAME.get_or_init(|| {
            neverc_sys::crash::PluginName::new("the link_api fuzzing driver", std::ffi::OsStr::new(file!()))
        }),
        what: "call of a host slot",
        subject: "",
    }
}

/// Calls a slot with the arguments given; a null slot answers CAPABILITY_UNAVAILABLE.
fn call_with<F>(slot: Option<F>, arguments: F::Arguments) -> ffi::Status
where
    F: CFunction<Output = ffi::Status>,
{
    slot.map_or(crate::status::c_status(StatusCode::CapabilityUnavailable), |slot| {
        slot.call(driver(), arguments)
    })
}

/// The type of a pager slot.
type LinkPager = Option<
    unsafe extern "C" fn(
        *mut c_void,
        ffi::TaskHandle,
        ffi::LinkGraphHandle,
        u64,
        *mut ffi::LinkEntityPage,
    ) -> ffi::Status,
>;

type LinkSlot = fn(&ffi::LinkApi, &mut Source<'_>) -> ffi::Status;
type PhaseSlot = fn(&ffi::LinkPhaseApi, &mut Source<'_>) -> ffi::Status;

macro_rules! slot_list {
    ($table:ty; $($slot:ident),* $(,)?) => {
        [$(|table: &$table, source: &mut Source<'_>| call(table.$slot, source)),*]
    };
}

/// NevercLinkAPI's slots, in declaration order.
fn link_slots() -> [LinkSlot; 52] {
    slot_list!(ffi::LinkApi;
        get_request, get_graph_info,
        get_input_page, get_archive_page, get_archive_member_page, get_shared_library_page, get_bitcode_module_page,
        get_section_page, get_atom_page, get_symbol_page, get_edge_page, get_comdat_page, get_import_page,
        get_export_page, get_unwind_page, get_synthetic_page, get_constraint_page,
        get_input_info, get_archive_info, get_archive_member_info, get_shared_library_info, get_bitcode_module_info,
        get_section_info, get_atom_info, get_symbol_info, get_edge_info, get_comdat_info, get_import_info,
        get_export_info, get_unwind_info, get_synthetic_info, get_constraint_info,
        get_proof_info, get_binary_image_info, get_binary_segment_page, get_binary_section_page,
        begin_mutation, commit_mutation, abandon_mutation,
        rebind_symbol, retarget_edge, set_symbol_root, set_atom_live, set_fold_leader, replace_atom_content,
        create_synthetic, replace_synthetic, erase_synthetic,
        create_constraint, replace_constraint, erase_constraint, set_symbol_resolution,
    )
}

/// NevercLinkPhaseAPI's slots, in declaration order.
const PHASE_SLOTS: [PhaseSlot; 3] = slot_list!(ffi::LinkPhaseApi; get_graph, publish_graph, get_image);

type BinarySlot = fn(&ffi::MutableBinaryApi, &mut Source<'_>) -> ffi::Status;

/// NevercMutableBinaryAPI's slots, in declaration order.
const BINARY_SLOTS: [BinarySlot; 8] =
    slot_list!(ffi::MutableBinaryApi; reserve, write, write_at, tell, read_at, insert, append, resize);

#[cfg(test)]
mod tests {
    use super::*;

    /// A table is its header, its context and one function pointer a slot.
    fn slots_of<T>() -> usize {
        (std::mem::size_of::<T>() - std::mem::size_of::<ffi::AbiTableHeader>() - std::mem::size_of::<usize>())
            / std::mem::size_of::<usize>()
    }

    #[test]
    fn every_declared_slot_is_driven() {
        assert_eq!(link_slots().len(), slots_of::<ffi::LinkApi>());
        assert_eq!(PHASE_SLOTS.len(), slots_of::<ffi::LinkPhaseApi>());
        assert_eq!(BINARY_SLOTS.len(), slots_of::<ffi::MutableBinaryApi>());
    }

    #[test]
    fn the_driver_runs_inputs_without_a_crash() {
        // A few fixed inputs, and some made by a small generator: every slot is reached.
        drive(&[]);
        drive(b"\x01\x02\x03\x04");
        let mut state = 0x1234_5678_u64;
        let mut seen = Vec::new();
        for _ in 0..256 {
            let bytes: Vec<u8> = (0..512)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state as u8
                })
                .collect();
            seen.extend(answers(&bytes));
        }
        // Every slot was called, and some calls of each of these kinds succeeded: the frame is really lent.
        let slots = link_slots().len() + PHASE_SLOTS.len() + BINARY_SLOTS.len();
        for slot in 0..slots {
            assert!(
                seen.iter().any(|(called, _)| *called == slot),
                "slot {slot} never called"
            );
        }
        let ok = |slot: usize| {
            seen.iter()
                .filter(|(called, code)| *called == slot && *code == 0)
                .count()
        };
        // GetGraphInfo, GetSymbolPage, GetSymbolInfo, BeginMutation, CommitMutation, SetAtomLive,
        // LinkPhaseAPI.GetGraph and GetImage, MutableBinaryAPI.Tell and ReadAt.
        for slot in [1, 9, 24, 36, 37, 42, 52, 54, 58, 59] {
            assert!(
                ok(slot) > 0,
                "slot {slot} never succeeded: {:?}",
                seen.iter().filter(|(called, _)| *called == slot).collect::<Vec<_>>()
            );
        }
        // The unserved slots answer CAPABILITY_UNAVAILABLE whatever they are given.
        let unavailable = StatusCode::CapabilityUnavailable.raw();
        assert!(
            seen.iter()
                .filter(|(called, _)| *called == 0)
                .all(|(_, code)| *code == unavailable)
        );
    }
}
