//! LTO code generation providers written in C (`NevercLTORegistrarAPI.RegisterProvider`): the descriptor is
//! checked by the runtime's `check_descriptor`, like a Rust provider's, and the registered provider is a
//! [`LtoProvider`] of the link runtime. While its `BuildCacheKey` or `Codegen` runs, the request is lent to C:
//! the Task handle carries the token, and `NevercLTOAPI` pages and reads the request's modules and
//! resolutions, `NevercArtifactAPI` reads a module's bitcode and takes the objects the provider produced.
//! Every handle the provider sees names its task in `Owner`, so one kept from an earlier call is refused.

use std::any::Any;
use std::cell::{Cell, OnceCell};
use std::ffi::c_void;
use std::rc::Rc;

use neverc_link::lto::ProviderFlags;
use neverc_link::lto::provider::{KeySize, LtoCandidate, LtoObject, LtoProvider, ProviderError};
use neverc_link::lto::request::LtoRequest;
use neverc_sys::crash::{Callee, PluginName};
use neverc_sys::plugin::{CFunction, PluginLibrary, copy_view, fill_buffer, read_elements, write_element};
use neverc_sys::scoped::CallError;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::status::StatusCode;
use sha2::{Digest as _, Sha256};

use crate::memory::{read_struct, write_plain, write_struct};
use crate::status::{OK, c_answer, describe, guarded};
use crate::views::{NO_BYTES, NO_ELEMENTS, header, view};

/// The longest provider id, compatibility key, object name or cache key the host reads.
const TEXT_LIMIT: usize = 4096;
/// The most objects a candidate may list.
const OBJECT_LIMIT: usize = 1 << 16;
/// The largest artifact a provider may create, and the largest cache key it may ask for.
const BYTES_LIMIT: usize = 1 << 32;
const KEY_LIMIT: usize = 1 << 20;

/// What a handle of an LTO callback names (in the top byte of its value; the owner is the task's token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Task = 1,
    Request,
    Module,
    Resolution,
    /// The bitcode of the request's file with this index.
    InputArtifact,
    /// An artifact the provider created during the call.
    CreatedArtifact,
}

fn handle(token: u64, kind: Kind, index: usize) -> ffi::Handle {
    ffi::Handle {
        owner: token,
        value: (kind as u64) << 56 | index as u64,
    }
}

/// The index a handle of `kind` carries, if it is one of the task lent under `token`.
fn index_of(handle: ffi::Handle, token: u64, kind: Kind) -> Result<usize, StatusCode> {
    if handle.owner != token {
        return Err(StatusCode::StaleHandle);
    }
    if handle.value >> 56 != kind as u64 {
        return Err(StatusCode::WrongType);
    }
    usize::try_from(handle.value & ((1 << 56) - 1)).map_err(|_| StatusCode::InvalidArgument)
}

/// What `RegisterProvider` was handed: the descriptor's texts copied, its callbacks and user data.
#[derive(Clone, Debug)]
pub(crate) struct LtoDescriptor {
    pub(crate) id: String,
    target: ffi::TargetId,
    flags: u64,
    build_cache_key: ffi::LtoBuildCacheKeyFn,
    codegen: ffi::LtoCodegenFn,
    user_data: *mut c_void,
    destroy: ffi::DestroyUserDataFn,
}

/// Reads a descriptor a plugin handed to `RegisterProvider`: ABI_MISMATCH for one smaller than this host's,
/// INVALID_DESCRIPTOR for texts that are not views of UTF-8.
pub(crate) fn read_descriptor(descriptor: *const ffi::LtoProviderDescriptor) -> Result<LtoDescriptor, StatusCode> {
    let descriptor = read_struct(descriptor)?;
    let text = |view: ffi::StringView| {
        copy_view(view.data.cast(), view.length, TEXT_LIMIT)
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .ok_or(StatusCode::InvalidDescriptor)
    };
    Ok(LtoDescriptor {
        id: text(descriptor.provider_id)?,
        target: descriptor.target_id,
        flags: descriptor.flags,
        build_cache_key: descriptor.build_cache_key,
        codegen: descriptor.codegen,
        user_data: descriptor.user_data,
        destroy: descriptor.destroy_user_data,
    })
}

