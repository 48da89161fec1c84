//! Calling-convention plugins (`NevercCallingConventionAPI`, PluginTarget.h; fact sheet B.3): a plugin asks
//! for the CALLING_CONVENTION interface during its registration and registers a descriptor, checked as NeverC
//! checks it; `cc materialize --plugin` then asks the convention's `PlanCallingConvention` to plan the
//! module's functions, through [`neverc_cc::plugin::PlanCallingConvention`], whose host validates every plan.
//!
//! The host owns every buffer the plugin fills: the plan's location and callee-saved arrays are the host's,
//! with their capacity in `Count`; the plugin reports how many elements it filled, and the host reads only
//! its own memory, never past the capacity.

use std::ffi::c_void;

use neverc_cc::layout::layout_of;
use neverc_cc::plan::{Location, LocationKind, Plan, PlanId};
use neverc_cc::plan_validation::{MAX_CALLEE_SAVED, MAX_LOCATIONS};
use neverc_cc::plugin::{ConventionQuery, PlanCallingConvention, PlanFailure, STATUS_PLUGIN_FAILURE};
use neverc_cc::signature::IrType;
use neverc_sys::plugin::{CFunction, copy_view, read_element, read_in};
use neverc_tables::plugin_abi::ffi;
use neverc_tables::plugin_abi::target::{
    AbiTypeFlags, AbiTypeKind, CALLING_CONVENTION, CallingConventionFunctionFlags, CallingConventionLocationKind,
};
use neverc_tables::status::{Status, StatusCode};
use neverc_tables::{Id128, PhaseTables, TargetRecord};

use crate::context::{self, Entry};
use crate::load::{LoadedPlugin, PluginError};
use crate::registrar::registration_of;
use crate::status::{OK, c_status, describe, guarded};

/// The longest convention or register name the host reads.
const NAME_LIMIT: usize = 4096;

/// A calling convention a plugin registered: the descriptor's fields the host keeps.
pub(crate) struct Registered {
    id: Id128,
    target: Id128,
    name: String,
    /// The descriptor's callee-saved register names, as given.
    callee_saved: Vec<String>,
    llvm_calling_convention: u32,
    user_data: *mut c_void,
    destroy: ffi::DestroyUserDataFn,
    plan: ffi::PlanCallingConventionFn,
}

/// What a registration registered through `NevercCallingConventionAPI`, and what it had refused.
#[derive(Default)]
pub(crate) struct Conventions {
    registered: Vec<Registered>,
    refused: Vec<Status>,
}

impl Conventions {
    /// Releases the registered conventions' user data (for a registration that uses none: a link, an
    /// audit) and returns what was asked: each registered convention's name with its acceptance, then each
    /// refused descriptor with its refusal.
    pub(crate) fn release(self, plugin: &LoadedPlugin) -> Vec<(String, Result<(), Status>)> {
        let mut asked = Vec::new();
        for convention in self.registered {
            if let Some(destroy) = convention.destroy {
                destroy.call(
                    plugin.callee("DestroyUserData of calling convention ", &convention.name),
                    (convention.user_data,),
                );
            }
            asked.push((convention.name, Ok(())));
        }
        asked.extend(
            self.refused
                .into_iter()
                .map(|status| ("(refused descriptor)".to_string(), Err(status))),
        );
        asked
    }
}

thread_local! {
    /// The calling-convention table this thread hands out (its slot takes the registration's context).
    static API: Box<ffi::CallingConventionApi> = Box::new({
        let mut table = ffi::CallingConventionApi::unavailable(
            ffi::AbiTableHeader {
                struct_size: size_of_u32::<ffi::CallingConventionApi>(),
                major: CALLING_CONVENTION.major,
                minor: CALLING_CONVENTION.minor,
                flags: 0,
            },
            std::ptr::null_mut(),
        );
        table.register_calling_convention = Some(register_calling_convention);
        table
    });
}

/// The address of this thread's calling-convention table, which `QueryInterface` hands out.
pub(crate) fn api_address() -> usize {
    API.with(|table| &**table as *const ffi::CallingConventionApi as usize)
}

