//! The LTO request a provider gets: options, modules and resolutions, with a canonical byte encoding that
//! the two digests are SHA-256 over. `ResolutionDigest` covers the resolutions (module, symbol index, name
//! and flags, in order); `RequestDigest` covers everything a provider's output may depend on: the encoding
//! version, the target, the options, every file (the SHA-256 of its bytes, not its name, which depends on
//! where the link runs), every module (its file, ordinal, identifier and symbol count) and the resolution
//! digest. The same request always encodes to the same bytes, whatever the machine.

use sha2::{Digest as _, Sha256};

use crate::lto::{CacheScope, LtoMode, LtoResolution, OptionFlags};

/// The encoding's version, part of every digest: a change of the encoding changes every key.
pub const ENCODING: &str = "neverc-lto-request-v1";

/// NeverC's `NevercLTOOptions`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LtoOptions {
    pub mode: LtoMode,
    pub cache_scope: CacheScope,
    pub flags: OptionFlags,
    /// `-O` of the optimizer, 0 to 3.
    pub optimization_level: u32,
    /// Of the code generator, 0 to 3.
    pub codegen_optimization_level: u32,
    /// Threads the provider may use.
    pub thread_budget: u32,
    /// ThinLTO backend partitions (0: one per module).
    pub thin_backend_partitions: u32,
    pub cpu: String,
    pub features: String,
    pub cache_namespace: String,
}

impl Default for LtoOptions {
    fn default() -> LtoOptions {
        LtoOptions {
            mode: LtoMode::Full,
            cache_scope: CacheScope::Disabled,
            flags: OptionFlags::DETERMINISTIC,
            optimization_level: 2,
            codegen_optimization_level: 2,
            thread_budget: 1,
            thin_backend_partitions: 0,
            cpu: String::new(),
            features: String::new(),
            cache_namespace: String::new(),
        }
    }
}

/// One bitcode file of the request: what a provider reads (a file may hold several modules).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestFile {
    /// What the link calls it: the input's name, or `archive(member)` for a member.
    pub logical_name: String,
    /// The file itself, when the module is a whole file (not an archive member): distributed ThinLTO writes
    /// its index beside it. Not part of the encoding.
    pub path: Option<std::path::PathBuf>,
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes`.
    pub content_digest: [u8; 32],
}

/// One bitcode module as a request shows it (`NevercLTOInputModuleInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestModule {
    /// The file that holds it (an index into the request's files).
    pub file: usize,
    /// Which module of the file it is.
    pub ordinal: u32,
    /// The module's source file name.
    pub identifier: String,
    /// The names of its symbols, in irsymtab order: resolution `symbol` indexes this.
    pub symbols: Vec<String>,
}

/// Everything a provider is asked to generate code for (`NevercLTORequest`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LtoRequest {
    /// The target's triple.
    pub target: String,
    pub options: LtoOptions,
    pub files: Vec<RequestFile>,
    pub modules: Vec<RequestModule>,
    pub resolutions: Vec<LtoResolution>,
    pub resolution_digest: [u8; 32],
    pub request_digest: [u8; 32],
}

impl LtoRequest {
    /// A request with its digests computed.
    pub fn new(
        target: String,
        options: LtoOptions,
        files: Vec<RequestFile>,
        modules: Vec<RequestModule>,
        resolutions: Vec<LtoResolution>,
    ) -> LtoRequest {
        let mut request = LtoRequest {
            target,
            options,
            files,
            modules,
            resolutions,
            resolution_digest: [0; 32],
            request_digest: [0; 32],
        };
        request.resolution_digest = sha256(&request.encode_resolutions());
        request.request_digest = sha256(&request.encode());
        request
    }

    /// The canonical encoding of the resolutions.
    pub fn encode_resolutions(&self) -> Vec<u8> {
        let mut out = Encoder::default();
        out.text(ENCODING).u64(self.resolutions.len() as u64);
        for resolution in &self.resolutions {
            let name = self
                .modules
                .get(resolution.module.index())
                .and_then(|module| module.symbols.get(resolution.symbol as usize))
                .map_or("", String::as_str);
            out.u64(u64::from(resolution.module.0))
                .u64(u64::from(resolution.symbol))
                .text(name)
                .u64(resolution.flags.bits());
        }
        out.0
    }

    /// The canonical encoding of the whole request (with the resolution digest standing for the resolutions).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Encoder::default();
        let options = &self.options;
        out.text(ENCODING)
            .text(&self.target)
            .u64(u64::from(options.mode.raw()))
            .u64(u64::from(options.cache_scope.raw()))
            .u64(options.flags.bits())
            .u64(u64::from(options.optimization_level))
            .u64(u64::from(options.codegen_optimization_level))
            .u64(u64::from(options.thread_budget))
            .u64(u64::from(options.thin_backend_partitions))
            .text(&options.cpu)
            .text(&options.features)
            .text(&options.cache_namespace)
            .u64(self.files.len() as u64);
        // Files by their contents only: the same objects linked from another directory (another machine's
        // checkout) make the same request, so that a shared cache serves both.
        for file in &self.files {
            out.bytes(&file.content_digest);
        }
        out.u64(self.modules.len() as u64);
        for module in &self.modules {
            out.u64(module.file as u64)
                .u64(u64::from(module.ordinal))
                .text(&module.identifier)
                .u64(module.symbols.len() as u64);
        }
        out.bytes(&self.resolution_digest);
        out.0
    }
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// Length-prefixed fields, little-endian: no field can run into the next.
#[derive(Default)]
struct Encoder(Vec<u8>);

impl Encoder {
    fn u64(&mut self, value: u64) -> &mut Encoder {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn bytes(&mut self, bytes: &[u8]) -> &mut Encoder {
        self.u64(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
        self
    }

    fn text(&mut self, text: &str) -> &mut Encoder {
        self.bytes(text.as_bytes())
    }
}