/// A C plugin's LTO code generation provider. It keeps the plugin's library loaded; once the plugin is
/// unloaded (`alive` false) it generates nothing and its user data is the plugin's to release.
pub(crate) struct CLtoProvider {
    descriptor: LtoDescriptor,
    target: String,
    /// The plugin, when the provider may call it.
    plugin: Option<Bound>,
}

/// The plugin a provider calls: whether it is still loaded, its library (kept loaded) and its name.
struct Bound {
    alive: Rc<Cell<bool>>,
    _library: Rc<PluginLibrary>,
    name: PluginName,
}

impl CLtoProvider {
    /// The provider as registration checks it: nothing is called and nothing is released.
    pub(crate) fn unbound(descriptor: LtoDescriptor) -> CLtoProvider {
        CLtoProvider::new(descriptor, None)
    }

    /// The provider of a loaded plugin: it may be called while the plugin is loaded, and releases its user
    /// data when dropped.
    pub(crate) fn bound(
        descriptor: LtoDescriptor,
        alive: Rc<Cell<bool>>,
        library: Rc<PluginLibrary>,
        name: PluginName,
    ) -> CLtoProvider {
        let plugin = Bound {
            alive,
            _library: library,
            name,
        };
        CLtoProvider::new(descriptor, Some(plugin))
    }

    fn new(descriptor: LtoDescriptor, plugin: Option<Bound>) -> CLtoProvider {
        let target = format!("{:#018x}:{:#018x}", descriptor.target.high, descriptor.target.low);
        CLtoProvider {
            descriptor,
            target,
            plugin,
        }
    }

    /// The plugin's name, while it is loaded.
    fn loaded(&self) -> Result<&PluginName, ProviderError> {
        match &self.plugin {
            Some(plugin) if plugin.alive.get() => Ok(&plugin.name),
            _ => Err(ProviderError::new(format!(
                "the plugin of LTO provider `{}` is not loaded",
                self.descriptor.id
            ))),
        }
    }

    /// A call of the provider's `what` (named if the call crashes the process).
    fn callee<'a>(name: &'a PluginName, what: &'a str) -> Callee<'a> {
        Callee {
            plugin: name,
            what,
            subject: "",
        }
    }
}

/// Lends `request` to C for one call of `call`, which gets the task's token, the task handle and the request
/// structure; returns what C returned, the token and the artifacts it created.
pub(crate) fn lend<R>(
    request: &LtoRequest,
    call: impl FnOnce(u64, ffi::TaskHandle, &ffi::LtoRequest) -> R,
) -> (R, u64, Vec<Created>) {
    let view: OnceCell<RequestView> = OnceCell::new();
    let mut created = Vec::new();
    let mut lent_token = 0;
    let result = {
        let mut body = |call: &mut dyn Any| serve(request, &view, &mut created, call);
        neverc_sys::scoped::lend(&mut body, |token| {
            lent_token = token;
            let view = view.get_or_init(|| RequestView::new(request, token));
            call(token, ffi::TaskHandle(handle(token, Kind::Task, 0)), &view.request)
        })
    };
    (result, lent_token, created)
}

impl Drop for CLtoProvider {
    fn drop(&mut self) {
        if let (Ok(name), Some(destroy)) = (self.loaded(), self.descriptor.destroy) {
            destroy.call(
                CLtoProvider::callee(name, "LTO provider's DestroyUserData"),
                (self.descriptor.user_data,),
            );
        }
    }
}

impl LtoProvider for CLtoProvider {
    fn id(&self) -> &str {
        &self.descriptor.id
    }

    fn target(&self) -> &str {
        &self.target
    }

    fn flags(&self) -> u64 {
        self.descriptor.flags
    }

    fn builds_cache_keys(&self) -> bool {
        self.descriptor.build_cache_key.is_some()
    }

    fn generates(&self) -> bool {
        self.descriptor.codegen.is_some()
    }

