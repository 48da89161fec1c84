//! Loading a plugin: its library, `neverc_plugin_entry` with the bootstrap, and the descriptor it fills.

use std::cell::Cell;
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use neverc_sys::crash::{Callee, PluginName};
use neverc_sys::plugin::{CFunction, PluginLibrary, copy_view};
use neverc_tables::plugin_abi::ffi;
use neverc_tables::plugin_abi::host::{ARTIFACT, HOST};
use neverc_tables::plugin_abi::link::{LINK, LINK_PHASE, LINK_REGISTRAR};
use neverc_tables::plugin_abi::lto::{LTO, LTO_REGISTRAR};
use neverc_tables::plugin_abi::target::CALLING_CONVENTION;
use neverc_tables::status::StatusCode;

use crate::context::{self, Entry};
use crate::memory::write_plain;
use crate::status::{OK, c_answer, c_status, code_of, describe, guarded};

/// The symbol every plugin exports.
pub const ENTRY_SYMBOL: &str = "neverc_plugin_entry";

/// The longest plugin id, version, argument name or value the host reads.
const TEXT_LIMIT: usize = 4096;

/// The largest descriptor a plugin may ask the host to make room for.
const DESCRIPTOR_LIMIT: usize = 64 * 1024;

type EntryFn = unsafe extern "C" fn(*const ffi::PluginBootstrap, *mut ffi::PluginDescriptor) -> ffi::Status;

/// The registration callback a descriptor names.
pub(crate) type RegisterFn =
    unsafe extern "C" fn(*mut c_void, *const ffi::PhaseRegistrarApi, *mut c_void) -> ffi::Status;

type DestroyFn = unsafe extern "C" fn(*mut c_void);

/// One `--plugin-arg ID:NAME[=VALUE]`: every plugin is handed all of them and reads those with its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginArgument {
    /// The id of the plugin it is for.
    pub plugin: String,
    pub name: String,
    pub value: Option<String>,
}

/// Why a plugin could not be loaded, with NeverC's status for it.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("cannot load plugin `{path}`: {message}")]
    Library { path: PathBuf, message: String },
    #[error("`{path}` is not a NeverC plugin: it exports no `{ENTRY_SYMBOL}` ({message})")]
    NoEntry { path: PathBuf, message: String },
    #[error("plugin `{path}`: {ENTRY_SYMBOL} failed with {status}")]
    Entry { path: PathBuf, status: String },
    #[error("plugin `{path}`: {message}")]
    Descriptor {
        path: PathBuf,
        code: StatusCode,
        message: String,
    },
    #[error(
        "plugin `{plugin}`: its registration failed with {status}{}",
        refusal.as_ref().map(|refusal| format!(" after the host refused a request: {refusal}")).unwrap_or_default()
    )]
    Register {
        plugin: String,
        status: String,
        /// The last request the host refused during the registration, in words.
        refusal: Option<String>,
    },
}

impl PluginError {
    /// NeverC's status code for the failure.
    pub fn code(&self) -> StatusCode {
        match self {
            PluginError::Library { .. } | PluginError::NoEntry { .. } => StatusCode::InvalidArgument,
            PluginError::Entry { .. } | PluginError::Register { .. } => StatusCode::PluginFailure,
            PluginError::Descriptor { code, .. } => *code,
        }
    }
}

/// What a loaded plugin's host table knows: the plugin's reports.
pub(crate) struct HostState {
    pub(crate) reports: Vec<(u32, String)>,
    /// The address of the host table, which `QueryInterface` hands out for HOST.
    pub(crate) table: usize,
}

/// A loaded plugin: its library, who it says it is, and how it registers. Dropping it releases the plugin's
/// user data (its `DestroyUserData`) and then unloads the library.
pub struct LoadedPlugin {
    pub id: String,
    pub version: String,
    pub path: PathBuf,
    /// How a crash report names it.
    pub(crate) name: PluginName,
    pub(crate) register: RegisterFn,
    pub(crate) user_data: *mut c_void,
    destroy: Option<DestroyFn>,
    /// The host table handed out in the bootstrap; the plugin may keep its address while it is loaded.
    _host: Box<ffi::HostApi>,
    host_context: *mut c_void,
    /// False once the plugin is being unloaded: providers it registered that outlive it call nothing more.
    alive: Rc<Cell<bool>>,
    // Declared last: dropped after the user data is released (providers keep the library loaded too).
    library: Rc<PluginLibrary>,
}

