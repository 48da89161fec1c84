//! C plugins on the command line: `--plugin PATH.so` and `--plugin-arg ID:NAME[=VALUE]`, shared by `link`
//! and `audit`.

use std::path::PathBuf;

use neverc_plugin_host::{CPlugin, LoadedPlugin, PluginArgument, PluginError};

use crate::CommandError;

/// Reads `--plugin-arg` values.
pub(crate) fn parse_arguments(arguments: &[String]) -> Result<Vec<PluginArgument>, CommandError> {
    let mut parsed = Vec::new();
    for argument in arguments {
        let Some((plugin, rest)) = argument.split_once(':') else {
            return Err(CommandError::Usage(format!(
                "--plugin-arg `{argument}` is not ID:NAME[=VALUE]"
            )));
        };
        let (name, value) = match rest.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (rest, None),
        };
        parsed.push(PluginArgument {
            plugin: plugin.to_string(),
            name: name.to_string(),
            value,
        });
    }
    Ok(parsed)
}

/// A plugin that failed to load or register, with its status.
pub(crate) fn plugin_failure(error: PluginError) -> CommandError {
    CommandError::Request(format!("{error} ({})", error.code().name()))
}

/// Loads every plugin with every argument; an argument whose id names none of them is a usage error.
pub(crate) fn load_all(paths: &[PathBuf], arguments: &[String]) -> Result<Vec<LoadedPlugin>, CommandError> {
    let parsed = parse_arguments(arguments)?;
    let mut loaded: Vec<LoadedPlugin> = Vec::new();
    for path in paths {
        let plugin = neverc_plugin_host::load(path, &parsed).map_err(plugin_failure)?;
        if let Some(first) = loaded.iter().find(|other| other.id == plugin.id) {
            return Err(CommandError::Usage(format!(
                "plugins `{}` and `{}` have the same id `{}`",
                first.path.display(),
                plugin.path.display(),
                plugin.id
            )));
        }
        loaded.push(plugin);
    }
    if let Some(other) = parsed
        .iter()
        .find(|argument| !loaded.iter().any(|plugin| plugin.id == argument.plugin))
    {
        let ids: Vec<&str> = loaded.iter().map(|plugin| plugin.id.as_str()).collect();
        return Err(CommandError::Usage(format!(
            "--plugin-arg `{}:{}` is for no loaded plugin (loaded: {})",
            other.plugin,
            other.name,
            if ids.is_empty() {
                "none".to_string()
            } else {
                ids.join(", ")
            }
        )));
    }
    Ok(loaded)
}

/// Prints what the plugins reported, as notes naming each plugin.
pub(crate) fn print_reports(plugins: &[CPlugin]) {
    for plugin in plugins {
        for (_, text) in plugin.reports() {
            errln!(
                "note: plugin `{}`: {text}",
                neverc_link::plugin::LinkPlugin::name(plugin)
            );
        }
    }
}