    fn build_cache_key(&self, request: &LtoRequest, buffer: &mut [u8]) -> Result<KeySize, ProviderError> {
        let name = self.loaded()?;
        let build = self
            .descriptor
            .build_cache_key
            .ok_or_else(|| ProviderError::new("it has no BuildCacheKey"))?;
        let key = ffi::MutableByteView {
            data: buffer.as_mut_ptr(),
            length: buffer.len() as u64,
        };
        let mut size = 0u64;
        let (status, _, _) = lend(request, |_, task, c_request| {
            build.call(
                CLtoProvider::callee(name, "LTO provider's BuildCacheKey"),
                (
                    self.descriptor.user_data,
                    task,
                    c_request as *const _,
                    key,
                    &mut size as *mut u64,
                ),
            )
        });
        if status.code != OK.code {
            return Err(ProviderError::new(format!(
                "its BuildCacheKey returned {}",
                describe(status)
            )));
        }
        match usize::try_from(size) {
            Ok(size) if size <= KEY_LIMIT => Ok(KeySize(size)),
            _ => Err(ProviderError::new(format!(
                "its BuildCacheKey asks for a {size}-byte key; the host allows {KEY_LIMIT}"
            ))),
        }
    }

    fn codegen(&self, request: &LtoRequest) -> Result<LtoCandidate, ProviderError> {
        let name = self.loaded()?;
        let codegen = self
            .descriptor
            .codegen
            .ok_or_else(|| ProviderError::new("it has no Codegen"))?;
        let mut candidate = ffi::LtoProductCandidate {
            header: header::<ffi::LtoProductCandidate>(),
            product: ffi::LtoProductHandle::default(),
            objects: NO_ELEMENTS,
            optimized_bitcode: NO_BYTES,
            thin_index: NO_BYTES,
            cache_key: view(""),
            product_id: ffi::InterfaceId::default(),
            producer_route_digest: [0; 32],
        };
        let (status, token, created) = lend(request, |_, task, c_request| {
            codegen.call(
                CLtoProvider::callee(name, "LTO provider's Codegen"),
                (
                    self.descriptor.user_data,
                    task,
                    c_request as *const _,
                    &mut candidate as *mut ffi::LtoProductCandidate,
                ),
            )
        });
        if status.code != OK.code {
            return Err(ProviderError::new(format!("its Codegen returned {}", describe(status))));
        }
        read_candidate(&candidate, request, token, created)
    }
}

/// An artifact a provider created: its bytes.
pub(crate) struct Created {
    bytes: Vec<u8>,
}

/// Turns what the provider filled into the runtime's candidate: every object names an artifact it created
/// in this call, a module of this request (or none), and bytes whose SHA-256 is the digest it gave (when it
/// gave one).
fn read_candidate(
    candidate: &ffi::LtoProductCandidate,
    request: &LtoRequest,
    token: u64,
    created: Vec<Created>,
) -> Result<LtoCandidate, ProviderError> {
    let objects: Vec<ffi::LtoObjectProduct> = read_elements(
        candidate.objects.data,
        candidate.objects.count,
        candidate.objects.element_stride,
        OBJECT_LIMIT,
    )
    .ok_or_else(|| {
        ProviderError::new(format!(
            "its candidate's Objects is not an array of at most {OBJECT_LIMIT} NevercLTOObjectProduct"
        ))
    })?;
    if objects.is_empty() {
        return Err(ProviderError::new("its candidate has no object"));
    }
    let mut created: Vec<Option<Created>> = created.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for (number, object) in objects.iter().enumerate() {
        let refuse = |what: &str| ProviderError::new(format!("object {number} of its candidate {what}"));
        let index = index_of(object.object_artifact.0, token, Kind::CreatedArtifact)
            .map_err(|_| refuse("names no artifact it created in this call"))?;
        let bytes = created
            .get_mut(index)
            .and_then(Option::take)
            .ok_or_else(|| refuse("names an artifact it did not create, or one another object names"))?
            .bytes;
        let source_module = if object.source_module.0 == ffi::Handle::default() {
            None
        } else {
            let module = index_of(object.source_module.0, token, Kind::Module)
                .ok()
                .filter(|module| *module < request.modules.len())
                .ok_or_else(|| refuse("names a module that is none of the request's"))?;
            Some(module)
        };
        let digest: [u8; 32] = Sha256::digest(&bytes).into();
        if object.content_digest != [0; 32] && object.content_digest != digest {
            return Err(refuse("has a ContentDigest that is not the SHA-256 of its bytes"));
        }
        let name = copy_view(object.logical_name.data.cast(), object.logical_name.length, TEXT_LIMIT)
            .ok_or_else(|| refuse("has a LogicalName that is not a view of at most 4096 bytes"))?;
        let logical_name = match String::from_utf8_lossy(&name).into_owned() {
            name if name.is_empty() => format!("<lto object {number}>"),
            name => name,
        };
        out.push(LtoObject {
            source_module,
            logical_name,
            bytes,
        });
    }
    let bytes = |view: ffi::ByteView, what: &str| -> Result<Option<Vec<u8>>, ProviderError> {
        let bytes = copy_view(view.data, view.length, BYTES_LIMIT)
            .ok_or_else(|| ProviderError::new(format!("its candidate's {what} is not a readable view")))?;
        Ok((!bytes.is_empty()).then_some(bytes))
    };
    let cache_key = copy_view(candidate.cache_key.data.cast(), candidate.cache_key.length, KEY_LIMIT)
        .ok_or_else(|| ProviderError::new("its candidate's CacheKey is not a readable view"))?;
    Ok(LtoCandidate {
        objects: out,
        optimized_bitcode: bytes(candidate.optimized_bitcode, "OptimizedBitcode")?,
        thin_index: bytes(candidate.thin_index, "ThinIndex")?,
        cache_key: (!cache_key.is_empty()).then_some(cache_key),
    })
}

