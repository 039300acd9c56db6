//! What a shell and a manual take from pelt's command line: completion scripts
//! (`pelt completions SHELL`, clap_complete) and manual pages (`pelt man`, clap_mangen), both
//! made from the one definition clap parses (the option table's rows included), so they never
//! drift from the flags.

use crate::args::{Cli, CompletionsArgs, ManArgs};
use anyhow::{anyhow, Result};
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;

/// `pelt completions SHELL`: the script on stdout.
pub fn completions(a: &CompletionsArgs) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "pelt", &mut out);
    std::io::stdout().write_all(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// `pelt man`: pelt(1) on stdout, or every command's page into `--dir`.
pub fn man(a: &ManArgs) -> Result<ExitCode> {
    let cmd = Cli::command();
    match &a.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| anyhow!("cannot create --dir {}: {e}", dir.display()))?;
            clap_mangen::generate_to(cmd, dir)
                .map_err(|e| anyhow!("cannot write the pages into {}: {e}", dir.display()))?;
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::stdout().write_all(&out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
