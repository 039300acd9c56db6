//! `pelt report RESULT.json`.

use crate::args::ReportArgs;
use crate::files::{check_outputs, read_result, write_outputs};
use crate::output;
use anyhow::Result;
use std::process::ExitCode;

/// `pelt report RESULT.json`: the summary again, and the files asked for.
pub fn report(a: &ReportArgs) -> Result<ExitCode> {
    check_outputs(&a.out)?;
    let report = read_result(&a.result)?;
    if !write_outputs(&report, &a.out)? {
        print!("{}", output::summary(&report));
    }
    Ok(ExitCode::SUCCESS)
}