/// The request as C sees it, with the storage its pointers point into.
struct RequestView {
    _options: Box<ffi::LtoOptions>,
    _modules: Vec<ffi::LtoInputModuleHandle>,
    _resolutions: Vec<ffi::LtoResolutionHandle>,
    request: ffi::LtoRequest,
}

impl RequestView {
    fn new(request: &LtoRequest, token: u64) -> RequestView {
        let options = &request.options;
        let options = Box::new(ffi::LtoOptions {
            header: header::<ffi::LtoOptions>(),
            mode: options.mode.raw(),
            cache_scope: options.cache_scope.raw(),
            flags: options.flags.bits(),
            optimization_level: options.optimization_level,
            code_gen_optimization_level: options.codegen_optimization_level,
            thread_budget: options.thread_budget,
            thin_backend_partitions: options.thin_backend_partitions,
            cpu: view(&options.cpu),
            features: view(&options.features),
            cache_namespace: view(&options.cache_namespace),
            extensions: NO_ELEMENTS,
        });
        let modules: Vec<ffi::LtoInputModuleHandle> = (0..request.modules.len())
            .map(|index| ffi::LtoInputModuleHandle(handle(token, Kind::Module, index)))
            .collect();
        let resolutions: Vec<ffi::LtoResolutionHandle> = (0..request.resolutions.len())
            .map(|index| ffi::LtoResolutionHandle(handle(token, Kind::Resolution, index)))
            .collect();
        let array = |data: *const c_void, count: usize, stride: usize| ffi::StructArrayView {
            data,
            count: count as u64,
            element_stride: stride as u64,
        };
        let c_request = ffi::LtoRequest {
            header: header::<ffi::LtoRequest>(),
            request: ffi::LtoRequestHandle(handle(token, Kind::Request, 0)),
            task: ffi::TaskHandle(handle(token, Kind::Task, 0)),
            options: &*options,
            modules: array(
                modules.as_ptr().cast(),
                modules.len(),
                std::mem::size_of::<ffi::LtoInputModuleHandle>(),
            ),
            resolutions: array(
                resolutions.as_ptr().cast(),
                resolutions.len(),
                std::mem::size_of::<ffi::LtoResolutionHandle>(),
            ),
            resolution_digest: request.resolution_digest,
            request_digest: request.request_digest,
            link_request: ffi::LinkRequestHandle::default(),
            link_graph: ffi::LinkGraphHandle::default(),
            target: ffi::TargetId::default(),
            output_format: ffi::ObjectFormatId::default(),
        };
        RequestView {
            _options: options,
            _modules: modules,
            _resolutions: resolutions,
            request: c_request,
        }
    }
}

