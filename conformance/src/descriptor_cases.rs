//! Descriptor registration cases of the plugin ABI declarations: a provider with the case's flags and
//! callbacks registers through the plugin registry, as a plugin's register step does, and the host's answer
//! is compared with the declared rules'.

use std::rc::Rc;

use neverc_codegen::conformance::ACCEPTED;
use neverc_link::lto::provider::{LtoCandidate, LtoProvider, ProviderError, SharedProvider};
use neverc_link::lto::request::LtoRequest;
use neverc_link::lto::{ProviderCallback, ProviderFlags};
use neverc_link::plugin::{LinkPlugin, Registrar, Registry};
use neverc_link::status::Status;

use crate::{Environment, Outcome};

/// A provider that has exactly the case's flags and callbacks and generates nothing.
struct CaseProvider {
    flags: u64,
    callbacks: Vec<ProviderCallback>,
}

impl LtoProvider for CaseProvider {
    fn id(&self) -> &str {
        "conformance.descriptor"
    }
    fn target(&self) -> &str {
        "x86_64-unknown-linux-gnu"
    }
    fn flags(&self) -> u64 {
        self.flags
    }
    fn builds_cache_keys(&self) -> bool {
        self.callbacks.contains(&ProviderCallback::BuildCacheKey)
    }
    fn generates(&self) -> bool {
        self.callbacks.contains(&ProviderCallback::Codegen)
    }
    fn codegen(&self, _request: &LtoRequest) -> Result<LtoCandidate, ProviderError> {
        Err(ProviderError::new("a conformance case's provider generates nothing"))
    }
}

/// Registers the provider once or twice; the answer of the last registration.
struct Registering {
    provider: SharedProvider,
    twice: bool,
    answer: Option<Result<(), Status>>,
}

impl LinkPlugin for Registering {
    fn name(&self) -> &str {
        "conformance"
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let mut answer = registrar.lto_code_generator(SharedProvider(Rc::clone(&self.provider.0)));
        if self.twice && answer.is_ok() {
            answer = registrar.lto_code_generator(SharedProvider(Rc::clone(&self.provider.0)));
        }
        self.answer = Some(answer);
        Ok(())
    }
}

pub(crate) fn run(
    environment: &Environment,
    descriptor: &str,
    (flags, callbacks, twice): (u64, &[String], bool),
    expected: &str,
    mentions: &[String],
) -> Outcome {
    if descriptor != ProviderFlags::DESCRIPTOR_NAME {
        return Outcome::NotApplicable(format!("this runtime registers no `{descriptor}`"));
    }
    let mut known = Vec::new();
    for name in callbacks {
        match ProviderCallback::ALL
            .into_iter()
            .find(|callback| callback.name() == name)
        {
            Some(callback) => known.push(callback),
            None => return Outcome::Failed(format!("`{descriptor}` has no callback `{name}`")),
        }
    }
    let provider = CaseProvider {
        flags,
        callbacks: known,
    };
    let mut plugin = Registering {
        provider: SharedProvider(Rc::new(provider)),
        twice,
        answer: None,
    };
    if let Err(status) = Registry::default().register(environment.phase_tables, &mut plugin) {
        return Outcome::Failed(format!("the register step failed: {status}"));
    }
    descriptor_verdict(plugin.answer, expected, mentions)
}

/// The verdict on a descriptor case from the host's answer to the (last) registration.
pub(crate) fn descriptor_verdict(answer: Option<Result<(), Status>>, expected: &str, mentions: &[String]) -> Outcome {
    match (answer, expected) {
        (None, _) => Outcome::Failed("the register step never ran".to_string()),
        (Some(Ok(())), ACCEPTED) => Outcome::Passed,
        (Some(Ok(())), _) => Outcome::Failed(format!(
            "the descriptor was accepted; the rules refuse it with {expected}"
        )),
        (Some(Err(status)), _) if status.code.name() != expected => {
            Outcome::Failed(format!("the host answered {status}; the rules say {expected}"))
        }
        (Some(Err(status)), _) => match mentions.iter().find(|name| !status.message.contains(name.as_str())) {
            Some(name) => Outcome::Failed(format!("the refusal does not name `{name}`: {status}")),
            None => Outcome::Passed,
        },
    }
}
