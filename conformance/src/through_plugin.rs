//! Running the cases a plugin can ask for through a plugin written in C: a generic plugin
//! (`runtime/plugin-host/tests/fixtures/conform.c`) is loaded for each case with arguments that say what to ask the
//! host for and what its callbacks do, and reports every answer the host gave it. The case is judged from
//! those reports with the same verdicts as the Rust runner's, so a C plugin and a Rust plugin are shown to
//! get the same answers from the host.
//!
//! The target cases (registers, relocations, ELF facts, plans) ask nothing of a plugin: no ABI slot answers
//! them, and they are not applicable here.

use std::path::Path;

use neverc_link::execute::{LinkError, TraceEntry};
use neverc_link::graph::EntityKind;
use neverc_link::lto::ProviderFlags;
use neverc_link::plugin::{ObserverPoint, Registry};
use neverc_link::status::{Status, StatusCode};
use neverc_plugin_host::{CPlugin, Descriptor, PluginArgument, load, register_dry_run};

use crate::descriptor_cases::descriptor_verdict;
use crate::phase_cases::{
    Answer, EntityCounts, budget_verdict, called_once, classified, count_changes, fresh_proof_verdict, link_plugin_to,
    linkable_machine, output_path, parse_request, registration_verdict, rerun_from, sealed_gate_runs_built_in, traced,
};
use crate::{Case, Check, Environment, Outcome};

/// The generic plugin's id: its arguments are addressed to it.
pub const GENERIC_PLUGIN_ID: &str = "org.neverc.conformance";

/// One thing the plugin asks for: a request on a phase, and what its callback does.
struct Ask<'a> {
    phase: &'a str,
    request: &'a str,
    action: &'a str,
}

/// What one case's plugin was told and what it reported.
struct Run<'p> {
    plugin: &'p Path,
    arguments: Vec<PluginArgument>,
}

impl<'p> Run<'p> {
    fn new(environment: &Environment, plugin: &'p Path, asks: &[Ask<'_>]) -> Result<Run<'p>, String> {
        let mut arguments = Vec::new();
        for ask in asks {
            let record = environment
                .phase_tables
                .phase_by_name(ask.phase)
                .ok_or_else(|| format!("the tables declare no phase `{}`", ask.phase))?;
            arguments.push(argument(
                "ask",
                format!(
                    "{:#x}:{:#x},{},{}",
                    record.id.high, record.id.low, ask.request, ask.action
                ),
            ));
        }
        Ok(Run { plugin, arguments })
    }

    fn load(&self) -> Result<CPlugin, String> {
        load(self.plugin, &self.arguments)
            .map(CPlugin::new)
            .map_err(|error| error.to_string())
    }

    /// Registers the plugin with a live registry, without linking.
    fn register(&self, environment: &Environment) -> Result<Reports, String> {
        let mut plugin = self.load()?;
        Registry::default()
            .register(environment.phase_tables, &mut plugin)
            .map_err(|status| format!("the plugin's registration failed: {status}"))?;
        Ok(Reports::of(&plugin))
    }

    /// Links the environment's program with the plugin into the case's output named with `suffix`.
    fn link(
        &self,
        environment: &Environment,
        case: &Case,
        suffix: &str,
    ) -> Result<(Reports, Result<Vec<TraceEntry>, LinkError>), String> {
        let mut plugin = self.load()?;
        let result = link_plugin_to(environment, &output_path(environment, case, suffix), &mut plugin)?;
        Ok((Reports::of(&plugin), result))
    }
}

fn argument(name: &str, value: String) -> PluginArgument {
    PluginArgument {
        plugin: GENERIC_PLUGIN_ID.to_string(),
        name: name.to_string(),
        value: Some(value),
    }
}

/// The plugin's reports, each split into words.
struct Reports(Vec<Vec<String>>);

impl Reports {
    fn of(plugin: &CPlugin) -> Reports {
        Reports(
            plugin
                .reports()
                .into_iter()
                .map(|(_, line)| line.split_whitespace().map(str::to_string).collect())
                .collect(),
        )
    }