/// A call from C into the lent request, answered in place.
enum LtoCall {
    Request(Option<ffi::LtoRequest>),
    ModuleInfo(usize, Option<Result<ffi::LtoInputModuleInfo, StatusCode>>),
    ResolutionInfo(usize, Option<Result<ffi::LtoSymbolResolution, StatusCode>>),
    ModulePage {
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    ResolutionPage {
        cursor: u64,
        page: ffi::LinkEntityPage,
        answer: Option<Result<ffi::LinkEntityPage, StatusCode>>,
    },
    Read {
        artifact: ffi::Handle,
        offset: u64,
        buffer: ffi::MutableByteView,
        answer: Option<Result<u64, StatusCode>>,
    },
    Create {
        bytes: Vec<u8>,
        answer: Option<ffi::Handle>,
    },
}

fn serve(request: &LtoRequest, view: &OnceCell<RequestView>, created: &mut Vec<Created>, call: &mut dyn Any) {
    let Some(call) = call.downcast_mut::<LtoCall>() else {
        return;
    };
    let Some(lent) = view.get() else {
        return;
    };
    let token = lent.request.task.0.owner;
    match call {
        LtoCall::Request(answer) => *answer = Some(lent.request),
        LtoCall::ModuleInfo(index, answer) => *answer = Some(module_info(request, token, *index)),
        LtoCall::ResolutionInfo(index, answer) => *answer = Some(resolution_info(request, token, *index)),
        LtoCall::ModulePage { cursor, page, answer } => {
            *answer = Some(fill(*page, *cursor, request.modules.len(), |index| {
                module_info(request, token, index)
            }))
        }
        LtoCall::ResolutionPage { cursor, page, answer } => {
            *answer = Some(fill(*page, *cursor, request.resolutions.len(), |index| {
                resolution_info(request, token, index)
            }))
        }
        LtoCall::Read {
            artifact,
            offset,
            buffer,
            answer,
        } => {
            let bytes = match (
                index_of(*artifact, token, Kind::InputArtifact),
                index_of(*artifact, token, Kind::CreatedArtifact),
            ) {
                (Ok(file), _) => request.files.get(file).map(|file| file.bytes.as_slice()),
                (_, Ok(index)) => created.get(index).map(|created| created.bytes.as_slice()),
                (Err(code), _) => {
                    *answer = Some(Err(code));
                    return;
                }
            };
            *answer = Some(match bytes {
                None => Err(StatusCode::InvalidArgument),
                Some(bytes) => match usize::try_from(*offset).ok().and_then(|offset| bytes.get(offset..)) {
                    None => Err(StatusCode::InvalidArgument),
                    Some(rest) => fill_buffer(buffer.data, buffer.length, rest)
                        .map(|_| bytes.len() as u64)
                        .ok_or(StatusCode::InvalidArgument),
                },
            });
        }
        LtoCall::Create { bytes, answer } => {
            created.push(Created {
                bytes: std::mem::take(bytes),
            });
            *answer = Some(handle(token, Kind::CreatedArtifact, created.len() - 1));
        }
    }
}

fn module_info(request: &LtoRequest, token: u64, index: usize) -> Result<ffi::LtoInputModuleInfo, StatusCode> {
    let module = request.modules.get(index).ok_or(StatusCode::InvalidArgument)?;
    let file = request.files.get(module.file).ok_or(StatusCode::InvalidState)?;
    Ok(ffi::LtoInputModuleInfo {
        header: header::<ffi::LtoInputModuleInfo>(),
        module: ffi::LtoInputModuleHandle(handle(token, Kind::Module, index)),
        bitcode_artifact: ffi::ArtifactHandle(handle(token, Kind::InputArtifact, module.file)),
        logical_uri: view(&file.logical_name),
        module_identifier: view(&module.identifier),
        content_digest: file.content_digest,
        symbol_count: module.symbols.len() as u64,
        link_input: ffi::LinkInputHandle::default(),
        data_layout: view(""),
        extensions: NO_ELEMENTS,
    })
}

fn resolution_info(request: &LtoRequest, token: u64, index: usize) -> Result<ffi::LtoSymbolResolution, StatusCode> {
    let resolution = request.resolutions.get(index).ok_or(StatusCode::InvalidArgument)?;
    let module = resolution.module.index();
    let name = request
        .modules
        .get(module)
        .and_then(|module| module.symbols.get(resolution.symbol as usize))
        .ok_or(StatusCode::InvalidState)?;
    Ok(ffi::LtoSymbolResolution {
        header: header::<ffi::LtoSymbolResolution>(),
        resolution: ffi::LtoResolutionHandle(handle(token, Kind::Resolution, index)),
        module: ffi::LtoInputModuleHandle(handle(token, Kind::Module, module)),
        symbol_name: view(name),
        flags: resolution.flags.bits(),
        link_symbol: ffi::LinkSymbolHandle::default(),
        comdat_name: view(""),
        version: view(""),
        extensions: NO_ELEMENTS,
    })
}

/// Writes elements from `cursor` into a caller's page, as many as fit, `ElementStride` apart: a stride
/// smaller than the element or a null `Data` with a capacity is INVALID_ARGUMENT.
fn fill<T: Copy>(
    mut page: ffi::LinkEntityPage,
    cursor: u64,
    total: usize,
    element: impl Fn(usize) -> Result<T, StatusCode>,
) -> Result<ffi::LinkEntityPage, StatusCode> {
    let total = total as u64;
    if page.element_stride < std::mem::size_of::<T>() as u64 || (page.data.is_null() && page.element_capacity > 0) {
        return Err(StatusCode::InvalidArgument);
    }
    let start = cursor.min(total);
    let fit = page.element_capacity.min(total - start);
    for slot in 0..fit {
        let value = element((start + slot) as usize)?;
        if !write_element(page.data, page.element_stride, slot, value) {
            return Err(StatusCode::InvalidArgument);
        }
    }
    page.out_count = fit;
    page.next_cursor = start + fit;
    page.has_more = u32::from(start + fit < total);
    Ok(page)
}

/// Sends `call` to the request lent under the task's token.
fn ask(task: ffi::TaskHandle, call: &mut LtoCall) -> Result<u64, StatusCode> {
    let token = task.0.owner;
    if task.0.value != handle(token, Kind::Task, 0).value {
        return Err(StatusCode::WrongType);
    }
    match neverc_sys::scoped::call(token, call) {
        Ok(()) => Ok(token),
        Err(CallError::Unknown) => Err(StatusCode::StaleHandle),
        Err(CallError::Busy) => Err(StatusCode::ReentrancyDenied),
    }
}

/// Runs a slot: the status of its result.
fn slot(body: impl FnOnce() -> Result<(), StatusCode>) -> ffi::Status {
    guarded(|| c_answer(body()))
}

pub(crate) extern "C" fn get_request(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    request: ffi::LtoRequestHandle,
    out_request: *mut ffi::LtoRequest,
) -> ffi::Status {
    slot(|| {
        let mut call = LtoCall::Request(None);
        let token = ask(task, &mut call)?;
        index_of(request.0, token, Kind::Request)?;
        let LtoCall::Request(Some(answer)) = call else {
            return Err(StatusCode::InvalidState);
        };
        write_struct(out_request, answer)
    })
}

/// Reads one element a handle of `kind` names: `make` asks for it, `take` finds the answer in the call.
fn info_slot<T: ffi::Versioned>(
    task: ffi::TaskHandle,
    (entity, kind): (ffi::Handle, Kind),
    out_info: *mut T,
    make: fn(usize) -> LtoCall,
    take: fn(LtoCall) -> Option<Result<T, StatusCode>>,
) -> ffi::Status {
    slot(|| {
        let mut call = make(index_of(entity, task.0.owner, kind)?);
        ask(task, &mut call)?;
        write_struct(out_info, take(call).ok_or(StatusCode::InvalidState)??)
    })
}

pub(crate) extern "C" fn get_module_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    module: ffi::LtoInputModuleHandle,
    out_info: *mut ffi::LtoInputModuleInfo,
) -> ffi::Status {
    info_slot(
        task,
        (module.0, Kind::Module),
        out_info,
        |index| LtoCall::ModuleInfo(index, None),
        |call| match call {
            LtoCall::ModuleInfo(_, answer) => answer,
            _ => None,
        },
    )
}

