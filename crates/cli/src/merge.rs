//! `pelt merge A.json B.json ...`.

use crate::args::MergeArgs;
use crate::files::{check_outputs, read_result, write_outputs};
use crate::{bad, output, EXIT_THRESHOLD};
use anyhow::{anyhow, Result};
use std::process::ExitCode;

/// `pelt merge A.json B.json ...`: one result from several, exactly.
pub fn merge(a: &MergeArgs) -> Result<ExitCode> {
    check_outputs(&a.out)?;
    let mut reports = Vec::with_capacity(a.results.len());
    for path in &a.results {
        let r = read_result(path)?;
        pelt_stats::check_mergeable(&r)
            .map_err(|e| bad(anyhow!("cannot merge {}: {e}", path.display())))?;
        reports.push(r);
    }
    let mut merged = pelt_stats::merge(&reports).map_err(|e| bad(anyhow!("cannot merge: {e}")))?;
    merged.merged_from = a.results.iter().map(|p| p.display().to_string()).collect();
    merged.thresholds = a.expect.iter().map(|e| e.check(&merged)).collect();
    if !write_outputs(&merged, &a.out)? {
        print!("{}", output::summary(&merged));
    }
    Ok(if merged.thresholds.iter().any(|t| !t.passed) {
        ExitCode::from(EXIT_THRESHOLD)
    } else {
        ExitCode::SUCCESS
    })
}
