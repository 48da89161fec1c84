//! The phase registrar (`NevercPhaseRegistrarAPI`): what a plugin asks for during its registration, each
//! request checked by `check_phase_request` and answered with the status the runtime gives.

use std::ffi::c_void;

use neverc_link::plugin::check_interceptor_bound;
use neverc_sys::plugin::CFunction;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::plugin_abi::host::PHASE_REGISTRAR;
use neverc_tables::policy::{ObserverPoint, ProviderKind, Request, check_phase_request};
use neverc_tables::status::{Status, StatusCode};

use crate::context::{self, Entry};
use crate::load::{LoadedPlugin, PluginError};
use crate::status::{c_result, c_status, describe, guarded};

/// One request a plugin made while registering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AskedPhase {
    /// The phase's name, or its id (`0xHIGH:0xLOW`) when the tables declare no phase with it.
    pub phase: String,
    /// What was asked; `None` for an observer point the tables do not declare.
    pub request: Option<Request>,
    /// The raw observer point bits of an observe request.
    pub observe_bits: Option<u32>,
    /// The provider the request stands for, when it registered one (an image verifier).
    pub provider: Option<ProviderKind>,
    /// The descriptor the request registered, if it registered one through an interface's registrar rather
    /// than asking for a phase.
    pub descriptor: Option<Descriptor>,
    /// The host's answer: what the runtime's policy check said.
    pub answer: Result<(), Status>,
}

/// A descriptor a plugin registered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Descriptor {
    /// An LTO code generation provider (`NevercLTORegistrarAPI`), by id; its phase is the one that asks it,
    /// `lto_generate`.
    LtoProvider(String),
    /// A calling convention (`NevercCallingConventionAPI`), by name (or id when the descriptor's name could
    /// not be read); it belongs to no phase.
    CallingConvention(String),
}

impl Descriptor {
    /// How the audit names it: `lto-provider ID`, `calling-convention NAME`.
    pub fn request(&self) -> String {
        match self {
            Descriptor::LtoProvider(id) => format!("lto-provider {id}"),
            Descriptor::CallingConvention(name) => format!("calling-convention {name}"),
        }
    }
}

/// A callback a plugin registered, with its user data.
#[derive(Clone, Debug)]
pub(crate) enum Hook {
    Observer(ffi::PhaseObserverFn, *mut c_void),
    Provider(ffi::PhaseProviderFn, *mut c_void),
    Interceptor(ffi::PhaseInterceptorFn, *mut c_void),
    Skipper(ffi::PhaseSkipperFn, *mut c_void),
    /// A binary image verifier (`NevercLinkRegistrarAPI.RegisterBinaryImageVerifier`).
    ImageVerifier(ffi::BinaryImageVerifyFn, *mut c_void),
    /// An LTO code generation provider (`NevercLTORegistrarAPI.RegisterProvider`).
    LtoProvider(crate::lto::LtoDescriptor),
    /// A calling convention, already released: nothing to hook.
    Convention,
}

impl Hook {
    /// Whether the request named a callback (one without is refused).
    fn has_callback(&self) -> bool {
        match self {
            Hook::Observer(callback, _) | Hook::Provider(callback, _) => callback.is_some(),
            Hook::Interceptor(callback, _) => callback.is_some(),
            Hook::Skipper(callback, _) => callback.is_some(),
            Hook::ImageVerifier(callback, _) => callback.is_some(),
            Hook::LtoProvider(_) | Hook::Convention => true,
        }
    }
}

/// A registration in progress: the tables it checks against and what was asked so far.
pub(crate) struct Registration {
    pub(crate) tables: &'static PhaseTables,
    pub(crate) asked: Vec<(AskedPhase, Hook)>,
    /// The id of the plugin registering, for the texts of refusals.
    pub(crate) plugin: String,
    /// The calling conventions it registered (`NevercCallingConventionAPI`), and the refusals.
    pub(crate) conventions: crate::calling_convention::Conventions,
}

fn phase_text(tables: &'static PhaseTables, phase: ffi::InterfaceId) -> (Option<&'static str>, String) {
    match tables.phase_by_id(phase.high, phase.low) {
        Some(record) => (Some(record.name), record.name.to_string()),
        None => (None, format!("{:#018x}:{:#018x}", phase.high, phase.low)),
    }
}

