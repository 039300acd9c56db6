//! `--monitor` and `--monitor-remote`: what they watch, checked before any traffic.

use super::*;

/// `--monitor`: the processes it names (the listener found on the target's port), and what
/// matched; only where this process sends the load.
pub(super) fn monitor(
    spec: &LoadSpec,
    target: &target::Target,
    here: Here,
) -> Result<Option<(crate::monitor::Watch, String)>, SpecError> {
    Ok(match (&spec.monitor, here) {
        (None, _) => None,
        (Some(w), Here::Connects) => {
            let w = match w {
                crate::monitor::Watch::Listener => {
                    if spec.unix_socket.is_some() {
                        return Err(bad(
                            "--monitor listener finds the process on the target's TCP port; \
                             with --unix-socket give its PID or name",
                        ));
                    }
                    crate::monitor::Watch::listening_on(target.addr.port())
                        .map_err(|e| bad(format!("--monitor listener: {e}")))?
                }
                other => other.clone(),
            };
            let matched = w.check().map_err(|e| bad(format!("--monitor: {e}")))?;
            Some((w, matched))
        }
        (Some(_), _) => {
            return Err(bad(
                "--monitor samples processes on the machine that sends the load; a fleet's \
                 agents send it from elsewhere: run pelt on the server's machine instead",
            ))
        }
    })
}

/// `--monitor-remote`: the monitor reached and authenticated, where this process runs or
/// coordinates the load.
pub(super) fn remote_monitor(
    spec: &LoadSpec,
    here: Here,
) -> Result<Option<crate::fleet::monitor::RemoteMonitor>, SpecError> {
    Ok(match (&spec.monitor_remote, here) {
        (None, _) => None,
        (Some(_), _) if spec.monitor.is_some() => {
            return Err(bad(
                "--monitor and --monitor-remote: give one (the server is on this machine, or \
                 pelt monitor samples it on its own)",
            ))
        }
        (Some(addr), Here::Connects | Here::Coordinates) => {
            let token = match &spec.fleet_token {
                Some(t) => t.clone(),
                None => crate::fleet::Token::from_env()
                    .map_err(|e| bad(format!("--monitor-remote needs the fleet's token: {e}")))?,
            };
            let remote = crate::fleet::monitor::RemoteMonitor::connect(addr, &token)
                .map_err(|e| bad(format!("--monitor-remote: {e}")))?;
            Some(remote)
        }
        (Some(_), _) => {
            return Err(bad(
                "--monitor-remote reaches the monitor when the run starts; pelt k8s cannot \
                 (run the coordinator with --monitor-remote yourself)",
            ))
        }
    })
}
