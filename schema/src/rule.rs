//! Every rule a declaration can break, as one enum: checks name the rule they report by its variant, and
//! every consumer (diagnostics, the audit's invariant list, JSON output) sees the same stable code.

use std::fmt;

/// A validation rule. Its [`code`](Rule::code) is the short stable name shown in diagnostics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// `abi-duplicate-name`.
    AbiDuplicateName,
    /// `abi-duplicate-value`.
    AbiDuplicateValue,
    /// `abi-header`.
    AbiHeader,
    /// `abi-layout`.
    AbiLayout,
    /// `abi-rule`.
    AbiRule,
    /// `abi-source`.
    AbiSource,
    /// `abi-sret`.
    AbiSret,
    /// `abi-stack`.
    AbiStack,
    /// `abi-type`.
    AbiType,
    /// `abi-unknown-name`.
    AbiUnknownName,
    /// `abi-width`.
    AbiWidth,
    /// `artifact-chain`.
    ArtifactChain,
    /// `commit-points`.
    CommitPoints,
    /// `duplicate-class`.
    DuplicateClass,
    /// `duplicate-dwarf-number`.
    DuplicateDwarfNumber,
    /// `duplicate-emulation`.
    DuplicateEmulation,
    /// `duplicate-erratum`.
    DuplicateErratum,
    /// `duplicate-family`.
    DuplicateFamily,
    /// `duplicate-flag`.
    DuplicateFlag,
    /// `duplicate-id`.
    DuplicateId,
    /// `duplicate-key`.
    DuplicateKey,
    /// `duplicate-mutation-class`.
    DuplicateMutationClass,
    /// `duplicate-name`.
    DuplicateName,
    /// `duplicate-operation`.
    DuplicateOperation,
    /// `duplicate-register`.
    DuplicateRegister,
    /// `duplicate-register-name`.
    DuplicateRegisterName,
    /// `duplicate-register-number`.
    DuplicateRegisterNumber,
    /// `duplicate-relocation-name`.
    DuplicateRelocationName,
    /// `duplicate-relocation-number`.
    DuplicateRelocationNumber,
    /// `duplicate-reserved`.
    DuplicateReserved,
    /// `duplicate-state`.
    DuplicateState,
    /// `duplicate-symbol`.
    DuplicateSymbol,
    /// `duplicate-target`.
    DuplicateTarget,
    /// `duplicate-transition`.
    DuplicateTransition,
    /// `elf`.
    Elf,
    /// `event-policy`.
    EventPolicy,
    /// `family-overlap`.
    FamilyOverlap,
    /// `family-range`.
    FamilyRange,
    /// `id-family`.
    IdFamily,
    /// `identity`.
    Identity,
    /// `internal-schema`.
    InternalSchema,
    /// `json-syntax`.
    JsonSyntax,
    /// `lowering`.
    Lowering,
    /// `missing-key`.
    MissingKey,
    /// `mutation-class-state`.
    MutationClassState,
    /// `name-domain`.
    NameDomain,
    /// `page-size`.
    PageSize,
    /// `policy-observable`.
    PolicyObservable,
    /// `register-class`.
    RegisterClass,
    /// `register-number`.
    RegisterNumber,
    /// `relocation-field`.
    RelocationField,
    /// `relocation-format`.
    RelocationFormat,
    /// `relocation-kind`.
    RelocationKind,
    /// `reserved-register`.
    ReservedRegister,
    /// `schema`.
    Schema,
    /// `schema-digest`.
    SchemaDigest,
    /// `sealed-gate`.
    SealedGate,
    /// `skippable-kind`.
    SkippableKind,
    /// `spec`.
    Spec,
    /// `state-name`.
    StateName,
    /// `state-reached-twice`.
    StateReachedTwice,
    /// `state-unreached`.
    StateUnreached,
    /// `target-file-name`.
    TargetFileName,
    /// `tls-variant`.
    TlsVariant,
    /// `toml-float`.
    TomlFloat,
    /// `toml-integer`.
    TomlInteger,
    /// `toml-syntax`.
    TomlSyntax,
    /// `transition-phase`.
    TransitionPhase,
    /// `transition-step`.
    TransitionStep,
    /// `unknown-class`.
    UnknownClass,
    /// `unknown-key`.
    UnknownKey,
    /// `unknown-phase`.
    UnknownPhase,
    /// `unknown-register`.
    UnknownRegister,
    /// `unknown-state`.
    UnknownState,
    /// `verifier-domain`.
    VerifierDomain,
    /// `width`.
    Width,
}