/// Records one request and answers it.
fn ask(
    registrar_context: *mut c_void,
    phase: ffi::InterfaceId,
    (request, observe_bits): (Result<Request, String>, Option<u32>),
    hook: Hook,
) -> ffi::Status {
    let has_callback = hook.has_callback();
    let answered = context::with(registrar_context, |entry| {
        let Entry::Registration(registration) = entry else {
            return c_status(StatusCode::InvalidArgument);
        };
        let tables = registration.tables;
        let (name, text) = phase_text(tables, phase);
        let answer = match (&request, name) {
            (_, None) => Err(Status::new(
                StatusCode::InvalidArgument,
                format!("no phase has the id {text}"),
            )),
            (Err(message), _) => Err(Status::new(StatusCode::InvalidArgument, message.clone())),
            (Ok(_), Some(_)) if !has_callback => Err(Status::new(
                StatusCode::InvalidArgument,
                format!("a request on `{text}` without a callback"),
            )),
            (Ok(request), Some(name)) => check_phase_request(tables, name, *request).and_then(|_| {
                if *request != Request::Intercept {
                    return Ok(());
                }
                // The bound on a chain, for the interceptors this registration asked for so far (the link's
                // registrar checks it again over every plugin's).
                let chain = registration
                    .asked
                    .iter()
                    .filter(|(asked, _)| {
                        asked.phase == text && asked.request == Some(Request::Intercept) && asked.answer.is_ok()
                    })
                    .count();
                check_interceptor_bound(name, chain)
            }),
        };
        let status = c_result(&answer);
        registration.asked.push((
            AskedPhase {
                phase: text,
                request: request.ok(),
                observe_bits,
                provider: matches!(hook, Hook::ImageVerifier(..)).then_some(ProviderKind::ImageVerifier),
                descriptor: None,
                answer,
            },
            hook,
        ));
        status
    });
    answered.unwrap_or_else(|| c_status(StatusCode::InvalidArgument))
}

fn observer_point(bits: u32) -> Result<Request, String> {
    [ObserverPoint::Before, ObserverPoint::After, ObserverPoint::AfterCommit]
        .into_iter()
        .find(|point| point.point().0 == bits)
        .map(Request::Observe)
        .ok_or_else(|| format!("{bits:#x} is not one observer point (NEVERC_PHASE_OBSERVE_*)"))
}

extern "C" fn observe(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    phase: ffi::InterfaceId,
    point: u32,
    observer: ffi::PhaseObserverFn,
    user_data: *mut c_void,
) -> ffi::Status {
    guarded(|| {
        ask(
            registrar_context,
            phase,
            (observer_point(point), Some(point)),
            Hook::Observer(observer, user_data),
        )
    })
}

extern "C" fn intercept(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    phase: ffi::InterfaceId,
    interceptor: ffi::PhaseInterceptorFn,
    user_data: *mut c_void,
) -> ffi::Status {
    guarded(|| {
        ask(
            registrar_context,
            phase,
            (Ok(Request::Intercept), None),
            Hook::Interceptor(interceptor, user_data),
        )
    })
}

extern "C" fn replace(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    phase: ffi::InterfaceId,
    provider: ffi::PhaseProviderFn,
    user_data: *mut c_void,
) -> ffi::Status {
    guarded(|| {
        ask(
            registrar_context,
            phase,
            (Ok(Request::Replace), None),
            Hook::Provider(provider, user_data),
        )
    })
}

extern "C" fn skip_with_proof(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    phase: ffi::InterfaceId,
    skipper: ffi::PhaseSkipperFn,
    user_data: *mut c_void,
) -> ffi::Status {
    guarded(|| {
        ask(
            registrar_context,
            phase,
            (Ok(Request::SkipWithProof), None),
            Hook::Skipper(skipper, user_data),
        )
    })
}

/// `NevercLinkRegistrarAPI.RegisterBinaryImageVerifier`: a verifier is an observer of the sealed image_verify
/// gate (the request a manifest's `image-verifier` provider stands for), checked like any request.
pub(crate) extern "C" fn register_binary_image_verifier(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    descriptor: *const ffi::BinaryImageVerifierDescriptor,
) -> ffi::Status {
    guarded(|| {
        let descriptor = match crate::memory::read_struct(descriptor) {
            Ok(descriptor) => descriptor,
            Err(code) => return c_status(code),
        };
        let (phase, request) = ProviderKind::ImageVerifier.request();
        // The phase's id in the tables this registration checks against (an unknown context finds none and
        // is refused by `ask`).
        let id = context::with(registrar_context, |entry| match entry {
            Entry::Registration(registration) => registration.tables.phase_by_name(phase),
            Entry::Host(_) => None,
        })
        .flatten()
        .map(|record| ffi::InterfaceId {
            high: record.id.high,
            low: record.id.low,
        })
        .unwrap_or_default();
        ask(
            registrar_context,
            id,
            (Ok(request), None),
            Hook::ImageVerifier(descriptor.verify, descriptor.user_data),
        )
    })
}

