//! Plugins (the Rust API): a plugin registers, during its register step only, what it wants of which phase —
//! to observe it, intercept it, replace it or skip it with a proof — and providers (a linker provider that
//! replaces `full`, an object-merge provider, additive binary-image verifiers). Every request is checked
//! against the phase's declared policy; a request the policy does not allow fails with `POLICY_VIOLATION`
//! naming the phase and the missing capability. The same check serves plugin manifests. A phase's chain of
//! interceptors is bounded ([`MAX_INTERCEPTORS_PER_PHASE`]): each runs inside the one before it.

pub use neverc_tables::policy::{
    Capability, ObserverPoint, ProviderKind, Request, check_phase_request, check_request, policy_names,
};
use neverc_tables::{PhaseRecord, PhaseTables};

use crate::frame::{PhaseFrame, Proof};
use crate::image::{ImageLayout, SparseBytes};
use crate::status::{Status, StatusCode};

/// The most interceptors one phase may have, of all plugins together.
///
/// An interceptor's continuation runs the rest of the chain inside the interceptor's own call (for a C plugin,
/// inside its C frame), so a chain is as deep on the stack as it is long: in a debug build one level of a C
/// plugin's chain takes 8 to 16 KiB of the thread's stack, and a chain of 1,000 overflowed the main thread's
/// 8 MiB (the process aborted). 64 is far more than a link puts on one phase, and under 1 MiB of stack even in
/// a debug build, within the 2 MiB of a spawned thread. The interceptor past it is refused at registration
/// with RESOURCE_EXHAUSTED.
pub const MAX_INTERCEPTORS_PER_PHASE: usize = 64;

/// Whether `phase`, which has `registered` interceptors, may have one more: RESOURCE_EXHAUSTED naming the
/// phase and the bound when it has [`MAX_INTERCEPTORS_PER_PHASE`] already.
pub fn check_interceptor_bound(phase: &str, registered: usize) -> Result<(), Status> {
    if registered < MAX_INTERCEPTORS_PER_PHASE {
        return Ok(());
    }
    Err(Status::new(
        StatusCode::ResourceExhausted,
        format!(
            "`{phase}` already has {registered} interceptors, and a phase may have at most \
             {MAX_INTERCEPTORS_PER_PHASE} (each runs inside the one before it, on the stack)"
        ),
    ))
}

