//! The conformance runner: executes the cases generated from the declarations (as JSON vectors, see
//! `docs/conformance-format.md`) against this implementation — the link runtime's plugin registry and state
//! machine, its LTO provider registration, and the calling-convention planner.
//!
//! The generated Rust tests (`tests/generated.rs`) and the exported vectors go through the same
//! [`run_case`], so both check the same thing.

mod descriptor_cases;
mod phase_cases;
mod staging;
mod target_cases;
mod through_plugin;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

pub use neverc_codegen::conformance::{Case, CaseSet, Check, VECTOR_FORMAT};
use neverc_tables::{PhaseTables, TargetRecord};
pub use through_plugin::{GENERIC_PLUGIN_ID, run_case_through_plugin};

/// What a case runs against.
pub struct Environment {
    pub phase_tables: &'static PhaseTables,
    pub targets: Vec<&'static TargetRecord>,
    /// Objects and archives of a program that links; cases that run the link state machine link it.
    pub link_inputs: Vec<PathBuf>,
    /// A directory for link outputs.
    pub scratch: PathBuf,
}

/// The verdict on one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The case cannot be executed by this implementation; the reason says what is missing.
    NotApplicable(String),
    Failed(String),
}

/// Runs one case.
pub fn run_case(environment: &Environment, case: &Case) -> Outcome {
    if case.check.runs_link() && environment.link_inputs.is_empty() {
        return Outcome::NotApplicable("the case links a program, and no link inputs were given".to_string());
    }
    match &case.check {
        Check::Registration { .. }
        | Check::ObserverReadOnly { .. }
        | Check::InterceptWraps { .. }
        | Check::ReplaceRuns { .. }
        | Check::SealedGate { .. }
        | Check::SkipNeedsFreshProof { .. }
        | Check::RerunBudget { .. }
        | Check::MutationLowersState { .. } => phase_cases::run(environment, case),
        Check::DescriptorRegistration {
            descriptor,
            flags,
            callbacks,
            twice,
            expected,
            mentions,
        } => descriptor_cases::run(environment, descriptor, (*flags, callbacks, *twice), expected, mentions),
        Check::RegisterResolves { .. }
        | Check::ReservedSkipped { .. }
        | Check::SpecPlans { .. }
        | Check::ElfFacts { .. }
        | Check::RelocationResolves { .. } => target_cases::run(environment, &case.check),
    }
}

/// Counts of one run over case sets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub not_applicable: Vec<(String, String)>,
    pub failed: Vec<(String, String)>,
}

/// Runs every case of a set.
pub fn run_case_set(environment: &Environment, set: &CaseSet) -> Summary {
    summarize(set, |case| run_case(environment, case))
}

/// Runs every case of a set through the generic C plugin at `plugin` (see [`run_case_through_plugin`]).
pub fn run_case_set_through_plugin(environment: &Environment, set: &CaseSet, plugin: &Path) -> Summary {
    summarize(set, |case| run_case_through_plugin(environment, case, plugin))
}

fn summarize(set: &CaseSet, mut run: impl FnMut(&Case) -> Outcome) -> Summary {
    let mut summary = Summary::default();
    for case in &set.cases {
        match run(case) {
            Outcome::Passed => summary.passed += 1,
            Outcome::NotApplicable(reason) => summary.not_applicable.push((case.id.clone(), reason)),
            Outcome::Failed(reason) => summary.failed.push((case.id.clone(), reason)),
        }
    }
    summary
}

/// Why a vector file cannot be read.
#[derive(Debug)]
pub enum VectorFileError {
    /// The file system refused.
    Io(String),
    /// The file is not a vector file of this format.
    Format(String),
}

impl std::fmt::Display for VectorFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VectorFileError::Io(message) | VectorFileError::Format(message) => f.write_str(message),
        }
    }
}

