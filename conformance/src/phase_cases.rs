//! Cases of the phase schema, run against the link runtime: registration through the plugin registry, and
//! observers, proofs, budgets and mutation classes on real links of the environment's program.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use neverc_link::context::{LinkContext, LinkOptions};
use neverc_link::execute::{Actor, LinkError, TraceEntry, run_link};
use neverc_link::frame::PhaseFrame;
use neverc_link::graph::EntityKind;
use neverc_link::plugin::{LinkPlugin, ObserverPoint, Registrar, Registry, Request};
use neverc_link::status::{Status, StatusCode};

use crate::staging::{DeclaredOperation, stage, stageable};
use crate::{Case, Check, Environment, Outcome};

/// A plugin made of a closure over the registrar.
struct ClosurePlugin<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>>(F);

impl<F: FnMut(&mut Registrar<'_>) -> Result<(), Status>> LinkPlugin for ClosurePlugin<F> {
    fn name(&self) -> &str {
        "conformance"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        (self.0)(registrar)
    }
}

pub(crate) fn parse_request(request: &str) -> Option<Request> {
    match request.split_once(':') {
        Some(("observe", point)) => ObserverPoint::from_schema_name(point).map(Request::Observe),
        Some(_) => None,
        None => match request {
            "intercept" => Some(Request::Intercept),
            "replace" => Some(Request::Replace),
            "skip_with_proof" => Some(Request::SkipWithProof),
            _ => None,
        },
    }
}

/// Registers `request` on `phase` the way a plugin author writes it, with a hook that does nothing.
fn register_request(registrar: &mut Registrar<'_>, phase: &str, request: Request) -> Result<(), Status> {
    match request {
        Request::Observe(point) => registrar.observe(phase, point, Box::new(|_| Ok(()))),
        Request::Intercept => registrar.intercept(phase, Box::new(|frame, next| next(frame))),
        Request::Replace => registrar.replace(phase, Box::new(|_| Ok(()))),
        Request::SkipWithProof => registrar.skip_with_proof(phase, Box::new(|_, _| None)),
    }
}