pub(crate) extern "C" fn get_resolution_info(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    resolution: ffi::LtoResolutionHandle,
    out_info: *mut ffi::LtoSymbolResolution,
) -> ffi::Status {
    info_slot(
        task,
        (resolution.0, Kind::Resolution),
        out_info,
        |index| LtoCall::ResolutionInfo(index, None),
        |call| match call {
            LtoCall::ResolutionInfo(_, answer) => answer,
            _ => None,
        },
    )
}

/// Reads a caller's page, runs `call` on it and writes the filled page back.
fn page_slot(
    task: ffi::TaskHandle,
    request: ffi::LtoRequestHandle,
    page: *mut ffi::LinkEntityPage,
    make: impl FnOnce(ffi::LinkEntityPage) -> LtoCall,
) -> ffi::Status {
    slot(|| {
        index_of(request.0, task.0.owner, Kind::Request)?;
        let caller = read_struct(page.cast_const())?;
        let mut call = make(caller);
        ask(task, &mut call)?;
        let (LtoCall::ModulePage {
            answer: Some(answer), ..
        }
        | LtoCall::ResolutionPage {
            answer: Some(answer), ..
        }) = call
        else {
            return Err(StatusCode::InvalidState);
        };
        write_struct(page, answer?)
    })
}

pub(crate) extern "C" fn get_module_page(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    request: ffi::LtoRequestHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    page_slot(task, request, page, |page| LtoCall::ModulePage {
        cursor,
        page,
        answer: None,
    })
}