impl LoadedPlugin {
    /// What the plugin reported through the host table, with the severity it gave.
    pub fn reports(&self) -> Vec<(u32, String)> {
        context::with(self.host_context, |entry| match entry {
            Entry::Host(state) => state.reports.clone(),
            Entry::Registration(_) => Vec::new(),
        })
        .unwrap_or_default()
    }
}

impl LoadedPlugin {
    /// Whether the plugin is still loaded, for what it registered that may outlive it.
    pub(crate) fn alive(&self) -> Rc<Cell<bool>> {
        Rc::clone(&self.alive)
    }

    /// The plugin's library, kept loaded by what it registered.
    pub(crate) fn library(&self) -> Rc<PluginLibrary> {
        Rc::clone(&self.library)
    }

    /// A call into the plugin's code: its `what` about `subject` (named if the call crashes the process).
    pub(crate) fn callee<'a>(&'a self, what: &'a str, subject: &'a str) -> Callee<'a> {
        Callee {
            plugin: &self.name,
            what,
            subject,
        }
    }
}

impl Drop for LoadedPlugin {
    fn drop(&mut self) {
        self.alive.set(false);
        if let Some(destroy) = self.destroy {
            destroy.call(self.callee("DestroyUserData", ""), (self.user_data,));
        }
        context::remove(self.host_context);
    }
}

