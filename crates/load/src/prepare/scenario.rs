//! A scenario file into the engine's program and its steps' requests.

use super::*;

/// The scenario file compiled, and what a scenario run does not do refused.
pub(super) fn scenario_program(
    spec: &LoadSpec,
    source: &crate::ScenarioSource,
) -> Result<crate::scenario::Program, SpecError> {
    let (program, _) = crate::scenario::load_source(source).map_err(bad)?;
    if spec.pipeline > 1 {
        // A user's next step depends on the response before it: nothing to pipeline.
        return Err(bad(
            "--scenario: a user sends a step after the response before it, so there is \
             nothing to pipeline: drop --pipeline (over HTTP/2, --streams seats that many \
             users on each connection)",
        ));
    }
    Ok(program)
}

/// A scenario's steps as the run's entries, in step order (entry k is step k): each step's
/// method, URL on the run's origin, headers and body, shown with `{{name}}` where a variable
/// goes (for names and messages), and its texts as parts (`StepText`), which the encoder marks
/// as they are: a variable is never a name read back.
pub(super) fn scenario_entries(
    spec: &LoadSpec,
    program: &crate::scenario::Program,
) -> Result<Entries, SpecError> {
    use crate::scenario::{Op, Part, Text};
    let origin = match (spec.url.is_empty(), &program.target) {
        (false, _) => spec.url.clone(),
        (true, Some(t)) => t.clone(),
        (true, None) => {
            return Err(bad(
                "--scenario needs a URL, or a target in the scenario file's config",
            ))
        }
    };
    let base = url::Url::parse(&origin).map_err(|e| bad(format!("invalid URL {origin}: {e}")))?;
    let text = |t: &Text| {
        t.0.iter()
            .map(|p| match p {
                Part::Lit(s) => s.clone(),
                Part::Var(v) => format!("{{{{{}}}}}", program.variables[*v as usize]),
            })
            .collect::<String>()
    };
    let n = program.steps.len();
    let mut steps: Vec<Option<(TargetEntry, StepText)>> = (0..n).map(|_| None).collect();
    for s in &program.scenarios {
        for op in s.once.iter().chain(&s.flow) {
            let Op::Request(step) = op else { continue };
            let url = text(&step.url);
            let url = if url.starts_with('/') {
                format!("{}{url}", base.origin().ascii_serialization())
            } else {
                url
            };
            let texts = StepText {
                url: step.url.clone(),
                headers: step.headers.iter().map(|(_, v)| v.clone()).collect(),
                body: step.body.clone(),
            };
            let entry = TargetEntry {
                recorded_us: None,
                method: Some(step.method.clone()),
                url,
                headers: step
                    .headers
                    .iter()
                    .map(|(k, v)| format!("{k}: {}", text(v)))
                    .collect(),
                body: Some(
                    step.body
                        .as_ref()
                        .map(|b| text(b).into_bytes())
                        .unwrap_or_default(),
                ),
                name: Some(program.steps[step.id as usize].clone()),
                line: 0,
                time: None,
            };
            steps[step.id as usize] = Some((entry, texts));
        }
    }
    let (list, steps) = steps
        .into_iter()
        .map(|e| e.expect("every step is in a scenario"))
        .unzip();
    Ok(Entries {
        list,
        from: (SetFrom::Scenario, Some(spec_path(spec))),
        steps,
        skipped: None,
    })
}

pub(super) fn spec_path(spec: &LoadSpec) -> String {
    match &spec.requests_from {
        Requests::Scenario(source) => source.name(),
        _ => String::new(),
    }
}

/// The engine's scenario run: the program, each step's URL (for its users' cookie jars).
pub(super) fn scenario_run(
    program: crate::scenario::Program,
    list: &[TargetEntry],
) -> Result<engine::scenario::ScenarioRun, SpecError> {
    let urls = list
        .iter()
        .map(|e| url::Url::parse(&e.url).map_err(|err| bad(format!("step URL {}: {err}", e.url))))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(engine::scenario::ScenarioRun {
        program,
        urls,
        seed: clock_seed(),
    })
}
