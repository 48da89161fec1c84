//! The host side of NeverC's plugin C ABI (`abi/host.toml`, `include/neverc/Plugin/PluginHost.h`): loading a
//! plugin's shared library, the `neverc_plugin_entry` handshake with its caller-buffer descriptor, the host's
//! interface lookup, and the phase registrar through which a plugin asks for phases — every request checked
//! by `check_phase_request`, the same function Rust plugins and manifests go through.
//!
//! Every crossing into C goes through `neverc_sys::plugin` (every call naming its callee, for the line a crash
//! writes: `neverc_sys::crash`), and every write into a plugin's memory through `memory`, which checks a
//! structure's `StructSize` first; this crate has no `unsafe` code. The contexts the
//! host hands to C are tokens looked up in a per-thread table, never pointers: a forged or stale context is
//! refused with a status, and a callback from another thread finds nothing.

mod calling_convention;
mod context;
mod frame;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod link;
mod load;
mod lto;
mod memory;
mod registrar;
mod status;
mod views;

pub use calling_convention::{CConvention, ConventionError, ConventionPlugin};
pub use link::CPlugin;
pub use load::{LoadedPlugin, PluginArgument, PluginError, load};
pub use registrar::{AskedPhase, Descriptor, register_dry_run};