thread_local! {
    /// The Link API table this thread hands out: the slots served so far, CAPABILITY_UNAVAILABLE for the rest.
    static LINK_API: Box<ffi::LinkApi> = Box::new({
        use crate::frame::*;
        let mut table = ffi::LinkApi::unavailable(self::header::<ffi::LinkApi>(LINK.major, LINK.minor), std::ptr::null_mut());
        table.get_graph_info = Some(get_graph_info);
        table.get_input_page = Some(get_input_page);
        table.get_archive_page = Some(get_archive_page);
        table.get_archive_member_page = Some(get_archive_member_page);
        table.get_shared_library_page = Some(get_shared_library_page);
        table.get_bitcode_module_page = Some(get_bitcode_module_page);
        table.get_section_page = Some(get_section_page);
        table.get_atom_page = Some(get_atom_page);
        table.get_symbol_page = Some(get_symbol_page);
        table.get_edge_page = Some(get_edge_page);
        table.get_comdat_page = Some(get_comdat_page);
        table.get_import_page = Some(get_import_page);
        table.get_export_page = Some(get_export_page);
        table.get_unwind_page = Some(get_unwind_page);
        table.get_synthetic_page = Some(get_synthetic_page);
        table.get_constraint_page = Some(get_constraint_page);
        table.get_input_info = Some(get_input_info);
        table.get_archive_info = Some(get_archive_info);
        table.get_archive_member_info = Some(get_archive_member_info);
        table.get_shared_library_info = Some(get_shared_library_info);
        table.get_bitcode_module_info = Some(get_bitcode_module_info);
        table.get_section_info = Some(get_section_info);
        table.get_atom_info = Some(get_atom_info);
        table.get_symbol_info = Some(get_symbol_info);
        table.get_edge_info = Some(get_edge_info);
        table.get_comdat_info = Some(get_comdat_info);
        table.get_import_info = Some(get_import_info);
        table.get_export_info = Some(get_export_info);
        table.get_unwind_info = Some(get_unwind_info);
        table.get_synthetic_info = Some(get_synthetic_info);
        table.get_constraint_info = Some(get_constraint_info);
        table.get_proof_info = Some(get_proof_info);
        table.get_binary_image_info = Some(get_binary_image_info);
        table.get_binary_segment_page = Some(get_binary_segment_page);
        table.get_binary_section_page = Some(get_binary_section_page);
        table.begin_mutation = Some(begin_mutation);
        table.commit_mutation = Some(commit_mutation);
        table.abandon_mutation = Some(abandon_mutation);
        table.rebind_symbol = Some(rebind_symbol);
        table.set_symbol_root = Some(set_symbol_root);
        table.set_atom_live = Some(set_atom_live);
        table.set_fold_leader = Some(set_fold_leader);
        table.replace_atom_content = Some(replace_atom_content);
        table.create_constraint = Some(create_constraint);
        table.set_symbol_resolution = Some(set_symbol_resolution);
        table.retarget_edge = Some(retarget_edge);
        table.create_synthetic = Some(create_synthetic);
        table.replace_synthetic = Some(replace_synthetic);
        table.erase_synthetic = Some(erase_synthetic);
        table.replace_constraint = Some(replace_constraint);
        table.erase_constraint = Some(erase_constraint);
        table
    });
    /// The Link registrar table this thread hands out (during a registration: its context is the
    /// registration's).
    static LINK_REGISTRAR_API: Box<ffi::LinkRegistrarApi> = Box::new({
        let mut table = ffi::LinkRegistrarApi::unavailable(
            header::<ffi::LinkRegistrarApi>(LINK_REGISTRAR.major, LINK_REGISTRAR.minor),
            std::ptr::null_mut(),
        );
        table.register_binary_image_verifier = Some(crate::registrar::register_binary_image_verifier);
        table
    });
    /// The LTO API table this thread hands out (to LTO providers, whose Task handles lead to the request).
    static LTO_API: Box<ffi::LtoApi> = Box::new(ffi::LtoApi {
        get_request: Some(crate::lto::get_request),
        get_module_page: Some(crate::lto::get_module_page),
        get_resolution_page: Some(crate::lto::get_resolution_page),
        get_module_info: Some(crate::lto::get_module_info),
        get_resolution_info: Some(crate::lto::get_resolution_info),
        ..ffi::LtoApi::unavailable(header::<ffi::LtoApi>(LTO.major, LTO.minor), std::ptr::null_mut())
    });
    /// The LTO registrar table this thread hands out (during a registration).
    static LTO_REGISTRAR_API: Box<ffi::LtoRegistrarApi> = Box::new(ffi::LtoRegistrarApi {
        register_provider: Some(crate::registrar::register_lto_provider),
        ..ffi::LtoRegistrarApi::unavailable(
            header::<ffi::LtoRegistrarApi>(LTO_REGISTRAR.major, LTO_REGISTRAR.minor),
            std::ptr::null_mut(),
        )
    });
    /// The artifact API table this thread hands out.
    static ARTIFACT_API: Box<ffi::ArtifactApi> = Box::new(ffi::ArtifactApi {
        read_artifact: Some(crate::lto::read_artifact),
        create_artifact: Some(crate::lto::create_artifact),
        ..ffi::ArtifactApi::unavailable(header::<ffi::ArtifactApi>(ARTIFACT.major, ARTIFACT.minor), std::ptr::null_mut())
    });
    /// The Link phase API table this thread hands out.
    static LINK_PHASE_API: Box<ffi::LinkPhaseApi> = Box::new({
        let mut table =
            ffi::LinkPhaseApi::unavailable(header::<ffi::LinkPhaseApi>(LINK_PHASE.major, LINK_PHASE.minor), std::ptr::null_mut());
        table.get_graph = Some(crate::frame::get_graph);
        table.get_image = Some(crate::frame::get_image);
        table
    });
    /// The MutableBinaryAPI this thread hands out in `BinaryImageInfo.Binary` (of a phase frame's image).
    static MUTABLE_BINARY_API: Box<ffi::MutableBinaryApi> = Box::new({
        use crate::frame::image::*;
        let mut table = ffi::MutableBinaryApi::unavailable(self::header::<ffi::MutableBinaryApi>(1, 0), std::ptr::null_mut());
        table.reserve = Some(binary_reserve);
        table.write = Some(binary_write);
        table.write_at = Some(binary_write_at);
        table.tell = Some(binary_tell);
        table.read_at = Some(binary_read_at);
        table.insert = Some(binary_insert);
        table.append = Some(binary_append);
        table.resize = Some(binary_resize);
        table
    });
}

