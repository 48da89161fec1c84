//! LTO code generation providers: the Rust mirror of `NevercLTOProviderDescriptor`, the rules registration
//! checks (those NeverC's host checks), and what a provider returns.

use neverc_tables::status::{Status, StatusCode};

use crate::lto::request::LtoRequest;
use crate::lto::{ProviderCallback, ProviderFlags, ResolutionFlags};

/// Why a provider could not generate code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub message: String,
}

impl ProviderError {
    pub fn new(message: impl Into<String>) -> ProviderError {
        ProviderError {
            message: message.into(),
        }
    }
}

/// What `BuildCacheKey` reports: the key's full size, of which the first `min(size, buffer.len())` bytes
/// were written into the caller's buffer. A caller whose buffer was too small grows it to `size` and asks
/// again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeySize(pub usize);

/// One object a provider generated (`NevercLTOObjectProduct`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LtoObject {
    /// The module it was generated from (an index into the request's modules), when it came from one.
    pub source_module: Option<usize>,
    /// What the link calls it.
    pub logical_name: String,
    pub bytes: Vec<u8>,
}

/// What a provider returns (`NevercLTOProductCandidate`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LtoCandidate {
    pub objects: Vec<LtoObject>,
    pub optimized_bitcode: Option<Vec<u8>>,
    pub thin_index: Option<Vec<u8>>,
    /// The cache key the provider used, when it used one.
    pub cache_key: Option<Vec<u8>>,
}

/// An LTO code generation provider. `flags` are raw bits, as a C plugin would hand them over, and are
/// checked at registration ([`check_descriptor`]).
pub trait LtoProvider {
    /// A unique id, such as `org.llvm.lto2`.
    fn id(&self) -> &str;
    /// The triple of the target it generates code for.
    fn target(&self) -> &str;
    /// `NEVERC_LTO_PROVIDER_*` bits.
    fn flags(&self) -> u64;
    /// Whether it has a `BuildCacheKey` (required for CACHEABLE).
    fn builds_cache_keys(&self) -> bool {
        false
    }
    /// Whether it has a `Codegen`.
    fn generates(&self) -> bool {
        true
    }
    /// Writes the request's cache key into `buffer` (as much of it as fits) and reports its full size. The
    /// key must be a pure function of the request.
    fn build_cache_key(&self, _request: &LtoRequest, _buffer: &mut [u8]) -> Result<KeySize, ProviderError> {
        Err(ProviderError::new("this provider builds no cache keys"))
    }
    /// Generates objects for the request.
    fn codegen(&self, request: &LtoRequest) -> Result<LtoCandidate, ProviderError>;
}

/// Whether the provider has `callback` (the generated enum of the descriptor's callbacks, matched
/// exhaustively: a callback added to `abi/lto.toml` must be bound here).
pub fn has_callback(provider: &dyn LtoProvider, callback: ProviderCallback) -> bool {
    match callback {
        ProviderCallback::BuildCacheKey => provider.builds_cache_keys(),
        ProviderCallback::Codegen => provider.generates(),
    }
}

/// The checks NeverC's host makes when a provider registers, as `abi/lto.toml` declares them for
/// `NevercLTOProviderDescriptor`: declared flags only, one of the `one_of` bits (FULL or THIN), the required
/// callbacks (`Codegen`), the callback a bit needs (`BuildCacheKey` when CACHEABLE), a non-empty id and one
/// no other registered provider has. A refusal is `INVALID_DESCRIPTOR` (or `DUPLICATE_ID`) naming the rule.
pub fn check_descriptor(provider: &dyn LtoProvider, registered: &[&str]) -> Result<ProviderFlags, Status> {
    let id = provider.id();
    let refuse = |rule: &str| Status::new(StatusCode::InvalidDescriptor, format!("LTO provider `{id}`: {rule}"));
    let flags = ProviderFlags::from_bits(provider.flags()).ok_or_else(|| {
        refuse(&format!(
            "unknown flag bits {:#x}",
            provider.flags() & !ProviderFlags::ALL.bits()
        ))
    })?;
    let one_of = ProviderFlags::DESCRIPTOR_ONE_OF;
    if !one_of.is_empty() && !flags.intersects(one_of) {
        let names: Vec<&str> = one_of.names().collect();
        return Err(refuse(&match names.as_slice() {
            [first, second] => format!("it declares neither {first} nor {second}"),
            names => format!("it declares none of {}", names.join(", ")),
        }));
    }
    for callback in ProviderFlags::DESCRIPTOR_REQUIRED {
        if !has_callback(provider, callback) {
            return Err(refuse(&format!("it has no {}", callback.name())));
        }
    }
    for (bit, callback) in ProviderFlags::DESCRIPTOR_BIT_REQUIRES {
        if flags.contains(bit) && !has_callback(provider, callback) {
            let names: Vec<&str> = bit.names().collect();
            return Err(refuse(&format!(
                "it is {} without a {}",
                names.join("|"),
                callback.name()
            )));
        }
    }
    if id.is_empty() {
        return Err(refuse("its id is empty"));
    }
    if ProviderFlags::DESCRIPTOR_UNIQUE_ID && registered.contains(&id) {
        return Err(Status::new(
            StatusCode::DuplicateId,
            format!("LTO provider `{id}` is registered already"),
        ));
    }
    Ok(flags)
}

