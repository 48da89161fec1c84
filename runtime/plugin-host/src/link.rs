//! A loaded C plugin as a plugin of the link runtime: its registration runs against a live registrar, and
//! the observers, interceptors, providers and skippers it registers are called with a `NevercPhaseFrame`
//! when their phase runs. An interceptor's continuation is the rest of the chain, lent to C for the call
//! (`neverc_sys::scoped`); a skipper is offered the current proof as a handle valid for the call.

use std::any::Any;
use std::ffi::c_void;

use neverc_link::frame::PhaseFrame;
use neverc_link::plugin::{LinkPlugin, Registrar};
use neverc_sys::crash::{Callee, PluginName};
use neverc_sys::plugin::CFunction;
use neverc_tables::plugin_abi::ffi;
use neverc_tables::policy::Request;
use neverc_tables::status::{Status, StatusCode};

use crate::frame::{FrameState, Service, TASK_OWNER, continue_chain, image_info, serve, serve_image};
use crate::load::LoadedPlugin;
use crate::registrar::{Hook, run_registration};
use crate::status::{code_of, describe};

/// The owner of the proof handles offered to skippers: one handle per offer, never valid afterwards.
const PROOF_OWNER: u64 = 0x4e43_5052_4f4f_4601;

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

/// The frame a C callback sees: the running phase's id, and the task whose handle leads back to the frame
/// lent under `token` for the callback.
fn c_frame(phase: ffi::InterfaceId, token: u64) -> ffi::PhaseFrame {
    ffi::PhaseFrame {
        header: ffi::AbiTableHeader {
            struct_size: u32::try_from(std::mem::size_of::<ffi::PhaseFrame>()).unwrap_or(u32::MAX),
            major: 1,
            minor: 0,
            flags: 0,
        },
        phase_id: phase,
        task: ffi::TaskHandle(ffi::Handle {
            owner: TASK_OWNER,
            value: token,
        }),
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

/// Lends `frame` (and an interceptor's `next`) for one call into C, which gets the C frame and the token
/// and calls the plugin's callback as `what` of the frame's phase (the callee a crash report names); returns
/// what C returned and the chain's result if the continuation ran.
fn with_frame(
    frame: &mut PhaseFrame<'_>,
    (service, name, what): (Service, &PluginName, &str),
    mut next: Option<neverc_link::plugin::Continuation<'_>>,
    call: impl FnOnce(Callee<'_>, &ffi::PhaseFrame, u64) -> ffi::Status,
) -> (ffi::Status, Option<Result<(), Status>>) {
    let phase_name = frame.phase();
    let callee = Callee {
        plugin: name,
        what,
        subject: phase_name,
    };
    let phase = service
        .tables
        .phase_by_name(phase_name)
        .map(|record| ffi::InterfaceId {
            high: record.id.high,
            low: record.id.low,
        })
        .unwrap_or_default();
    let mut chain: Option<Result<(), Status>> = None;
    let mut state = FrameState::default();
    let status = {
        let frame_ref = &mut *frame;
        let mut body = |request: &mut dyn Any| {
            if let Some(result) = serve(frame_ref, service, request, next.as_deref_mut(), &mut state) {
                chain.get_or_insert(result);
            }
        };
        neverc_sys::scoped::lend(&mut body, |token| call(callee, &c_frame(phase, token), token))
    };
    // What the callback left open is abandoned; what it staged in the image is published.
    state.finish(frame);
    (status, chain)
}

impl LinkPlugin for CPlugin {
    fn name(&self) -> &str {
        &self.plugin.id
    }

    fn register(&mut self, registrar: &mut Registrar<'_>) -> Result<(), Status> {
        let tables = registrar.tables();
        let service = Service::new(tables);
        let asked =
            run_registration(&self.plugin, tables).map_err(|error| Status::new(error.code(), error.to_string()))?;
        for (asked, hook) in asked {
            if asked.answer.is_err() {
                continue;
            }
            let Some(record) = tables.phase_by_name(&asked.phase) else {
                continue;
            };
            let (phase, id, name) = (record.name, self.plugin.id.clone(), self.plugin.name.clone());
            match (asked.request, hook) {
                (Some(Request::Observe(point)), Hook::Observer(Some(observer), user_data)) => {
                    registrar.observe(
                        phase,
                        point,
                        Box::new(move |frame| {
                            let status =
                                with_frame(frame, (service, &name, "observer of "), None, |callee, c_frame, _| {
                                    observer.call(callee, (user_data, c_frame))
                                });
                            answer(&id, "observer", status.0)
                        }),
                    )?;
                }
                (Some(Request::Replace), Hook::Provider(Some(provider), user_data)) => {
                    registrar.replace(
                        phase,
                        Box::new(move |frame| {
                            let status =
                                with_frame(frame, (service, &name, "provider of "), None, |callee, c_frame, _| {
                                    provider.call(callee, (user_data, c_frame))
                                });
                            answer(&id, "provider", status.0)
                        }),
                    )?;
                }
                (Some(Request::Intercept), Hook::Interceptor(Some(interceptor), user_data)) => {
                    registrar.intercept(
                        phase,
                        Box::new(move |frame, next| {
                            let site = (service, &name, "interceptor of ");
                            let (status, chain) = with_frame(frame, site, Some(next), |callee, c_frame, token| {
                                let continuation: ffi::PhaseContinueFn = Some(continue_chain);
                                let arguments = (
                                    user_data,
                                    c_frame as *const ffi::PhaseFrame,
                                    continuation,
                                    token as usize as *mut c_void,
                                );
                                interceptor.call(callee, arguments)
                            });
                            match (answer(&id, "interceptor", status), chain) {
                                (Ok(()), _) => Ok(()),
                                // The chain's own failure, as the runtime reported it.
                                (Err(_), Some(Err(failure))) => Err(failure),
                                (Err(failure), _) => Err(failure),
                            }
                        }),
                    )?;
                }
                (Some(Request::SkipWithProof), Hook::Skipper(Some(skipper), user_data)) => {
                    let mut offers = 0u64;
                    registrar.skip_with_proof(
                        phase,
                        Box::new(move |frame, offered| {
                            offers += 1;
                            let handle = match offered {
                                Some(_) => ffi::Handle {
                                    owner: PROOF_OWNER,
                                    value: offers,
                                },
                                None => ffi::Handle::default(),
                            };
                            let mut claimed = ffi::Handle::default();
                            let (status, _) =
                                with_frame(frame, (service, &name, "skipper of "), None, |callee, c_frame, _| {
                                    skipper.call(callee, (user_data, c_frame, handle, &mut claimed as *mut ffi::Handle))
                                });
                            // Only the handle offered in this call stands for the current proof.
                            offered.filter(|_| status.code == 0 && claimed == handle)
                        }),
                    )?;
                }
                (Some(_), Hook::ImageVerifier(Some(verify), user_data)) => {
                    registrar.image_verifier(Box::new(move |image, layout| {
                        let mut body = |request: &mut dyn Any| serve_image(layout, image.len(), request);
                        let status = neverc_sys::scoped::lend(&mut body, |token| {
                            let info = image_info(layout, image.len(), token);
                            let task = ffi::TaskHandle(ffi::Handle {
                                owner: TASK_OWNER,
                                value: token,
                            });
                            let callee = Callee {
                                plugin: &name,
                                what: "image verifier",
                                subject: "",
                            };
                            let arguments = (user_data, task, std::ptr::null::<ffi::LinkRequest>(), &info as *const _);
                            verify.call(callee, arguments)
                        });
                        answer(&id, "image verifier", status)
                    }))?;
                }
                (None, Hook::LtoProvider(descriptor)) => {
                    let provider =
                        crate::lto::CLtoProvider::bound(descriptor, self.plugin.alive(), self.plugin.library(), name);
                    registrar
                        .lto_code_generator(neverc_link::lto::provider::SharedProvider(std::rc::Rc::new(provider)))?;
                }
                _ => {}
            }
        }
        Ok(())
    }
}