/// Runs `f` on this thread's Link API, Link phase API and MutableBinaryAPI tables (the fuzzing driver calls
/// their slots).
#[cfg(feature = "fuzzing")]
pub(crate) fn with_link_tables<R>(f: impl FnOnce(&ffi::LinkApi, &ffi::LinkPhaseApi, &ffi::MutableBinaryApi) -> R) -> R {
    LINK_API.with(|link| LINK_PHASE_API.with(|phase| MUTABLE_BINARY_API.with(|binary| f(link, phase, binary))))
}

/// Runs `f` on this thread's LTO API and artifact API tables (the fuzzing driver calls their slots).
#[cfg(feature = "fuzzing")]
pub(crate) fn with_lto_tables<R>(f: impl FnOnce(&ffi::LtoApi, &ffi::ArtifactApi) -> R) -> R {
    LTO_API.with(|lto| ARTIFACT_API.with(|artifact| f(lto, artifact)))
}

/// The address of this thread's MutableBinaryAPI table.
pub(crate) fn mutable_binary_api_address() -> usize {
    MUTABLE_BINARY_API.with(|table| &**table as *const ffi::MutableBinaryApi as usize)
}

/// The address of this thread's Link API table.
pub(crate) fn link_api_address() -> usize {
    LINK_API.with(|table| &**table as *const ffi::LinkApi as usize)
}

/// The interfaces `QueryInterface` serves besides HOST: their records and table addresses.
fn served(id: ffi::InterfaceId) -> Option<(&'static neverc_tables::InterfaceRecord, usize)> {
    let matches = |record: &neverc_tables::InterfaceRecord| (record.id.high, record.id.low) == (id.high, id.low);
    if matches(LINK) {
        return Some((LINK, link_api_address()));
    }
    if matches(CALLING_CONVENTION) {
        return Some((CALLING_CONVENTION, crate::calling_convention::api_address()));
    }
    if matches(LINK_REGISTRAR) {
        return Some((
            LINK_REGISTRAR,
            LINK_REGISTRAR_API.with(|table| &**table as *const ffi::LinkRegistrarApi as usize),
        ));
    }
    if matches(LTO) {
        return Some((LTO, LTO_API.with(|table| &**table as *const ffi::LtoApi as usize)));
    }
    if matches(LTO_REGISTRAR) {
        return Some((
            LTO_REGISTRAR,
            LTO_REGISTRAR_API.with(|table| &**table as *const ffi::LtoRegistrarApi as usize),
        ));
    }
    if matches(ARTIFACT) {
        return Some((
            ARTIFACT,
            ARTIFACT_API.with(|table| &**table as *const ffi::ArtifactApi as usize),
        ));
    }
    matches(LINK_PHASE).then(|| {
        (
            LINK_PHASE,
            LINK_PHASE_API.with(|table| &**table as *const ffi::LinkPhaseApi as usize),
        )
    })
}

/// `NevercHostAPI.QueryInterface`: this host serves its own table and the LINK, LINK_PHASE, LINK_REGISTRAR,
/// LTO, LTO_REGISTRAR, ARTIFACT and CALLING_CONVENTION tables; the out-parameter is null when it answers
/// with a failure.
extern "C" fn query_interface(
    context: *mut c_void,
    id: ffi::InterfaceId,
    major: u16,
    minimum_minor: u16,
    out_table: *mut *mut c_void,
) -> ffi::Status {
    let status = guarded(|| {
        let host_table = context::with(context, |entry| match entry {
            Entry::Host(state) => Some(state.table),
            Entry::Registration(_) => None,
        })
        .flatten();
        let Some(host_table) = host_table else {
            return c_status(StatusCode::InvalidArgument);
        };
        let (record, table) = if (id.high, id.low) == (HOST.id.high, HOST.id.low) {
            (HOST, host_table)
        } else {
            match served(id) {
                Some(served) => served,
                None => return c_status(StatusCode::MissingInterface),
            }
        };
        if major != record.major || minimum_minor > record.minor {
            return c_status(StatusCode::VersionMismatch);
        }
        c_answer(write_plain(out_table, table as *mut c_void))
    });
    if status.code != OK.code {
        let _ = write_plain(out_table, std::ptr::null_mut());
    }
    status
}