/// The provider's cache key, asked for with the caller-buffer protocol: a first buffer of `first` bytes,
/// grown to the size the provider reports and asked again (at most twice more: a provider whose key keeps
/// growing is refused).
pub fn cache_key(provider: &dyn LtoProvider, request: &LtoRequest, first: usize) -> Result<Vec<u8>, ProviderError> {
    let mut buffer = vec![0u8; first];
    for _ in 0..3 {
        let KeySize(size) = provider.build_cache_key(request, &mut buffer)?;
        if size <= buffer.len() {
            buffer.truncate(size);
            return Ok(buffer);
        }
        buffer = vec![0u8; size];
    }
    Err(ProviderError::new(format!(
        "LTO provider `{}` reported a larger cache key each time it was asked",
        provider.id()
    )))
}

/// A registered provider, shared by the copies of a link context (on the thread that registered it: a C
/// plugin's provider is called on its own thread only).
#[derive(Clone)]
pub struct SharedProvider(pub std::rc::Rc<dyn LtoProvider>);

impl std::fmt::Debug for SharedProvider {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "LtoProvider({})", self.0.id())
    }
}

/// A part of a request, named, and how to change it.
type RequestChange = (&'static str, fn(&mut LtoRequest));

/// The parts of `request` that `provider`'s cache key ignores: each part is changed in turn (the target, an
/// option, a file's contents, a module's identifier, a resolution's flags) and the key must change with it.
/// An empty list means the key covers the request as far as these changes show; a CACHEABLE provider whose
/// list is not empty would hand out stale objects.
pub fn key_blind_spots(provider: &dyn LtoProvider, request: &LtoRequest) -> Result<Vec<&'static str>, ProviderError> {
    let rebuilt = |change: fn(&mut LtoRequest)| {
        let mut changed = request.clone();
        change(&mut changed);
        LtoRequest::new(
            changed.target,
            changed.options,
            changed.files,
            changed.modules,
            changed.resolutions,
        )
    };
    let changes: [RequestChange; 6] = [
        ("the target", |request| request.target.push_str("-changed")),
        ("the optimization level", |request| {
            request.options.optimization_level = (request.options.optimization_level + 1) % 4
        }),
        ("the CPU", |request| request.options.cpu.push_str("-changed")),
        ("a file's contents", |request| {
            if let Some(file) = request.files.first_mut() {
                file.content_digest[0] ^= 1;
            }
        }),
        ("a module's identifier", |request| {
            if let Some(module) = request.modules.first_mut() {
                module.identifier.push_str("-changed");
            }
        }),
        ("a resolution's flags", |request| {
            if let Some(resolution) = request.resolutions.first_mut() {
                resolution.flags =
                    ResolutionFlags::from_bits(resolution.flags.bits() ^ ResolutionFlags::PREVAILING.bits())
                        .unwrap_or(resolution.flags);
            }
        }),
    ];
    let base = cache_key(provider, request, 64)?;
    let mut blind = Vec::new();
    for (part, change) in &changes {
        if cache_key(provider, &rebuilt(*change), 64)? == base {
            blind.push(*part);
        }
    }
    Ok(blind)
}
