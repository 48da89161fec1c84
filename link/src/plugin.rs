//! Plugins (the Rust API): a plugin registers, during its register step only, what it wants of which phase —
//! to observe it, intercept it, replace it or skip it with a proof — and providers (a linker provider that
//! replaces `full`, an object-merge provider, additive binary-image verifiers). Every request is checked
//! against the phase's declared policy; a request the policy does not allow fails with `POLICY_VIOLATION`
//! naming the phase and the missing capability. The same check serves plugin manifests.

use neverc_runtime::generated::phases::{
    POINT_AFTER, POINT_AFTER_COMMIT, POINT_BEFORE, POLICY_INTERCEPTABLE, POLICY_OBSERVABLE, POLICY_REPLACEABLE,
    POLICY_SKIPPABLE_WITH_PROOF,
};
use neverc_runtime::tables::{PhaseRecord, PhaseTables};

use crate::frame::{PhaseFrame, Proof};
use crate::image::ImageLayout;
use crate::status::{Status, StatusCode};

/// What a plugin asks to do with a phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Capability {
    Observe,
    Intercept,
    Replace,
    SkipWithProof,
}

impl Capability {
    /// The policy flag the capability needs, and its name in the schema.
    pub const fn policy(self) -> (u32, &'static str) {
        match self {
            Capability::Observe => (POLICY_OBSERVABLE, "OBSERVABLE"),
            Capability::Intercept => (POLICY_INTERCEPTABLE, "INTERCEPTABLE"),
            Capability::Replace => (POLICY_REPLACEABLE, "REPLACEABLE"),
            Capability::SkipWithProof => (POLICY_SKIPPABLE_WITH_PROOF, "SKIPPABLE_WITH_PROOF"),
        }
    }
}

/// When an observer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObserverPoint {
    Before,
    After,
    /// After a sealed commit gate has written the output.
    AfterCommit,
}

impl ObserverPoint {
    /// The point's bit (see the generated `POINT_*` constants) and its name in the schema.
    pub const fn point(self) -> (u32, &'static str) {
        match self {
            ObserverPoint::Before => (POINT_BEFORE, "BEFORE"),
            ObserverPoint::After => (POINT_AFTER, "AFTER"),
            ObserverPoint::AfterCommit => (POINT_AFTER_COMMIT, "AFTER_COMMIT"),
        }
    }

    pub fn from_schema_name(name: &str) -> Option<ObserverPoint> {
        [ObserverPoint::Before, ObserverPoint::After, ObserverPoint::AfterCommit]
            .into_iter()
            .find(|point| point.point().1 == name)
    }
}

/// Providers a plugin can register, each standing for a request on one declared phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// Replaces `neverc.link.full`, the whole transition sequence; the sealed gates still run.
    Linker,
    /// Replaces `neverc.link.object_merge` (`-r` links).
    ObjectMerge,
    /// An additional check of the emitted image, run inside the sealed `neverc.link.image_verify` gate, which
    /// it may only observe.
    ImageVerifier,
    /// Replaces `neverc.link.lto_generate`, the code generation of link-time optimization.
    Lto,
}

impl ProviderKind {
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::Linker,
        ProviderKind::ObjectMerge,
        ProviderKind::ImageVerifier,
        ProviderKind::Lto,
    ];

    /// The provider's name in plugin manifests.
    pub const fn name(self) -> &'static str {
        match self {
            ProviderKind::Linker => "linker",
            ProviderKind::ObjectMerge => "object-merge",
            ProviderKind::ImageVerifier => "image-verifier",
            ProviderKind::Lto => "lto",
        }
    }

    /// The phase the provider works in and the request that amounts to.
    pub const fn request(self) -> (&'static str, Request) {
        match self {
            ProviderKind::Linker => ("neverc.link.full", Request::Replace),
            ProviderKind::ObjectMerge => ("neverc.link.object_merge", Request::Replace),
            ProviderKind::ImageVerifier => ("neverc.link.image_verify", Request::Observe(ObserverPoint::After)),
            ProviderKind::Lto => ("neverc.link.lto_generate", Request::Replace),
        }
    }
}

/// One thing a plugin asks of one phase: what the register step and a plugin manifest both say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    Observe(ObserverPoint),
    Intercept,
    Replace,
    SkipWithProof,
}

impl Request {
    pub const fn capability(self) -> Capability {
        match self {
            Request::Observe(_) => Capability::Observe,
            Request::Intercept => Capability::Intercept,
            Request::Replace => Capability::Replace,
            Request::SkipWithProof => Capability::SkipWithProof,
        }
    }
}

/// Checks a request against the declared policy, including the observer point of an observation. The
/// runtime's register step and the manifest audit both call this, so they accept and refuse the same requests
/// with the same status.
pub fn check_phase_request(
    tables: &'static PhaseTables,
    phase: &str,
    request: Request,
) -> Result<&'static PhaseRecord, Status> {
    let record = check_request(tables, phase, request.capability())?;
    if let Request::Observe(point) = request {
        let (bit, name) = point.point();
        if !record.offers_point(bit) {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("phase `{phase}` declares no {name} observer point"),
            ));
        }
    }
    Ok(record)
}

/// Checks a request against the declared policy: the phase must exist and allow the capability.
pub fn check_request(
    tables: &'static PhaseTables,
    phase: &str,
    capability: Capability,
) -> Result<&'static PhaseRecord, Status> {
    let record = tables
        .phases
        .iter()
        .find(|record| record.name == phase)
        .ok_or_else(|| Status::new(StatusCode::InvalidArgument, format!("unknown phase `{phase}`")))?;
    let (bit, name) = capability.policy();
    if !record.allows(bit) {
        return Err(Status::new(
            StatusCode::PolicyViolation,
            format!(
                "phase `{phase}` is not {name} (its declared policy is {})",
                crate::execute::policy_names(record)
            ),
        ));
    }
    Ok(record)
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
pub type ImageVerifier = Box<dyn FnMut(&[u8], &ImageLayout) -> Result<(), Status>>;

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
                Err(status)
            }
        }
    }
}