/// `NevercLTORegistrarAPI.RegisterProvider`: the descriptor is checked by the runtime's rules for LTO
/// providers (`check_descriptor`) against the providers this registration registered before; a provider of
/// another plugin with the same id is refused when the link registers it.
pub(crate) extern "C" fn register_lto_provider(
    _context: *mut c_void,
    registrar_context: *mut c_void,
    descriptor: *const ffi::LtoProviderDescriptor,
) -> ffi::Status {
    guarded(|| {
        let descriptor = match crate::lto::read_descriptor(descriptor) {
            Ok(descriptor) => descriptor,
            Err(code) => return c_status(code),
        };
        context::with(registrar_context, |entry| {
            let Entry::Registration(registration) = entry else {
                return c_status(StatusCode::InvalidArgument);
            };
            let registered: Vec<&str> = registration
                .asked
                .iter()
                .filter(|(asked, _)| asked.answer.is_ok())
                .filter_map(|(asked, _)| match &asked.descriptor {
                    Some(Descriptor::LtoProvider(id)) => Some(id.as_str()),
                    _ => None,
                })
                .collect();
            let answer = crate::lto::check(&descriptor, &registered);
            let status = c_result(&answer);
            let (phase, _) = ProviderKind::Lto.request();
            registration.asked.push((
                AskedPhase {
                    phase: phase.to_string(),
                    request: None,
                    observe_bits: None,
                    provider: None,
                    descriptor: Some(Descriptor::LtoProvider(descriptor.id.clone())),
                    answer,
                },
                Hook::LtoProvider(descriptor),
            ));
            status
        })
        .unwrap_or_else(|| c_status(StatusCode::InvalidArgument))
    })
}

/// Runs the plugin's registration against a registrar that records and answers every request without
/// hooking anything (what `audit --plugin` shows), and returns the requests in the order they were made.
/// A registration that returns a failure is an error; refused requests are not (the plugin saw the refusal
/// and may have gone on without it).
pub fn register_dry_run(plugin: &LoadedPlugin, tables: &'static PhaseTables) -> Result<Vec<AskedPhase>, PluginError> {
    Ok(run_registration(plugin, tables)?
        .into_iter()
        .map(|(asked, _)| asked)
        .collect())
}

/// Runs the plugin's registration and returns every request with its answer and the callback it named.
pub(crate) fn run_registration(
    plugin: &LoadedPlugin,
    tables: &'static PhaseTables,
) -> Result<Vec<(AskedPhase, Hook)>, PluginError> {
    let (registered, status) = registration_of(plugin, tables)?;
    let mut asked = registered.asked;
    // A link or an audit uses no calling convention: they are listed, and their user data is released.
    for (name, answer) in registered.conventions.release(plugin) {
        asked.push((
            AskedPhase {
                phase: String::new(),
                request: None,
                observe_bits: None,
                provider: None,
                descriptor: Some(Descriptor::CallingConvention(name)),
                answer,
            },
            Hook::Convention,
        ));
    }
    if status.code != 0 {
        // A registration that fails after a refusal most likely fails because of it: the refusal says why.
        let refusal = asked
            .iter()
            .rev()
            .find_map(|(asked, _)| asked.answer.as_ref().err())
            .map(|refused| refused.message.clone());
        return Err(PluginError::Register {
            plugin: plugin.id.clone(),
            status: describe(status),
            refusal,
        });
    }
    Ok(asked)
}

/// Runs the plugin's registration and returns everything it registered, with the status its Register
/// callback returned.
pub(crate) fn registration_of(
    plugin: &LoadedPlugin,
    tables: &'static PhaseTables,
) -> Result<(Registration, ffi::Status), PluginError> {
    let record = PHASE_REGISTRAR;
    let registration = context::insert(Entry::Registration(Registration {
        tables,
        asked: Vec::new(),
        plugin: plugin.id.clone(),
        conventions: crate::calling_convention::Conventions::default(),
    }));
    let table = ffi::PhaseRegistrarApi {
        header: ffi::AbiTableHeader {
            struct_size: u32::try_from(std::mem::size_of::<ffi::PhaseRegistrarApi>()).unwrap_or(u32::MAX),
            major: record.major,
            minor: record.minor,
            flags: 0,
        },
        context: registration,
        observe: Some(observe),
        intercept: Some(intercept),
        replace: Some(replace),
        skip_with_proof: Some(skip_with_proof),
    };
    let status = plugin
        .register
        .call(plugin.callee("Register", ""), (plugin.user_data, &table, registration));
    let Some(Entry::Registration(registered)) = context::remove(registration) else {
        return Err(PluginError::Register {
            plugin: plugin.id.clone(),
            status: "a registration the host lost track of".to_string(),
            refusal: None,
        });
    };
    Ok((registered, status))
}