/// `NevercHostAPI.Report`: keeps the plugin's diagnostic for the host to show.
extern "C" fn report(context: *mut c_void, severity: u32, message: ffi::StringView) -> ffi::Status {
    let Some(text) = copy_view(message.data.cast(), message.length, TEXT_LIMIT) else {
        return c_status(StatusCode::InvalidArgument);
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    context::with(context, |entry| match entry {
        Entry::Host(state) => {
            state.reports.push((severity, text));
            OK
        }
        Entry::Registration(_) => c_status(StatusCode::InvalidArgument),
    })
    .unwrap_or_else(|| c_status(StatusCode::InvalidArgument))
}

fn header<T>(major: u16, minor: u16) -> ffi::AbiTableHeader {
    ffi::AbiTableHeader {
        struct_size: u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX),
        major,
        minor,
        flags: 0,
    }
}

fn view(text: &str) -> ffi::StringView {
    ffi::StringView {
        data: text.as_ptr().cast(),
        length: text.len() as u64,
    }
}

/// A buffer for the descriptor: at least a `PluginDescriptor`, aligned for it, zeroed.
struct DescriptorBuffer {
    words: Vec<u64>,
}

impl DescriptorBuffer {
    fn new(bytes: usize) -> DescriptorBuffer {
        let bytes = bytes.max(std::mem::size_of::<ffi::PluginDescriptor>());
        let mut buffer = DescriptorBuffer {
            words: vec![0; bytes.div_ceil(8)],
        };
        let header = header::<ffi::PluginDescriptor>(1, 0);
        let capacity = u32::try_from(buffer.words.len() * 8).unwrap_or(u32::MAX);
        // The buffer is the host's own, at least a descriptor large: the write cannot fail.
        let _ = write_plain(
            buffer.pointer().cast::<ffi::AbiTableHeader>(),
            ffi::AbiTableHeader {
                struct_size: capacity,
                ..header
            },
        );
        buffer
    }

    fn pointer(&mut self) -> *mut ffi::PluginDescriptor {
        self.words.as_mut_ptr().cast()
    }

    fn read(&mut self) -> Option<ffi::PluginDescriptor> {
        neverc_sys::plugin::read_in(self.pointer().cast_const())
    }
}

