//! A loaded C plugin as a plugin of the link runtime: its registration runs against a live registrar, and
//! the observers and providers it registers are called with a `NevercPhaseFrame` when their phase runs.

use neverc_link::frame::PhaseFrame;
use neverc_link::plugin::{LinkPlugin, Registrar};
use neverc_sys::plugin::CFunction;
use neverc_tables::PhaseTables;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::policy::Request;
use neverc_tables::status::{Status, StatusCode};

use crate::load::LoadedPlugin;
use crate::registrar::{Hook, run_registration};
use crate::status::{code_of, describe};

/// A C plugin the link runtime calls.
pub struct CPlugin {
    plugin: LoadedPlugin,
}

impl CPlugin {
    pub fn new(plugin: LoadedPlugin) -> CPlugin {
        CPlugin { plugin }
    }

    /// What the plugin reported through the host table, in order.
    pub fn reports(&self) -> Vec<(u32, String)> {
        self.plugin.reports()
    }
}

/// The frame a C callback sees: the running phase's id (tasks and artifacts come with the Link API).
fn c_frame(tables: &'static PhaseTables, frame: &PhaseFrame<'_>) -> ffi::PhaseFrame {
    let id = tables
        .phase_by_name(frame.phase())
        .map(|record| ffi::InterfaceId {
            high: record.id.high,
            low: record.id.low,
        })
        .unwrap_or_default();
    ffi::PhaseFrame {
        header: ffi::AbiTableHeader {
            struct_size: u32::try_from(std::mem::size_of::<ffi::PhaseFrame>()).unwrap_or(u32::MAX),
            major: 1,
            minor: 0,
            flags: 0,
        },
        phase_id: id,
        ..ffi::PhaseFrame::default()
    }
}

/// A callback's status as the runtime's: a failure names the plugin and its status (PLUGIN_FAILURE when the
/// plugin returned a code the ABI does not declare).
fn answer(plugin: &str, what: &str, status: ffi::Status) -> Result<(), Status> {
    if status.code == 0 {
        return Ok(());
    }
    let code = code_of(status).unwrap_or(StatusCode::PluginFailure);
    Err(Status::new(
        code,
        format!("plugin `{plugin}`: its {what} returned {}", describe(status)),
    ))
}

impl LinkPlugin for CPlugin {
    fn name(&self) -> &str {
        &self.plugin.id
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let tables = registrar.tables();
        let asked = run_registration(&self.plugin, tables, true)
            .map_err(|error| Status::new(error.code(), error.to_string()))?;
        for (asked, hook) in asked {
            if asked.answer.is_err() {
                continue;
            }
            let Some(record) = tables.phase_by_name(&asked.phase) else {
                continue;
            };
            let (phase, id) = (record.name, self.plugin.id.clone());
            match (asked.request, hook) {
                (Some(Request::Observe(point)), Hook::Observer(Some(observer), user_data)) => {
                    registrar.observe(
                        phase,
                        point,
                        Box::new(move |frame| {
                            let c_frame = c_frame(tables, frame);
                            answer(&id, "observer", observer.call((user_data, &c_frame)))
                        }),
                    )?;
                }
                (Some(Request::Replace), Hook::Provider(Some(provider), user_data)) => {
                    registrar.replace(
                        phase,
                        Box::new(move |frame| {
                            let c_frame = c_frame(tables, frame);
                            answer(&id, "provider", provider.call((user_data, &c_frame)))
                        }),
                    )?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}