impl Rule {
    /// Every rule.
    pub const ALL: [Rule; 76] = [
        Rule::AbiDuplicateName,
        Rule::AbiDuplicateValue,
        Rule::AbiHeader,
        Rule::AbiLayout,
        Rule::AbiRule,
        Rule::AbiSource,
        Rule::AbiSret,
        Rule::AbiStack,
        Rule::AbiType,
        Rule::AbiUnknownName,
        Rule::AbiWidth,
        Rule::ArtifactChain,
        Rule::CommitPoints,
        Rule::DuplicateClass,
        Rule::DuplicateDwarfNumber,
        Rule::DuplicateEmulation,
        Rule::DuplicateErratum,
        Rule::DuplicateFamily,
        Rule::DuplicateFlag,
        Rule::DuplicateId,
        Rule::DuplicateKey,
        Rule::DuplicateMutationClass,
        Rule::DuplicateName,
        Rule::DuplicateOperation,
        Rule::DuplicateRegister,
        Rule::DuplicateRegisterName,
        Rule::DuplicateRegisterNumber,
        Rule::DuplicateRelocationName,
        Rule::DuplicateRelocationNumber,
        Rule::DuplicateReserved,
        Rule::DuplicateState,
        Rule::DuplicateSymbol,
        Rule::DuplicateTarget,
        Rule::DuplicateTransition,
        Rule::Elf,
        Rule::EventPolicy,
        Rule::FamilyOverlap,
        Rule::FamilyRange,
        Rule::IdFamily,
        Rule::Identity,
        Rule::InternalSchema,
        Rule::JsonSyntax,
        Rule::Lowering,
        Rule::MissingKey,
        Rule::MutationClassState,
        Rule::NameDomain,
        Rule::PageSize,
        Rule::PolicyObservable,
        Rule::RegisterClass,
        Rule::RegisterNumber,
        Rule::RelocationField,
        Rule::RelocationFormat,
        Rule::RelocationKind,
        Rule::ReservedRegister,
        Rule::Schema,
        Rule::SchemaDigest,
        Rule::SealedGate,
        Rule::SkippableKind,
        Rule::Spec,
        Rule::StateName,
        Rule::StateReachedTwice,
        Rule::StateUnreached,
        Rule::TargetFileName,
        Rule::TlsVariant,
        Rule::TomlFloat,
        Rule::TomlInteger,
        Rule::TomlSyntax,
        Rule::TransitionPhase,
        Rule::TransitionStep,
        Rule::UnknownClass,
        Rule::UnknownKey,
        Rule::UnknownPhase,
        Rule::UnknownRegister,
        Rule::UnknownState,
        Rule::VerifierDomain,
        Rule::Width,
    ];