pub(crate) extern "C" fn get_resolution_page(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    request: ffi::LtoRequestHandle,
    cursor: u64,
    page: *mut ffi::LinkEntityPage,
) -> ffi::Status {
    page_slot(task, request, page, |page| LtoCall::ResolutionPage {
        cursor,
        page,
        answer: None,
    })
}

/// `NevercArtifactAPI.ReadArtifact`: a module's bitcode, or an artifact the provider created in this call.
pub(crate) extern "C" fn read_artifact(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    artifact: ffi::ArtifactHandle,
    offset: u64,
    buffer: ffi::MutableByteView,
    out_size: *mut u64,
) -> ffi::Status {
    slot(|| {
        let mut call = LtoCall::Read {
            artifact: artifact.0,
            offset,
            buffer,
            answer: None,
        };
        ask(task, &mut call)?;
        let LtoCall::Read {
            answer: Some(answer), ..
        } = call
        else {
            return Err(StatusCode::InvalidState);
        };
        write_plain(out_size, answer?)
    })
}

/// `NevercArtifactAPI.CreateArtifact`: copies the bytes into an artifact of the call.
pub(crate) extern "C" fn create_artifact(
    _context: *mut c_void,
    task: ffi::TaskHandle,
    _logical_name: ffi::StringView,
    bytes: ffi::ByteView,
    out_artifact: *mut ffi::ArtifactHandle,
) -> ffi::Status {
    slot(|| {
        let bytes = copy_view(bytes.data, bytes.length, BYTES_LIMIT).ok_or(StatusCode::InvalidArgument)?;
        let mut call = LtoCall::Create { bytes, answer: None };
        ask(task, &mut call)?;
        let LtoCall::Create {
            answer: Some(artifact), ..
        } = call
        else {
            return Err(StatusCode::InvalidState);
        };
        write_plain(out_artifact, ffi::ArtifactHandle(artifact))
    })
}

/// Whether `descriptor` may register next to the providers this registration registered before (the
/// runtime's rules: `check_descriptor`), as the status C gets.
pub(crate) fn check(descriptor: &LtoDescriptor, registered: &[&str]) -> Result<(), neverc_tables::status::Status> {
    let provider = CLtoProvider::unbound(descriptor.clone());
    neverc_link::lto::provider::check_descriptor(&provider, registered).map(|_: ProviderFlags| ())
}
