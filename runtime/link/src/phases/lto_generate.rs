//! `neverc.link.lto_generate`: the bitcode modules become objects. The request (modules, resolutions,
//! options, digests) goes to the registered provider, or to the default one, LLVM 14's `llvm-lto2`
//! (`crate::lto::llvm`); the objects it returns enter the graph as inputs of their own, read like any other
//! object (so they must be objects of the link's target), and symbol resolution then runs over them instead
//! of the modules. Without bitcode modules the phase does nothing.
//!
//! When the request's cache scope is not DISABLED and the provider is CACHEABLE, the products are looked up
//! under the provider's key first (`crate::lto::cache`, `crate::lto::remote`) and code generation is skipped
//! on a hit; a corrupt entry is rebuilt with a warning, an unreachable cache is a warning only.

use crate::context::{LinkContext, PhaseError};
use crate::graph::{InputKind, LinkTarget};
use crate::lto::cache::{CacheEvent, DirectoryCache, Lookup};
use crate::lto::llvm::LlvmLto2;
use crate::lto::provider::{LtoProvider, ProviderError, cache_key};
use crate::lto::request::{LtoRequest, RequestFile, RequestModule, sha256};
use crate::lto::{CacheScope, LtoMode, OptionFlags, ProviderFlags};
use crate::phases::LinkPhase;
use crate::read::{add_input, read_input};

const PHASE: LinkPhase = LinkPhase::LtoGenerate;

pub(crate) fn run(context: &mut LinkContext, phase: u16) -> Result<(), PhaseError> {
    if context.graph.bitcode_modules.is_empty()
        || context
            .graph
            .bitcode_modules
            .iter()
            .any(|module| !module.generated.is_empty())
    {
        return Ok(());
    }
    let request = request(context);
    if let Some(list) = context.options.thinlto_index_only.clone() {
        let naming = &context.options.thinlto_naming;
        let written = LlvmLto2::new(&request.target)
            .write_distributed_indexes(&request, naming)
            .map_err(|error| PhaseError::new(PHASE, format!("--thinlto-index-only: {error}")))?;
        if let Some(list) = list {
            // As lld writes it: the native object of each module, where the final link will find it.
            let mut text = String::new();
            for module in &written {
                text.push_str(&module.native_object.display().to_string());
                text.push('\n');
            }
            neverc_output::write_bytes(&list, neverc_output::Mode::Data, text.as_bytes())
                .map_err(|error| PhaseError::io(PHASE, error.to_string()))?;
        }
        let place = match &naming.prefix_replace {
            Some((old, new)) => format!("with `{old}` replaced by `{new}` in their paths"),
            None => "beside the bitcode".to_string(),
        };
        context.stopped = Some(format!(
            "--thinlto-index-only: wrote {} ThinLTO index file(s) {place}; nothing was linked",
            written.len()
        ));
        return Ok(());
    }
    if context.options.lto.flags.contains(OptionFlags::SAVE_TEMPS) {
        let path = side_file(&context.options.output, "resolution.txt");
        neverc_output::write_bytes(&path, neverc_output::Mode::Data, resolution_file(&request).as_bytes())
            .map_err(|error| PhaseError::io(PHASE, error.to_string()))?;
    }
    let default;
    let mode = match context.options.lto.mode {
        LtoMode::Thin => ProviderFlags::THIN,
        _ => ProviderFlags::FULL,
    };
    let registered = context
        .lto
        .providers
        .iter()
        .find(|provider| ProviderFlags::from_bits(provider.0.flags()).is_some_and(|flags| flags.contains(mode)));
    let provider: &dyn LtoProvider = match registered {
        Some(provider) => provider.0.as_ref(),
        None => {
            default = LlvmLto2::new(&request.target);
            &default
        }
    };
    let failed = |error: ProviderError| PhaseError::new(PHASE, format!("LTO provider `{}`: {error}", provider.id()));
    let scope = context.options.lto.cache_scope;
    let cacheable =
        ProviderFlags::from_bits(provider.flags()).is_some_and(|flags| flags.contains(ProviderFlags::CACHEABLE));
    let key = if scope != CacheScope::Disabled && cacheable {
        Some(cache_key(provider, &request, 64).map_err(failed)?)
    } else {
        None
    };
    let directory = context.options.lto_cache_dir.clone().map(|dir| DirectoryCache {
        dir,
        integrity: context.options.lto_cache_integrity.clone(),
    });
    let found = match (&key, scope) {
        (Some(key), CacheScope::Task) => context.lto.task_cache.lookup(key),
        (Some(key), CacheScope::LocalShared) => match &directory {
            Some(directory) => directory.lookup(key),
            None => Lookup::Miss,
        },
        (Some(key), CacheScope::RemoteShared) => crate::lto::remote::lookup(&context.options, key),
        _ => Lookup::Miss,
    };
    let mut events = Vec::new();
    let candidate = match found {
        Lookup::Hit(candidate) => {
            events.push(CacheEvent::Hit);
            candidate
        }
        found => {
            let mut usable = true;
            match &found {
                Lookup::Corrupt(reason) => {
                    context
                        .warnings
                        .push(format!("LTO cache: {reason}; the entry was rebuilt"));
                    events.push(CacheEvent::Rebuilt(reason.clone()));
                }
                Lookup::Unavailable(reason) => {
                    context
                        .warnings
                        .push(format!("LTO cache: {reason}; the link goes on without it"));
                    events.push(CacheEvent::Unavailable(reason.clone()));
                    usable = false;
                }
                _ if key.is_some() => events.push(CacheEvent::Miss),
                _ => {}
            }
            let candidate = provider.codegen(&request).map_err(failed)?;
            if let Some(key) = key.as_ref().filter(|_| usable) {
                let stored = match scope {
                    CacheScope::Task => {
                        context.lto.task_cache.store(key, &candidate);
                        Ok(())
                    }
                    CacheScope::LocalShared => match &directory {
                        Some(directory) => directory.store(key, &candidate),
                        None => Err("no cache directory was given".to_string()),
                    },
                    CacheScope::RemoteShared => crate::lto::remote::store(&context.options, key, &candidate),
                    CacheScope::Disabled => Ok(()),
                };
                if let Err(reason) = stored {
                    context
                        .warnings
                        .push(format!("LTO cache: {reason}; the link goes on without it"));
                    events.push(CacheEvent::Unavailable(reason));
                }
            }
            candidate
        }
    };
    context.lto.cache_events.extend(events);
    if let (CacheScope::LocalShared, Some(directory), Some(policy)) =
        (scope, &directory, context.options.lto_cache_policy)
    {
        // As lld prunes its cache after LTO: a failure costs the pruning only, never the link.
        if let Err(error) = crate::lto::prune::prune(&directory.dir, &policy, std::time::SystemTime::now()) {
            context
                .warnings
                .push(format!("LTO cache: {error}; the cache was not pruned"));
        }
    }
    let graph = &mut context.graph;
    for object in candidate.objects {
        let id = add_input(graph, object.logical_name.clone(), object.bytes.into(), phase);
        if graph.inputs[id.index()].kind != InputKind::Object {
            return Err(PhaseError::new(
                PHASE,
                format!(
                    "LTO provider `{}` returned `{}`, which is not an object",
                    provider.id(),
                    object.logical_name
                ),
            ));
        }
        read_input(graph, id, phase).map_err(|error| PhaseError::from_read(PHASE, &error))?;
        match object
            .source_module
            .and_then(|module| graph.bitcode_modules.get_mut(module))
        {
            Some(module) => module.generated.push(id),
            // An object of the merged module (full LTO) was generated from every module not compiled alone.
            None => {
                for module in &mut graph.bitcode_modules {
                    module.generated.push(id);
                }
            }
        }
    }
    graph.index_edges();
    Ok(())
}