/// An observer: a read-only frame.
pub type Observer = Box<dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status>>;
/// The rest of the chain, for an interceptor: call it at most once.
pub type Continuation<'c> = &'c mut dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status>;
/// An interceptor: wraps the phase; may mutate; decides whether (and when) the rest runs.
pub type Interceptor = Box<dyn FnMut(&mut PhaseFrame<'_>, Continuation<'_>) -> Result<(), Status>>;
/// A replacing provider: does the phase's work instead of the builtin.
pub type Provider = Box<dyn FnMut(&mut PhaseFrame<'_>) -> Result<(), Status>>;
/// A skip request: the proof under which the phase's work is already done, publishing its product.
pub type Skipper = Box<dyn FnMut(&mut PhaseFrame<'_>, Option<Proof>) -> Option<Proof>>;
/// An additive binary-image verifier, run by the sealed `image_verify` gate.
pub type ImageVerifier = Box<dyn FnMut(&SparseBytes, &ImageLayout) -> Result<(), Status>>;

pub(crate) enum Hook {
    Observe(ObserverPoint, Observer),
    Intercept(Interceptor),
    Replace(Provider),
    Skip(Skipper),
}

pub(crate) struct Registration {
    pub(crate) plugin: u32,
    pub(crate) phase: usize,
    pub(crate) hook: Hook,
}

/// Everything registered, in registration order.
#[derive(Default)]
pub struct Registry {
    pub(crate) registrations: Vec<Registration>,
    pub(crate) image_verifiers: Vec<(u32, ImageVerifier)>,
    pub(crate) plugin_names: Vec<String>,
    pub(crate) lto_code_generators: Vec<crate::lto::provider::SharedProvider>,
}

/// A plugin of the link runtime.
pub trait LinkPlugin {
    fn name(&self) -> &str;
    /// The register step: the only time a plugin may ask for anything.
    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status>;
}

/// Handed to a plugin for its register step only.
pub struct Registrar<'r> {
    tables: &'static PhaseTables,
    registry: &'r mut Registry,
    plugin: u32,
}

impl Registrar<'_> {
    /// The phase tables the plugin registers against.
    pub fn tables(&self) -> &'static PhaseTables {
        self.tables
    }

    fn phase_index(&self, record: &PhaseRecord) -> usize {
        self.tables
            .phases
            .iter()
            .position(|candidate| candidate.name == record.name)
            .unwrap_or(usize::MAX)
    }

    fn add(&mut self, phase: &str, request: Request, hook: Hook) -> Result<(), Status> {
        let record = check_phase_request(self.tables, phase, request)?;
        let phase = self.phase_index(record);
        if request == Request::Intercept {
            let chain = self
                .registry
                .registrations
                .iter()
                .filter(|registration| registration.phase == phase && matches!(registration.hook, Hook::Intercept(_)))
                .count();
            check_interceptor_bound(record.name, chain)?;
        }
        self.registry.registrations.push(Registration {
            plugin: self.plugin,
            phase,
            hook,
        });
        Ok(())
    }

    pub fn observe(&mut self, phase: &str, point: ObserverPoint, observer: Observer) -> Result<(), Status> {
        self.add(phase, Request::Observe(point), Hook::Observe(point, observer))
    }

    pub fn intercept(&mut self, phase: &str, interceptor: Interceptor) -> Result<(), Status> {
        self.add(phase, Request::Intercept, Hook::Intercept(interceptor))
    }

    pub fn replace(&mut self, phase: &str, provider: Provider) -> Result<(), Status> {
        self.add(phase, Request::Replace, Hook::Replace(provider))
    }

    pub fn skip_with_proof(&mut self, phase: &str, skipper: Skipper) -> Result<(), Status> {
        self.add(phase, Request::SkipWithProof, Hook::Skip(skipper))
    }

    /// A linker provider: replaces `neverc.link.full` (the whole transition sequence).
    pub fn linker_provider(&mut self, provider: Provider) -> Result<(), Status> {
        let (phase, _) = ProviderKind::Linker.request();
        self.replace(phase, provider)
    }

    /// An object-merge provider: replaces `neverc.link.object_merge` (`-r` links).
    pub fn object_merge_provider(&mut self, provider: Provider) -> Result<(), Status> {
        let (phase, _) = ProviderKind::ObjectMerge.request();
        self.replace(phase, provider)
    }

    /// An LTO provider: replaces `neverc.link.lto_generate`.
    pub fn lto_provider(&mut self, provider: Provider) -> Result<(), Status> {
        let (phase, _) = ProviderKind::Lto.request();
        self.replace(phase, provider)
    }

    /// An LTO code generator (NeverC's `RegisterProvider` of the LTO registrar): checked as NeverC's host
    /// checks a `NevercLTOProviderDescriptor` (`lto::provider::check_descriptor`: known flags, FULL or THIN,
    /// a Codegen, a BuildCacheKey when CACHEABLE, an id no provider registered before has). The builtin
    /// `lto_generate` asks the first one registered for the request's mode instead of `llvm-lto2`.
    pub fn lto_code_generator(&mut self, provider: crate::lto::provider::SharedProvider) -> Result<(), Status> {
        let registered: Vec<&str> = self
            .registry
            .lto_code_generators
            .iter()
            .map(|known| known.0.id())
            .collect();
        crate::lto::provider::check_descriptor(provider.0.as_ref(), &registered)?;
        self.registry.lto_code_generators.push(provider);
        Ok(())
    }

    /// An additional check of the emitted image, run inside the sealed `image_verify` gate.
    pub fn image_verifier(&mut self, verifier: ImageVerifier) -> Result<(), Status> {
        let (phase, request) = ProviderKind::ImageVerifier.request();
        check_phase_request(self.tables, phase, request)?;
        self.registry.image_verifiers.push((self.plugin, verifier));
        Ok(())
    }
}

impl Registry {
    /// Runs a plugin's register step. A failing step leaves nothing of that plugin registered.
    pub fn register(&mut self, tables: &'static PhaseTables, plugin: &mut dyn LinkPlugin) -> Result<(), Status> {
        let id = self.plugin_names.len() as u32 + 1;
        let registered = self.registrations.len();
        let verifiers = self.image_verifiers.len();
        let generators = self.lto_code_generators.len();
        let mut registrar = Registrar {
            tables,
            registry: self,
            plugin: id,
        };
        match plugin.register(&mut registrar) {
            Ok(()) => {
                self.plugin_names.push(plugin.name().to_string());
                Ok(())
            }
            Err(status) => {
                self.registrations.truncate(registered);
                self.image_verifiers.truncate(verifiers);
                self.lto_code_generators.truncate(generators);
                Err(status)
            }
        }
    }
}