/// Reads a vector file.
pub fn read_case_set(path: &Path) -> Result<CaseSet, VectorFileError> {
    let text = neverc_userfile::read_user_text(path, neverc_userfile::TEXT_LIMIT)
        .map_err(|error| VectorFileError::Io(error.to_string()))?;
    let set: CaseSet = serde_json::from_str(&text)
        .map_err(|error| VectorFileError::Format(format!("`{}` is not a vector file: {error}", path.display())))?;
    if set.format != VECTOR_FORMAT {
        return Err(VectorFileError::Format(format!(
            "`{}` has format `{}`; this runner reads `{VECTOR_FORMAT}`",
            path.display(),
            set.format
        )));
    }
    // A file without cases proves nothing, and a repeated id would let one verdict hide another.
    if set.cases.is_empty() {
        return Err(VectorFileError::Format(format!("`{}` holds no cases", path.display())));
    }
    let mut ids = std::collections::HashSet::new();
    if let Some(case) = set.cases.iter().find(|case| !ids.insert(case.id.as_str())) {
        return Err(VectorFileError::Format(format!(
            "`{}` holds case `{}` more than once",
            path.display(),
            case.id
        )));
    }
    Ok(set)
}

/// Builds the program the conformance cases link (`fixtures/build.sh`: the link fixtures' `basics` program
/// with one object as LLVM bitcode and one archive of bitcode members, so that linking runs the LTO phases
/// over real modules) under `root`, once per process, and returns its inputs in link order.
pub fn fixture_link_inputs(root: &Path) -> Result<Vec<PathBuf>, String> {
    static BUILT: OnceLock<Result<Vec<PathBuf>, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = root.join("conformance-fixtures");
            let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/build.sh");
            let status = std::process::Command::new("bash")
                .arg(&script)
                .arg(&out)
                .status()
                .map_err(|error| format!("cannot run `{}`: {error}", script.display()))?;
            if !status.success() {
                return Err(format!("`{}` failed: {status}", script.display()));
            }
            let dir = out.join("lto-basics");
            let inputs = std::fs::read_to_string(dir.join("inputs.txt"))
                .map_err(|error| format!("cannot read the fixture's inputs.txt: {error}"))?;
            Ok(inputs.split_whitespace().map(|name| dir.join(name)).collect())
        })
        .clone()
}

/// The environment of the generated tests: the bundled tables and targets, and the fixture program, built
/// under `root`.
fn bundled_environment(root: &Path) -> &'static Environment {
    static ENVIRONMENT: OnceLock<Environment> = OnceLock::new();
    ENVIRONMENT.get_or_init(|| {
        let link_inputs = fixture_link_inputs(root).unwrap_or_else(|error| panic!("conformance fixtures: {error}"));
        let scratch = root.join("conformance-links");
        if let Err(error) = std::fs::create_dir_all(&scratch) {
            panic!("cannot create `{}`: {error}", scratch.display());
        }
        Environment {
            phase_tables: &neverc_tables::BUNDLED_PHASES,
            targets: neverc_tables::BUNDLED_TARGETS.to_vec(),
            link_inputs,
            scratch,
        }
    })
}

/// The bundled cases this implementation cannot execute, one id per line with the reason after `#`. A case
/// that becomes executable, or one that is not applicable without being listed, fails its test, so the list
/// stays exact.
const NOT_APPLICABLE: &str = include_str!("../not_applicable.txt");

fn listed_as_not_applicable(id: &str) -> bool {
    NOT_APPLICABLE
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .any(|listed| listed == id)
}

/// Runs one case of the bundled declarations and panics unless it passes, or is listed in
/// `not_applicable.txt` and is indeed not applicable. Scratch files go under `root`. Used by the generated
/// tests.
pub fn check_case(root: &str, source: &str, case_json: &str) {
    let case: Case = match serde_json::from_str(case_json) {
        Ok(case) => case,
        Err(error) => panic!("{source}: not a case: {error}"),
    };
    let listed = listed_as_not_applicable(&case.id);
    match run_case(bundled_environment(Path::new(root)), &case) {
        Outcome::Passed if listed => panic!(
            "{source}: {} passes now; remove it from conformance/not_applicable.txt",
            case.id
        ),
        Outcome::Passed => {}
        Outcome::NotApplicable(reason) if listed => println!("{source}: {}: not applicable: {reason}", case.id),
        Outcome::NotApplicable(reason) => panic!(
            "{source}: {} is not applicable ({reason}); implement it, or list it in \
             conformance/not_applicable.txt with the reason",
            case.id
        ),
        Outcome::Failed(reason) => panic!("{source}: {}: {reason}", case.id),
    }
}