/// Loads the plugin at `path`: opens the library, calls `neverc_plugin_entry` with the bootstrap (the host
/// table and `arguments`) and checks the descriptor it fills. A plugin whose descriptor does not fit answers
/// `RESOURCE_EXHAUSTED` with the size it needs, and is asked again with a buffer that large (once).
pub fn load(path: &Path, arguments: &[PluginArgument]) -> Result<LoadedPlugin, PluginError> {
    let library = PluginLibrary::open(path.as_os_str()).map_err(|error| PluginError::Library {
        path: path.to_path_buf(),
        message: error.message,
    })?;
    let entry: EntryFn = library.function(ENTRY_SYMBOL).map_err(|error| PluginError::NoEntry {
        path: path.to_path_buf(),
        message: error.message,
    })?;
    let failed = |code: StatusCode, message: String| PluginError::Descriptor {
        path: path.to_path_buf(),
        code,
        message,
    };
    let host_record = HOST;
    let host_context = context::insert(Entry::Host(HostState {
        reports: Vec::new(),
        table: 0,
    }));
    let host = Box::new(ffi::HostApi {
        header: header::<ffi::HostApi>(host_record.major, host_record.minor),
        context: host_context,
        query_interface: Some(query_interface),
        report: Some(report),
    });
    let address = &*host as *const ffi::HostApi as usize;
    context::with(host_context, |entry| {
        if let Entry::Host(state) = entry {
            state.table = address;
        }
    });
    let values: Vec<String> = arguments
        .iter()
        .map(|argument| argument.value.clone().unwrap_or_default())
        .collect();
    let c_arguments: Vec<ffi::PluginArgument> = arguments
        .iter()
        .zip(&values)
        .map(|(argument, value)| ffi::PluginArgument {
            header: header::<ffi::PluginArgument>(host_record.major, host_record.minor),
            plugin_id: view(&argument.plugin),
            name: view(&argument.name),
            value: view(value),
            has_value: u32::from(argument.value.is_some()),
            reserved: 0,
        })
        .collect();
    let bootstrap = ffi::PluginBootstrap {
        header: header::<ffi::PluginBootstrap>(host_record.major, host_record.minor),
        host: &*host,
        arguments: ffi::StructArrayView {
            data: c_arguments.as_ptr().cast(),
            count: c_arguments.len() as u64,
            element_stride: std::mem::size_of::<ffi::PluginArgument>() as u64,
        },
    };
    let release = |error: PluginError| {
        context::remove(host_context);
        error
    };
    // The plugin has not said its id yet: its entry point is named by the library's path.
    let callee = Callee {
        plugin: library.name(),
        what: ENTRY_SYMBOL,
        subject: "",
    };
    let mut buffer = DescriptorBuffer::new(0);
    let mut status = entry.call(callee, (&bootstrap, buffer.pointer()));
    let asked = buffer
        .read()
        .map_or(0, |descriptor| descriptor.header.struct_size as usize);
    if code_of(status) == Some(StatusCode::ResourceExhausted) && asked > buffer.words.len() * 8 {
        if asked > DESCRIPTOR_LIMIT {
            return Err(release(failed(
                StatusCode::ResourceExhausted,
                format!("its descriptor asks for {asked} bytes; the host allows {DESCRIPTOR_LIMIT}"),
            )));
        }
        buffer = DescriptorBuffer::new(asked);
        status = entry.call(callee, (&bootstrap, buffer.pointer()));
    }
    if status.code != OK.code {
        return Err(release(PluginError::Entry {
            path: path.to_path_buf(),
            status: describe(status),
        }));
    }
    let descriptor = buffer
        .read()
        .ok_or_else(|| failed(StatusCode::AbiMismatch, "no descriptor".to_string()))
        .map_err(release)?;
    check_descriptor(&descriptor, host_record, &failed).map_err(release)?;
    let text = |view: ffi::StringView, what: &str| -> Result<String, PluginError> {
        let bytes = copy_view(view.data.cast(), view.length, TEXT_LIMIT).ok_or_else(|| {
            failed(
                StatusCode::InvalidDescriptor,
                format!("its descriptor's {what} is not a view of at most {TEXT_LIMIT} bytes"),
            )
        })?;
        String::from_utf8(bytes).map_err(|_| {
            failed(
                StatusCode::InvalidDescriptor,
                format!("its descriptor's {what} is not UTF-8"),
            )
        })
    };
    let id = text(descriptor.plugin_id, "PluginID").map_err(release)?;
    if id.is_empty() {
        return Err(release(failed(
            StatusCode::InvalidDescriptor,
            "its descriptor's PluginID is empty".to_string(),
        )));
    }
    let version = text(descriptor.version, "Version").map_err(release)?;
    let register = descriptor.register.ok_or_else(|| {
        release(failed(
            StatusCode::InvalidDescriptor,
            format!("plugin `{id}` has no Register callback"),
        ))
    })?;
    Ok(LoadedPlugin {
        name: PluginName::new(&id, path.as_os_str()),
        id,
        version,
        path: path.to_path_buf(),
        register,
        user_data: descriptor.user_data,
        destroy: descriptor.destroy_user_data,
        _host: host,
        host_context,
        alive: Rc::new(Cell::new(true)),
        library: Rc::new(library),
    })
}

/// The descriptor's header: at least the structure this host knows, of the host's major version.
fn check_descriptor(
    descriptor: &ffi::PluginDescriptor,
    host: &neverc_tables::InterfaceRecord,
    failed: &dyn Fn(StatusCode, String) -> PluginError,
) -> Result<(), PluginError> {
    let size = descriptor.header.struct_size as usize;
    let known = std::mem::size_of::<ffi::PluginDescriptor>();
    if size < known {
        return Err(failed(
            StatusCode::AbiMismatch,
            format!("its descriptor is {size} bytes; a NevercPluginDescriptor is {known}"),
        ));
    }
    if descriptor.header.major != host.major {
        return Err(failed(
            StatusCode::VersionMismatch,
            format!(
                "its descriptor is of plugin ABI {}.{}; this host speaks {}.{}",
                descriptor.header.major, descriptor.header.minor, host.major, host.minor
            ),
        ));
    }
    Ok(())
}
