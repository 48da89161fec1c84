//! Link-time optimization: the resolutions `lto_resolve` makes for the symbols of bitcode modules, the
//! request a provider gets (with its canonical encoding and digests), the provider interface and its
//! registration rules, and the default provider, which drives LLVM 14's own `llvm-lto2`.
//!
//! The values of the flags and enumerations are NeverC's plugin ABI, declared in `abi/lto.toml` and
//! generated into `neverc_tables::plugin_abi::lto`: this module names them only through those types.

pub mod cache;
pub mod distributed;
pub mod llvm;
pub mod provider;
pub mod prune;
pub mod remote;
pub mod rename;
pub mod request;

use crate::graph::{BitcodeModuleId, SymbolId};

pub use neverc_tables::plugin_abi::lto::{
    LtoCacheScope as CacheScope, LtoOptionFlags as OptionFlags, LtoProviderDescriptorCallback as ProviderCallback,
    LtoProviderFlags as ProviderFlags, LtoSymbolResolutionFlags as ResolutionFlags, LtoType as LtoMode,
};

/// What LTO keeps for the length of one link, in the link's context.
#[derive(Clone, Debug, Default)]
pub struct LtoRuntime {
    /// The LTO code generators plugins registered, in order; `lto_generate` asks the first that does the
    /// request's mode, or the default (`llvm-lto2`) when none does.
    pub providers: Vec<provider::SharedProvider>,
    /// The LTO cache of scope TASK: products of this link, in memory.
    pub task_cache: cache::TaskCache,
    /// What the LTO caches did in this link, in order (hits, misses, rebuilt or unavailable entries), for
    /// whoever embeds the link runtime.
    pub cache_events: Vec<cache::CacheEvent>,
}

/// What the link decided about one symbol of a bitcode module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LtoResolution {
    pub module: BitcodeModuleId,
    /// The symbol's index in its module's irsymtab.
    pub symbol: u32,
    pub flags: ResolutionFlags,
    /// The object symbol that holds the chosen definition, when an object that is not bitcode holds it.
    pub link_symbol: Option<SymbolId>,
}

impl LtoResolution {
    /// The flags as `llvm-lto2 run -r` spells them: `p` prevailing, `l` final definition in the linkage unit,
    /// `x` visible to a regular object, `r` redefined by the linker (the letters of lld's
    /// `--save-temps` resolution file too).
    pub fn letters(&self) -> String {
        [
            (ResolutionFlags::PREVAILING, 'p'),
            (ResolutionFlags::FINAL_DEFINITION, 'l'),
            (ResolutionFlags::VISIBLE_TO_REGULAR_OBJECT, 'x'),
            (ResolutionFlags::LINKER_REDEFINED, 'r'),
        ]
        .into_iter()
        .filter(|(flag, _)| self.flags.contains(*flag))
        .map(|(_, letter)| letter)
        .collect()
    }
}
