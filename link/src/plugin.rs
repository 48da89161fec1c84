//! Plugins (the Rust API): a plugin registers, during its register step only, what it wants of which phase —
//! to observe it, intercept it, replace it or skip it with a proof — and providers (a linker provider that
//! replaces `full`, an object-merge provider, additive binary-image verifiers). Every request is checked
//! against the phase's declared policy; a request the policy does not allow fails with `POLICY_VIOLATION`
//! naming the phase and the missing capability. The same check serves plugin manifests.

use neverc_runtime::generated::phases::{
    POINT_AFTER, POINT_BEFORE, POLICY_INTERCEPTABLE, POLICY_OBSERVABLE, POLICY_REPLACEABLE, POLICY_SKIPPABLE_WITH_PROOF,
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

    fn add(&mut self, phase: &str, capability: Capability, hook: Hook) -> Result<(), Status> {
        let record = check_request(self.tables, phase, capability)?;
        let phase = self.phase_index(record);
        self.registry.registrations.push(Registration {
            plugin: self.plugin,
            phase,
            hook,
        });
        Ok(())
    }

    pub fn observe(&mut self, phase: &str, point: ObserverPoint, observer: Observer) -> Result<(), Status> {
        let record = check_request(self.tables, phase, Capability::Observe)?;
        let bit = match point {
            ObserverPoint::Before => POINT_BEFORE,
            ObserverPoint::After => POINT_AFTER,
        };
        if !record.offers_point(bit) {
            return Err(Status::new(
                StatusCode::PolicyViolation,
                format!("phase `{phase}` declares no {point:?} observer point"),
            ));
        }
        self.add(phase, Capability::Observe, Hook::Observe(point, observer))
    }

    pub fn intercept(&mut self, phase: &str, interceptor: Interceptor) -> Result<(), Status> {
        self.add(phase, Capability::Intercept, Hook::Intercept(interceptor))
    }

    pub fn replace(&mut self, phase: &str, provider: Provider) -> Result<(), Status> {
        self.add(phase, Capability::Replace, Hook::Replace(provider))
    }

    pub fn skip_with_proof(&mut self, phase: &str, skipper: Skipper) -> Result<(), Status> {
        self.add(phase, Capability::SkipWithProof, Hook::Skip(skipper))
    }

    /// A linker provider: replaces `neverc.link.full` (the whole transition sequence).
    pub fn linker_provider(&mut self, provider: Provider) -> Result<(), Status> {
        self.replace("neverc.link.full", provider)
    }

    /// An object-merge provider: replaces `neverc.link.object_merge` (`-r` links).
    pub fn object_merge_provider(&mut self, provider: Provider) -> Result<(), Status> {
        self.replace("neverc.link.object_merge", provider)
    }

    /// An additional check of the emitted image, run inside the sealed `image_verify` gate.
    pub fn image_verifier(&mut self, verifier: ImageVerifier) {
        self.registry.image_verifiers.push((self.plugin, verifier));
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