    /// The reports `word` of ask `index`, without those two words.
    fn of_ask<'r>(&'r self, word: &'r str, index: usize) -> impl Iterator<Item = &'r [String]> + 'r {
        let index = index.to_string();
        self.0
            .iter()
            .filter(move |words| words.len() >= 2 && words[0] == word && words[1] == index)
            .map(|words| &words[2..])
    }

    /// The status codes reported as `word` for ask `index`, as the host's results.
    fn results(&self, word: &str, index: usize) -> Vec<Result<(), Status>> {
        self.of_ask(word, index)
            .map(|words| {
                let code = words.first().and_then(|code| code.parse::<i32>().ok()).unwrap_or(-1);
                result_of(code)
            })
            .collect()
    }

    /// The states a hook reported after its change (`state I N`, or `error I CODE`), in order.
    fn states(&self, environment: &Environment, machine: &str, index: usize) -> Vec<Result<&'static str, Status>> {
        let names = environment
            .phase_tables
            .state_machine(machine)
            .map(|record| record.states)
            .unwrap_or_default();
        let index = index.to_string();
        self.0
            .iter()
            .filter(|words| words.len() == 3 && words[1] == index)
            .filter_map(|words| {
                let number = words[2].parse::<usize>().ok();
                match words[0].as_str() {
                    "state" => Some(number.and_then(|number| names.get(number).copied()).ok_or_else(|| {
                        Status::new(StatusCode::InvalidState, format!("state number {} is none", words[2]))
                    })),
                    "error" => Some(Err(match result_of(words[2].parse().unwrap_or(-1)) {
                        Err(status) => status,
                        Ok(()) => Status::new(StatusCode::InvalidState, "an error reported as OK"),
                    })),
                    _ => None,
                }
            })
            .collect()
    }

    fn count(&self, word: &str, index: usize) -> usize {
        self.of_ask(word, index).count()
    }
}

/// A status code a plugin reported as the runtime's result.
fn result_of(code: i32) -> Result<(), Status> {
    match StatusCode::from_raw(code) {
        _ if code == 0 => Ok(()),
        Some(code) => Err(Status::new(code, "as the plugin reported it")),
        None => Err(Status::new(
            StatusCode::PluginFailure,
            format!("the plugin reported the undeclared code {code}"),
        )),
    }
}

/// The one result reported for ask `index`, or why there is not exactly one.
fn single(results: Vec<Result<(), Status>>, what: &str) -> Result<Result<(), Status>, String> {
    match <[_; 1]>::try_from(results) {
        Ok([result]) => Ok(result),
        Err(results) => Err(format!(
            "the plugin reported {} answer(s) to {what}, not one",
            results.len()
        )),
    }
}

/// Runs one case through the C plugin at `plugin`.
pub fn run_case_through_plugin(environment: &Environment, case: &Case, plugin: &Path) -> Outcome {
    if case.check.runs_link() && environment.link_inputs.is_empty() {
        return Outcome::NotApplicable("the case links a program, and no link inputs were given".to_string());
    }
    match run_checked(environment, case, plugin) {
        Ok(outcome) => outcome,
        Err(message) => Outcome::Failed(message),
    }
}