/// The request for the graph's modules and resolutions.
fn request(context: &LinkContext) -> LtoRequest {
    let graph = &context.graph;
    let target = match &graph.target {
        LinkTarget::Fixed { target, .. } => target.triple.to_string(),
        _ => String::new(),
    };
    let target = if target.is_empty() {
        graph
            .bitcode_modules
            .first()
            .map(|module| module.triple.clone())
            .unwrap_or_default()
    } else {
        target
    };
    let mut files: Vec<RequestFile> = Vec::new();
    let mut file_of_input: rustc_hash::FxHashMap<crate::graph::InputId, usize> = rustc_hash::FxHashMap::default();
    let mut modules = Vec::new();
    for module in &graph.bitcode_modules {
        let file = match file_of_input.get(&module.input) {
            Some(file) => *file,
            None => {
                let input = &graph.inputs[module.input.index()];
                let bytes = input.data.get(input.object_range.clone()).unwrap_or_default().to_vec();
                files.push(RequestFile {
                    logical_name: input.logical_name.clone(),
                    path: input
                        .member
                        .is_none()
                        .then(|| std::path::PathBuf::from(&input.logical_name)),
                    content_digest: sha256(&bytes),
                    bytes,
                });
                file_of_input.insert(module.input, files.len() - 1);
                files.len() - 1
            }
        };
        modules.push(RequestModule {
            file,
            ordinal: module.ordinal,
            identifier: module.source_file.clone(),
            symbols: module.symbols.iter().map(|symbol| symbol.name.clone()).collect(),
        });
    }
    LtoRequest::new(
        target,
        context.options.lto.clone(),
        files,
        modules,
        graph.lto_resolutions.clone(),
    )
}

/// `OUTPUT.suffix`, beside the output.
fn side_file(output: &std::path::Path, suffix: &str) -> std::path::PathBuf {
    let mut name = output.as_os_str().to_os_string();
    name.push(".");
    name.push(suffix);
    std::path::PathBuf::from(name)
}

/// The resolutions in the format of LLVM's LTO resolution file (what lld and `llvm-lto2` write with
/// `--save-temps`): per file its name, then one `-r=FILE,SYMBOL,FLAGS` line per symbol of its modules.
pub(crate) fn resolution_file(request: &LtoRequest) -> String {
    let mut by_module: Vec<Vec<&crate::lto::LtoResolution>> = vec![Vec::new(); request.modules.len()];
    for resolution in &request.resolutions {
        if let Some(list) = by_module.get_mut(resolution.module.index()) {
            list.push(resolution);
        }
    }
    let mut text = String::new();
    for (index, file) in request.files.iter().enumerate() {
        text.push_str(&file.logical_name);
        text.push('\n');
        for (module, resolutions) in request.modules.iter().zip(&by_module) {
            if module.file != index {
                continue;
            }
            for resolution in resolutions {
                let name = module
                    .symbols
                    .get(resolution.symbol as usize)
                    .map_or("", String::as_str);
                text.push_str(&format!("-r={},{name},{}\n", file.logical_name, resolution.letters()));
            }
        }
    }
    text
}