fn size_of_u32<T>() -> u32 {
    u32::try_from(std::mem::size_of::<T>()).unwrap_or(u32::MAX)
}

fn header_of<T>() -> ffi::AbiTableHeader {
    ffi::AbiTableHeader {
        struct_size: size_of_u32::<T>(),
        major: CALLING_CONVENTION.major,
        minor: CALLING_CONVENTION.minor,
        flags: 0,
    }
}

fn view(text: &str) -> ffi::StringView {
    ffi::StringView {
        data: text.as_ptr().cast(),
        length: text.len() as u64,
    }
}

fn id_of(id: ffi::InterfaceId) -> Id128 {
    Id128 {
        high: id.high,
        low: id.low,
    }
}

/// A string a plugin handed over, at most `limit` bytes of UTF-8.
fn text_of(view: ffi::StringView, limit: usize) -> Option<String> {
    String::from_utf8(copy_view(view.data.cast(), view.length, limit)?).ok()
}

/// NeverC's checks of a calling-convention descriptor, and what the host keeps of it.
fn check_descriptor(
    plugin: &str,
    pointer: *const ffi::CallingConventionDescriptor,
    known: &Conventions,
) -> Result<Registered, Status> {
    let refuse = |code: StatusCode, message: String| Status::new(code, format!("plugin '{plugin}' {message}"));
    let Some(header) = read_in(pointer.cast::<ffi::AbiTableHeader>()) else {
        return Err(refuse(
            StatusCode::InvalidArgument,
            "registers a null calling-convention descriptor".into(),
        ));
    };
    let size = std::mem::size_of::<ffi::CallingConventionDescriptor>();
    if (header.struct_size as usize) < size {
        return Err(refuse(
            StatusCode::AbiMismatch,
            format!(
                "registers a calling-convention descriptor of {} bytes; a NevercCallingConventionDescriptor is {size}",
                header.struct_size
            ),
        ));
    }
    if header.major != CALLING_CONVENTION.major {
        return Err(refuse(
            StatusCode::VersionMismatch,
            format!(
                "registers a calling-convention descriptor of version {}.{}; this host speaks {}.{}",
                header.major, header.minor, CALLING_CONVENTION.major, CALLING_CONVENTION.minor
            ),
        ));
    }
    let Some(descriptor) = read_in(pointer) else {
        return Err(refuse(
            StatusCode::InvalidArgument,
            "registers a null calling-convention descriptor".into(),
        ));
    };
    // NeverC's rule and text: a reserved field in use, a number LLVM's `cc N` cannot carry, or a number
    // together with a plan callback (which plans for NeverC's custom convention) is refused.
    if descriptor.reserved != 0
        || descriptor.llvm_calling_convention > 255
        || (descriptor.plan_calling_convention.is_some() && descriptor.llvm_calling_convention != 0)
    {
        return Err(Status::new(
            StatusCode::InvalidDescriptor,
            format!("plugin '{plugin}' has an invalid LLVM calling convention"),
        ));
    }
    if descriptor.flags != 0 || descriptor.header.flags != 0 {
        return Err(refuse(
            StatusCode::InvalidDescriptor,
            "registers a calling convention with flags this host does not know".into(),
        ));
    }
    let name = text_of(descriptor.canonical_name, NAME_LIMIT)
        .filter(|name| !name.is_empty())
        .ok_or_else(|| {
            refuse(
                StatusCode::InvalidDescriptor,
                format!("registers a calling convention whose CanonicalName is not a name of at most {NAME_LIMIT} bytes of UTF-8"),
            )
        })?;
    let names = descriptor.callee_saved_registers;
    if names.count > MAX_CALLEE_SAVED as u64 {
        return Err(refuse(
            StatusCode::InvalidDescriptor,
            format!("registers calling convention '{name}' with more than {MAX_CALLEE_SAVED} callee-saved registers"),
        ));
    }
    let mut callee_saved = Vec::new();
    for index in 0..names.count {
        let register = read_element::<ffi::StringView>(names.data, names.element_stride, index)
            .and_then(|register| text_of(register, NAME_LIMIT))
            .ok_or_else(|| {
                refuse(
                    StatusCode::InvalidDescriptor,
                    format!("registers calling convention '{name}' whose callee-saved register {index} is not a name"),
                )
            })?;
        callee_saved.push(register);
    }
    let id = id_of(descriptor.calling_convention_id);
    if known.registered.iter().any(|other| other.id == id) {
        return Err(refuse(
            StatusCode::DuplicateId,
            format!("registers calling convention {:#x}:{:#x} twice", id.high, id.low),
        ));
    }
    Ok(Registered {
        id,
        target: id_of(descriptor.target_id),
        name,
        callee_saved,
        llvm_calling_convention: descriptor.llvm_calling_convention,
        user_data: descriptor.user_data,
        destroy: descriptor.destroy_user_data,
        plan: descriptor.plan_calling_convention,
    })
}

