//! The policy check every plugin request goes through: what a plugin may ask of a phase, and whether the
//! phase's declared policy allows it. The link runtime's register step and the manifest audit both call
//! [`check_phase_request`], so they accept and refuse the same requests with the same status.

use crate::generated::phases::link::Phase as LinkPhase;
use crate::generated::phases::{
    POINT_AFTER, POINT_AFTER_COMMIT, POINT_BEFORE, POLICY_FLAGS, POLICY_INTERCEPTABLE, POLICY_OBSERVABLE,
    POLICY_REPLACEABLE, POLICY_SKIPPABLE_WITH_PROOF, observer_point_name, policy_flag_name,
};
use crate::status::{Status, StatusCode};
use crate::{PhaseRecord, PhaseTables};

/// The policy flags of a phase, spelled as in the schema.
pub fn policy_names(phase: &PhaseRecord) -> String {
    let spelled: Vec<&str> = POLICY_FLAGS
        .iter()
        .filter(|(_, bit)| phase.policy & bit != 0)
        .map(|(name, _)| *name)
        .collect();
    spelled.join("|")
}

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
        let bit = match self {
            Capability::Observe => POLICY_OBSERVABLE,
            Capability::Intercept => POLICY_INTERCEPTABLE,
            Capability::Replace => POLICY_REPLACEABLE,
            Capability::SkipWithProof => POLICY_SKIPPABLE_WITH_PROOF,
        };
        (bit, policy_flag_name(bit))
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
        let bit = match self {
            ObserverPoint::Before => POINT_BEFORE,
            ObserverPoint::After => POINT_AFTER,
            ObserverPoint::AfterCommit => POINT_AFTER_COMMIT,
        };
        (bit, observer_point_name(bit))
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
            ProviderKind::Linker => (LinkPhase::Full.name(), Request::Replace),
            ProviderKind::ObjectMerge => (LinkPhase::ObjectMerge.name(), Request::Replace),
            ProviderKind::ImageVerifier => (LinkPhase::ImageVerify.name(), Request::Observe(ObserverPoint::After)),
            ProviderKind::Lto => (LinkPhase::LtoGenerate.name(), Request::Replace),
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
                policy_names(record)
            ),
        ));
    }
    Ok(record)
}