fn run_checked(environment: &Environment, case: &Case, plugin: &Path) -> Result<Outcome, String> {
    match &case.check {
        Check::Registration {
            phase,
            request,
            allowed,
        } => {
            parse_request(request).ok_or_else(|| format!("unknown request `{request}`"))?;
            let reports = Run::new(
                environment,
                plugin,
                &[Ask {
                    phase,
                    request,
                    action: "none",
                }],
            )?
            .register(environment)?;
            let answer = single(reports.results("answer", 0), request)?;
            Ok(registration_verdict(answer, (phase, request), *allowed))
        }
        Check::SealedGate { phase, machine } => {
            let requests = ["intercept", "replace", "skip_with_proof", "observe:BEFORE"];
            let asks: Vec<Ask<'_>> = requests
                .iter()
                .map(|request| Ask {
                    phase,
                    request,
                    action: "none",
                })
                .collect();
            let reports = Run::new(environment, plugin, &asks)?.register(environment)?;
            for (index, request) in requests.iter().enumerate() {
                match (single(reports.results("answer", index), request)?, *request) {
                    (Ok(()), "observe:BEFORE") => {}
                    (Err(status), "observe:BEFORE") => {
                        return Err(format!("observing sealed `{phase}` was refused: {status}"));
                    }
                    (Err(status), _) if status.code == StatusCode::PolicyViolation => {}
                    (Err(status), _) => return Err(format!("{request} on sealed `{phase}`: {status}")),
                    (Ok(()), _) => return Err(format!("{request} on sealed `{phase}` was accepted")),
                }
            }
            sealed_gate_runs_built_in(environment, case, phase, machine.as_deref())
        }
        Check::ObserverReadOnly { phase, point } => {
            let request = format!("observe:{point}");
            let run = Run::new(
                environment,
                plugin,
                &[Ask {
                    phase,
                    request: &request,
                    action: "mutate",
                }],
            )?;
            let (reports, result) = run.link(environment, case, "")?;
            result.map_err(|error| format!("the link failed: {error}"))?;
            match reports.results("mutate", 0).first() {
                None => Err(format!("the observer of `{phase}` was never called")),
                Some(Ok(())) => Err(format!("an observer of `{phase}` could begin a mutation")),
                Some(Err(status)) if status.code == StatusCode::PolicyViolation => Ok(Outcome::Passed),
                Some(Err(status)) => Err(format!("mutating in an observer of `{phase}` gave {status}")),
            }
        }
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
            let states = (machine.as_str(), from.as_str(), to.as_str());
            if matches!(case.check, Check::InterceptWraps { .. }) {
                intercept_wraps(environment, case, plugin, phase, states)
            } else {
                replace_runs(environment, case, plugin, phase, states)
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
            skip_needs_fresh_proof(environment, case, plugin, phase, *proof_available)
        }
        Check::RerunBudget {
            phase,
            machine,
            choices,
            ..
        } => {
            let mut reasons = Vec::new();
            for choice in choices {
                if let Err(outcome) = classified(environment, machine, &choice.class, &choice.operations) {
                    return Ok(outcome);
                }
                let action = format!("stage:{}", choice.operations.join("+"));
                let run = Run::new(
                    environment,
                    plugin,
                    &[Ask {
                        phase,
                        request: "intercept",
                        action: &action,
                    }],
                )?;
                let (reports, result) = run.link(environment, case, "")?;
                if reports.count("unstaged", 0) > 0 {
                    reasons.push(unstaged(&choice.class, &choice.operations));
                    continue;
                }
                return budget_verdict(
                    result,
                    phase,
                    (&choice.fails_at, choice.runs),
                    reports.count("ran", 0) as u32,
                );
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
        } => {
            if let Err(outcome) = classified(environment, machine, class, operations) {
                return Ok(outcome);
            }
            let action = format!("stage-once:{}", operations.join("+"));
            let run = Run::new(
                environment,
                plugin,
                &[Ask {
                    phase: at_phase,
                    request: "intercept",
                    action: &action,
                }],
            )?;
            let (reports, result) = run.link(environment, case, "")?;
            if reports.count("unstaged", 0) > 0 {
                return Ok(Outcome::NotApplicable(unstaged(class, operations)));
            }
            match reports.states(environment, machine, 0).first() {
                None => Err(format!("`{at_phase}` never ran")),
                Some(Err(status)) => Err(format!("committing {}: {status}", case.id)),
                Some(Ok(state)) if state != expected_state => Err(format!(
                    "the commit left the state at {state}; the declared class says {expected_state}"
                )),
                Some(Ok(_)) => rerun_from(result, at_phase, expected_state),
            }
        }
        Check::DescriptorRegistration {
            descriptor,
            flags,
            callbacks,
            twice,
            expected,
            mentions,
        } => {
            if descriptor != ProviderFlags::DESCRIPTOR_NAME {
                return Ok(Outcome::NotApplicable(format!(
                    "this runtime registers no `{descriptor}`"
                )));
            }
            let mut value = format!("{flags:#x},{}", callbacks.join("+"));
            if *twice {
                value.push_str(",twice");
            }
            let run = Run {
                plugin,
                arguments: vec![argument("lto", value)],
            };
            // The dry run gives the host's message with the code the plugin saw.
            let loaded = load(plugin, &run.arguments).map_err(|error| error.to_string())?;
            let asked = register_dry_run(&loaded, environment.phase_tables).map_err(|error| error.to_string())?;
            let reported = CPlugin::new(loaded);
            let reports = Reports::of(&reported);
            let seen = reports.results("lto", 0);
            let mut host = asked
                .into_iter()
                .filter(|asked| matches!(asked.descriptor, Some(Descriptor::LtoProvider(_))))
                .map(|asked| asked.answer);
            let answer = host.next_back();
            match (seen.last(), &answer) {
                (Some(Ok(())), Some(Ok(()))) => {}
                (Some(Err(seen)), Some(Err(host))) if seen.code == host.code => {}
                (seen, host) => {
                    return Err(format!(
                        "the plugin saw {seen:?}, the host answered {host:?}: a C plugin must see the host's answer"
                    ));
                }
            }
            Ok(descriptor_verdict(answer, expected, mentions))
        }
        Check::RegisterResolves { .. }
        | Check::ReservedSkipped { .. }
        | Check::SpecPlans { .. }
        | Check::ElfFacts { .. }
        | Check::RelocationResolves { .. } => Ok(Outcome::NotApplicable(
            "a target case: no slot of the plugin ABI asks it".to_string(),
        )),
    }
}

fn unstaged(class: &str, operations: &[String]) -> String {
    format!(
        "the C ABI serves no staging slot for any operation of class `{class}` ({})",
        operations.join(", ")
    )
}

fn intercept_wraps(
    environment: &Environment,
    case: &Case,
    plugin: &Path,
    phase: &str,
    (machine, from, to): (&str, &str, &str),
) -> Result<Outcome, String> {
    let plain = Run {
        plugin,
        arguments: Vec::new(),
    };
    let (_, result) = plain.link(environment, case, ".plain")?;
    result.map_err(|error| format!("the link without a request failed: {error}"))?;
    let run = Run::new(
        environment,
        plugin,
        &[Ask {
            phase,
            request: "intercept",
            action: "wrap",
        }],
    )?;
    let (reports, result) = run.link(environment, case, "")?;
    let trace = result.map_err(|error| format!("the link with an interceptor of `{phase}` failed: {error}"))?;
    called_once(&reports.states(environment, machine, 0), "interceptor", phase, from)?;
    let entry = traced(&trace, phase, (from, to))?;
    if !entry.intercepted || entry.actor != neverc_link::execute::Actor::Builtin {
        return Err(format!(
            "the trace says `{phase}` ran as {:?} (intercepted: {}), not as the intercepted built-in",
            entry.actor, entry.intercepted
        ));
    }
    let read = |suffix: &str| {
        let path = output_path(environment, case, suffix);
        std::fs::read(&path).map_err(|error| format!("cannot read `{}`: {error}", path.display()))
    };
    if read(".plain")? != read("")? {
        return Err(format!(
            "an interceptor of `{phase}` that only continues changed the linked bytes"
        ));
    }
    Ok(Outcome::Passed)
}

fn replace_runs(
    environment: &Environment,
    case: &Case,
    plugin: &Path,
    phase: &str,
    (machine, from, to): (&str, &str, &str),
) -> Result<Outcome, String> {
    let observed = environment.phase_tables.phase_by_name(phase).is_some_and(|record| {
        [ObserverPoint::Before, ObserverPoint::After]
            .iter()
            .all(|point| record.offers_point(point.point().0))
    });
    let mut asks = vec![Ask {
        phase,
        request: "replace",
        action: "nothing",
    }];
    if observed {
        asks.push(Ask {
            phase,
            request: "observe:BEFORE",
            action: "count",
        });
        asks.push(Ask {
            phase,
            request: "observe:AFTER",
            action: "count",
        });
    }
    let (reports, result) = Run::new(environment, plugin, &asks)?.link(environment, case, "")?;
    called_once(&reports.states(environment, machine, 0), "replacement", phase, from)?;
    let counts = |index: usize| -> Option<EntityCounts> {
        let words = reports.of_ask("counts", index).next()?;
        let numbers: Vec<usize> = words.iter().filter_map(|word| word.parse().ok()).collect();
        Some(EntityKind::ALL.iter().copied().zip(numbers).collect())
    };
    if let (Some(before), Some(after)) = (counts(1), counts(2))
        && before != after
    {
        return Err(format!(
            "the entities changed across `{phase}` although its replacement did nothing: the built-in work ran \
             ({})",
            count_changes(&before, &after)
        ));
    }
    let trace = match result {
        Ok(trace) => trace,
        Err(LinkError::Phase(_) | LinkError::Plugin { .. }) => return Ok(Outcome::Passed),
        Err(error) => return Err(format!("the link failed otherwise: {error}")),
    };
    let entry = traced(&trace, phase, (from, to))?;
    if entry.actor != neverc_link::execute::Actor::Provider {
        return Err(format!(
            "the trace says `{phase}` ran as {:?}, not as the replacement",
            entry.actor
        ));
    }
    Ok(Outcome::Passed)
}

/// Links with a skipper claiming the offered proof as `answer` says, and an interceptor that reports whether
/// the phase's work ran; returns (ran, offered).
fn link_with_skipper(
    environment: &Environment,
    case: &Case,
    plugin: &Path,
    phase: &str,
    answer: &str,
) -> Result<(bool, bool), String> {
    let asks = [
        Ask {
            phase,
            request: "skip_with_proof",
            action: answer,
        },
        Ask {
            phase,
            request: "intercept",
            action: "ran",
        },
    ];
    let (reports, _) = Run::new(environment, plugin, &asks)?.link(environment, case, "")?;
    let offered = reports
        .of_ask("offered", 0)
        .last()
        .is_some_and(|words| words.first().is_some_and(|word| word == "1"));
    Ok((reports.count("ran", 1) > 0, offered))
}

fn skip_needs_fresh_proof(
    environment: &Environment,
    case: &Case,
    plugin: &Path,
    phase: &str,
    proof_available: bool,
) -> Result<Outcome, String> {
    // A C skipper cannot change a proof's generation or inputs: it claims a handle changed in its value or
    // its owner, which stands for no current proof either.
    fresh_proof_verdict(phase, proof_available, |answer| {
        let action = match answer {
            Answer::Fresh => "fresh",
            Answer::LaterGeneration => "later",
            Answer::OtherInputs => "other",
        };
        link_with_skipper(environment, case, plugin, phase, action)
    })
}