/// `NevercCallingConventionAPI.RegisterCallingConvention`: checks the descriptor and keeps it with the
/// registration whose context the plugin passes; a refusal is kept too, for the host to report.
extern "C" fn register_calling_convention(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    descriptor: *const ffi::CallingConventionDescriptor,
) -> ffi::Status {
    guarded(|| {
        context::with(registrar_context, |entry| {
            let Entry::Registration(registration) = entry else {
                return c_status(StatusCode::InvalidArgument);
            };
            let conventions = &mut registration.conventions;
            match check_descriptor(&registration.plugin, descriptor, conventions) {
                Ok(registered) => {
                    conventions.registered.push(registered);
                    OK
                }
                Err(status) => {
                    let code = status.code;
                    conventions.refused.push(status);
                    c_status(code)
                }
            }
        })
        .unwrap_or_else(|| c_status(StatusCode::InvalidArgument))
    })
}

/// Why a plugin's calling conventions cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConventionError {
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// The host refused a descriptor (NeverC's text; the code is the status's).
    #[error("{}", .0.message)]
    Refused(Status),
    #[error("plugin `{plugin}` registers no calling convention for target {target}")]
    None { plugin: String, target: String },
    #[error("target calling convention '{0}' has no plan callback")]
    NoCallback(String),
    #[error(
        "plugin `{plugin}` registers {count} calling conventions with a plan callback for target {target}; one is needed"
    )]
    Ambiguous {
        plugin: String,
        target: String,
        count: usize,
    },
}

impl ConventionError {
    /// NeverC's status code for the failure.
    pub fn code(&self) -> StatusCode {
        match self {
            ConventionError::Plugin(error) => error.code(),
            ConventionError::Refused(status) => status.code,
            ConventionError::None { .. } | ConventionError::NoCallback(_) => StatusCode::CapabilityUnavailable,
            ConventionError::Ambiguous { .. } => StatusCode::DuplicateId,
        }
    }
}

/// A loaded plugin with the calling conventions it registered. Dropping it releases each convention's user
/// data (its `DestroyUserData`), then the plugin.
pub struct ConventionPlugin {
    conventions: Vec<Registered>,
    // Declared last: the library outlives the conventions' user data.
    plugin: LoadedPlugin,
}

impl Drop for ConventionPlugin {
    fn drop(&mut self) {
        for convention in self.conventions.drain(..) {
            if let Some(destroy) = convention.destroy {
                destroy.call(
                    self.plugin
                        .callee("DestroyUserData of calling convention ", &convention.name),
                    (convention.user_data,),
                );
            }
        }
    }
}

impl ConventionPlugin {
    /// Runs the plugin's registration and keeps the calling conventions it registers. A descriptor the host
    /// refused fails it with NeverC's text, whatever the plugin did next; so does a failed registration.
    pub fn register(plugin: LoadedPlugin, tables: &'static PhaseTables) -> Result<ConventionPlugin, ConventionError> {
        let (registration, status) = registration_of(&plugin, tables)?;
        let Conventions {
            registered,
            mut refused,
        } = registration.conventions;
        let loaded = ConventionPlugin {
            conventions: registered,
            plugin,
        };
        if !refused.is_empty() {
            return Err(ConventionError::Refused(refused.swap_remove(0)));
        }
        if status.code != OK.code {
            return Err(ConventionError::Plugin(PluginError::Register {
                plugin: loaded.plugin.id.clone(),
                status: describe(status),
                refusal: None,
            }));
        }
        Ok(loaded)
    }