fn registration(environment: &Environment, phase: &str, request: Request) -> Result<(), Status> {
    Registry::default().register(
        environment.phase_tables,
        &mut ClosurePlugin(|registrar: &mut Registrar<'_>| register_request(registrar, phase, request)),
    )
}

/// Links the environment's program with one plugin; the output goes to a file named after the case.
fn link(
    environment: &Environment,
    case: &Case,
    register: impl FnMut(&mut Registrar<'_>) -> Result<(), Status>,
) -> Result<Result<Vec<TraceEntry>, LinkError>, String> {
    link_to(environment, &output_path(environment, case, ""), register)
}

/// Where a case's link writes: a file named after the case and `suffix`.
pub(crate) fn output_path(environment: &Environment, case: &Case, suffix: &str) -> PathBuf {
    let file: String = case
        .id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    environment.scratch.join(format!("{file}{suffix}.out"))
}

/// Links the environment's program with one plugin into `output`.
fn link_to(
    environment: &Environment,
    output: &Path,
    register: impl FnMut(&mut Registrar<'_>) -> Result<(), Status>,
) -> Result<Result<Vec<TraceEntry>, LinkError>, String> {
    link_plugin_to(environment, output, &mut ClosurePlugin(register))
}

/// Links the environment's program with `plugin` into `output`.
pub(crate) fn link_plugin_to(
    environment: &Environment,
    output: &Path,
    plugin: &mut dyn LinkPlugin,
) -> Result<Result<Vec<TraceEntry>, LinkError>, String> {
    let mut registry = Registry::default();
    registry
        .register(environment.phase_tables, plugin)
        .map_err(|status| format!("registration failed: {status}"))?;
    let mut context = LinkContext::new(LinkOptions::new(environment.link_inputs.clone(), output.to_path_buf()));
    Ok(run_link(&mut context, environment.phase_tables, &mut registry))
}

/// The machine a case names, if this runtime can run it: a machine the tables lack is a failure, one it
/// cannot execute is not applicable.
pub(crate) fn linkable_machine(
    environment: &Environment,
    machine: &str,
) -> Result<&'static neverc_tables::StateMachineRecord, Outcome> {
    let record = environment
        .phase_tables
        .state_machine(machine)
        .ok_or_else(|| Outcome::Failed(format!("the tables declare no state machine `{machine}`")))?;
    // The runtime executes the machine of the link domain (the one `run_link` finds), and no other.
    if record.domain != neverc_link::LinkPhase::DOMAIN_NAME {
        return Err(Outcome::NotApplicable(format!(
            "this runtime executes only the `{}` state machine, not `{machine}`",
            neverc_link::LinkPhase::DOMAIN_NAME
        )));
    }
    Ok(record)
}

/// The operation a mutation case stages, or why the case is not applicable here.
fn mutation_operation(
    environment: &Environment,
    machine: &str,
    class: &str,
    operations: &[String],
) -> Result<DeclaredOperation, Outcome> {
    classified(environment, machine, class, operations)?;
    stageable(operations).ok_or_else(|| {
        Outcome::NotApplicable(format!(
            "this runtime has no staging call for any operation of class `{class}` ({})",
            operations.join(", ")
        ))
    })
}

/// Checks that the tables put a case's operations in its class, on a machine this runtime executes.
pub(crate) fn classified(
    environment: &Environment,
    machine: &str,
    class: &str,
    operations: &[String],
) -> Result<(), Outcome> {
    let tables = linkable_machine(environment, machine)?;
    // The vector's operations must be the ones the tables classify as this class.
    for operation in operations {
        match tables.class_of_operation(operation) {
            Some(declared) if declared.name == class => {}
            Some(declared) => {
                return Err(Outcome::Failed(format!(
                    "the tables put {operation} in class `{}`, not `{class}`",
                    declared.name
                )));
            }
            None => return Err(Outcome::Failed(format!("the tables classify no operation {operation}"))),
        }
    }
    Ok(())
}

pub(crate) fn run(environment: &Environment, case: &Case) -> Outcome {
    match run_checked(environment, case) {
        Ok(outcome) => outcome,
        Err(message) => Outcome::Failed(message),
    }
}

fn run_checked(environment: &Environment, case: &Case) -> Result<Outcome, String> {
    match &case.check {
        Check::Registration {
            phase,
            request,
            allowed,
        } => {
            let parsed = parse_request(request).ok_or_else(|| format!("unknown request `{request}`"))?;
            Ok(registration_verdict(
                registration(environment, phase, parsed),
                (phase, request),
                *allowed,
            ))
        }
        Check::SealedGate { phase, machine } => sealed_gate(environment, case, phase, machine.as_deref()),
        Check::ObserverReadOnly { phase, point } => observer_read_only(environment, case, phase, point),
        Check::InterceptWraps {
            phase,
            machine,
            from,
            to,
        }
        | Check::ReplaceRuns {
            phase,
            machine,
            from,
            to,
        } => {
            if let Err(outcome) = linkable_machine(environment, machine) {
                return Ok(outcome);
            }
            if matches!(case.check, Check::InterceptWraps { .. }) {
                intercept_wraps(environment, case, phase, (from, to))
            } else {
                replace_runs(environment, case, phase, (from, to))
            }
        }
        Check::SkipNeedsFreshProof {
            phase,
            machine,
            proof_available,
            ..
        } => {
            if let Err(outcome) = linkable_machine(environment, machine) {
                return Ok(outcome);
            }
            skip_needs_fresh_proof(environment, case, phase, *proof_available)
        }
        Check::RerunBudget {
            phase,
            machine,
            choices,
            ..
        } => {
            let mut reasons = Vec::new();
            for choice in choices {
                match mutation_operation(environment, machine, &choice.class, &choice.operations) {
                    Ok(operation) => {
                        return rerun_budget(environment, case, phase, operation, &choice.fails_at, choice.runs);
                    }
                    Err(Outcome::NotApplicable(reason)) => reasons.push(reason),
                    Err(outcome) => return Ok(outcome),
                }
            }
            Ok(Outcome::NotApplicable(reasons.join("; ")))
        }
        Check::MutationLowersState {
            machine,
            class,
            operations,
            expected_state,
            at_phase,
            ..
        } => match mutation_operation(environment, machine, class, operations) {
            Ok(operation) => mutation_lowers_state(environment, case, at_phase, operation, expected_state),
            Err(outcome) => Ok(outcome),
        },
        Check::DescriptorRegistration { .. }
        | Check::RegisterResolves { .. }
        | Check::ReservedSkipped { .. }
        | Check::SpecPlans { .. }
        | Check::ElfFacts { .. }
        | Check::RelocationResolves { .. } => Err("not a phase-schema case".to_string()),
    }
}

/// The verdict on a registration case: the request is accepted exactly when the policy allows it, and
/// refused with POLICY_VIOLATION otherwise.
pub(crate) fn registration_verdict(
    result: Result<(), Status>,
    (phase, request): (&str, &str),
    allowed: bool,
) -> Outcome {
    match (result, allowed) {
        (Ok(()), true) => Outcome::Passed,
        (Err(status), false) if status.code == StatusCode::PolicyViolation => Outcome::Passed,
        (Ok(()), false) => Outcome::Failed(format!("{request} on `{phase}` was accepted; the policy refuses it")),
        (Err(status), _) => Outcome::Failed(format!("{request} on `{phase}`: {status}")),
    }
}

fn sealed_gate(environment: &Environment, case: &Case, phase: &str, machine: Option<&str>) -> Result<Outcome, String> {
    for request in [Request::Intercept, Request::Replace, Request::SkipWithProof] {
        match registration(environment, phase, request) {
            Err(status) if status.code == StatusCode::PolicyViolation => {}
            Err(status) => return Err(format!("{request:?} on sealed `{phase}`: {status}")),
            Ok(()) => return Err(format!("{request:?} on sealed `{phase}` was accepted")),
        }
    }
    registration(environment, phase, Request::Observe(ObserverPoint::Before))
        .map_err(|status| format!("observing sealed `{phase}` was refused: {status}"))?;
    sealed_gate_runs_built_in(environment, case, phase, machine)
}

/// Checks that a sealed gate runs as the built-in in a link of its machine (if the case names one).
pub(crate) fn sealed_gate_runs_built_in(
    environment: &Environment,
    case: &Case,
    phase: &str,
    machine: Option<&str>,
) -> Result<Outcome, String> {
    let Some(machine) = machine else {
        return Ok(Outcome::Passed);
    };
    if let Err(outcome) = linkable_machine(environment, machine) {
        return Ok(outcome);
    }
    let trace = link(environment, case, |_| Ok(()))?.map_err(|error| format!("the link failed: {error}"))?;
    match trace.iter().find(|entry| entry.phase == phase) {
        Some(entry) if entry.actor == Actor::Builtin => Ok(Outcome::Passed),
        Some(entry) => Err(format!("sealed `{phase}` ran as {:?}, not built in", entry.actor)),
        None => Err(format!("sealed `{phase}` did not run")),
    }
}

fn observer_read_only(environment: &Environment, case: &Case, phase: &str, point: &str) -> Result<Outcome, String> {
    let point = ObserverPoint::from_schema_name(point).ok_or_else(|| format!("unknown point `{point}`"))?;
    let seen: Rc<RefCell<Option<Result<(), Status>>>> = Rc::new(RefCell::new(None));
    let record = Rc::clone(&seen);
    let result = link(environment, case, move |registrar| {
        let record = Rc::clone(&record);
        registrar.observe(
            phase,
            point,
            Box::new(move |frame| {
                // Neither a mutation nor a published product: either must be refused.
                let attempt = match frame.begin_mutation() {
                    Ok(_) => Ok(()),
                    Err(status) if status.code == StatusCode::PolicyViolation => {
                        match frame.publish_section_bytes(Vec::new()) {
                            Ok(()) => Ok(()),
                            Err(publish) if publish.code == StatusCode::PolicyViolation => Err(status),
                            Err(publish) => Err(publish),
                        }
                    }
                    Err(status) => Err(status),
                };
                record.borrow_mut().get_or_insert(attempt);
                Ok(())
            }),
        )
    })?;
    result.map_err(|error| format!("the link failed: {error}"))?;
    let attempt = seen.borrow_mut().take();
    match attempt {
        None => Err(format!("the observer of `{phase}` was never called")),
        Some(Ok(())) => Err(format!(
            "an observer of `{phase}` could begin a mutation or publish a product"
        )),
        Some(Err(status)) if status.code == StatusCode::PolicyViolation => Ok(Outcome::Passed),
        Some(Err(status)) => Err(format!("mutating in an observer of `{phase}` gave {status}")),
    }
}

/// Links with a skipper on `phase` that answers with `answer(given proof)`, and an interceptor that records
/// whether the phase's work ran.
/// What a skip request answers with.
#[derive(Clone, Copy)]
pub(crate) enum Answer {
    /// The proof it was offered.
    Fresh,
    /// The offered proof from a later generation (as if taken after a commit that has not happened).
    LaterGeneration,
    /// The offered proof with other inputs (as if cached from another link).
    OtherInputs,
}

fn link_with_skipper(
    environment: &Environment,
    case: &Case,
    phase: &str,
    answer: Answer,
) -> Result<(bool, bool), String> {
    let ran = Rc::new(Cell::new(false));
    let offered = Rc::new(Cell::new(false));
    let (ran_flag, offered_flag) = (Rc::clone(&ran), Rc::clone(&offered));
    // The link's own result does not matter: a phase skipped without publishing its product may make later
    // phases fail. What matters is whether the work ran.
    let _ = link(environment, case, move |registrar| {
        let offered_flag = Rc::clone(&offered_flag);
        registrar.skip_with_proof(
            phase,
            Box::new(move |_, given| {
                offered_flag.set(given.is_some());
                given.map(|mut proof| {
                    match answer {
                        Answer::Fresh => {}
                        Answer::LaterGeneration => proof.generation = proof.generation.wrapping_add(1),
                        Answer::OtherInputs => proof.semantic_digest[0] ^= 1,
                    }
                    proof
                })
            }),
        )?;
        let ran_flag = Rc::clone(&ran_flag);
        registrar.intercept(
            phase,
            Box::new(move |frame, next| {
                ran_flag.set(true);
                next(frame)
            }),
        )
    })?;
    Ok((ran.get(), offered.get()))
}

fn skip_needs_fresh_proof(
    environment: &Environment,
    case: &Case,
    phase: &str,
    proof_available: bool,
) -> Result<Outcome, String> {
    fresh_proof_verdict(phase, proof_available, |answer| {
        link_with_skipper(environment, case, phase, answer)
    })
}

/// The verdict on a skip case from links with a skipper answering in each way (`link` returns whether the
/// phase's work ran and whether a proof was offered): only the offered proof skips, and a proof is offered
/// exactly when the machine's proof state says.
pub(crate) fn fresh_proof_verdict(
    phase: &str,
    proof_available: bool,
    mut link: impl FnMut(Answer) -> Result<(bool, bool), String>,
) -> Result<Outcome, String> {
    let (ran, offered) = link(Answer::LaterGeneration)?;
    if !ran {
        return Err(format!("`{phase}` was skipped with a proof of a later generation"));
    }
    let (ran, _) = link(Answer::OtherInputs)?;
    if !ran {
        return Err(format!("`{phase}` was skipped with a proof of other inputs"));
    }
    if offered != proof_available {
        return Err(format!(
            "a proof was {}offered before `{phase}`; the declared proof state says it should {}be",
            if offered { "" } else { "not " },
            if proof_available { "" } else { "not " }
        ));
    }
    if proof_available {
        let (ran, _) = link(Answer::Fresh)?;
        if ran {
            return Err(format!("`{phase}` ran although the skipper held the current proof"));
        }
    }
    Ok(Outcome::Passed)
}

fn rerun_budget(
    environment: &Environment,
    case: &Case,
    phase: &str,
    operation: DeclaredOperation,
    fails_at: &str,
    expected_runs: u32,
) -> Result<Outcome, String> {
    let runs = Rc::new(Cell::new(0u32));
    let counter = Rc::clone(&runs);
    let result = link(environment, case, move |registrar| {
        let counter = Rc::clone(&counter);
        registrar.intercept(
            phase,
            Box::new(move |frame, _next| {
                counter.set(counter.get() + 1);
                let mutation = frame.begin_mutation()?;
                stage(frame, mutation, operation)?;
                frame.commit_mutation(mutation)
            }),
        )
    })?;
    budget_verdict(result, phase, (fails_at, expected_runs), runs.get())
}

/// The verdict on a rerun budget case: the link stopped because `fails_at` did not converge, after the
/// phase ran `expected_runs` times.
pub(crate) fn budget_verdict(
    result: Result<Vec<TraceEntry>, LinkError>,
    phase: &str,
    (fails_at, expected_runs): (&str, u32),
    runs: u32,
) -> Result<Outcome, String> {
    match result {
        Err(LinkError::DidNotConverge(failed)) if failed == fails_at && runs == expected_runs => Ok(Outcome::Passed),
        Err(LinkError::DidNotConverge(failed)) => Err(format!(
            "`{failed}` did not converge after {runs} run(s) of `{phase}`; the declared budgets say `{fails_at}` \
             after {expected_runs}"
        )),
        Err(error) => Err(format!("the link failed otherwise: {error}")),
        Ok(_) => Err(format!("`{phase}` ran {runs} time(s) and the link converged")),
    }
}

fn mutation_lowers_state(
    environment: &Environment,
    case: &Case,
    at_phase: &str,
    operation: DeclaredOperation,
    expected_state: &str,
) -> Result<Outcome, String> {
    let state_after: Rc<RefCell<Option<Result<&'static str, Status>>>> = Rc::new(RefCell::new(None));
    let record = Rc::clone(&state_after);
    let result = link(environment, case, move |registrar| {
        let record = Rc::clone(&record);
        registrar.intercept(
            at_phase,
            Box::new(move |frame, next| {
                if record.borrow().is_some() {
                    return next(frame);
                }
                let committed = frame
                    .begin_mutation()
                    .and_then(|mutation| stage(frame, mutation, operation).map(|()| mutation))
                    .and_then(|mutation| frame.commit_mutation(mutation))
                    .map(|()| frame.state());
                let failed = committed.clone().err();
                *record.borrow_mut() = Some(committed);
                failed.map_or(Ok(()), Err)
            }),
        )
    })?;
    let after = state_after.borrow_mut().take();
    match after {
        None => Err(format!("`{at_phase}` never ran")),
        Some(Err(status)) => Err(format!("committing {}: {status}", case.id)),
        Some(Ok(state)) if state != expected_state => Err(format!(
            "the commit left the state at {state}; the declared class says {expected_state}"
        )),
        Some(Ok(_)) => rerun_from(result, at_phase, expected_state),
    }
}

/// Checks that after a commit in `at_phase` the link ran on from `expected_state`.
pub(crate) fn rerun_from(
    result: Result<Vec<TraceEntry>, LinkError>,
    at_phase: &str,
    expected_state: &str,
) -> Result<Outcome, String> {
    let trace = result.map_err(|error| format!("the link failed after the commit: {error}"))?;
    let position = trace.iter().position(|entry| entry.phase == at_phase);
    let next = position.and_then(|position| trace.get(position + 1));
    match next {
        Some(entry) if entry.state_before == expected_state => Ok(Outcome::Passed),
        Some(entry) => Err(format!(
            "after the commit `{}` ran from {}, not from {expected_state}",
            entry.phase, entry.state_before
        )),
        None => Err(format!("nothing ran after the commit in `{at_phase}`")),
    }
}

/// Begins a mutation and abandons it: what a hook that may mutate can always do, changing nothing. Returns
/// the state the frame is in.
fn may_mutate(frame: &mut PhaseFrame<'_>) -> Result<&'static str, Status> {
    let mutation = frame.begin_mutation()?;
    frame.abandon_mutation(mutation)?;
    Ok(frame.state())
}

/// Checks that a hook was called once, in state `from`, and could begin a mutation.
pub(crate) fn called_once(calls: &[Result<&str, Status>], hook: &str, phase: &str, from: &str) -> Result<(), String> {
    match calls {
        [Ok(state)] if *state == from => Ok(()),
        [Ok(state)] => Err(format!("the {hook} of `{phase}` ran in state {state}, not {from}")),
        [Err(status)] => Err(format!("the {hook} of `{phase}` could not mutate: {status}")),
        calls => Err(format!("the {hook} of `{phase}` ran {} times, not once", calls.len())),
    }
}

/// The phase's entry in a link's trace, checked to have left `from` for `to`.
pub(crate) fn traced<'t>(
    trace: &'t [TraceEntry],
    phase: &str,
    (from, to): (&str, &str),
) -> Result<&'t TraceEntry, String> {
    let entry = trace
        .iter()
        .find(|entry| entry.phase == phase)
        .ok_or_else(|| format!("`{phase}` is not in the link's trace"))?;
    if (entry.state_before, entry.state_after) != (from, to) {
        return Err(format!(
            "`{phase}` went from {} to {}; the machine declares {from} to {to}",
            entry.state_before, entry.state_after
        ));
    }
    Ok(entry)
}

fn intercept_wraps(
    environment: &Environment,
    case: &Case,
    phase: &str,
    states: (&str, &str),
) -> Result<Outcome, String> {
    let plain = output_path(environment, case, ".plain");
    link_to(environment, &plain, |_| Ok(()))?.map_err(|error| format!("the link without a plugin failed: {error}"))?;
    let calls: Rc<RefCell<Vec<Result<&'static str, Status>>>> = Rc::default();
    let record = Rc::clone(&calls);
    let wrapped = output_path(environment, case, "");
    let trace = link_to(environment, &wrapped, move |registrar| {
        let record = Rc::clone(&record);
        registrar.intercept(
            phase,
            Box::new(move |frame, next| {
                record.borrow_mut().push(may_mutate(frame));
                next(frame)
            }),
        )
    })?
    .map_err(|error| format!("the link with an interceptor of `{phase}` failed: {error}"))?;
    let calls = calls.borrow();
    called_once(&calls, "interceptor", phase, states.0)?;
    let entry = traced(&trace, phase, states)?;
    if !entry.intercepted || entry.actor != Actor::Builtin {
        return Err(format!(
            "the trace says `{phase}` ran as {:?} (intercepted: {}), not as the intercepted built-in",
            entry.actor, entry.intercepted
        ));
    }
    let read = |path: &Path| std::fs::read(path).map_err(|error| format!("cannot read `{}`: {error}", path.display()));
    if read(&plain)? != read(&wrapped)? {
        return Err(format!(
            "an interceptor of `{phase}` that only continues changed the linked bytes"
        ));
    }
    Ok(Outcome::Passed)
}

/// The number of entities of every kind, as an observer saw them.
pub(crate) type EntityCounts = Vec<(EntityKind, usize)>;

/// The number of entities of every kind an observer sees.
fn entity_counts(frame: &PhaseFrame<'_>) -> EntityCounts {
    EntityKind::ALL
        .iter()
        .map(|kind| (*kind, frame.graph().count(*kind)))
        .collect()
}

/// The kinds whose counts differ, as `Kind before → after`.
pub(crate) fn count_changes(before: &[(EntityKind, usize)], after: &[(EntityKind, usize)]) -> String {
    before
        .iter()
        .zip(after)
        .filter(|(before, after)| before.1 != after.1)
        .map(|((kind, before), (_, after))| format!("{kind:?} {before} → {after}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn replace_runs(environment: &Environment, case: &Case, phase: &str, states: (&str, &str)) -> Result<Outcome, String> {
    let calls: Rc<RefCell<Vec<Result<&'static str, Status>>>> = Rc::default();
    let counts: Rc<RefCell<Vec<EntityCounts>>> = Rc::default();
    let (record, seen) = (Rc::clone(&calls), Rc::clone(&counts));
    let observed = environment.phase_tables.phase_by_name(phase).is_some_and(|record| {
        [ObserverPoint::Before, ObserverPoint::After]
            .iter()
            .all(|point| record.offers_point(point.point().0))
    });
    // The link's own result does not matter: later phases may miss the product a replacement that does
    // nothing did not publish. What matters is what ran.
    let result = link(environment, case, move |registrar| {
        let record = Rc::clone(&record);
        registrar.replace(
            phase,
            Box::new(move |frame| {
                record.borrow_mut().push(may_mutate(frame));
                Ok(())
            }),
        )?;
        if observed {
            for point in [ObserverPoint::Before, ObserverPoint::After] {
                let seen = Rc::clone(&seen);
                registrar.observe(
                    phase,
                    point,
                    Box::new(move |frame| {
                        seen.borrow_mut().push(entity_counts(frame));
                        Ok(())
                    }),
                )?;
            }
        }
        Ok(())
    })?;
    let calls = calls.borrow();
    called_once(&calls, "replacement", phase, states.0)?;
    if let [before, after] = counts.borrow().as_slice()
        && before != after
    {
        return Err(format!(
            "the entities changed across `{phase}` although its replacement did nothing: the built-in work ran \
             ({})",
            count_changes(before, after)
        ));
    }
    let trace = match result {
        Ok(trace) => trace,
        // Without the trace, what ran is known from the calls and the counts above.
        Err(LinkError::Phase(_) | LinkError::Plugin { .. }) => return Ok(Outcome::Passed),
        Err(error) => return Err(format!("the link failed otherwise: {error}")),
    };
    let entry = traced(&trace, phase, states)?;
    if entry.actor != Actor::Provider {
        return Err(format!(
            "the trace says `{phase}` ran as {:?}, not as the replacement",
            entry.actor
        ));
    }
    Ok(Outcome::Passed)
}