    /// The rule's stable code (`duplicate-id`, `unknown-key`).
    pub const fn code(self) -> &'static str {
        match self {
            Rule::AbiDuplicateName => "abi-duplicate-name",
            Rule::AbiDuplicateValue => "abi-duplicate-value",
            Rule::AbiHeader => "abi-header",
            Rule::AbiLayout => "abi-layout",
            Rule::AbiRule => "abi-rule",
            Rule::AbiSource => "abi-source",
            Rule::AbiSret => "abi-sret",
            Rule::AbiStack => "abi-stack",
            Rule::AbiType => "abi-type",
            Rule::AbiUnknownName => "abi-unknown-name",
            Rule::AbiWidth => "abi-width",
            Rule::ArtifactChain => "artifact-chain",
            Rule::CommitPoints => "commit-points",
            Rule::DuplicateClass => "duplicate-class",
            Rule::DuplicateDwarfNumber => "duplicate-dwarf-number",
            Rule::DuplicateEmulation => "duplicate-emulation",
            Rule::DuplicateErratum => "duplicate-erratum",
            Rule::DuplicateFamily => "duplicate-family",
            Rule::DuplicateFlag => "duplicate-flag",
            Rule::DuplicateId => "duplicate-id",
            Rule::DuplicateKey => "duplicate-key",
            Rule::DuplicateMutationClass => "duplicate-mutation-class",
            Rule::DuplicateName => "duplicate-name",
            Rule::DuplicateOperation => "duplicate-operation",
            Rule::DuplicateRegister => "duplicate-register",
            Rule::DuplicateRegisterName => "duplicate-register-name",
            Rule::DuplicateRegisterNumber => "duplicate-register-number",
            Rule::DuplicateRelocationName => "duplicate-relocation-name",
            Rule::DuplicateRelocationNumber => "duplicate-relocation-number",
            Rule::DuplicateReserved => "duplicate-reserved",
            Rule::DuplicateState => "duplicate-state",
            Rule::DuplicateSymbol => "duplicate-symbol",
            Rule::DuplicateTarget => "duplicate-target",
            Rule::DuplicateTransition => "duplicate-transition",
            Rule::Elf => "elf",
            Rule::EventPolicy => "event-policy",
            Rule::FamilyOverlap => "family-overlap",
            Rule::FamilyRange => "family-range",
            Rule::IdFamily => "id-family",
            Rule::Identity => "identity",
            Rule::InternalSchema => "internal-schema",
            Rule::JsonSyntax => "json-syntax",
            Rule::Lowering => "lowering",
            Rule::MissingKey => "missing-key",
            Rule::MutationClassState => "mutation-class-state",
            Rule::NameDomain => "name-domain",
            Rule::PageSize => "page-size",
            Rule::PolicyObservable => "policy-observable",
            Rule::RegisterClass => "register-class",
            Rule::RegisterNumber => "register-number",
            Rule::RelocationField => "relocation-field",
            Rule::RelocationFormat => "relocation-format",
            Rule::RelocationKind => "relocation-kind",
            Rule::ReservedRegister => "reserved-register",
            Rule::Schema => "schema",
            Rule::SchemaDigest => "schema-digest",
            Rule::SealedGate => "sealed-gate",
            Rule::SkippableKind => "skippable-kind",
            Rule::Spec => "spec",
            Rule::StateName => "state-name",
            Rule::StateReachedTwice => "state-reached-twice",
            Rule::StateUnreached => "state-unreached",
            Rule::TargetFileName => "target-file-name",
            Rule::TlsVariant => "tls-variant",
            Rule::TomlFloat => "toml-float",
            Rule::TomlInteger => "toml-integer",
            Rule::TomlSyntax => "toml-syntax",
            Rule::TransitionPhase => "transition-phase",
            Rule::TransitionStep => "transition-step",
            Rule::UnknownClass => "unknown-class",
            Rule::UnknownKey => "unknown-key",
            Rule::UnknownPhase => "unknown-phase",
            Rule::UnknownRegister => "unknown-register",
            Rule::UnknownState => "unknown-state",
            Rule::VerifierDomain => "verifier-domain",
            Rule::Width => "width",
        }
    }

    /// The rule with code `code`.
    pub fn from_code(code: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|rule| rule.code() == code)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl PartialEq<str> for Rule {
    fn eq(&self, other: &str) -> bool {
        self.code() == other
    }
}

impl PartialEq<&str> for Rule {
    fn eq(&self, other: &&str) -> bool {
        self.code() == *other
    }
}

impl serde::Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}