    /// The plugin's id.
    pub fn id(&self) -> &str {
        &self.plugin.id
    }

    /// What the plugin reported through the host table, with the severity it gave.
    pub fn reports(&self) -> Vec<(u32, String)> {
        self.plugin.reports()
    }

    /// The names, LLVM numbers and callee-saved registers of the registered conventions, in order.
    pub fn describe(&self) -> Vec<(String, u32, Vec<String>)> {
        self.conventions
            .iter()
            .map(|convention| {
                (
                    convention.name.clone(),
                    convention.llvm_calling_convention,
                    convention.callee_saved.clone(),
                )
            })
            .collect()
    }

    /// The one convention with a plan callback the plugin registered for `target`.
    pub fn convention_for(&self, target: &TargetRecord) -> Result<CConvention<'_>, ConventionError> {
        let for_target: Vec<&Registered> = self
            .conventions
            .iter()
            .filter(|convention| convention.target == target.target_id)
            .collect();
        let planning: Vec<&Registered> = for_target
            .iter()
            .copied()
            .filter(|convention| convention.plan.is_some())
            .collect();
        match (planning.as_slice(), for_target.first()) {
            ([one], _) => Ok(CConvention {
                registered: one,
                plugin: self,
            }),
            ([], Some(without)) => Err(ConventionError::NoCallback(without.name.clone())),
            ([], None) => Err(ConventionError::None {
                plugin: self.plugin.id.clone(),
                target: target.name.to_string(),
            }),
            (several, _) => Err(ConventionError::Ambiguous {
                plugin: self.plugin.id.clone(),
                target: target.name.to_string(),
                count: several.len(),
            }),
        }
    }
}

/// A registered convention with a plan callback, as the engine's [`PlanCallingConvention`].
pub struct CConvention<'p> {
    registered: &'p Registered,
    plugin: &'p ConventionPlugin,
}

impl CConvention<'_> {
    /// The id of the plugin that registered it.
    pub fn plugin_id(&self) -> &str {
        self.plugin.id()
    }
}

/// How the ABI describes an IR type to a plugin (NeverC's CallingConventionPlanner mapping, fact sheet C.5).
fn type_descriptor(ty: &IrType, query: &ConventionQuery<'_>) -> ffi::AbiTypeDescriptor {
    let layout = layout_of(ty, u64::from(query.target.pointer_width / 8), query.types).ok();
    let stored_bits = layout.map_or(0, |layout| {
        u32::try_from(layout.store_size.saturating_mul(8)).unwrap_or(u32::MAX)
    });
    let (kind, flags, bits, address_space) = match ty {
        IrType::Void => (AbiTypeKind::Void, AbiTypeFlags::EMPTY, 0, 0),
        IrType::Integer(1) => (AbiTypeKind::Boolean, AbiTypeFlags::EMPTY, 1, 0),
        IrType::Integer(bits) => (AbiTypeKind::Integer, AbiTypeFlags::EMPTY, *bits, 0),
        IrType::Pointer { address_space } => (
            AbiTypeKind::Pointer,
            AbiTypeFlags::EMPTY,
            query.target.pointer_width,
            *address_space,
        ),
        IrType::Vector { .. } => (AbiTypeKind::Vector, AbiTypeFlags::EMPTY, stored_bits, 0),
        IrType::Array { .. } => (AbiTypeKind::Array, AbiTypeFlags::AGGREGATE, stored_bits, 0),
        IrType::Struct { .. } | IrType::Named(_) => (AbiTypeKind::Record, AbiTypeFlags::AGGREGATE, stored_bits, 0),
        _ if ty.is_floating_point() => (AbiTypeKind::Float, AbiTypeFlags::EMPTY, stored_bits, 0),
        _ => (AbiTypeKind::Other, AbiTypeFlags::EMPTY, stored_bits, 0),
    };
    ffi::AbiTypeDescriptor {
        header: header_of::<ffi::AbiTypeDescriptor>(),
        kind: kind.raw(),
        bit_width: bits,
        alignment: layout.map_or(0, |layout| u32::try_from(layout.alignment).unwrap_or(u32::MAX)),
        address_space,
        flags: flags.bits(),
    }
}

/// One of the plan's arrays: the host's buffer, lent to the plugin for the call.
struct Lent<T> {
    buffer: Vec<T>,
}

impl<T: Copy + Default> Lent<T> {
    fn new(capacity: usize) -> Lent<T> {
        Lent {
            buffer: vec![T::default(); capacity],
        }
    }

    fn view(&mut self) -> ffi::StructArrayView {
        ffi::StructArrayView {
            data: self.buffer.as_mut_ptr().cast::<c_void>().cast_const(),
            count: self.buffer.len() as u64,
            element_stride: std::mem::size_of::<T>() as u64,
        }
    }

    /// The elements the plugin says it filled: `None` when it moved the array, changed its stride or claims
    /// more elements than it has.
    fn filled(&self, returned: ffi::StructArrayView) -> Option<&[T]> {
        let unchanged = std::ptr::eq(returned.data.cast::<T>(), self.buffer.as_ptr())
            && returned.element_stride == std::mem::size_of::<T>() as u64;
        let count = usize::try_from(returned.count).ok()?;
        (unchanged && count <= self.buffer.len()).then(|| &self.buffer[..count])
    }
}

/// The plan's own header and reserved fields: NeverC's "plan record is invalid" rule.
fn plan_record_is_valid(plan: &ffi::CallingConventionPlan) -> bool {
    plan.header.struct_size as usize >= std::mem::size_of::<ffi::CallingConventionPlan>()
        && plan.header.major == CALLING_CONVENTION.major
        && plan.header.minor <= CALLING_CONVENTION.minor
        && plan.header.flags == 0
        && plan.reserved32 == 0
        && plan.flags == 0
        && plan.reserved == [0, 0]
}

/// The locations a plugin filled, as the engine's, with NeverC's texts for a broken record.
fn locations(label: &str, filled: &[ffi::CallingConventionLocation]) -> Result<Vec<Location>, String> {
    filled
        .iter()
        .map(|location| {
            let header = location.header;
            let record_ok = header.struct_size as usize >= std::mem::size_of::<ffi::CallingConventionLocation>()
                && header.major == CALLING_CONVENTION.major
                && header.minor <= CALLING_CONVENTION.minor
                && header.flags == 0
                && location.reserved32 == 0
                && location.reserved == 0;
            if !record_ok {
                return Err(format!("{label} location has a bad ABI record"));
            }
            let kind = match CallingConventionLocationKind::from_raw(location.kind) {
                Some(CallingConventionLocationKind::Register) => LocationKind::Register,
                Some(CallingConventionLocationKind::Stack) => LocationKind::Stack,
                None => return Err(format!("{label} location has an unknown kind")),
            };
            Ok(Location {
                kind,
                value_index: location.value_index,
                piece_offset: location.piece_offset,
                size: location.size,
                alignment: location.alignment,
                register: location.register_number,
                stack_offset: location.stack_offset,
                flags: location.flags,
            })
        })
        .collect()
}

impl PlanCallingConvention for CConvention<'_> {
    fn name(&self) -> &str {
        &self.registered.name
    }

    fn target_id(&self) -> Id128 {
        self.registered.target
    }

    fn has_plan_callback(&self) -> bool {
        self.registered.plan.is_some()
    }

    fn plan(&self, query: &ConventionQuery<'_>) -> Result<Plan, i32> {
        self.plan_checked(query).map_err(|failure| match failure {
            PlanFailure::Status(status) => status,
            PlanFailure::Invalid(_) => STATUS_PLUGIN_FAILURE,
        })
    }

    /// Asks the plugin: the query describes the function (its signature as ABI type descriptors, its name,
    /// its own spec), the plan's arrays are the host's with their capacities; what comes back is read from
    /// the host's buffers only, up to their capacities. The plan names the target's schema and ids, as the
    /// built-in planner's do: the convention plans for the target's own backend.
    fn plan_checked(&self, query: &ConventionQuery<'_>) -> Result<Plan, PlanFailure> {
        let Some(callback) = self.registered.plan else {
            return Err(PlanFailure::Status(StatusCode::CapabilityUnavailable.raw()));
        };
        let signature = query.signature;
        let parameters: Vec<ffi::AbiTypeDescriptor> = signature
            .parameters
            .iter()
            .map(|parameter| type_descriptor(&parameter.ty, query))
            .collect();
        let function = ffi::AbiFunctionQuery {
            header: header_of::<ffi::AbiFunctionQuery>(),
            return_type: type_descriptor(&signature.return_type, query),
            parameters: ffi::StructArrayView {
                data: parameters.as_ptr().cast(),
                count: parameters.len() as u64,
                element_stride: std::mem::size_of::<ffi::AbiTypeDescriptor>() as u64,
            },
            variadic: u32::from(signature.variadic),
            required_argument_count: u32::try_from(query.required_arguments).unwrap_or(u32::MAX),
            reserved: 0,
        };
        let mut function_flags = CallingConventionFunctionFlags::EMPTY.bits();
        if query.definition {
            function_flags |= CallingConventionFunctionFlags::DEFINITION.bits();
        }
        if query.source_spec.is_some() {
            function_flags |= CallingConventionFunctionFlags::HAS_SOURCE_SPEC.bits();
        }
        let c_query = ffi::CallingConventionQuery {
            header: header_of::<ffi::CallingConventionQuery>(),
            target_id: ffi::InterfaceId {
                high: query.target.target_id.high,
                low: query.target.target_id.low,
            },
            calling_convention_id: ffi::InterfaceId {
                high: self.registered.id.high,
                low: self.registered.id.low,
            },
            schema_digest: view(query.target.schema_digest),
            function: &function,
            reserved: 0,
            function_name: view(query.function),
            source_spec: view(query.source_spec.unwrap_or("")),
            function_flags,
        };
        let mut returns = Lent::<ffi::CallingConventionLocation>::new(MAX_LOCATIONS);
        let mut arguments = Lent::<ffi::CallingConventionLocation>::new(MAX_LOCATIONS);
        let mut callee_saved = Lent::<u32>::new(MAX_CALLEE_SAVED);
        let mut plan = ffi::CallingConventionPlan {
            header: header_of::<ffi::CallingConventionPlan>(),
            return_locations: returns.view(),
            argument_locations: arguments.view(),
            callee_saved_registers: callee_saved.view(),
            stack_alignment: 0,
            reserved32: 0,
            flags: 0,
            reserved: [0, 0],
        };
        let callee = self.plugin.plugin.callee("PlanCallingConvention for ", query.function);
        let status = callback.call(callee, (self.registered.user_data, &c_query, &mut plan));
        if status.code != OK.code {
            return Err(PlanFailure::Status(status.code));
        }
        if !plan_record_is_valid(&plan) {
            return Err(PlanFailure::Invalid("plan record is invalid".into()));
        }
        let returns = returns
            .filled(plan.return_locations)
            .ok_or_else(|| PlanFailure::Invalid("return array is invalid".into()))?;
        let arguments = arguments
            .filled(plan.argument_locations)
            .ok_or_else(|| PlanFailure::Invalid("argument array is invalid".into()))?;
        let callee_saved = callee_saved
            .filled(plan.callee_saved_registers)
            .ok_or_else(|| PlanFailure::Invalid("callee-saved register array is invalid".into()))?;
        Ok(Plan {
            schema: query.target.schema_digest.to_string(),
            target: PlanId::from(query.target.target_id),
            convention: PlanId::from(query.target.convention_id),
            stack_alignment: u64::from(plan.stack_alignment),
            returns: locations("return", returns).map_err(PlanFailure::Invalid)?,
            arguments: locations("argument", arguments).map_err(PlanFailure::Invalid)?,
            callee_saved: callee_saved.to_vec(),
        })
    }
}
